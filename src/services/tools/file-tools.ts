/**
 * The built-in file tools of an agent with a workspace, as a `ToolProvider`.
 *
 * Tools (MassGen's names): `read_file {path}`, `write_file {path, content}`,
 * `edit_file {path, edits: [{oldText, newText}]}` (each `oldText` must occur
 * exactly once), `list_directory {path}`, `create_directory {path}`,
 * `delete_file {path}` (a folder with everything in it), `move_file {source,
 * destination}`. A path is checked lexically first (`domain/workspaces/paths.ts`),
 * then walked from a descriptor of its root (the workspace, the snapshot, the
 * context path, opened following the user's own links) one name at a time
 * (`file-paths.ts`, on `confined-fs.ts`): a symlink anywhere below the root, the last name
 * included, is refused, never followed, and the tool acts on what it opened,
 * so nothing swapped in meanwhile redirects it. `delete_file` and `move_file`
 * on a link act on the link itself. Reads take regular files only (a FIFO,
 * device or socket is refused without blocking) and stop at
 * `READ_MAX_BYTES`, saying the result was cut; `edit_file` refuses a file
 * over `EDIT_MAX_BYTES`. Outside snapshots a file with more than one name (a
 * hard link) is refused. A refusal is a `ToolRunError` of reason `refused`,
 * which the tool runner records in `tool_call_finished` and gives the model
 * as an error result; messages quote the path as given, never a real path of
 * the log directory.
 *
 * What an agent may reach is read from the run's state when the call runs
 * (`ToolContext`): its workspace; the snapshots of the answers its round shows
 * (the presenter: every snapshot), under `temp_workspaces/<label>/`; every
 * context path, read-only, and, for the presenter after the vote, the `write`
 * ones outside their `protected_paths`, judged again on the real path the
 * walk reached (the protected paths and the `read` context paths resolved to
 * real paths too). In a context path only `write_file` and `edit_file` write,
 * each recorded as `context_write_intended` before the write (nothing, not
 * even a missing folder, is made before it) and `context_path_written` after
 * it; a write whose intent a stopped run recorded and whose file already holds
 * the intended content is not done again, only recorded. The temporary files
 * a stop left beside such writes are removed on resume
 * (`removeWriteTemporaries` in `file-paths.ts`).
 */
import { Effect } from "effect"
import type { ContextPathSetting } from "../../domain/events/index.ts"
import type { ToolSpec } from "../../domain/llm.ts"
import { initialState, type State } from "../../domain/state/index.ts"
import { MAX_TOOL_RESULT_CHARS } from "../../domain/tools/calls.ts"
import { type ContextWrite, earlierContextWrite } from "../../domain/workspaces/facts.ts"
import { type Access, type AgentRoots, hasControlCharacter, TEMP_WORKSPACES } from "../../domain/workspaces/paths.ts"
import { hashText } from "../../lib/sha256.ts"
import { closeDir, listAt, lstatAt, openDirAt, readFileAt, removeAt, renameAt, walk, writeFileAt } from "./confined-fs.ts"
import { close, fail, folderOf, locate, type Opened, toolError } from "./file-paths.ts"
import { type ProvidedTool, type ToolContext, type ToolProvider, ToolRunError } from "./tool-provider.ts"

/** Bytes of a file `read_file` gives: with its note, the result stays under the tool runner's cap of `MAX_TOOL_RESULT_CHARS`. */
export const READ_MAX_BYTES = MAX_TOOL_RESULT_CHARS - 2_000
/** The largest file `edit_file` edits. */
export const EDIT_MAX_BYTES = 10 * 1024 * 1024

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
    : ` Context paths (absolute; read-only until the vote, then writable by the presenter where marked write): ${contextPaths.map((c) => `${c.path} (${c.permission})`).join(", ")}.`) +
  " Symlinks are never followed."

/** The file tools as the model sees them. */
export const fileToolSpecs = (contextPaths: ReadonlyArray<ContextPathSetting> = []): ReadonlyArray<ToolSpec> => {
  const help = pathHelp(contextPaths)
  return [
    spec("read_file", `Reads a text file (the first ${READ_MAX_BYTES} bytes of a longer one). ${help}`, { path: str }, ["path"]),
    spec("write_file", `Writes a text file, replacing it if it exists (parent folders are made). ${help}`, { path: str, content: str }, [
      "path",
      "content",
    ]),
    spec(
      "edit_file",
      `Edits a text file: each oldText, which must occur exactly once, is replaced by its newText. ${help}`,
      {
        path: str,
        edits: { type: "array", items: { type: "object", properties: { oldText: str, newText: str }, required: ["oldText", "newText"] } },
      },
      ["path", "edits"],
    ),
    spec("list_directory", `Lists a folder: one line per entry, [DIR] or [FILE] and its name. ${help}`, { path: str }, ["path"]),
    spec("create_directory", "Makes a folder in your workspace, with its parents.", { path: str }, ["path"]),
    spec(
      "delete_file",
      "Deletes a file or a folder (with everything in it) of your workspace; a symlink itself, not what it points to.",
      { path: str },
      ["path"],
    ),
    spec("move_file", "Moves or renames a file or folder (a symlink itself) within your workspace.", { source: str, destination: str }, [
      "source",
      "destination",
    ]),
  ]
}

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
  /** The copies of the skills the run offers (`use_skills`, absolute), read-only as `.agent/skills/`. */
  readonly skillsRoot?: string
}

/** What the agent may reach now: from the state when the call runs. */
export const rootsOf = (input: FileToolsInput, state: State, context: ToolContext | undefined): AgentRoots => {
  const agent = context === undefined ? undefined : state.agents.find((a) => a.info.id === context.agent)
  const presenting =
    context !== undefined && context.role === "presentation" && state.presentation?.agent === context.agent && state.final === null
  const labels = presenting ? Object.keys(state.workspaces.snapshots) : (agent?.inFlight?.shown ?? [])
  return {
    workspace: input.workspace,
    snapshots: new Map(labels.filter((l) => l in state.workspaces.snapshots).map((l) => [l, input.snapshotPath(l)])),
    contextPaths: state.run?.settings.context_paths ?? [],
    mayWriteContext: presenting,
    skills: input.skillsRoot ?? null,
  }
}

const readCapped = (o: Opened, max: number, verb: string) =>
  folderOf(o, false, verb, (dir, name) => readFileAt(dir, name, max, o.rel, o.kind === "snapshot"))

const readText = (o: Opened): string => {
  const read = readCapped(o, READ_MAX_BYTES, "read")
  const text = read.bytes.toString("utf8")
  return read.cut
    ? `${text}\n[massgen: ${o.given} is ${read.size} bytes; read_file gave its first ${read.bytes.length} bytes, the rest was cut]`
    : text
}

const writeIn = (o: Opened, content: string): "created" | "replaced" =>
  folderOf(o, true, "write", (dir, name) => writeFileAt(dir, name, content, o.rel, { refuseHardLinks: true }))

const workspaceOnly = (o: Opened, tool: string): void => {
  if (o.kind === "context")
    throw fail("refused", `${o.given}: ${tool} does not change context paths (write_file and edit_file do, for the presenter)`)
}

/** An entry's name as a listing shows it: JSON-escaped when it holds a control character. */
const listedName = (name: string): string => (hasControlCharacter(name) ? JSON.stringify(name) : name)

/** The agent's file tools. */
export const makeFileTools = (input: FileToolsInput): ToolProvider => {
  const tools: ReadonlyArray<ProvidedTool> = fileToolSpecs(input.contextPaths).map((s) => ({ spec: s, server: null }))

  /** The fields of a context write's events, as `write` records them. */
  const fieldsOf = (w: ContextWrite) => ({
    tool_call: w.toolCall,
    call_id: w.callId,
    agent: w.agent,
    path: w.path,
    bytes: w.bytes,
    sha256: w.sha256,
    change: w.change,
  })

  /** Whether the file holds the `bytes` whose digest is `sha256` (read from its descriptor). */
  const holds = (o: Opened, bytes: number, sha256: string): boolean => {
    try {
      const read = readCapped(o, bytes, "read")
      return !read.cut && hashText(read.bytes) === sha256
    } catch {
      return false
    }
  }

  /**
   * The result of a call that a stop cut off and that runs again, when its
   * write is already made: recorded as done (if it was not), not made again.
   * Null when there is a write to make.
   */
  const takenUp = (o: Opened, context: ToolContext | undefined, state: State) =>
    Effect.gen(function* () {
      if (context === undefined || o.kind !== "context") return null
      const earlier = earlierContextWrite(state.workspaces, context.agent, context.callId, o.path)
      if (earlier === undefined) return null
      const applied = `wrote ${earlier.bytes} bytes to ${o.given} (${earlier.change})`
      if (earlier.done) return applied
      if (!holds(o, earlier.bytes, earlier.sha256)) return null
      yield* context.emit({ _tag: "context_path_written", time: yield* context.now, ...fieldsOf(earlier) })
      return applied
    })

  /** Writes a context path's file, recorded before (unless a stopped run recorded this intent) and after. */
  const writeContext = (o: Opened, content: string, context: ToolContext | undefined, state: State) =>
    Effect.gen(function* () {
      if (context === undefined) return yield* fail("refused", `${o.given}: no run to record the write in`)
      const digest = hashText(content)
      const earlier = earlierContextWrite(state.workspaces, context.agent, context.callId, o.path)
      const exists = o.name !== null && o.missing.length === 0 && lstatAt(o.dir, o.name) !== undefined
      const intent =
        earlier !== undefined && !earlier.done && earlier.sha256 === digest
          ? fieldsOf(earlier)
          : {
              tool_call: context.toolCall,
              call_id: context.callId,
              agent: context.agent,
              path: o.path,
              bytes: Buffer.byteLength(content),
              sha256: digest,
              change: exists ? ("replaced" as const) : ("created" as const),
            }
      if (intent.tool_call === context.toolCall)
        yield* context.emit({ _tag: "context_write_intended", time: yield* context.now, ...intent })
      yield* Effect.try({ try: () => writeIn(o, content), catch: (e) => toolError(e, o.given, o.rel, "write") })
      yield* context.emit({ _tag: "context_path_written", time: yield* context.now, ...intent })
      return `wrote ${intent.bytes} bytes to ${o.given} (${intent.change})`
    })

  const write = (o: Opened, content: string, context: ToolContext | undefined, state: State) =>
    o.kind === "context"
      ? writeContext(o, content, context, state)
      : Effect.try({
          try: () => {
            writeIn(o, content)
            return `wrote ${Buffer.byteLength(content)} bytes to ${o.given}`
          },
          catch: (e) => toolError(e, o.given, o.rel, "write"),
        })

  const run = (name: string, args: Record<string, unknown>, context?: ToolContext): Effect.Effect<string, ToolRunError> =>
    Effect.gen(function* () {
      const stateNow = context === undefined ? initialState : yield* context.state
      const roots = rootsOf(input, stateNow, context)
      const sync = <A>(f: () => A) =>
        Effect.try({ try: f, catch: (e) => (e instanceof ToolRunError ? e : fail("failed", `${name}: ${String(e)}`)) })
      /** The path of argument `key`, walked for `access`; closed when the call ends. */
      const open = (key: string, access: Access) =>
        Effect.acquireRelease(
          sync(() => locate(roots, stringArg(args, key), access)),
          (o) => Effect.sync(() => o !== null && close(o)),
        )
      /** `open`, where `temp_workspaces` itself is no answer. */
      const openFile = (key: string, access: Access) =>
        Effect.flatMap(open(key, access), (o) =>
          o === null ? Effect.fail(fail("refused", `${TEMP_WORKSPACES} is read-only: it holds the snapshots`)) : Effect.succeed(o),
        )
      const act = <A>(o: Opened, verb: string, f: () => A) => Effect.try({ try: f, catch: (e) => toolError(e, o.given, o.rel, verb) })
      switch (name) {
        case "read_file": {
          const o = yield* openFile("path", "read")
          return yield* act(o, "read", () => readText(o))
        }
        case "write_file": {
          const o = yield* openFile("path", "write")
          const content = yield* sync(() => stringArg(args, "content"))
          const done = yield* takenUp(o, context, stateNow)
          if (done !== null) return done
          return yield* write(o, content, context, stateNow)
        }
        case "edit_file": {
          const o = yield* openFile("path", "write")
          const done = yield* takenUp(o, context, stateNow)
          if (done !== null) return done
          const edits = args.edits
          if (!Array.isArray(edits) || edits.length === 0) return yield* fail("bad_arguments", "edits must be a list of {oldText, newText}")
          const read = yield* act(o, "read", () => readCapped(o, EDIT_MAX_BYTES, "read"))
          if (read.cut)
            return yield* fail(
              "refused",
              `${o.given} is ${read.size} bytes; edit_file edits files up to ${EDIT_MAX_BYTES} bytes (write_file replaces a file whole)`,
            )
          let text = read.bytes.toString("utf8")
          for (const [i, edit] of edits.entries()) {
            const e = edit as { oldText?: unknown; newText?: unknown }
            if (typeof e?.oldText !== "string" || typeof e.newText !== "string" || e.oldText === "") {
              return yield* fail("bad_arguments", `edits[${i}] must be {oldText, newText} with a non-empty oldText`)
            }
            const at = text.indexOf(e.oldText)
            if (at < 0) return yield* fail("failed", `edits[${i}]: oldText is not in ${o.given}`)
            if (text.indexOf(e.oldText, at + 1) >= 0)
              return yield* fail("failed", `edits[${i}]: oldText occurs more than once in ${o.given}`)
            text = text.slice(0, at) + e.newText + text.slice(at + e.oldText.length)
          }
          return yield* write(o, text, context, stateNow)
        }
        case "list_directory": {
          const o = yield* open("path", "read")
          if (o === null)
            return [...roots.snapshots.keys()]
              .sort()
              .map((l) => `[DIR] ${l}`)
              .join("\n")
          return yield* act(o, "list", () => {
            if (o.missing.length > 0) throw fail("failed", `cannot list ${o.given}: no such file`)
            const dir = o.name === null ? o.dir : openDirAt(o.dir, o.name, o.rel)
            try {
              return listAt(dir)
                .map((d) => ({ name: listedName(d.name), folder: d.isDirectory() }))
                .sort((a, b) => a.name.localeCompare(b.name))
                .map((d) => `${d.folder ? "[DIR]" : "[FILE]"} ${d.name}`)
                .join("\n")
            } finally {
              if (dir !== o.dir) closeDir(dir)
            }
          })
        }
        case "create_directory": {
          const o = yield* openFile("path", "write")
          workspaceOnly(o, name)
          yield* act(o, "make", () => {
            if (o.name !== null) closeDir(walk(o.dir, [...o.missing, o.name], true))
          })
          return `made the folder ${o.given}`
        }
        case "delete_file": {
          const o = yield* openFile("path", "write")
          workspaceOnly(o, name)
          if (o.name === null) return yield* fail("refused", "the workspace itself cannot be deleted")
          yield* act(o, "delete", () => folderOf(o, false, "delete", (dir, entry) => removeAt(dir, entry, o.rel)))
          return `deleted ${o.given}`
        }
        case "move_file": {
          const from = yield* openFile("source", "write")
          const to = yield* openFile("destination", "write")
          workspaceOnly(from, name)
          workspaceOnly(to, name)
          if (from.name === null) return yield* fail("refused", "the workspace itself cannot be moved")
          if (to.name === null) return yield* fail("failed", `${to.given} exists`)
          yield* act(from, "move", () =>
            folderOf(from, false, "move", (fromDir, fromName) =>
              folderOf(to, true, "move", (toDir, toName) => {
                if (lstatAt(toDir, toName) !== undefined) throw fail("failed", `${to.given} exists`)
                renameAt(fromDir, fromName, toDir, toName, from.rel, to.rel)
              }),
            ),
          )
          return `moved ${from.given} to ${to.given}`
        }
        default:
          return yield* fail("failed", `no file tool named ${name}`)
      }
    }).pipe(
      Effect.scoped,
      Effect.catchAllDefect((e) => Effect.fail(e instanceof ToolRunError ? e : fail("failed", `${name}: ${String(e)}`))),
    )

  return { tools, run }
}
