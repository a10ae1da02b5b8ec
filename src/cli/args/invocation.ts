/**
 * What a command line asks for: the `Invocation` the parser returns, and its `UsageError`.
 *
 * One case per command: a run (`RunInvocation`, whose question is still a
 * `QuestionSource` that `question.ts` reads), `serve`, `batch` and `worker`,
 * the batch engine's `status`/`export`, `viewer`, `resume`, `replay`,
 * `status`, `sessions`, `doctor`, `--validate`, `--version` and `--help`. A
 * `UsageError` is one line naming the flag or argument at fault (its message
 * is the `detail`); `reason` is a closed set.
 */
import { Schema } from "effect"

export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  reason: Schema.Literal(
    "unknown_option",
    "unknown_command",
    "missing_value",
    "missing_question",
    "missing_config",
    "conflict",
    "bad_value",
  ),
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
  /** `--max-question-bytes`: a longer question is refused before anything is written. */
  readonly maxQuestionBytes: number
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
  /** `--eval-criteria FILE`: MassGen's checklist criteria from a JSON file, over `checklist_criteria_inline`. */
  readonly evalCriteria?: string | null
  /** `--image FILE`, each: files sent with the question (`cli/run/question-media.ts`); absent: none. */
  readonly images?: ReadonlyArray<string>
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
  /** How long a connection may be quiet (between requests, or sending a body) before the server closes it. */
  readonly idleTimeoutSeconds: number
  /** The largest request body read; a larger one is 413. */
  readonly maxBodyBytes: number
  /** The most UTF-8 bytes of message text (user and assistant) a completion may bring; more is 413. */
  readonly maxQuestionBytes: number
  /** How long after a run ended the same request (a retry) gets its answer instead of starting another run. */
  readonly retryWindowSeconds: number
  /** Stop a run when every client of it has gone (else it goes on to its end, for a retry to collect). */
  readonly cancelOnDisconnect: boolean
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
