/**
 * An independent model of the fold, for property tests: what a run's events say,
 * read the plain way, with mutable maps and none of `domain/state/index.ts`'s code.
 *
 * It knows only the meaning of events that fit (the simulator makes no others):
 * who answered what, who votes for whom, who is out, what is in flight, the
 * presentation, the final answer, how the run finished, restarts (of rounds, and of the orchestration) and the summed
 * usage. `observe(state)` reads the same facts off a `State`, so a test can
 * compare the two after every event.
 */
import type { Event } from "../../src/domain/events/index.ts"
import type { State } from "../../src/domain/state/index.ts"

export interface Observed {
  readonly answers: Record<string, ReadonlyArray<string>>
  readonly votes: Record<string, string | null>
  readonly out: ReadonlyArray<string>
  readonly inFlight: Record<string, number | null>
  /** The labels each round in flight shows (an injected update changes them). */
  readonly shown: Record<string, ReadonlyArray<string> | null>
  readonly restarts: Record<string, number>
  readonly presenter: string | null
  readonly final: string | null
  readonly finished: string | null
  readonly inputTokens: number
  readonly cost: number | null
}

/** The facts, read straight from the events. */
export const reference = (events: ReadonlyArray<Event>): Observed => {
  const ids: Array<string> = []
  const answers = new Map<string, Array<string>>()
  const votes = new Map<string, string | null>()
  const out = new Set<string>()
  const inFlight = new Map<string, number | null>()
  const restarts = new Map<string, number>()
  const shown = new Map<string, ReadonlyArray<string>>()
  let presenter: string | null = null
  let final: { label: string; salvaged: boolean } | null = null
  let finished: string | null = null
  let inputTokens = 0
  let cost: number | null = null
  for (const e of events) {
    switch (e._tag) {
      case "run_started":
        for (const a of e.agents) {
          ids.push(a.id)
          answers.set(a.id, [])
          votes.set(a.id, null)
          inFlight.set(a.id, null)
          restarts.set(a.id, 0)
        }
        break
      case "run_resumed":
        if (finished === "interrupted") {
          finished = null
          if (final?.salvaged) final = null
        }
        if (final === null) presenter = null
        for (const id of ids) inFlight.set(id, null)
        break
      case "round_started":
        inFlight.set(e.agent, e.round)
        shown.set(e.agent, e.shown)
        votes.set(e.agent, null)
        if (e.restart) restarts.set(e.agent, restarts.get(e.agent)! + 1)
        break
      case "round_cancelled":
        inFlight.set(e.agent, null)
        break
      case "update_injected":
        if (inFlight.get(e.agent) === e.round && !out.has(e.agent)) shown.set(e.agent, e.shown)
        break
      case "answer_submitted":
        answers.get(e.agent)!.push(e.label)
        inFlight.set(e.agent, null)
        for (const id of ids) if (!out.has(id)) votes.set(id, null)
        break
      case "vote_cast":
        votes.set(e.agent, e.target_label)
        inFlight.set(e.agent, null)
        break
      case "vote_ignored":
        inFlight.set(e.agent, null)
        break
      case "agent_failed":
        out.add(e.agent)
        votes.set(e.agent, null)
        inFlight.set(e.agent, null)
        break
      case "presentation_started":
        presenter = e.agent
        break
      case "final_answer":
        final = { label: e.label, salvaged: e.source === "salvaged" }
        break
      case "run_finished":
        finished = e.reason
        for (const id of ids) inFlight.set(id, null)
        break
      case "call_end":
        inputTokens += e.input_tokens ?? 0
        if (e.cost !== null) cost = (cost ?? 0) + e.cost
        break
      case "orchestration_restarted":
        // MassGen's handle_restart: every agent starts the next attempt fresh (restarts counted on).
        if (final === null) break
        for (const id of ids) {
          answers.set(id, [])
          votes.set(id, null)
          inFlight.set(id, null)
        }
        out.clear()
        presenter = null
        final = null
        break
      case "call_start":
      case "call_retried":
      case "reply_rejected":
        break
    }
  }
  return {
    answers: Object.fromEntries(answers),
    votes: Object.fromEntries(votes),
    out: [...out].sort(),
    inFlight: Object.fromEntries(inFlight),
    shown: Object.fromEntries(ids.map((id) => [id, inFlight.get(id) == null ? null : (shown.get(id) ?? null)])),
    restarts: Object.fromEntries(restarts),
    presenter,
    final: final?.label ?? null,
    finished,
    inputTokens,
    cost,
  }
}

/** The same facts, read off a folded state. */
export const observe = (state: State): Observed => ({
  answers: Object.fromEntries(state.agents.map((a) => [a.info.id, a.answers])),
  votes: Object.fromEntries(state.agents.map((a) => [a.info.id, a.vote?.targetLabel ?? null])),
  out: state.agents
    .filter((a) => a.failure !== null)
    .map((a) => a.info.id)
    .sort(),
  inFlight: Object.fromEntries(state.agents.map((a) => [a.info.id, a.inFlight?.round ?? null])),
  shown: Object.fromEntries(state.agents.map((a) => [a.info.id, a.inFlight?.shown ?? null])),
  restarts: Object.fromEntries(state.agents.map((a) => [a.info.id, a.timesRestarted])),
  presenter: state.presentation?.agent ?? null,
  final: state.final?.label ?? null,
  finished: state.finished?.reason ?? null,
  inputTokens: state.usage.inputTokens,
  cost: state.usage.cost,
})
