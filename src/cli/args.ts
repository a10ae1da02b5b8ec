/**
 * The command line: argv in, a typed `Invocation` out, or a `UsageError`.
 *
 * `massgen [options] "question"` runs a coordination; `--validate FILE` checks
 * a config; `massgen viewer ...` watches or replays a run (`ViewerArgs`);
 * `--version` and `--help` print and exit. A usage error is one line naming
 * the flag or argument at fault and exits 1 (a configuration error): an
 * unknown flag with the closest known one and a pointer to `--help`, a first
 * word a typo away from a command (`stauts`) with the command it may be
 * (`COMMAND_TYPO_RULE`). Parsing is pure: a run's question is a
 * `QuestionSource` (the words, standard input, or a file) that `question.ts`
 * reads. The help text (`HELP`, in `help.ts`, so that `--help` needs no
 * parser) lists every flag parsed here.
 */
import { type ParseArgsOptionsConfig, parseArgs } from "node:util"
import { Either, Schema } from "effect"
import { nameProblem } from "../domain/run-paths.ts"
import { closest } from "./did-you-mean.ts"
import { COMMANDS, DEFAULT_PORT, DEFAULT_SERVE_PORT } from "./help.ts"

export { COMMAND_TYPO_RULE, HELP } from "./help.ts"

export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  reason: Schema.Literal("unknown_option", "unknown_command", "missing_value", "missing_question", "missing_config", "conflict", "bad_value"),
  detail: Schema.String,
}) {
  override get message(): string {
    return this.detail
  }
}

/** Where a run's question comes from: the words after the options, standard input (`-`, or piped), or `--question-file`. */
export type QuestionSource =
  | { readonly _tag: "words"; readonly text: string }
  /** `explicit`: the question was `-`; otherwise none was given and standard input is read only when it is not a terminal. */
  | { readonly _tag: "stdin"; readonly explicit: boolean }
  | { readonly _tag: "file"; readonly path: string }

/** A run as parsed, before its question is read. */
export interface RunInvocation extends Omit<RunArgs, "question"> {
  readonly question: QuestionSource
}

export interface RunArgs {
  readonly _tag: "run"
  readonly question: string
  readonly configPath: string | null
  /** The flag the agents come from when there is no config file, as the user typed it. */
  readonly modelsFlag: "--model" | "--models" | null
  readonly models: ReadonlyArray<string>
  readonly backend: string | null
  readonly baseUrl: string | null
  readonly systemMessage: string | null
  readonly automation: boolean
  readonly noDisplay: boolean
  readonly orchestratorTimeout: number | null
  /** The session the run is a turn of: a named one (`--session-id`), the most recent (`--continue`), or none. */
  readonly session?: { readonly _tag: "id"; readonly id: string } | { readonly _tag: "continue" } | null
  /** `--quick`: MassGen's quick mode (one answer per agent, no presentation; `quickSettings`). */
  readonly quick: boolean
}

export interface ViewerArgs {
  readonly _tag: "viewer"
  readonly logDir: string | null
  readonly pick: boolean
  /** 0: replay at once; X: recorded gaps divided by X. */
  readonly replaySpeed: number
  readonly web: boolean
  readonly port: number
  readonly openBrowser: boolean
}

/** `massgen serve`: the configs it serves and how (`cli/serve/`). */
export interface ServeArgs {
  readonly _tag: "serve"
  readonly configPath: string | null
  readonly configDir: string | null
  readonly host: string
  readonly port: number
  readonly maxConcurrentRuns: number
  readonly maxQueued: number
  /** The environment variable that holds the bearer token clients must send; null: no auth. */
  readonly apiKeyEnv: string | null
  /** How long a drain (SIGTERM) lets running runs finish before stopping them. */
  readonly drainSeconds: number
}

export interface ValidateArgs {
  readonly _tag: "validate"
  readonly path: string
  readonly json: boolean
  /** `--strict`: warnings make the config invalid too. */
  readonly strict: boolean
  /** `--check-keys`: a missing API key or unset `${VAR}` is an error, as in a run. */
  readonly checkKeys: boolean
}

/** `massgen batch ITEMS.jsonl --config FILE`: many runs, one per line of the items file (`cli/batch/`). */
export interface BatchArgs {
  readonly _tag: "batch"
  readonly itemsPath: string
  readonly configPath: string
  readonly concurrency: number
  readonly outDir: string | null
  readonly automation: boolean
  /** `--engine postgres://...`: queue the items for workers instead of running them here. */
  readonly engine: string | null
}

export type Invocation =
  | RunInvocation
  | ServeArgs
  | BatchArgs
  | { readonly _tag: "worker"; readonly engine: string; readonly concurrency: number; readonly takeoverSeconds: number }
  | { readonly _tag: "batch_status" | "batch_export"; readonly engine: string; readonly batch: string; readonly outDir: string | null }
  | ViewerArgs
  | { readonly _tag: "resume"; readonly logDir: string; readonly automation: boolean }
  | { readonly _tag: "replay"; readonly logDir: string; readonly check: boolean; readonly outDir: string | null }
  | { readonly _tag: "status"; readonly logDir: string; readonly json: boolean }
  | { readonly _tag: "sessions"; readonly json: boolean }
  | { readonly _tag: "doctor"; readonly configPath: string | null }
  | ValidateArgs
  | { readonly _tag: "version" }
  | { readonly _tag: "help" }

const options = {
  config: { type: "string", short: "c" },
  model: { type: "string" },
  models: { type: "string" },
  backend: { type: "string" },
  "base-url": { type: "string" },
  "system-message": { type: "string" },
  automation: { type: "boolean" },
  "no-display": { type: "boolean" },
  "orchestrator-timeout": { type: "string" },
  "question-file": { type: "string" },
  "session-id": { type: "string" },
  continue: { type: "boolean" },
  validate: { type: "string" },
  json: { type: "boolean" },
  strict: { type: "boolean" },
  "check-keys": { type: "boolean" },
  quick: { type: "boolean" },
  version: { type: "boolean", short: "v" },
  help: { type: "boolean", short: "h" },
} as const

const usage = (reason: UsageError["reason"], detail: string) => Either.left(new UsageError({ reason, detail }))

const SEE_HELP = "see massgen --help"

/**
 * `argv` parsed against `options` (`command` names the subcommand in messages),
 * or a one-line usage error: an unknown flag (with the closest of `known`,
 * which defaults to every option), a flag without its value, or a value for
 * a flag that takes none.
 */
const parseStrict = <const O extends ParseArgsOptionsConfig>(
  argv: ReadonlyArray<string>,
  options: O,
  command: string | null,
  known: ReadonlyArray<string> = Object.keys(options),
): Either.Either<ReturnType<typeof parseArgs<{ args: Array<string>; options: O; allowPositionals: true; strict: true }>>, UsageError> => {
  const args = [...argv]
  const where = command === null ? "" : ` for massgen ${command}`
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true })
  for (const token of tokens) {
    if (token.kind !== "option") continue
    const option = options[token.name]
    if (option === undefined) {
      const meant = token.rawName.startsWith("--") ? closest(token.name, known) : null
      return usage("unknown_option", `unknown option ${token.rawName}${where}${meant === null ? "" : `; did you mean --${meant}?`} (${SEE_HELP})`)
    }
    const flag = `--${token.name}`
    if (option.type === "boolean" && token.value !== undefined) return usage("bad_value", `${flag} takes no value, found ${JSON.stringify(token.value)}`)
    if (option.type === "string" && (token.value === undefined || (!token.inlineValue && token.value.startsWith("-")))) {
      const after = token.value === undefined ? "" : `, found ${token.value} after it (a value that starts with "-" goes as ${flag}=VALUE)`
      return usage("missing_value", `${flag} needs a value${after}`)
    }
  }
  try {
    return Either.right(parseArgs({ args, options, allowPositionals: true, strict: true }))
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e)
    return usage("bad_value", `${text.split("\n")[0] ?? text} (${SEE_HELP})`)
  }
}

/** A word that names a file or directory rather than asks: it has a slash, or it is a log directory's name. */
const looksLikePath = (word: string): boolean => /[/\\]/.test(word) || word.startsWith("log_") || word === "." || word === ".."

/** The command a mistyped first word stands for, under `COMMAND_TYPO_RULE`, or null. */
const mistypedCommand = (argv: ReadonlyArray<string>): string | null => {
  const [first, next] = argv
  if (first === undefined || first.startsWith("-")) return null
  const meant = closest(first, COMMANDS)
  if (meant === null) return null
  return next === undefined || next.startsWith("-") || looksLikePath(next) ? meant : null
}

/** `--flag -1` as `--flag=-1`: parseArgs would take a negative number for an option and refuse it. */
const joinNegativeValues = (argv: ReadonlyArray<string>): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const next = argv[i + 1]
    if (a.startsWith("--") && a !== "--" && !a.includes("=") && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`)
      i += 1
    } else out.push(a)
  }
  return out
}

const viewerOptions = {
  pick: { type: "boolean" },
  "replay-speed": { type: "string" },
  web: { type: "boolean" },
  port: { type: "string" },
  "no-browser": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const

const parseViewer = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(joinNegativeValues(argv), viewerOptions, "viewer")
  if (Either.isLeft(result)) return Either.left(result.left)
  const parsed = result.right
  const v = parsed.values
  if (v.help) return Either.right({ _tag: "help" })
  if (parsed.positionals.length > 1) return usage("conflict", `viewer takes one LOG_DIR, found ${parsed.positionals.length}`)
  const logDir = parsed.positionals[0] ?? null
  if (logDir !== null && v.pick) return usage("conflict", "use either LOG_DIR or --pick")
  const speed = v["replay-speed"] === undefined ? 0 : Number(v["replay-speed"])
  if (!Number.isFinite(speed) || speed < 0) return usage("bad_value", `--replay-speed: expected a number of 0 or more, found ${JSON.stringify(v["replay-speed"])}`)
  const port = v.port === undefined ? DEFAULT_PORT : Number(v.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usage("bad_value", `--port: expected a port number, found ${JSON.stringify(v.port)}`)
  if (!v.web && (v.port !== undefined || v["no-browser"])) return usage("conflict", "--port and --no-browser go with --web")
  return Either.right({ _tag: "viewer", logDir, pick: v.pick === true, replaySpeed: speed, web: v.web === true, port, openBrowser: v["no-browser"] !== true })
}

const logDirOptions = {
  automation: { type: "boolean" },
  check: { type: "boolean" },
  out: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const

/** `resume`, `replay` and `status`: one LOG_DIR and their own flags. */
const parseLogDirCommand = (command: "resume" | "replay" | "status", argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
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
const parseDoctor = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(argv, doctorOptions, "doctor")
  if (Either.isLeft(result)) return Either.left(result.left)
  if (result.right.values.help) return Either.right({ _tag: "help" })
  if (result.right.positionals.length > 0) return usage("conflict", `doctor takes no arguments, found ${JSON.stringify(result.right.positionals[0])} (the config goes with --config)`)
  return Either.right({ _tag: "doctor", configPath: result.right.values.config ?? null })
}

const serveOptions = {
  config: { type: "string", short: "c" },
  "config-dir": { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  "max-concurrent-runs": { type: "string" },
  "max-queued": { type: "string" },
  "api-key-env": { type: "string" },
  "drain-seconds": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const

/** A whole number flag value from `min` up, or the usage error naming it. */
const wholeNumber = (flag: string, value: string | undefined, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): Either.Either<number, UsageError> => {
  if (value === undefined) return Either.right(fallback)
  const n = Number(value)
  return Number.isInteger(n) && n >= min && n <= max ? Either.right(n) : usage("bad_value", `--${flag}: expected a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ""}, found ${JSON.stringify(value)}`)
}

const parseServe = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(argv, serveOptions, "serve")
  if (Either.isLeft(result)) return Either.left(result.left)
  const { values: v, positionals } = result.right
  if (v.help) return Either.right({ _tag: "help" })
  if (positionals.length > 0) return usage("conflict", `serve takes no question or path, found ${JSON.stringify(positionals[0])} (the config goes with --config)`)
  if ((v.config === undefined) === (v["config-dir"] === undefined)) return usage("missing_config", "serve needs one of --config FILE or --config-dir DIR")
  return Either.gen(function* () {
    const port = yield* wholeNumber("port", v.port, DEFAULT_SERVE_PORT, 0, 65535)
    const maxConcurrentRuns = yield* wholeNumber("max-concurrent-runs", v["max-concurrent-runs"], 4, 1)
    const maxQueued = yield* wholeNumber("max-queued", v["max-queued"], 64, 0)
    const drainSeconds = yield* wholeNumber("drain-seconds", v["drain-seconds"], 30, 0)
    const apiKeyEnv = v["api-key-env"] ?? null
    if (apiKeyEnv === "") return yield* usage("bad_value", "--api-key-env: expected the name of an environment variable")
    return {
      _tag: "serve",
      configPath: v.config ?? null,
      configDir: v["config-dir"] ?? null,
      host: v.host ?? "127.0.0.1",
      port,
      maxConcurrentRuns,
      maxQueued,
      apiKeyEnv,
      drainSeconds,
    } satisfies ServeArgs
  })
}

const batchOptions = {
  config: { type: "string", short: "c" },
  concurrency: { type: "string" },
  out: { type: "string" },
  automation: { type: "boolean" },
  engine: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const

/** The default `--concurrency` of a batch. */
export const DEFAULT_BATCH_CONCURRENCY = 4

const parseBatch = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(joinNegativeValues(argv), batchOptions, "batch")
  if (Either.isLeft(result)) return Either.left(result.left)
  const { values: v, positionals } = result.right
  if (v.help) return Either.right({ _tag: "help" })
  const sub = positionals[0]
  if ((sub === "status" || sub === "export") && v.engine !== undefined) {
    if (positionals.length !== 2) return usage("missing_value", `batch ${sub} takes one batch name, found ${positionals.length - 1}`)
    return Either.right({ _tag: sub === "status" ? "batch_status" : "batch_export", engine: v.engine, batch: positionals[1]!, outDir: v.out ?? null })
  }
  if (positionals.length !== 1) return usage("missing_value", `batch takes one ITEMS.jsonl file, found ${positionals.length}`)
  if (v.config === undefined) return usage("missing_config", "batch needs a config: --config FILE")
  const concurrency = concurrencyOf(v.concurrency)
  if (Either.isLeft(concurrency)) return Either.left(concurrency.left)
  if (v.engine !== undefined && !/^postgres(ql)?:\/\//.test(v.engine)) return usage("bad_value", "--engine: expected a postgres://... URL")
  return Either.right({
    _tag: "batch",
    itemsPath: positionals[0]!,
    configPath: v.config,
    concurrency: concurrency.right,
    outDir: v.out ?? null,
    automation: v.automation === true,
    engine: v.engine ?? null,
  })
}

const concurrencyOf = (value: string | undefined): Either.Either<number, UsageError> => {
  const n = value === undefined ? DEFAULT_BATCH_CONCURRENCY : Number(value)
  return Number.isInteger(n) && n >= 1 ? Either.right(n) : usage("bad_value", `--concurrency: expected a whole number of 1 or more, found ${JSON.stringify(value)}`)
}

const workerOptions = { engine: { type: "string" }, concurrency: { type: "string" }, "takeover-seconds": { type: "string" }, help: { type: "boolean", short: "h" } } as const

/** The default `--takeover-seconds` of a worker (`services/batch/item-lease.ts`). */
export const DEFAULT_TAKEOVER_SECONDS = 3

/** `massgen worker --engine postgres://... [--concurrency N] [--takeover-seconds S]`. */
const parseWorker = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(argv, workerOptions, "worker")
  if (Either.isLeft(result)) return Either.left(result.left)
  const { values: v, positionals } = result.right
  if (v.help) return Either.right({ _tag: "help" })
  if (positionals.length > 0) return usage("conflict", `worker takes no arguments, found ${positionals.join(" ")}`)
  if (v.engine === undefined || !/^postgres(ql)?:\/\//.test(v.engine)) return usage("missing_value", "worker needs --engine postgres://...")
  const concurrency = concurrencyOf(v.concurrency)
  if (Either.isLeft(concurrency)) return Either.left(concurrency.left)
  const takeover = v["takeover-seconds"] === undefined ? DEFAULT_TAKEOVER_SECONDS : Number(v["takeover-seconds"])
  if (!Number.isFinite(takeover) || takeover < 0.5 || takeover > 3600)
    return usage("bad_value", `--takeover-seconds: expected a number of seconds from 0.5 to 3600, found ${JSON.stringify(v["takeover-seconds"])}`)
  return Either.right({ _tag: "worker", engine: v.engine, concurrency: concurrency.right, takeoverSeconds: takeover })
}

export const parseInvocation = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  if (argv[0] === "viewer") return parseViewer(argv.slice(1))
  if (argv[0] === "doctor") return parseDoctor(argv.slice(1))
  if (argv[0] === "serve") return parseServe(argv.slice(1))
  if (argv[0] === "sessions") {
    const result = parseStrict(argv.slice(1), { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const, "sessions")
    if (Either.isLeft(result)) return Either.left(result.left)
    if (result.right.values.help) return Either.right({ _tag: "help" })
    if (result.right.positionals.length > 0) return usage("conflict", `sessions takes no argument, found ${JSON.stringify(result.right.positionals[0])}`)
    return Either.right({ _tag: "sessions", json: result.right.values.json === true })
  }
  if (argv[0] === "batch") return parseBatch(argv.slice(1))
  if (argv[0] === "worker") return parseWorker(argv.slice(1))
  if (argv[0] === "resume" || argv[0] === "replay" || argv[0] === "status") return parseLogDirCommand(argv[0], argv.slice(1))
  const typo = mistypedCommand(argv)
  if (typo !== null) {
    return usage("unknown_command", `unknown command ${argv[0]}; did you mean massgen ${typo}? (a one-word question goes after the options; ${SEE_HELP})`)
  }
  // `--validate --config FILE` (the automation guide's form): --validate then takes its file from --config.
  const joined = joinNegativeValues(argv)
  const args = joined.map((a, i) => (a === "--validate" && (joined[i + 1] === undefined || joined[i + 1]!.startsWith("-")) ? "--validate=" : a))
  const result = parseStrict(args, options, null)
  if (Either.isLeft(result)) return Either.left(result.left)
  const parsed = result.right
  const v = parsed.values
  if (v.help) return Either.right({ _tag: "help" })
  if (v.version) return Either.right({ _tag: "version" })
  if (v.validate !== undefined) {
    const path = v.validate !== "" ? v.validate : v.config
    if (path === undefined) return usage("missing_config", "--validate needs a config file: --validate FILE or --validate --config FILE")
    return Either.right({ _tag: "validate", path, json: v.json === true, strict: v.strict === true, checkKeys: v["check-keys"] === true })
  }
  const validateOnly = (["json", "strict", "check-keys"] as const).filter((flag) => v[flag] !== undefined)
  if (validateOnly.length > 0) return usage("conflict", `${validateOnly.map((f) => `--${f}`).join(", ")} only ${validateOnly.length === 1 ? "applies" : "apply"} to --validate`)
  const sources = [v.config, v.model, v.models].filter((x) => x !== undefined).length
  if (sources > 1) return usage("conflict", "use only one of --config, --model and --models")
  if (sources === 0) return usage("missing_config", "a config is required: --config FILE, --model MODEL or --models M1,M2")
  // These shape the agents --model/--models make; a config file says the same in its own keys.
  const modelOnly = (["backend", "base-url", "system-message"] as const).filter((flag) => v[flag] !== undefined)
  if (v.config !== undefined && modelOnly.length > 0) {
    const keys = { backend: "backend.type", "base-url": "backend.base_url", "system-message": "system_message" }
    return usage(
      "conflict",
      `${modelOnly.map((f) => `--${f}`).join(", ")} only ${modelOnly.length === 1 ? "applies" : "apply"} to --model/--models; with --config, set ${modelOnly.map((f) => keys[f]).join(", ")} in the config`,
    )
  }
  const words = parsed.positionals.join(" ").trim()
  const file = v["question-file"]
  if (file !== undefined && words !== "") return usage("conflict", "give the question either as words or with --question-file, not both")
  const question: QuestionSource =
    file !== undefined
      ? { _tag: "file", path: file }
      : words === "" || words === "-"
        ? { _tag: "stdin", explicit: words === "-" }
        : { _tag: "words", text: words }
  let timeout: number | null = null
  if (v["orchestrator-timeout"] !== undefined) {
    timeout = Number(v["orchestrator-timeout"])
    if (!Number.isFinite(timeout) || timeout <= 0) {
      return usage("bad_value", `--orchestrator-timeout: expected a number of seconds above 0, found ${JSON.stringify(v["orchestrator-timeout"])}`)
    }
  }
  const sessionId = v["session-id"]
  if (sessionId !== undefined && v.continue) return usage("conflict", "use either --session-id ID or --continue")
  if (sessionId !== undefined) {
    const problem = nameProblem(sessionId)
    if (problem !== null) return usage("bad_value", `--session-id: ${problem}`)
  }
  const models = v.models !== undefined ? v.models.split(",").map((m) => m.trim()).filter((m) => m !== "") : v.model !== undefined ? [v.model] : []
  if ((v.model !== undefined || v.models !== undefined) && models.length === 0) return usage("bad_value", "--models: expected at least one model name")
  return Either.right({
    _tag: "run",
    question,
    configPath: v.config ?? null,
    modelsFlag: v.model !== undefined ? "--model" : v.models !== undefined ? "--models" : null,
    models,
    backend: v.backend ?? null,
    baseUrl: v["base-url"] ?? null,
    systemMessage: v["system-message"] ?? null,
    automation: v.automation === true,
    noDisplay: v["no-display"] === true,
    orchestratorTimeout: timeout,
    session: sessionId !== undefined ? { _tag: "id", id: sessionId } : v.continue ? { _tag: "continue" } : null,
    quick: v.quick === true,
  })
}
