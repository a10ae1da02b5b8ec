/**
 * The `execute_command` tool (MassGen's name and arguments), as a `ToolProvider`.
 *
 * `makeCommandLine(workspace, readOnlyPaths, settings, { env, executor })`
 * gives an agent the tool: a call `{command, timeout?, work_dir?}` runs
 * `/bin/sh -c command` in the workspace (or in `work_dir`, which must lead,
 * symlinks followed, into the workspace or a read-only path), in the agent's
 * execution mode (`sandbox.ts`), with the command environment
 * (`commandEnvironment`: an allow-list from `env`, which is already cleared
 * of every key by `toolEnvironment`, `HOME` the workspace, never one of
 * `secrets`). What the config does not allow, and the dangerous commands, are
 * refused before anything starts (`ToolRunError` `refused`;
 * `domain/tools/command-line.ts` says what). The command runs in a process group of
 * its own and, in `local` and `sandbox` mode, in a PID namespace of its own:
 * when it ends, or its `timeout` (default 60 s) or the tool runner's passes,
 * or the round is cancelled, the group is killed and the namespace dies with
 * its first process, so nothing it started outlives the call, not even in a
 * session of its own (a container is killed by name). Of its stdout and stderr the result holds the
 * first bytes (`STDOUT_KEPT_BYTES`, `STDERR_KEPT_BYTES`), with a note of how
 * much more there was. A command that exits, with any code, gives a result
 * (`commandResult`: exit code, stdout, stderr, time); one that cannot start or
 * times out fails with `failed`.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Duration, Effect } from "effect"
import {
  type CommandLineSettings,
  commandArgs,
  commandEnvironment,
  commandRefusal,
  commandResult,
  EXECUTE_COMMAND,
  executeCommandSpec,
  isWithin,
  keptOutput,
  type Mounts,
  STDERR_KEPT_BYTES,
  STDOUT_KEPT_BYTES,
} from "../../domain/tools/command-line.ts"
import { forgetGroup, type GroupProcess, killGroup, readHead, spawnInGroup } from "./child-process.ts"
import type { Executor } from "./sandbox.ts"
import { type ToolProvider, ToolRunError } from "./tool-provider.ts"

const realOrSelf = (path: string): string => {
  try {
    return fs.realpathSync(path)
  } catch {
    return nodePath.resolve(path)
  }
}

export interface CommandLineDeps {
  /** massgen's environment cleared of keys (`toolEnvironment`): what the command environment is taken from, and the docker CLI's. */
  readonly env: Record<string, string>
  readonly executor: Executor
  /** The run's keys: no variable of the command environment holds one. */
  readonly secrets?: ReadonlyArray<string>
}

/** The directory a call runs in: the workspace, or its `work_dir` if that is a directory within the mounts. */
const workingDirectory = (mounts: Mounts, workDir: string | null): string | ToolRunError => {
  if (workDir === null) return mounts.workspace
  const target = nodePath.resolve(mounts.workspace, workDir)
  let real: string
  try {
    real = fs.realpathSync(target)
  } catch {
    return new ToolRunError({ reason: "failed", detail: `work_dir ${workDir} does not exist` })
  }
  if (![mounts.workspace, ...mounts.readOnly].some((root) => isWithin(real, root))) {
    return new ToolRunError({ reason: "refused", detail: `work_dir ${workDir} is outside your workspace` })
  }
  if (!fs.statSync(real).isDirectory()) return new ToolRunError({ reason: "failed", detail: `work_dir ${workDir} is not a directory` })
  return real
}

/** Runs one launched command to its end; interrupting it kills its group (and stops its container). */
const runLaunched = (executor: Executor, mounts: Mounts, cwd: string, command: string, env: Record<string, string>) =>
  Effect.async<{ code: number; stdout: string; stderr: string; seconds: number }, ToolRunError>((resume) => {
    const launch = executor.launch(mounts, cwd, command, env)
    const started = performance.now()
    let proc: GroupProcess<"ignore">
    try {
      proc = spawnInGroup(launch.program, launch.args, { cwd, env: launch.env, stdin: "ignore" })
    } catch (e) {
      resume(
        Effect.fail(
          new ToolRunError({ reason: "failed", detail: `cannot start ${launch.program}: ${e instanceof Error ? e.message : String(e)}` }),
        ),
      )
      return
    }
    // What the command left running in its group (a process in the background) ends with it, and its pipes close.
    void proc.exited.then(() => (killGroup(proc.pid), forgetGroup(proc.pid)))
    void Promise.all([proc.exited, readHead(proc.stdout, STDOUT_KEPT_BYTES), readHead(proc.stderr, STDERR_KEPT_BYTES)]).then(
      ([code, out, err]) => {
        const signal = proc.signalCode !== null ? `\n(stopped by ${proc.signalCode})` : ""
        resume(
          Effect.succeed({
            code: proc.signalCode !== null ? -1 : code,
            stdout: keptOutput(out.text, out.bytes, STDOUT_KEPT_BYTES),
            stderr: keptOutput(err.text, err.bytes, STDERR_KEPT_BYTES) + signal,
            seconds: (performance.now() - started) / 1000,
          }),
        )
      },
    )
    return Effect.sync(() => {
      killGroup(proc.pid)
      launch.stop?.()
    })
  })

/** The `execute_command` tool of one agent, run by `deps.executor` in `workspace`, able to read `readOnlyPaths` (in the sandbox, besides the system folders). */
export const makeCommandLine = (
  workspace: string,
  readOnlyPaths: ReadonlyArray<string>,
  settings: Pick<CommandLineSettings, "allowed" | "blocked" | "env" | "passEnv">,
  deps: CommandLineDeps,
): ToolProvider => {
  const mounts: Mounts = { workspace: realOrSelf(workspace), readOnly: readOnlyPaths.map(realOrSelf) }
  const env = commandEnvironment(deps.env, settings, mounts.workspace, deps.secrets)
  return {
    tools: [{ spec: executeCommandSpec, server: null }],
    run: (name, raw) => {
      if (name !== EXECUTE_COMMAND) return Effect.fail(new ToolRunError({ reason: "unknown_tool", detail: `no tool named ${name}` }))
      const args = commandArgs(raw)
      if (typeof args === "string") return Effect.fail(new ToolRunError({ reason: "bad_arguments", detail: args }))
      const refusal = commandRefusal(args.command, settings)
      if (refusal !== null) return Effect.fail(new ToolRunError({ reason: "refused", detail: refusal }))
      const cwd = workingDirectory(mounts, args.workDir)
      if (cwd instanceof ToolRunError) return Effect.fail(cwd)
      return runLaunched(deps.executor, mounts, cwd, args.command, env).pipe(
        Effect.timeoutFail({
          duration: Duration.seconds(args.timeoutSeconds),
          onTimeout: () =>
            new ToolRunError({
              reason: "failed",
              detail: `the command timed out after ${args.timeoutSeconds}s (its timeout): it and every process it started were killed`,
            }),
        }),
        Effect.map((o) =>
          commandResult({
            exitCode: o.code,
            stdout: o.stdout,
            stderr: o.stderr,
            seconds: o.seconds,
            command: args.command,
            workDir: args.workDir ?? ".",
          }),
        ),
      )
    },
  }
}
