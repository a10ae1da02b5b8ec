/**
 * The command line: argv in, a typed `Invocation` out, or a `UsageError`.
 *
 * `massgen [options] "question"` runs a coordination; `--validate FILE` checks
 * a config; `massgen viewer ...` watches or replays a run (`ViewerArgs`);
 * `--version` and `--help` print and exit. A usage error names the
 * flag or argument at fault and exits 1 (a configuration error) in `main.ts`.
 * The help text lives here so that every flag is listed where it is parsed.
 */
import { parseArgs } from "node:util"
import { Either, Schema } from "effect"

export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  reason: Schema.Literal("unknown_option", "missing_value", "missing_question", "missing_config", "conflict", "bad_value"),
  detail: Schema.String,
}) {
  override get message(): string {
    return this.detail
  }
}

export interface RunArgs {
  readonly _tag: "run"
  readonly question: string
  readonly configPath: string | null
  readonly models: ReadonlyArray<string>
  readonly backend: string | null
  readonly baseUrl: string | null
  readonly systemMessage: string | null
  readonly automation: boolean
  readonly noDisplay: boolean
  readonly orchestratorTimeout: number | null
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

export type Invocation =
  | RunArgs
  | ViewerArgs
  | { readonly _tag: "resume"; readonly logDir: string; readonly automation: boolean }
  | { readonly _tag: "replay"; readonly logDir: string; readonly check: boolean; readonly outDir: string | null }
  | { readonly _tag: "status"; readonly logDir: string; readonly json: boolean }
  | { readonly _tag: "validate"; readonly path: string; readonly json: boolean }
  | { readonly _tag: "version" }
  | { readonly _tag: "help" }

/** The web view's port when `--port` is not given. */
const DEFAULT_PORT = 8000

export const HELP = `massgen: several LLM agents answer one question, vote, and present the best answer.

Usage:
  massgen [options] --config FILE "question"
  massgen --model MODEL "question"            one agent, backend inferred from the model
  massgen --models M1,M2,M3 "question"        one agent per model
  massgen --validate FILE [--json]            check a config and print its problems, or "valid"
  massgen resume LOG_DIR [--automation]      continue a run whose process stopped (crash, kill, Ctrl+C)
  massgen replay LOG_DIR [--check] [--out DIR]
                                              make a recorded run's decisions again offline, from llm_log/;
                                              --check: exit 0 if the same, else 2 and the first difference
  massgen status LOG_DIR [--json]            rebuild status.json from events.jsonl and summarise the run
  massgen viewer [LOG_DIR] [--pick] [--replay-speed X] [--web [--port N] [--no-browser]]
                                              watch a run live, or replay a finished one (read-only);
                                              without LOG_DIR the newest run; --pick lists recent runs;
                                              --web serves the view on http://127.0.0.1:${DEFAULT_PORT}

Options:
  -c, --config FILE             YAML config (agents, orchestrator, timeout_settings)
      --model MODEL             quick start with one agent
      --models M1,M2            quick start with one agent per model
      --backend TYPE            backend type for --model/--models (overrides inference)
      --base-url URL            base URL for --model/--models
      --system-message TEXT     system message for --model/--models agents
      --automation              quiet output for scripts: ~10 lines, status.json, exit codes
      --no-display              plain lines instead of the live terminal view
      --orchestrator-timeout S  overrides timeout_settings.orchestrator_timeout_seconds
      --json                    with --validate: print the result as JSON
  -v, --version                 print the version
  -h, --help                    print this help

Exit codes: 0 success, 1 configuration error, 2 execution error, 3 timeout or budget, 4 interrupted.
Logs: .massgen/massgen_logs/log_YYYYMMDD_HHMMSS_ffffff/ (MASSGEN_LOG_BASE_DIR overrides the root).`

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
  validate: { type: "string" },
  json: { type: "boolean" },
  version: { type: "boolean", short: "v" },
  help: { type: "boolean", short: "h" },
} as const

const usage = (reason: UsageError["reason"], detail: string) => Either.left(new UsageError({ reason, detail }))

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
  let parsed
  try {
    parsed = parseArgs({ args: joinNegativeValues(argv), options: viewerOptions, allowPositionals: true, strict: true })
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e)
    return usage((e as { code?: string }).code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" ? "missing_value" : "unknown_option", text.split("\n")[0] ?? text)
  }
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
  let parsed
  try {
    parsed = parseArgs({ args: [...argv], options: logDirOptions, allowPositionals: true, strict: true })
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e)
    return usage("unknown_option", text.split("\n")[0] ?? text)
  }
  const v = parsed.values
  if (v.help) return Either.right({ _tag: "help" })
  const allowed = { resume: ["automation"], replay: ["check", "out"], status: ["json"] }[command]
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

export const parseInvocation = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  if (argv[0] === "viewer") return parseViewer(argv.slice(1))
  if (argv[0] === "resume" || argv[0] === "replay" || argv[0] === "status") return parseLogDirCommand(argv[0], argv.slice(1))
  // `--validate --config FILE` (the automation guide's form): --validate then takes its file from --config.
  const joined = joinNegativeValues(argv)
  const args = joined.map((a, i) => (a === "--validate" && (joined[i + 1] === undefined || joined[i + 1]!.startsWith("-")) ? "--validate=" : a))
  let parsed
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e)
    const code = (e as { code?: string }).code
    return usage(code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" ? "missing_value" : "unknown_option", text.split("\n")[0] ?? text)
  }
  const v = parsed.values
  if (v.help) return Either.right({ _tag: "help" })
  if (v.version) return Either.right({ _tag: "version" })
  if (v.validate !== undefined) {
    const path = v.validate !== "" ? v.validate : v.config
    if (path === undefined) return usage("missing_config", "--validate needs a config file: --validate FILE or --validate --config FILE")
    return Either.right({ _tag: "validate", path, json: v.json === true })
  }
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
  const question = parsed.positionals.join(" ").trim()
  if (question === "") return usage("missing_question", 'a question is required, e.g. massgen --config team.yaml "What is 2+2?"')
  let timeout: number | null = null
  if (v["orchestrator-timeout"] !== undefined) {
    timeout = Number(v["orchestrator-timeout"])
    if (!Number.isFinite(timeout) || timeout <= 0) {
      return usage("bad_value", `--orchestrator-timeout: expected a number of seconds above 0, found ${JSON.stringify(v["orchestrator-timeout"])}`)
    }
  }
  const models = v.models !== undefined ? v.models.split(",").map((m) => m.trim()).filter((m) => m !== "") : v.model !== undefined ? [v.model] : []
  if ((v.model !== undefined || v.models !== undefined) && models.length === 0) return usage("bad_value", "--models: expected at least one model name")
  return Either.right({
    _tag: "run",
    question,
    configPath: v.config ?? null,
    models,
    backend: v.backend ?? null,
    baseUrl: v["base-url"] ?? null,
    systemMessage: v["system-message"] ?? null,
    automation: v.automation === true,
    noDisplay: v["no-display"] === true,
    orchestratorTimeout: timeout,
  })
}
