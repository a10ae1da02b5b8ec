/**
 * The events of coordination (`index.ts`): rounds given, cancelled, warned and updated; replies
 * rejected; answers, votes and failures; the presentation and the final answer.
 *
 * Contract: each is a past-tense fact about one agent's round (`agent`, `round`), but the presentation
 * and the final answer, which name the winner. The fold (`domain/state/index.ts`) reads them; `decide.ts` and
 * `round-machine.ts` make them. Words as in `index.ts`.
 */
import { Schema } from "effect"
import { AgentId, Count, defineEvent, Label } from "./fields.ts"
import { FinalAnswerStrategy } from "./run.ts"

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
 * A round passed MassGen's round timeout at a step boundary: `soft`, it is told to wrap up;
 * `hard` (the soft limit plus the grace), only `new_answer` and `vote` are offered from then on.
 */
export const RoundTimeWarned = defineEvent("round_time_warned", {
  agent: AgentId,
  round: Count,
  stage: Schema.Literal("soft", "hard"),
})

/**
 * New answers reached an agent's round in flight at a step boundary (before its
 * next model call, or right after a vote of it): the round goes on, now showing
 * `shown`. With `after_vote`, the vote the round had just made did not see
 * them and is not counted: the agent is asked again in the same round.
 */
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
  /** Checklist-gated voting: a vote before an accepted `submit_checklist` of the answers shown. */
  "checklist_required",
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
