/**
 * The program behind `massgen`: parses the arguments, runs the command, and
 * renders errors.
 *
 * Errors are rendered only here, as one line on stderr (`massgen: ...`), and
 * mapped to exit codes: 1 for usage and configuration errors (a bad flag, a bad
 * config, a missing API key), 2 for execution errors; a finished run returns
 * its own code (`run-command.ts`). `stopSignal` resolves on the first SIGINT or
 * SIGTERM (`main.ts` owns the handlers): a run then stops cleanly (final
 * status.json, a stop event, exit 4); `massgen viewer` stops and exits 0.
 */
import { Effect, Either } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { HELP, parseInvocation } from "./args.ts"
import { runCommand } from "./run-command.ts"
import { validateCommand } from "./validate-command.ts"
import { replayCommand } from "./replay-command.ts"
import { resumeCommand } from "./resume-command.ts"
import { statusCommand } from "./status-command.ts"
import { readStdinLine, viewerCommand } from "./viewer-command.ts"

const VERSION = pkg.version

const CONFIG_ERRORS = new Set(["UsageError", "ConfigError", "MissingKeyError", "DotEnvError", "ViewerError", "RunDirError", "RunLockError", "LogDirError"])

export interface ProgramIo {
  readonly stopSignal: Promise<string>
  readonly print: (line: string) => void
  readonly printError: (line: string) => void
}

/** Runs `massgen` with `argv`; resolves with the exit code. */
export const runProgram = (argv: ReadonlyArray<string>, io: ProgramIo): Promise<number> => Effect.runPromise(program(argv, io))

const program = (argv: ReadonlyArray<string>, { stopSignal, print, printError }: ProgramIo): Effect.Effect<number> => {
  const parsed = parseInvocation(argv)
  if (Either.isLeft(parsed)) {
    printError(`massgen: ${parsed.left.message}`)
    return Effect.succeed(1)
  }
  const invocation = parsed.right
  const env = process.env
  const cwd = process.cwd()
  const cli = { env, cwd, argv, version: VERSION, interrupt: Effect.promise(() => stopSignal), print, printError }
  const command: Effect.Effect<number, { readonly _tag: string; readonly message: string }> = (() => {
    switch (invocation._tag) {
      case "help":
        return Effect.sync(() => (print(HELP), 0))
      case "version":
        return Effect.sync(() => (print(`massgen ${VERSION}`), 0))
      case "validate":
        return validateCommand(invocation.path, invocation.json, env, cwd, print)
      case "viewer":
        return viewerCommand(invocation, {
          env,
          cwd,
          interrupt: cli.interrupt,
          print,
          printError,
          readLine: readStdinLine,
        })
      case "run":
        return runCommand(invocation, cli)
      case "resume":
        return resumeCommand(invocation, cli)
      case "replay":
        return replayCommand(invocation, cli)
      case "status":
        return statusCommand(invocation.logDir, invocation.json, print)
    }
  })()
  return command.pipe(
    Effect.catchAll((error) =>
      Effect.sync(() => {
        for (const line of error.message.split("\n")) printError(`massgen: ${line}`)
        return CONFIG_ERRORS.has(error._tag) ? 1 : 2
      }),
    ),
    Effect.catchAllDefect((defect) =>
      Effect.sync(() => {
        printError(`massgen: internal error: ${defect instanceof Error ? defect.message : String(defect)}`)
        return 2
      }),
    ),
  )
}
