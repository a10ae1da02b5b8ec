/**
 * The command lines of the commands that read runs: `viewer`, `resume`,
 * `replay`, `status`, `sessions` and `doctor`.
 *
 * Each takes the words after its command and returns its `Invocation` (or
 * `help` for `--help`), or a one-line `UsageError`: a flag another command
 * takes, a missing or extra LOG_DIR, a value out of range. Pure.
 */
import { Either } from "effect"
import { DEFAULT_PORT } from "../help.ts"
import { joinNegativeValues, parseStrict, usage } from "./flags.ts"
import type { Invocation, UsageError } from "./invocation.ts"

const viewerOptions = {
  pick: { type: "boolean" },
  "replay-speed": { type: "string" },
  web: { type: "boolean" },
  port: { type: "string" },
  "no-browser": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const

/** `viewer [LOG_DIR] [--pick] [--replay-speed X] [--web [--port N] [--no-browser]]`. */
export const parseViewer = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(joinNegativeValues(argv), viewerOptions, "viewer")
  if (Either.isLeft(result)) return Either.left(result.left)
  const parsed = result.right
  const v = parsed.values
  if (v.help) return Either.right({ _tag: "help" })
  if (parsed.positionals.length > 1) return usage("conflict", `viewer takes one LOG_DIR, found ${parsed.positionals.length}`)
  const logDir = parsed.positionals[0] ?? null
  if (logDir !== null && v.pick) return usage("conflict", "use either LOG_DIR or --pick")
  const speed = v["replay-speed"] === undefined ? 0 : Number(v["replay-speed"])
  if (!Number.isFinite(speed) || speed < 0)
    return usage("bad_value", `--replay-speed: expected a number of 0 or more, found ${JSON.stringify(v["replay-speed"])}`)
  const port = v.port === undefined ? DEFAULT_PORT : Number(v.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return usage("bad_value", `--port: expected a port number, found ${JSON.stringify(v.port)}`)
  if (!v.web && (v.port !== undefined || v["no-browser"])) return usage("conflict", "--port and --no-browser go with --web")
  return Either.right({
    _tag: "viewer",
    logDir,
    pick: v.pick === true,
    replaySpeed: speed,
    web: v.web === true,
    port,
    openBrowser: v["no-browser"] !== true,
  })
}

const logDirOptions = {
  automation: { type: "boolean" },
  check: { type: "boolean" },
  out: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const

/** `resume`, `replay` and `status`: one LOG_DIR and their own flags. */
export const parseLogDirCommand = (
  command: "resume" | "replay" | "status",
  argv: ReadonlyArray<string>,
): Either.Either<Invocation, UsageError> => {
  const allowed = { resume: ["automation"], replay: ["check", "out"], status: ["json"] }[command]
  const result = parseStrict(argv, logDirOptions, command, [...allowed, "help"])
  if (Either.isLeft(result)) return Either.left(result.left)
  const parsed = result.right
  const v = parsed.values
  if (v.help) return Either.right({ _tag: "help" })
  const extra = Object.keys(v).find((k) => !allowed.includes(k))
  if (extra !== undefined) return usage("unknown_option", `${command} does not take --${extra}`)
  if (parsed.positionals.length !== 1) return usage("missing_value", `${command} takes one LOG_DIR, found ${parsed.positionals.length}`)
  const logDir = parsed.positionals[0]!
  switch (command) {
    case "resume":
      return Either.right({ _tag: "resume", logDir, automation: v.automation === true })
    case "replay":
      return Either.right({ _tag: "replay", logDir, check: v.check === true, outDir: v.out ?? null })
    case "status":
      return Either.right({ _tag: "status", logDir, json: v.json === true })
  }
}

const doctorOptions = {
  config: { type: "string", short: "c" },
  help: { type: "boolean", short: "h" },
} as const

/** `doctor [--config FILE]`. */
export const parseDoctor = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(argv, doctorOptions, "doctor")
  if (Either.isLeft(result)) return Either.left(result.left)
  if (result.right.values.help) return Either.right({ _tag: "help" })
  if (result.right.positionals.length > 0)
    return usage(
      "conflict",
      `doctor takes no arguments, found ${JSON.stringify(result.right.positionals[0])} (the config goes with --config)`,
    )
  return Either.right({ _tag: "doctor", configPath: result.right.values.config ?? null })
}

/** `sessions [--json]`. */
export const parseSessions = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(argv, { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const, "sessions")
  if (Either.isLeft(result)) return Either.left(result.left)
  if (result.right.values.help) return Either.right({ _tag: "help" })
  if (result.right.positionals.length > 0)
    return usage("conflict", `sessions takes no argument, found ${JSON.stringify(result.right.positionals[0])}`)
  return Either.right({ _tag: "sessions", json: result.right.values.json === true })
}
