/**
 * The `massgen` executable: parse arguments, run, render errors, exit.
 *
 * Errors are rendered only here, as one line on stderr (`massgen: ...`), and
 * mapped to exit codes: 1 for usage and configuration errors (a bad flag, a bad
 * config, a missing API key), 2 for execution errors; a finished run returns
 * its own code (`run-command.ts`). SIGINT and SIGTERM stop a run cleanly: the
 * first asks the orchestrator to stop (final status.json, a stop event, exit
 * 4); a second one exits at once with 4.
 */
import { Effect, Either } from "effect"
import pkg from "../package.json" with { type: "json" }
import { HELP, parseInvocation } from "./cli/args.ts"
import { runCommand } from "./cli/run-command.ts"
import { validateCommand } from "./cli/validate-command.ts"

const VERSION = pkg.version

const CONFIG_ERRORS = new Set(["UsageError", "ConfigError", "MissingKeyError", "DotEnvError"])

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

const print = (line: string) => {
  process.stdout.write(`${line}\n`)
}
const printError = (line: string) => {
  process.stderr.write(`${line}\n`)
}

const main = (argv: ReadonlyArray<string>): Effect.Effect<number> => {
  const parsed = parseInvocation(argv)
  if (Either.isLeft(parsed)) {
    printError(`massgen: ${parsed.left.message}`)
    return Effect.succeed(1)
  }
  const invocation = parsed.right
  const env = process.env
  const cwd = process.cwd()
  const program: Effect.Effect<number, { readonly _tag: string; readonly message: string }> = (() => {
    switch (invocation._tag) {
      case "help":
        return Effect.sync(() => (print(HELP), 0))
      case "version":
        return Effect.sync(() => (print(`massgen ${VERSION}`), 0))
      case "validate":
        return validateCommand(invocation.path, invocation.json, env, cwd, print)
      case "run":
        return runCommand(invocation, {
          env,
          cwd,
          argv,
          version: VERSION,
          interrupt: Effect.promise(() => stopSignal),
          print,
          printError,
        })
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
