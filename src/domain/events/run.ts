/**
 * The events of a run's life (`index.ts`): it started (with its question, agents and settings), its
 * tools did not start, it was resumed, finished; and the machine facts of the process that wrote a line (`EventMeta`).
 *
 * Contract: `RunSettings` is what the fold and the decider read of the config (`domain/state/index.ts`, `decide.ts`);
 * the whole config is in execution_metadata.yaml. Words as in `index.ts`.
 */
import { Schema } from "effect"
import { ChecklistSettings } from "./checklist.ts"
import { AgentId, Amount, Count, defineEvent, Label } from "./fields.ts"

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
  /** MassGen's `use_skills`: the run offers SKILL.md bundles (`skills_offered`), listed in each round's system message. */
  use_skills: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** MassGen's `enable_memory_filesystem_mode`: memory folders in each workspace, their files shown to each round (`memory_loaded`). */
  memory_filesystem_mode: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /**
   * MassGen's `learning_capture_mode`, when it keeps rounds from writing memory: `verification` (only
   * `verification_latest.md`), `final` (none; the presenter consolidates). Absent: every round writes memory.
   */
  memory_capture: Schema.optionalWith(Schema.Literal("verification", "final"), { exact: true }),
  /** MassGen's fairness (present only when it is on): how many answers an agent may be ahead of the slowest active peer (null: no cap). */
  fairness_lead_cap_answers: Schema.optionalWith(Schema.NullOr(Count), { exact: true }),
  /** Fairness too: how many agents' new answers one round is injected (null: no cap); the rest wait for its next round. */
  max_midstream_injections_per_round: Schema.optionalWith(Schema.NullOr(Count), { exact: true }),
  /** No new answer is injected into a round in flight: the round goes on, and its agent's next round shows them. */
  defer_peer_updates_until_restart: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** `voting_sensitivity: checklist_gated`: a vote counts only after the agent scored the shown answers (`domain/coordination/checklist.ts`). */
  checklist: Schema.optionalWith(ChecklistSettings, { exact: true }),
  /** MassGen's `max_orchestration_restarts`: attempts after the first the presenter may ask for (`attempts.ts`); absent: 0. */
  max_orchestration_restarts: Schema.optionalWith(Count, { exact: true }),
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

/**
 * A file sent with the question (`--image`, `@path`, `upload_files`): to every agent, or (`agent`) to one.
 * `data` is its bytes in base64, kept in the blob store and referenced from the log line
 * (`domain/log/long-texts.ts`); `sha256` is of the bytes. A URL of `upload_files` is `url`, sent as a link.
 */
export const QuestionMedia = Schema.Struct({
  kind: Schema.Literal("image", "audio", "video", "file"),
  media_type: Schema.String,
  name: Schema.String,
  agent: Schema.optional(AgentId),
  sha256: Schema.optional(Schema.String),
  bytes: Schema.optional(Count),
  data: Schema.optional(Schema.String),
  url: Schema.optional(Schema.String),
})
export type QuestionMedia = typeof QuestionMedia.Type

export const RunStarted = defineEvent("run_started", {
  run_id: Schema.String,
  question: Schema.String,
  agents: Schema.Array(AgentInfo),
  settings: RunSettings,
  /** The conversation before `question`, oldest first (a turn of a session, a `serve` request); absent: none. */
  conversation: Schema.optional(Schema.Array(ConversationMessage)),
  /** The files sent with the question, in order; absent: none. */
  media: Schema.optional(Schema.Array(QuestionMedia)),
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

/** What an agent's tool is that did not start (`tool_start_failed`). */
export const ToolKind = Schema.Literal("mcp_server", "command_tool", "execute_command", "tool_names")
export type ToolKind = typeof ToolKind.Type

/**
 * The agents' own tools could not be made ready before the run's first model
 * call: an MCP server did not start (`name`: the server), a command tool's
 * program cannot be run (`agent/tool`), an execution mode of `execute_command`
 * cannot run here (the agent), or two tools of an agent share a name (the
 * agent). `message` says why, in one line; the run then finishes with `error`.
 */
export const ToolStartFailed = defineEvent("tool_start_failed", {
  kind: ToolKind,
  name: Schema.String,
  message: Schema.String,
})

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
