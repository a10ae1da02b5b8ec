/**
 * Sentences about events, for people: what the views, the derived logs and the automation output say of an event.
 *
 * `resumedText(run_resumed)` says what a resume did with the work in flight
 * ("2 rounds go on", "1 round starts again"); `ignoredVoteText(vote_ignored)`
 * says why a vote was not counted, in words a first run's reader follows
 * rather than the event's reason code. Pure, and free of the replay
 * stack that computed those lists, so a projection that names a resume
 * needs only the events.
 */
import { count } from "../../lib/text.ts"
import type { AnswerConfirmed, EvaluationStarted, OrchestrationRestarted } from "./attempts.ts"
import type { VoteIgnored } from "./rounds.ts"
import type { RunResumed } from "./run.ts"

const IGNORED_BECAUSE: Record<(typeof VoteIgnored.Type)["reason"], string> = {
  stale: "it saw answers that are no longer the latest",
  invalid_target: "it named an answer its round was not shown",
  deferred: "no vote is taken at this point of the run",
}

/** "vote for planner not counted: it saw answers that are no longer the latest". */
export const ignoredVoteText = (event: typeof VoteIgnored.Type): string =>
  `vote for ${event.target} not counted: ${IGNORED_BECAUSE[event.reason]}`

/** What a `run_resumed` did with the work in flight, for people: "2 rounds go on", "1 round starts again". */
export const resumedText = (event: typeof RunResumed.Type): string => {
  const said = (rounds: number, presentation: boolean, verb: readonly [string, string]) =>
    `${rounds === 0 && presentation ? "the presentation" : `${count(rounds, "round")}${presentation ? " and the presentation" : ""}`} ${rounds === 1 && !presentation ? verb[0] : verb[1]}`
  const on = said(event.continued_rounds?.length ?? 0, event.presentation_continued === true, ["goes on", "go on"])
  if (event.restarted_rounds.length === 0 && !event.presentation_restarted) return on
  const again = said(event.restarted_rounds.length, event.presentation_restarted, ["starts again", "start again"])
  return (event.continued_rounds?.length ?? 0) === 0 && event.presentation_continued !== true ? again : `${on}, ${again}`
}

/** What an orchestration-restart event says, for people: "attempt 2 starts: <reason>". */
export const attemptText = (
  event: typeof EvaluationStarted.Type | typeof AnswerConfirmed.Type | typeof OrchestrationRestarted.Type,
): string => {
  switch (event._tag) {
    case "evaluation_started":
      return `evaluates the final answer of attempt ${event.attempt}`
    case "answer_confirmed":
      return `confirms the final answer of attempt ${event.attempt}${event.how === "no_decision" ? " (no decision: it stands)" : ""}`
    case "orchestration_restarted":
      return `restarts the orchestration: attempt ${event.attempt} starts (${event.reason})`
  }
}
