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
 *
 * This file parses a run and `--validate`, and hands each other command to its
 * parser: `commands.ts` (the commands that read runs) and
 * `serve-batch.ts` (`serve`, `batch`, `worker`), both made of the shared
 * flag parsing of `flags.ts`. The types are in `invocation.ts`; all of it
 * is re-exported here.
 */
import { Either } from "effect"
import { nameProblem } from "../../domain/run-paths.ts"
import { closest } from "../../lib/did-you-mean.ts"
import { COMMANDS, DEFAULT_MAX_QUESTION_BYTES } from "../help.ts"
import { parseDoctor, parseLogDirCommand, parseSessions, parseViewer } from "./commands.ts"
import { joinNegativeValues, parseStrict, SEE_HELP, usage, wholeNumber } from "./flags.ts"
import type { Invocation, QuestionSource, UsageError } from "./invocation.ts"
import { parseBatch, parseServe, parseWorker } from "./serve-batch.ts"

export {
  type BatchArgs,
  type Invocation,
  type QuestionSource,
  type RunArgs,
  type RunInvocation,
  type ServeArgs,
  UsageError,
  type ValidateArgs,
  type ViewerArgs,
} from "./invocation.ts"
export { DEFAULT_BATCH_CONCURRENCY, DEFAULT_TAKEOVER_SECONDS } from "./serve-batch.ts"

const options = {
  config: { type: "string", short: "c" },
  // Repeatable: each `--model` is one agent, its name verbatim (commas and all); `--models` splits on commas.
  model: { type: "string", multiple: true },
  models: { type: "string" },
  backend: { type: "string" },
  "base-url": { type: "string" },
  "system-message": { type: "string" },
  automation: { type: "boolean" },
  "no-display": { type: "boolean" },
  "orchestrator-timeout": { type: "string" },
  "question-file": { type: "string" },
  // Repeatable: each `--image FILE` is one file sent with the question.
  image: { type: "string", multiple: true },
  "max-question-bytes": { type: "string" },
  "session-id": { type: "string" },
  continue: { type: "boolean" },
  validate: { type: "string" },
  json: { type: "boolean" },
  strict: { type: "boolean" },
  "check-keys": { type: "boolean" },
  quick: { type: "boolean" },
  "eval-criteria": { type: "string" },
  version: { type: "boolean", short: "v" },
  help: { type: "boolean", short: "h" },
} as const

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

export const parseInvocation = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  if (argv[0] === "viewer") return parseViewer(argv.slice(1))
  if (argv[0] === "doctor") return parseDoctor(argv.slice(1))
  if (argv[0] === "serve") return parseServe(argv.slice(1))
  if (argv[0] === "sessions") return parseSessions(argv.slice(1))
  if (argv[0] === "batch") return parseBatch(argv.slice(1))
  if (argv[0] === "worker") return parseWorker(argv.slice(1))
  if (argv[0] === "resume" || argv[0] === "replay" || argv[0] === "status") return parseLogDirCommand(argv[0], argv.slice(1))
  const typo = mistypedCommand(argv)
  if (typo !== null) {
    return usage(
      "unknown_command",
      `unknown command ${argv[0]}; did you mean massgen ${typo}? (a one-word question goes after the options; ${SEE_HELP})`,
    )
  }
  // `--validate --config FILE` (the automation guide's form): --validate then takes its file from --config.
  const joined = joinNegativeValues(argv)
  const args = joined.map((a, i) =>
    a === "--validate" && (joined[i + 1] === undefined || joined[i + 1]!.startsWith("-")) ? "--validate=" : a,
  )
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
  if (validateOnly.length > 0)
    return usage(
      "conflict",
      `${validateOnly.map((f) => `--${f}`).join(", ")} only ${validateOnly.length === 1 ? "applies" : "apply"} to --validate`,
    )
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
      return usage(
        "bad_value",
        `--orchestrator-timeout: expected a number of seconds above 0, found ${JSON.stringify(v["orchestrator-timeout"])}`,
      )
    }
  }
  const sessionId = v["session-id"]
  if (sessionId !== undefined && v.continue) return usage("conflict", "use either --session-id ID or --continue")
  if (sessionId !== undefined) {
    const problem = nameProblem(sessionId)
    if (problem !== null) return usage("bad_value", `--session-id: ${problem}`)
  }
  const maxQuestionBytes = wholeNumber("max-question-bytes", v["max-question-bytes"], DEFAULT_MAX_QUESTION_BYTES, 1)
  if (Either.isLeft(maxQuestionBytes)) return Either.left(maxQuestionBytes.left)
  const models =
    v.models !== undefined
      ? v.models
          .split(",")
          .map((m) => m.trim())
          .filter((m) => m !== "")
      : (v.model ?? []).filter((m) => m.trim() !== "")
  if ((v.model !== undefined || v.models !== undefined) && models.length === 0)
    return usage("bad_value", "--models: expected at least one model name")
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
    ...(v["eval-criteria"] !== undefined ? { evalCriteria: v["eval-criteria"] } : {}),
    images: v.image ?? [],
    maxQuestionBytes: maxQuestionBytes.right,
  })
}
