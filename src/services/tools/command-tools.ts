/**
 * Command tools: an agent's `custom_tools` entries with a `command`, as a `ToolProvider`.
 *
 * A call runs the command (`command[0]` with the rest as its arguments, no
 * shell) in the agent's working directory (its workspace when its backend
 * sets `cwd`, else the run's log directory), writes the call's JSON arguments to its stdin and closes
 * it; what it prints on stdout is the result. A non-zero exit (or a signal) is
 * a `ToolRunError` with the exit status and the tail of stderr. Interrupting a
 * call (the runner's timeout, a cancelled round, the run's end) kills the
 * command and every process it started (its process group, and the PID
 * namespace it runs in where `unshare` can make one: `containedCommand` in
 * `child-process.ts`), and so does its end: nothing it started outlives the
 * call, not even in a session of its own. Time and size
 * limits are the tool runner's (`tool-runner.ts`); what a command prints is held only up to just past the cap the model is
 * given (a command that prints more is stopped, and its result cut by the
 * runner), and of its stderr only the tail an error quotes.
 *
 * The environment a command gets holds no API key: `toolEnvironment` drops
 * every provider's key variable (`presets.ts`), every variable whose name
 * looks like a secret (`*_API_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, ...)
 * and every variable whose value is one of the run's keys.
 *
 * `commandToolProblem` says, before any call, why a tool's program cannot be
 * run (found as a call finds it: on the `PATH`, or as a path from the
 * directory it runs in, and executable), for the run's start and `doctor`.
 *
 * Words: a *command tool* is a tool the config defines as a program to run.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { CommandToolConfig } from "../../domain/config/index.ts"
import { PRESETS } from "../../domain/config/index.ts"
import type { ToolSpec } from "../../domain/llm.ts"
import { MAX_TOOL_RESULT_CHARS } from "../../domain/tools/calls.ts"
import type { Env } from "../backends/index.ts"
import { containedCommand, forgetGroup, type GroupProcess, killGroup, readTail, readUpTo, spawnInGroup } from "./child-process.ts"
import { type ProvidedTool, type ToolProvider, ToolRunError } from "./tool-provider.ts"

/** Characters of stderr an error result quotes, from its end. */
const STDERR_TAIL = 2_000

const SECRET_NAME = /(API_?KEY|(^|_)KEY$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|(^|_)AUTH($|_))/i
const KEY_VARIABLES: ReadonlySet<string> = new Set(Object.values(PRESETS).flatMap((p) => p.keyEnv))

/** `env` without anything that may be a credential: key variables, secret-looking names, and any value in `secrets`. */
export const toolEnvironment = (env: Env, secrets: ReadonlyArray<string> = []): Record<string, string> => {
  const hidden = new Set(secrets.filter((s) => s.length > 0))
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || KEY_VARIABLES.has(name) || SECRET_NAME.test(name) || hidden.has(value)) continue
    out[name] = value
  }
  return out
}

/** The tool as the model sees it: the config's parameters schema (an object schema), or one that takes no arguments. */
export const commandToolSpec = (tool: CommandToolConfig): ToolSpec => {
  const p = (tool.parameters ?? {}) as Record<string, unknown>
  const properties = p.properties !== null && typeof p.properties === "object" ? (p.properties as Record<string, unknown>) : {}
  const required = Array.isArray(p.required) ? p.required.filter((r): r is string => typeof r === "string") : []
  return {
    name: tool.name,
    description: tool.description ?? `Runs ${tool.command[0]}`,
    parameters: {
      type: "object",
      properties,
      required,
      ...(typeof p.additionalProperties === "boolean" ? { additionalProperties: p.additionalProperties } : {}),
    },
  }
}

const tail = (text: string): string => (text.length > STDERR_TAIL ? `…${text.slice(text.length - STDERR_TAIL)}` : text).trim()

/**
 * Bytes of stdout kept: enough for a result one character over the cap the
 * model is given (`MAX_TOOL_RESULT_CHARS`, 4 bytes a character at most), so the
 * runner still cuts it with its note; a command that prints more is stopped.
 */
const STDOUT_KEPT = (MAX_TOOL_RESULT_CHARS + 1) * 4

/** Why `tool`'s program cannot be run in `cwd` with `PATH` `path`, or null when a call would find it. */
export const commandToolProblem = (tool: CommandToolConfig, cwd: string, path: string): string | null => {
  const program = tool.command[0]!
  if (Bun.which(program, { PATH: path, cwd }) !== null) return null
  if (!program.includes("/")) return `${program} is not on the PATH`
  const stat = fs.statSync(nodePath.resolve(cwd, program), { throwIfNoEntry: false })
  const where = nodePath.isAbsolute(program) ? "" : ` (from ${cwd})`
  if (stat === undefined) return `${program} does not exist${where}`
  return `${program} is ${stat.isDirectory() ? "a directory" : "not executable"}${where}`
}

/**
 * Runs `command` with `input` on stdin; its stdout, or a `ToolRunError`. Interrupting it kills the process.
 * `explain` may say why a failed run failed from the tail of its stderr (null: the exit status and the tail).
 */
export const runCommand = (
  command: ReadonlyArray<string>,
  input: string,
  cwd: string,
  env: Record<string, string>,
  explain: (stderrTail: string) => string | null = () => null,
): Effect.Effect<string, ToolRunError> =>
  Effect.async<string, ToolRunError>((resume) => {
    let proc: GroupProcess<"pipe">
    try {
      // Resolved here, so that a missing program is "cannot start", not the exit of the wrapper that runs it.
      const program = Bun.which(command[0]!, { PATH: env.PATH ?? "", cwd })
      if (program === null) throw new Error("no such program")
      const [contained, ...args] = containedCommand(program, command.slice(1))
      proc = spawnInGroup(contained!, args, { cwd, env, stdin: "pipe" })
    } catch (e) {
      resume(
        Effect.fail(
          new ToolRunError({ reason: "failed", detail: `cannot start ${command[0]}: ${e instanceof Error ? e.message : String(e)}` }),
        ),
      )
      return
    }
    // A command that prints without end is stopped once its output is past what the model could be given.
    let overflowed = false
    const stdout = readUpTo(proc.stdout, STDOUT_KEPT, () => {
      overflowed = true
      killGroup(proc.pid)
    })
    const stderr = readTail(proc.stderr, STDERR_TAIL + 1)
    // A command that exits without reading its stdin closes the pipe: that is not an error of the call.
    Promise.resolve()
      .then(async () => {
        proc.stdin.write(input)
        await proc.stdin.end()
      })
      .catch(() => undefined)
    // What the command left running in its group (a process in the background) ends with it.
    void proc.exited.then(() => (killGroup(proc.pid), forgetGroup(proc.pid)))
    void Promise.all([proc.exited, stdout, stderr]).then(([code, out, err]) => {
      // Over the cap: its output so far, which the runner cuts with its note.
      if (code === 0 || overflowed) return resume(Effect.succeed(out))
      const said = proc.signalCode === null ? explain(err) : null
      if (said !== null) return resume(Effect.fail(new ToolRunError({ reason: "failed", detail: said })))
      const how = proc.signalCode !== null ? `was stopped by ${proc.signalCode}` : `exited with ${code}`
      const why = tail(err)
      resume(Effect.fail(new ToolRunError({ reason: "failed", detail: `${command[0]} ${how}${why === "" ? "" : `: ${why}`}` })))
    })
    return Effect.sync(() => killGroup(proc.pid))
  })

/** The command tools of one agent: run in `cwd` with `env` (already cleared of keys by `toolEnvironment`). */
export const makeCommandTools = (tools: ReadonlyArray<CommandToolConfig>, cwd: string, env: Record<string, string>): ToolProvider => {
  const byName = new Map(tools.map((t) => [t.name, t]))
  const provided: ReadonlyArray<ProvidedTool> = tools.map((t) => ({ spec: commandToolSpec(t), server: null }))
  return {
    tools: provided,
    run: (name, args) => {
      const tool = byName.get(name)
      if (tool === undefined) return Effect.fail(new ToolRunError({ reason: "unknown_tool", detail: `no command tool named ${name}` }))
      return runCommand(tool.command, JSON.stringify(args), cwd, env)
    },
  }
}
