/**
 * The events of MassGen's checklist-gated voting (`index.ts`): the criteria a run scores answers by, and an agent's scores.
 *
 * Contract: `ChecklistSettings` rides on `run_started` (`RunSettings.checklist`): the criteria are a fact
 * of the run from its start. `checklist_submitted` is made by the round machine
 * (`domain/coordination/checklist.ts`) when a round's reply calls `submit_checklist`: what it
 * scored, and the verdict; replay and resume make the same from the recorded reply. Words: a *criterion*
 * is `E1`, `E2`, ... with its text; a score is a whole number from 0 to 10.
 */
import { Schema } from "effect"
import { AgentId, Count, defineEvent, Label } from "./fields.ts"

export const Criterion = Schema.Struct({ id: Schema.String, text: Schema.String })
export type Criterion = typeof Criterion.Type

/** `voting_sensitivity: checklist_gated`: MassGen's `voting_threshold` (0-10 strictness) and the criteria. */
export const ChecklistSettings = Schema.Struct({
  voting_threshold: Count,
  criteria: Schema.Array(Criterion),
})
export type ChecklistSettings = typeof ChecklistSettings.Type

/**
 * A round's reply called `submit_checklist`. `accepted`: the scores cover every shown answer and every
 * criterion; `verdict` is `vote` when the best-scored answer (`best_label`, by total, ties to the first
 * label) has at least `required` criteria scored `cutoff` or more, else `new_answer`. Not accepted:
 * `message` says what is missing and the model may submit again. Only an accepted submission that
 * covers the answers the round shows lets its vote count.
 */
export const ChecklistSubmitted = defineEvent("checklist_submitted", {
  agent: AgentId,
  round: Count,
  accepted: Schema.Boolean,
  message: Schema.String,
  /** Scores by answer label, then by criterion id. */
  scores: Schema.Record({ key: Label, value: Schema.Record({ key: Schema.String, value: Count }) }),
  best_label: Schema.NullOr(Label),
  true_count: Count,
  required: Count,
  cutoff: Count,
  verdict: Schema.NullOr(Schema.Literal("vote", "new_answer")),
})

/** The criteria of a run whose config names none (massgen's own wording of what MassGen's default checklist asks). */
export const DEFAULT_CRITERIA: ReadonlyArray<Criterion> = [
  { id: "E1", text: "It does everything the message asks, with nothing required left out or only partly done." },
  { id: "E2", text: "What it states or builds is correct: no errors, and claims that hold up when checked." },
  { id: "E3", text: "It is complete and deep enough for the user to act on it without asking again." },
  { id: "E4", text: "It is clear and well made: organised, to the point, and better than a first draft." },
]

/** A `checklist_submitted` in words, for the timeline and the automation lines. */
export const checklistText = (event: typeof ChecklistSubmitted.Type): string =>
  event.accepted
    ? `checklist: ${event.best_label ?? "no answer"} scored best, ${event.true_count} criteria at ${event.cutoff}+ (${event.required} needed): ${event.verdict}`
    : `checklist not accepted: ${event.message}`
