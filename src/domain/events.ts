/**
 * The events of a run: what happened, defined once, in the order it happened.
 *
 * A run appends one event per line to `events.jsonl` in its log directory (see
 * `services/event-store.ts` and `event-codec.ts`): a JSON object with the
 * file's schema version (`schema`), the event's wire name (`type`), the moment
 * it happened (`time`, UTC, ISO 8601), the event's own fields and, on the
 * events that have them, the writing process's machine facts (`meta`,
 * `EventMeta`): the *envelope*. The file is the source of truth:
 * the run's state is the fold of its events (`state.ts`), and `status.json`,
 * `coordination_events.json` and `snapshot_mappings.json` are projections of it.
 *
 * Every event type is a past-tense fact with a snake_case wire name. The
 * registry (`EVENT_TYPES`) is derived from the definitions below; it is never
 * kept by hand. `docs/events.md` lists every type and field.
 *
 * Words: an *agent* is named by its config id (`agent_a`) and, to the other
 * agents, by its anonymous id (`agent1`, its 1-based place in the config);
 * an *answer label* is `agentN.M`, the M-th answer of agentN; a *round* is one
 * piece of work of one agent (numbered per agent from 1) that ends in an answer,
 * a vote, a failure or a cancellation. An agent's id is a safe name
 * (`run-paths.ts`), as the config requires: it names the agent's files, so a
 * line that names an agent otherwise does not decode. Counters (rounds, calls, attempts,
 * retries, tokens, votes) are whole numbers of 0 or more; amounts (seconds,
 * dollars) are finite numbers of 0 or more.
 */
import { Schema } from "effect"
import { instantMs } from "./instant.ts"
import { SafeName } from "./run-paths.ts"

/**
 * The version of the events file's format: it changes when an event loses or changes a field.
 * 2: `log_dir`, `pid` and `version` left run_started and run_resumed for the line's `meta`;
 * times are ISO instants and counters whole numbers.
 */
export const SCHEMA_VERSION = 2

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/

/** An instant, UTC, ISO 8601 as `Date.toISOString` writes it: `YYYY-MM-DDTHH:MM:SS(.fff)Z`. */
export const Time = Schema.String.pipe(
  Schema.pattern(ISO_INSTANT),
  Schema.filter((s) => !Number.isNaN(instantMs(s)), { message: () => "Expected a real instant" }),
).annotations({
  description: "UTC, ISO 8601",
  arbitrary: () => (fc) => fc.date({ min: new Date(0), max: new Date("2200-01-01T00:00:00.000Z"), noInvalidDate: true }).map((d) => d.toISOString()),
})
/** A counter: a round, a call, an attempt, a number of lines or votes. */
const Count = Schema.NonNegativeInt
/** A finite amount of 0 or more: seconds, dollars. */
const Amount = Schema.JsonNumber.pipe(Schema.nonNegative())
const AgentId = SafeName.annotations({
  arbitrary: () => (fc) => fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,15}$/).filter((id) => !id.endsWith(".reasoning")),
})
/** `agentN.M`; keeping labels to this shape also keeps keys such as `__proto__` out of a record. */
const Label = Schema.String.pipe(Schema.pattern(/^agent\d+\.\d+$/))

/** An event type: its wire name, the time it happened, and its own fields. */
const defineEvent = <Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.Struct({ _tag: Schema.Literal(tag), time: Time, ...fields })

export const FinalAnswerStrategy = Schema.Literal("winner_present", "winner_reuse", "synthesize")
export type FinalAnswerStrategy = typeof FinalAnswerStrategy.Type

/** A context path as a run records it: absolute, with its permission and its protected paths (relative to it). */
export const ContextPathSetting = Schema.Struct({
  path: Schema.String,
  permission: Schema.Literal("read", "write"),
  protected_paths: Schema.Array(Schema.String),
})
export type ContextPathSetting = typeof ContextPathSetting.Type

/** MassGen's three levels of `voting_sensitivity` and `answer_novelty_requirement`. */
export const Strictness = Schema.Literal("lenient", "balanced", "strict")
export type Strictness = typeof Strictness.Type

/** The settings of a run that its fold needs; the whole config is in execution_metadata.yaml. */
export const RunSettings = Schema.Struct({
  max_new_answers_per_agent: Schema.NullOr(Count),
  skip_final_presentation: Schema.Boolean,
  final_answer_strategy: FinalAnswerStrategy,
  orchestrator_timeout_seconds: Amount,
  agent_timeout_seconds: Amount,
  budget_usd: Schema.optionalWith(Schema.NullOr(Amount), { default: () => null }),
  /** True: a new answer cancels other agents' rounds and starts them again, instead of reaching them by injection. */
  disable_injection: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** The user's folders the agents may read, and the presenter may write to after the vote (`docs/workspaces.md`); absolute paths. */
  context_paths: Schema.optional(Schema.Array(ContextPathSetting)),
  // MassGen's coordination options (absent: MassGen's default; `settingsOf` in `decide.ts` reads them).
  /** The run completes once every live agent has answered, with no vote. */
  skip_voting: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** No agent is offered `vote` until every live agent has an answer. */
  defer_voting_until_all_answered: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** Answers of all agents together; at the cap every round offers only `vote`. */
  max_new_answers_global: Schema.optionalWith(Schema.NullOr(Count), { exact: true }),
  /** How different a new answer must be from every answer so far (`prompts.ts`, `noveltyProblem`). */
  answer_novelty_requirement: Schema.optionalWith(Strictness, { exact: true }),
  /** How readily the prompts tell agents to vote rather than answer again. */
  voting_sensitivity: Schema.optionalWith(Strictness, { exact: true }),
  /** MassGen's round timeouts: the soft limit of an agent's first round, then of its later rounds; then the grace until the hard limit. */
  initial_round_timeout_seconds: Schema.optionalWith(Schema.NullOr(Amount), { exact: true }),
  subsequent_round_timeout_seconds: Schema.optionalWith(Schema.NullOr(Amount), { exact: true }),
  round_timeout_grace_seconds: Schema.optionalWith(Amount, { exact: true }),
})
export type RunSettings = typeof RunSettings.Type

export const AgentInfo = Schema.Struct({
  id: AgentId,
  anon_id: Schema.String,
  backend: Schema.String,
  model: Schema.NullOr(Schema.String),
})
export type AgentInfo = typeof AgentInfo.Type

/** One message of the conversation a run continues: an earlier question (`user`) or the council's final answer to it (`assistant`). */
export const ConversationMessage = Schema.Struct({
  role: Schema.Literal("user", "assistant"),
  content: Schema.String,
})
export type ConversationMessage = typeof ConversationMessage.Type

export const RunStarted = defineEvent("run_started", {
  run_id: Schema.String,
  question: Schema.String,
  agents: Schema.Array(AgentInfo),
  settings: RunSettings,
  /** The conversation before `question`, oldest first (a turn of a session, a `serve` request); absent: none. */
  conversation: Schema.optional(Schema.Array(ConversationMessage)),
})

/**
 * A run was taken up again by `massgen resume` after its process stopped. The
 * rounds (and a presentation) that were in flight go on where they were
 * (`continued_rounds`, `presentation_continued`; older versions started them
 * again with new round numbers: `restarted_rounds`, `presentation_restarted`);
 * `dropped_lines` lines of the log could not be read (a line a crash cut short
 * is one) and stay in the file, skipped.
 */
export const RunResumed = defineEvent("run_resumed", {
  dropped_lines: Count,
  torn_tail: Schema.Boolean,
  restarted_rounds: Schema.Array(Schema.Struct({ agent: AgentId, round: Count })),
  presentation_restarted: Schema.Boolean,
  /**
   * The rounds in flight that go on where they were: their recorded replies and
   * tool results are fed back, and they continue at their first step without a record.
   */
  continued_rounds: Schema.optional(
    Schema.Array(Schema.Struct({ agent: AgentId, round: Count, shown: Schema.Array(Label), vote_only: Schema.Boolean })),
  ),
  /** The unfinished presentation goes on where it was (absent: false). */
  presentation_continued: Schema.optional(Schema.Boolean),
})

/** A round was given to an agent: which answer labels it shows, and whether only `vote` is offered. */
export const RoundStarted = defineEvent("round_started", {
  agent: AgentId,
  round: Count,
  shown: Schema.Array(Label),
  vote_only: Schema.Boolean,
  /** True when a new answer from another agent made this agent start over. */
  restart: Schema.Boolean,
})

/** A round in flight was stopped because a new answer made what it was shown stale. */
export const RoundCancelled = defineEvent("round_cancelled", {
  agent: AgentId,
  round: Count,
  reason: Schema.Literal("new_answer"),
})

/**
 * New answers reached an agent's round in flight at a step boundary (before its
 * next model call, or right after a vote of it): the round goes on, now showing
 * `shown`. With `after_vote`, the vote the round had just made did not see
 * them and is not counted: the agent is asked again in the same round.
 */
/**
 * A round passed MassGen's round timeout at a step boundary: `soft`, it is told to wrap up;
 * `hard` (the soft limit plus the grace), only `new_answer` and `vote` are offered from then on.
 */
export const RoundTimeWarned = defineEvent("round_time_warned", {
  agent: AgentId,
  round: Count,
  stage: Schema.Literal("soft", "hard"),
})

export const UpdateInjected = defineEvent("update_injected", {
  agent: AgentId,
  round: Count,
  shown: Schema.Array(Label),
  after_vote: Schema.Boolean,
})

export const RejectionReason = Schema.Literal(
  "no_tool_call",
  "both_tools",
  "unknown_tool",
  "bad_arguments",
  "invalid_vote_target",
  "answer_limit",
  "empty_answer",
  "tool_limit",
  /** The answer is the text of an answer the round shows (MassGen: "Answer already provided by ..."). */
  "duplicate_answer",
  /** The answer is too close to a shown one for `answer_novelty_requirement`. */
  "answer_not_novel",
  /** More than one `vote` call in one reply. */
  "several_votes",
)
export type RejectionReason = typeof RejectionReason.Type

/** A reply of an agent called neither tool correctly; it is asked again while attempts remain. */
export const ReplyRejected = defineEvent("reply_rejected", {
  agent: AgentId,
  round: Count,
  attempt: Count,
  reason: RejectionReason,
  message: Schema.String,
})

export const AnswerSubmitted = defineEvent("answer_submitted", {
  agent: AgentId,
  round: Count,
  label: Label,
  content: Schema.String,
})

export const VoteCast = defineEvent("vote_cast", {
  agent: AgentId,
  round: Count,
  target: AgentId,
  target_label: Label,
  reason: Schema.String,
})

/**
 * A vote that does not count: its round was shown answers that are no longer the
 * latest (`stale`), or it named an agent whose answer the round did not show.
 */
export const VoteIgnored = defineEvent("vote_ignored", {
  agent: AgentId,
  round: Count,
  target: AgentId,
  /** `deferred`: no vote is taken (`skip_voting`, quick synthesize; `defer_voting_until_all_answered` while a live agent has no answer). */
  reason: Schema.Literal("stale", "invalid_target", "deferred"),
})

export const CallRole = Schema.Literal("round", "presentation")
export type CallRole = typeof CallRole.Type

/** An LLM call was sent. `call` numbers the calls of a run from 1. */
export const CallStarted = defineEvent("call_start", {
  call: Count,
  agent: AgentId,
  round: Count,
  role: CallRole,
  model: Schema.NullOr(Schema.String),
  attempt: Count,
})

/** Any JSON value: what a provider's opaque parts are made of. */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
export const Json: Schema.Schema<Json> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.JsonNumber,
  Schema.String,
  Schema.Array(Schema.suspend(() => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend(() => Json) }),
)

/** A tool call of a model reply, as the model wrote it. */
export const RecordedToolCall = Schema.Struct({ id: Schema.String, name: Schema.String, arguments: Schema.String })

/**
 * What a model call returned, as the round machine (`round-machine.ts`) reads it:
 * the reply's text, its tool calls, and the provider's opaque parts (thinking
 * blocks with their signatures, reasoning items), which a later call of the
 * same round may have to send back unchanged.
 */
export const RecordedReply = Schema.Struct({
  text: Schema.String,
  tool_calls: Schema.Array(RecordedToolCall),
  parts: Schema.Array(Json),
})
export type RecordedReply = typeof RecordedReply.Type

/**
 * An LLM call came back or failed. Token counts are the provider's, null where
 * its reply does not report them; `cost` is null when the model has no price.
 */
export const CallEnded = defineEvent("call_end", {
  call: Count,
  agent: AgentId,
  round: Count,
  role: CallRole,
  model: Schema.NullOr(Schema.String),
  seconds: Amount,
  input_tokens: Schema.NullOr(Count),
  cached_input_tokens: Schema.NullOr(Count),
  output_tokens: Schema.NullOr(Count),
  reasoning_tokens: Schema.NullOr(Count),
  truncated: Schema.NullOr(Schema.Boolean),
  cost: Schema.NullOr(Amount),
  error: Schema.NullOr(Schema.String),
  /** The reply, so that the log alone rebuilds a round's transcript; null for a failed call, absent in older logs. */
  reply: Schema.optional(Schema.NullOr(RecordedReply)),
})

/** A failed call is tried again after `delay_seconds`. */
export const CallRetried = defineEvent("call_retried", {
  call: Count,
  agent: AgentId,
  round: Count,
  retry: Count,
  delay_seconds: Amount,
  error: Schema.String,
})

/**
 * A tool call of a model reply began to run. `tool_call` numbers the tool calls
 * of a run from 1 (its full result is `tool_log/<tool_call>.json`); `call_id`
 * is the id the model gave the call; `server` is the MCP server of the tool,
 * null for a command tool; `arguments` are as the model wrote them.
 */
const toolCallFields = {
  tool_call: Count,
  agent: AgentId,
  round: Count,
  role: CallRole,
  call_id: Schema.String,
  tool: Schema.String,
  server: Schema.NullOr(Schema.String),
  arguments: Schema.String,
}

export const ToolCallStarted = defineEvent("tool_call_started", toolCallFields)

/**
 * A tool call ended, and this is what the model is given: `result` (the whole
 * text when it is short, else null: it is in `tool_log/<tool_call>.json`),
 * `result_chars` its length and `digest` its SHA-256 (hex). `ok` is false for
 * an error result, whose `error` says why (a failure, a timeout, an oversized
 * result cut to the cap).
 */
export const ToolCallFinished = defineEvent("tool_call_finished", {
  ...toolCallFields,
  ok: Schema.Boolean,
  error: Schema.NullOr(Schema.String),
  seconds: Amount,
  result: Schema.NullOr(Schema.String),
  result_chars: Count,
  digest: Schema.String,
})

/** A reply of call `call` used one of the provider's own tools (web search, code execution), as the provider reports it. */
export const HostedToolUsed = defineEvent("hosted_tool_used", {
  call: Count,
  agent: AgentId,
  round: Count,
  role: CallRole,
  tool: Schema.String,
  detail: Schema.String,
})

export const FailureKind = Schema.Literal("error", "timeout")
export type FailureKind = typeof FailureKind.Type

/** An agent is out of the run: its calls failed, its replies stayed invalid, or it passed its timeout. */
export const AgentFailed = defineEvent("agent_failed", {
  agent: AgentId,
  round: Count,
  kind: FailureKind,
  message: Schema.String,
})

/** Every live agent voted: the winner was chosen and presents (or its stored answer is used). */
export const PresentationStarted = defineEvent("presentation_started", {
  agent: AgentId,
  label: Label,
  votes: Schema.Record({ key: Label, value: Count }),
  is_tie: Schema.Boolean,
  strategy: FinalAnswerStrategy,
  /** False when the stored answer is used with no presentation call. */
  calls_model: Schema.Boolean,
})

export const FinalSource = Schema.Literal("presentation", "stored_answer", "salvaged")
export type FinalSource = typeof FinalSource.Type

/** The final answer is known: presented, reused from the winner's stored answer, or salvaged at a stop. */
export const FinalAnswerChosen = defineEvent("final_answer", {
  agent: AgentId,
  label: Label,
  source: FinalSource,
  content: Schema.String,
})

/**
 * An agent's workspace was copied whole for its answer `label`: the snapshot
 * (at `path`, relative to the log directory) that the agents shown `label` may
 * read, and that no later write changes. Appended with the answer, after the copy.
 */
export const WorkspaceSnapshotted = defineEvent("workspace_snapshotted", {
  agent: AgentId,
  label: Label,
  path: Schema.String,
  files: Count,
  bytes: Count,
})

/**
 * The winner's files were copied to `path` (`final/<agent>/workspace`, relative
 * to the log directory): from its live workspace after its presentation
 * (`source: workspace`), or from the snapshot of the winning answer.
 */
export const WorkspaceFinalized = defineEvent("workspace_finalized", {
  agent: AgentId,
  label: Label,
  source: Schema.Literal("workspace", "snapshot"),
  path: Schema.String,
  files: Count,
  bytes: Count,
  /** The files' paths, relative to `path`, sorted; the first `FINAL_LISTING_MAX` of them. */
  listing: Schema.Array(Schema.String),
})

export const ContextChange = Schema.Literal("created", "replaced")
export type ContextChange = typeof ContextChange.Type

const contextWriteFields = {
  /** The tool call that writes. */
  tool_call: Count,
  /** The id the model gave that tool call: a call run again after a stop has a new `tool_call` and the same `call_id`. */
  call_id: Schema.String,
  agent: AgentId,
  /** The file's absolute path, inside a context path. */
  path: Schema.String,
  bytes: Count,
  /** SHA-256 (hex) of the file's new content. */
  sha256: Schema.String,
  /** Whether the file is new or was there before. */
  change: ContextChange,
}

/**
 * The presenter is about to write a file of a context path: recorded before
 * the write, so that a resumed run that finds the file already holding
 * `sha256` records the write instead of doing it again.
 */
export const ContextWriteIntended = defineEvent("context_write_intended", contextWriteFields)

/** A file of a context path was written (the intent of the same agent, path and digest is done): it now holds `bytes` bytes with digest `sha256`. */
export const ContextPathWritten = defineEvent("context_path_written", contextWriteFields)

export const FinishReason = Schema.Literal("completed", "timeout", "error", "interrupted", "budget")
export type FinishReason = typeof FinishReason.Type

/** The run stopped, for `reason`; `winner` is null when no answer could be given. */
export const RunFinished = defineEvent("run_finished", {
  reason: FinishReason,
  winner: Schema.NullOr(AgentId),
  message: Schema.String,
})

/**
 * The machine facts of the process that wrote a line, kept in the line's
 * envelope (`meta`), not in the event: the log directory it wrote to, its pid
 * and host, and massgen's version. Only run_started and run_resumed carry
 * them. They say where the run was, not where it is: a log directory may have
 * been moved or copied since, so readers take the directory they read from.
 */
export const EventMeta = Schema.Struct({
  log_dir: Schema.String,
  pid: Count,
  /** Missing on lines upcast from schema 1, which did not record it. */
  host: Schema.optional(Schema.String),
  version: Schema.String,
})
export type EventMeta = typeof EventMeta.Type

/** Every event type, decoded by its `type` field on the wire. */
export const Event = Schema.Union(
  RunStarted,
  RunResumed,
  RoundStarted,
  RoundCancelled,
  UpdateInjected,
  RoundTimeWarned,
  ReplyRejected,
  AnswerSubmitted,
  VoteCast,
  VoteIgnored,
  CallStarted,
  CallEnded,
  CallRetried,
  ToolCallStarted,
  ToolCallFinished,
  HostedToolUsed,
  AgentFailed,
  PresentationStarted,
  FinalAnswerChosen,
  RunFinished,
  WorkspaceSnapshotted,
  WorkspaceFinalized,
  ContextWriteIntended,
  ContextPathWritten,
)
export type Event = typeof Event.Type

/** Wire names of every event type, derived from the union. */
export const EVENT_TYPES: ReadonlyArray<Event["_tag"]> = Event.members.map((m) => m.fields._tag.literals[0])

/** The payload of an event of a given tag, without its tag (what a constructor takes). */
export type EventFields<T extends Event["_tag"]> = Omit<Extract<Event, { _tag: T }>, "_tag">
