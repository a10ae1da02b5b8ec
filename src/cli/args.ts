/**
 * The command line: argv in, a typed `Invocation` out, or a `UsageError`.
 *
 * `massgen [options] "question"` runs a coordination; `--validate FILE` checks
 * a config; `--version` and `--help` print and exit. A usage error names the
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

export type Invocation =
  | RunArgs
  | { readonly _tag: "validate"; readonly path: string; readonly json: boolean }
  | { readonly _tag: "version" }
  | { readonly _tag: "help" }

export const HELP = `massgen: several LLM agents answer one question, vote, and present the best answer.

Usage:
  massgen [options] --config FILE "question"
  massgen --model MODEL "question"            one agent, backend inferred from the model
  massgen --models M1,M2,M3 "question"        one agent per model
  massgen --validate FILE [--json]            check a config and print its problems, or "valid"

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

export const parseInvocation = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  let parsed
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true })
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e)
    const code = (e as { code?: string }).code
    return usage(code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" ? "missing_value" : "unknown_option", text.split("\n")[0] ?? text)
  }
  const v = parsed.values
  if (v.help) return Either.right({ _tag: "help" })
  if (v.version) return Either.right({ _tag: "version" })
  if (v.validate !== undefined) return Either.right({ _tag: "validate", path: v.validate, json: v.json === true })
  const sources = [v.config, v.model, v.models].filter((x) => x !== undefined).length
  if (sources > 1) return usage("conflict", "use only one of --config, --model and --models")
  if (sources === 0) return usage("missing_config", "a config is required: --config FILE, --model MODEL or --models M1,M2")
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
