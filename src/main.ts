/**
 * The `massgen` executable: parse arguments, run, render errors, exit.
 *
 * Errors are rendered only here, as one line on stderr (`massgen: ...`), and
 * mapped to exit codes: 1 for usage and configuration errors (a bad flag, a bad
 * config, a missing API key), 2 for execution errors; a finished run returns
 * its own code (`run-command.ts`). SIGINT and SIGTERM stop a run cleanly: the
 * first asks the orchestrator to stop (final status.json, a stop event, exit
 * 4); a second one exits at once with 4. `massgen viewer` stops on the first
 * one and exits 0; a missing or foreign log directory is an error (exit 1).
 */
import { Effect, Either } from "effect"
import pkg from "../package.json" with { type: "json" }
import { HELP, parseInvocation } from "./cli/args.ts"
import { runCommand } from "./cli/run-command.ts"
import { validateCommand } from "./cli/validate-command.ts"
import { replayCommand } from "./cli/replay-command.ts"
import { resumeCommand } from "./cli/resume-command.ts"
import { statusCommand } from "./cli/status-command.ts"
import { readStdinLine, viewerCommand } from "./cli/viewer-command.ts"

const VERSION = pkg.version

const CONFIG_ERRORS = new Set(["UsageError", "ConfigError", "MissingKeyError", "DotEnvError", "ViewerError", "RunDirError", "RunLockError", "LogDirError"])

const stopSignal = new Promise<string>((resolve) => {
  let seen = 0
  const on = (signal: NodeJS.Signals) => () => {
    seen += 1
    if (seen > 1) process.exit(4)
    resolve(`stopped by ${signal}`)
  }
  process.on("SIGINT", on("SIGINT"))
  process.on("SIGTERM", on("SIGTERM"))
})

// A reader that went away (`massgen ... | head -1`) is not an error of the run: the run goes on, quietly.
const quietly = (stream: NodeJS.WriteStream) => {
  let closed = false
  stream.on("error", () => {
    closed = true
  })
  return (line: string) => {
    if (closed) return
    try {
      stream.write(`${line}\n`)
    } catch {
      closed = true
    }
  }
}
const print = quietly(process.stdout)
const printError = quietly(process.stderr)

const main = (argv: ReadonlyArray<string>): Effect.Effect<number> => {
  const parsed = parseInvocation(argv)
  if (Either.isLeft(parsed)) {
    printError(`massgen: ${parsed.left.message}`)
    return Effect.succeed(1)
  }
  const invocation = parsed.right
  const env = process.env
  const cwd = process.cwd()
  const cli = { env, cwd, argv, version: VERSION, interrupt: Effect.promise(() => stopSignal), print, printError }
  const program: Effect.Effect<number, { readonly _tag: string; readonly message: string }> = (() => {
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
          interrupt: Effect.promise(() => stopSignal),
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
  return program.pipe(
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

const code = await Effect.runPromise(main(process.argv.slice(2)))
process.exit(code)
