/**
 * The events of orchestration restarts (`index.ts`, MassGen's `max_orchestration_restarts`): after the
 * final answer of an attempt that is not the last, the presenter evaluates it (`evaluation_started`) and
 * either confirms it (`answer_confirmed`: MassGen's `submit`, or no decision) or asks for another attempt
 * (`orchestration_restarted`: MassGen's `restart_orchestration`, with its reason and instructions).
 *
 * Contract: `decide.ts` and `coordination/restarts.ts` make them; the fold (`domain/state/attempts.ts`) reads
 * them. An *attempt* is one coordination from the first round to a final answer, numbered from 1; the run's
 * attempts are at most `1 + max_orchestration_restarts`. Words as in `index.ts`.
 */
import { Schema } from "effect"
import { AgentId, Count, defineEvent } from "./fields.ts"

/** The presenter of attempt `attempt` was asked to evaluate its final answer (one call, MassGen's post-evaluation). */
export const EvaluationStarted = defineEvent("evaluation_started", {
  agent: AgentId,
  attempt: Count,
})

/**
 * The final answer of attempt `attempt` stands: the presenter called `submit` (`submitted`), or its
 * evaluation ended without a decision (`no_decision`: no tool, a failed or timed-out call), which MassGen takes as `submit`.
 */
export const AnswerConfirmed = defineEvent("answer_confirmed", {
  agent: AgentId,
  attempt: Count,
  how: Schema.Literal("submitted", "no_decision"),
})

/**
 * The presenter judged the final answer incomplete (`restart_orchestration`): coordination starts again as
 * attempt `attempt` (the new one, from 2), with `reason` and `instructions` added to every agent's round.
 * Answers, votes and failures of the attempt before are set aside; round numbers and answer labels go on.
 */
export const OrchestrationRestarted = defineEvent("orchestration_restarted", {
  agent: AgentId,
  attempt: Count,
  reason: Schema.String,
  instructions: Schema.String,
})
