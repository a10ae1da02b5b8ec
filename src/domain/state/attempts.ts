/**
 * The fold of the orchestration-restart events (`domain/events/attempts.ts`) into a run's state.
 *
 * Contract: `evolveAttempts(state, event, t)` is `evolve` for `evaluation_started`, `answer_confirmed` and
 * `orchestration_restarted`; an event that does not fit changes nothing (the caller counts it skipped): an
 * evaluation with no final answer, of another agent than the final answer's, or a second one; a decision with
 * no evaluation in flight, or for another attempt. A restart sets the attempt's answers, votes, failures,
 * presentation, final answer and final copy aside, as MassGen's `handle_restart` gives every agent a fresh state; round
 * numbers and answer labels go on (`priorAnswers`), so no two attempts share a label or a round. Pure.
 */
import type { Event } from "../events/index.ts"
import { type Attempts, firstAttempt, type State } from "./shape.ts"

type AttemptEvent = Extract<Event, { _tag: "evaluation_started" | "answer_confirmed" | "orchestration_restarted" }>

/** The run's attempts so far (attempt 1, nothing evaluated, for a run with none recorded). */
export const attemptsOf = (state: State): Attempts => state.attempts ?? firstAttempt

export const evolveAttempts = (state: State, event: AttemptEvent, t: number): State => {
  const at = attemptsOf(state)
  const final = state.final
  if (final === null || at.confirmed || event.agent !== final.agent) return state
  switch (event._tag) {
    case "evaluation_started":
      if (at.evaluating !== null || event.attempt !== at.attempt) return state
      return { ...state, attempts: { ...at, evaluating: { agent: event.agent, time: t } } }
    case "answer_confirmed":
      if (at.evaluating === null || event.attempt !== at.attempt) return state
      return { ...state, attempts: { ...at, evaluating: null, confirmed: true } }
    case "orchestration_restarted": {
      if (at.evaluating === null || event.attempt !== at.attempt + 1) return state
      const restart = {
        attempt: event.attempt,
        agent: event.agent,
        reason: event.reason,
        instructions: event.instructions,
        previousAnswer: final.content,
        time: t,
      }
      return {
        ...state,
        agents: state.agents.map((a) => ({
          ...a,
          inFlight: null,
          answers: [],
          priorAnswers: (a.priorAnswers ?? 0) + a.answers.length,
          vote: null,
          failure: null,
          restartPending: false,
          lastActivity: t,
        })),
        presentation: null,
        final: null,
        // The final copy of the attempt set aside goes too: the next attempt's winner is copied again (as after a salvage).
        workspaces: state.workspaces.final === null ? state.workspaces : { ...state.workspaces, final: null },
        attempts: { attempt: event.attempt, evaluating: null, confirmed: false, restarts: [...at.restarts, restart] },
      }
    }
  }
}
