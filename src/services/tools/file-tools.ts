/**
 * The built-in file tools of an agent with a workspace, as a `ToolProvider`.
 *
 * Tools (MassGen's names): `read_file {path}`, `write_file {path, content}`,
 * `edit_file {path, edits: [{oldText, newText}]}` (each `oldText` must occur
 * exactly once), `list_directory {path}`, `create_directory {path}`,
 * `delete_file {path}` (a folder with everything in it), `move_file {source,
 * destination}`. Paths are confined (`domain/workspace-paths.ts` lexically,
 * `workspace.ts` on disk): a path that leads outside the agent's roots fails
 * with a `ToolRunError` of reason `refused`, which the tool runner records
 * in `tool_call_finished` and gives the model as an error result.
 *
 * What an agent may reach is read from the run's state when the call runs
 * (`ToolContext`): its workspace; the snapshots of the answers its round shows
 * (the presenter: every snapshot), under `temp_workspaces/<label>/`; every
 * context path, read-only, and, for the presenter after the vote, the `write`
 * ones outside their `protected_paths`. In a context path only `write_file`
 * and `edit_file` write, each recorded as `context_write_intended` before the
 * write and `context_path_written` after it; a write whose intent a stopped
 * run recorded and whose file already holds the intended content is not done
 * again, only recorded.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { ContextPathSetting } from "../../domain/events.ts"
import type { ToolSpec } from "../../domain/llm.ts"
import { type State, initialState } from "../../domain/state.ts"
import { type Access, type AgentRoots, TEMP_WORKSPACES, resolveToolPath } from "../../domain/workspace-paths.ts"
import { type ContextWrite, earlierContextWrite } from "../../domain/workspaces.ts"
import { type ProvidedTool, type ToolContext, ToolRunError, type ToolProvider } from "./tool-provider.ts"
import { confine } from "./workspace.ts"
import { hashText } from "../blobs.ts"

const str = { type: "string" } as const
const spec = (name: string, description: string, properties: Record<string, unknown>, required: ReadonlyArray<string>): ToolSpec => ({
  name,
  description,
  parameters: { type: "object", properties, required: [...required], additionalProperties: false },
})

/** What a path names, as each tool's description says it; with the run's context paths, by their absolute paths. */
const pathHelp = (contextPaths: ReadonlyArray<ContextPathSetting>): string =>
  `Relative paths are in your workspace; ${TEMP_WORKSPACES}/<label>/ holds, read-only, the files of each answer you are shown.` +
  (contextPaths.length === 0
    ? ""
    : ` Context paths (absolute; read-only until the vote, then writable by the presenter where marked write): ${contextPaths.map((c) => `${c.path} (${c.permission})`).join(", ")}.`)

/** The file tools as the model sees them. */
export const fileToolSpecs = (contextPaths: ReadonlyArray<ContextPathSetting> = []): ReadonlyArray<ToolSpec> => {
  const help = pathHelp(contextPaths)
  return [
    spec("read_file", `Reads a text file. ${help}`, { path: str }, ["path"]),
    spec("write_file", `Writes a text file, replacing it if it exists (parent folders are made). ${help}`, { path: str, content: str }, ["path", "content"]),
    spec(
      "edit_file",
      `Edits a text file: each oldText, which must occur exactly once, is replaced by its newText. ${help}`,
      { path: str, edits: { type: "array", items: { type: "object", properties: { oldText: str, newText: str }, required: ["oldText", "newText"] } } },
      ["path", "edits"],
    ),
    spec("list_directory", `Lists a folder: one line per entry, [DIR] or [FILE] and its name. ${help}`, { path: str }, ["path"]),
    spec("create_directory", "Makes a folder in your workspace, with its parents.", { path: str }, ["path"]),
    spec("delete_file", "Deletes a file or a folder (with everything in it) of your workspace.", { path: str }, ["path"]),
    spec("move_file", "Moves or renames a file or folder within your workspace.", { source: str, destination: str }, ["source", "destination"]),
  ]
}

const fail = (reason: "failed" | "refused" | "bad_arguments", detail: string) => new ToolRunError({ reason, detail })

const stringArg = (args: Record<string, unknown>, key: string): string => {
  const value = args[key]
  if (typeof value !== "string") throw fail("bad_arguments", `${key} must be a string`)
  return value
}


export interface FileToolsInput {
  /** The agent's workspace (absolute), or null. */
  readonly workspace: string | null
  /** The folder (absolute) of the snapshot of answer `label`. */
  readonly snapshotPath: (label: string) => string
  /** The run's context paths, for the tools' descriptions (what a call may reach is read from the run's state). */
  readonly contextPaths?: ReadonlyArray<ContextPathSetting>
}

/** What the agent may reach now: from the state when the call runs. */
export const rootsOf = (input: FileToolsInput, state: State, context: ToolContext | undefined): AgentRoots => {
  const agent = context === undefined ? undefined : state.agents.find((a) => a.info.id === context.agent)
  const presenting = context !== undefined && context.role === "presentation" && state.presentation?.agent === context.agent && state.final === null
  const labels = presenting ? Object.keys(state.workspaces.snapshots) : (agent?.inFlight?.shown ?? [])
  return {
    workspace: input.workspace,
    snapshots: new Map(labels.filter((l) => l in state.workspaces.snapshots).map((l) => [l, input.snapshotPath(l)])),
    contextPaths: state.run?.settings.context_paths ?? [],
    mayWriteContext: presenting,
  }
}

type Target = { readonly kind: "workspace" | "snapshot" | "context" | "snapshots_root"; readonly real: string; readonly given: string }

/** The real path of `given` for `access`, or a refusal (`ToolRunError`, thrown). */
const target = (roots: AgentRoots, given: string, access: Access, follow = true): Target => {
  const resolved = resolveToolPath(given, roots, access)
  if (resolved._tag === "refused") throw fail("refused", resolved.reason)
  if (resolved.kind === "snapshots_root") return { kind: resolved.kind, real: "", given }
  const problem = confine(resolved, given, access, follow)
  if (problem !== null) throw fail("refused", problem)
  return { kind: resolved.kind, real: resolved.real, given }
}

const workspaceOnly = (t: Target, tool: string): void => {
  if (t.kind === "context") throw fail("refused", `${t.given}: ${tool} does not change context paths (write_file and edit_file do, for the presenter)`)
}

const readText = (t: Target): string => {
  try {
    return readFileSync(t.real, "utf8")
  } catch (e) {
    throw fail("failed", `cannot read ${t.given}: ${codeOf(e)}`)
  }
}

const codeOf = (e: unknown): string => {
  const code = (e as { code?: string }).code
  return code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder" : code === "ENOTDIR" ? "not a folder" : code === "EEXIST" ? "it exists" : (code ?? String(e))
}

/** Writes `content` to `file` in one step: a temporary file beside it, renamed over it. */
const writeAtomically = (file: string, content: string): void => {
  mkdirSync(nodePath.dirname(file), { recursive: true })
  const temp = `${file}.massgen-${process.pid}.tmp`
  writeFileSync(temp, content)
  renameSync(temp, file)
}

/** The agent's file tools. */
export const makeFileTools = (input: FileToolsInput): ToolProvider => {
  const tools: ReadonlyArray<ProvidedTool> = fileToolSpecs(input.contextPaths).map((s) => ({ spec: s, server: null }))

  /** The fields of a context write's events, as `write` records them. */
  const fieldsOf = (w: ContextWrite) => ({ tool_call: w.toolCall, call_id: w.callId, agent: w.agent, path: w.path, bytes: w.bytes, sha256: w.sha256, change: w.change })

  /**
   * The result of a call that a stop cut off and that runs again, when its
   * write is already made: recorded as done (if it was not), not made again.
   * Null when there is a write to make.
   */
  const takenUp = (t: Target, context: ToolContext | undefined, state: State) =>
    Effect.gen(function* () {
      if (context === undefined || t.kind !== "context") return null
      const earlier = earlierContextWrite(state.workspaces, context.agent, context.callId, t.real)
      if (earlier === undefined) return null
      const applied = `wrote ${earlier.bytes} bytes to ${t.given} (${earlier.change})`
      if (earlier.done) return applied
      if (!existsSync(t.real) || hashText(readFileSync(t.real)) !== earlier.sha256) return null
      yield* context.emit({ _tag: "context_path_written", time: yield* context.now, ...fieldsOf(earlier) })
      return applied
    })

  /** Writes a context path's file, recorded before (unless a stopped run recorded this intent) and after. */
  const writeContext = (t: Target, content: string, context: ToolContext | undefined, state: State) =>
    Effect.gen(function* () {
      if (context === undefined) return yield* fail("refused", `${t.given}: no run to record the write in`)
      const digest = hashText(content)
      const earlier = earlierContextWrite(state.workspaces, context.agent, context.callId, t.real)
      const intent =
        earlier !== undefined && !earlier.done && earlier.sha256 === digest
          ? fieldsOf(earlier)
          : {
              tool_call: context.toolCall,
              call_id: context.callId,
              agent: context.agent,
              path: t.real,
              bytes: Buffer.byteLength(content),
              sha256: digest,
              change: existsSync(t.real) ? ("replaced" as const) : ("created" as const),
            }
      if (intent.tool_call === context.toolCall) yield* context.emit({ _tag: "context_write_intended", time: yield* context.now, ...intent })
      yield* Effect.try({ try: () => writeAtomically(t.real, content), catch: (e) => fail("failed", `cannot write ${t.given}: ${codeOf(e)}`) })
      yield* context.emit({ _tag: "context_path_written", time: yield* context.now, ...intent })
      return `wrote ${intent.bytes} bytes to ${t.given} (${intent.change})`
    })

  const write = (t: Target, content: string, context: ToolContext | undefined, state: State) =>
    t.kind === "context"
      ? writeContext(t, content, context, state)
      : Effect.try({
          try: () => {
            if (existsSync(t.real) && lstatSync(t.real).isDirectory()) throw fail("failed", `cannot write ${t.given}: it is a folder`)
            writeAtomically(t.real, content)
            return `wrote ${Buffer.byteLength(content)} bytes to ${t.given}`
          },
          catch: (e) => (e instanceof ToolRunError ? e : fail("failed", `cannot write ${t.given}: ${codeOf(e)}`)),
        })

  const run = (name: string, args: Record<string, unknown>, context?: ToolContext): Effect.Effect<string, ToolRunError> =>
    Effect.gen(function* () {
      const stateNow = context === undefined ? initialState : yield* context.state
      const roots = rootsOf(input, stateNow, context)
      const sync = <A>(f: () => A) => Effect.try({ try: f, catch: (e) => (e instanceof ToolRunError ? e : fail("failed", `${name}: ${codeOf(e)}`)) })
      switch (name) {
        case "read_file": {
          const t = yield* sync(() => target(roots, stringArg(args, "path"), "read"))
          return yield* sync(() => readText(t))
        }
        case "write_file": {
          const t = yield* sync(() => target(roots, stringArg(args, "path"), "write"))
          const content = yield* sync(() => stringArg(args, "content"))
          const done = yield* takenUp(t, context, stateNow)
          if (done !== null) return done
          return yield* write(t, content, context, stateNow)
        }
        case "edit_file": {
          const t = yield* sync(() => target(roots, stringArg(args, "path"), "write"))
          const done = yield* takenUp(t, context, stateNow)
          if (done !== null) return done
          const edits = args.edits
          if (!Array.isArray(edits) || edits.length === 0) return yield* fail("bad_arguments", "edits must be a list of {oldText, newText}")
          let text = yield* sync(() => readText(t))
          for (const [i, edit] of edits.entries()) {
            const e = edit as { oldText?: unknown; newText?: unknown }
            if (typeof e?.oldText !== "string" || typeof e.newText !== "string" || e.oldText === "") {
              return yield* fail("bad_arguments", `edits[${i}] must be {oldText, newText} with a non-empty oldText`)
            }
            const at = text.indexOf(e.oldText)
            if (at < 0) return yield* fail("failed", `edits[${i}]: oldText is not in ${t.given}`)
            if (text.indexOf(e.oldText, at + 1) >= 0) return yield* fail("failed", `edits[${i}]: oldText occurs more than once in ${t.given}`)
            text = text.slice(0, at) + e.newText + text.slice(at + e.oldText.length)
          }
          return yield* write(t, text, context, stateNow)
        }
        case "list_directory": {
          const given = stringArg(args, "path")
          const t = yield* sync(() => target(roots, given, "read"))
          if (t.kind === "snapshots_root") return [...roots.snapshots.keys()].sort().map((l) => `[DIR] ${l}`).join("\n")
          return yield* sync(() =>
            readdirSync(t.real, { withFileTypes: true })
              .sort((a, b) => a.name.localeCompare(b.name))
              .map((d) => `${d.isDirectory() ? "[DIR]" : "[FILE]"} ${d.name}`)
              .join("\n"),
          )
        }
        case "create_directory": {
          const t = yield* sync(() => target(roots, stringArg(args, "path"), "write"))
          workspaceOnly(t, name)
          yield* sync(() => mkdirSync(t.real, { recursive: true }))
          return `made the folder ${t.given}`
        }
        case "delete_file": {
          const t = yield* sync(() => target(roots, stringArg(args, "path"), "write", false))
          workspaceOnly(t, name)
          if (t.real === input.workspace) return yield* fail("refused", "the workspace itself cannot be deleted")
          yield* sync(() => {
            lstatSync(t.real)
            rmSync(t.real, { recursive: true })
          })
          return `deleted ${t.given}`
        }
        case "move_file": {
          const from = yield* sync(() => target(roots, stringArg(args, "source"), "write", false))
          const to = yield* sync(() => target(roots, stringArg(args, "destination"), "write", false))
          workspaceOnly(from, name)
          workspaceOnly(to, name)
          if (from.real === input.workspace) return yield* fail("refused", "the workspace itself cannot be moved")
          yield* sync(() => {
            if (existsSync(to.real)) throw fail("failed", `${to.given} exists`)
            mkdirSync(nodePath.dirname(to.real), { recursive: true })
            renameSync(from.real, to.real)
          })
          return `moved ${from.given} to ${to.given}`
        }
        default:
          return yield* fail("failed", `no file tool named ${name}`)
      }
    }).pipe(Effect.catchAllDefect((e) => Effect.fail(e instanceof ToolRunError ? e : fail("failed", `${name}: ${String(e)}`))))

  return { tools, run }
}
