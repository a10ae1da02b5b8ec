/**
 * MassGen's fairness and the deferral of peer updates: which rounds may start, and what reaches a round in flight.
 *
 * `fairnessPaused(state, a)`: with `fairness_lead_cap_answers` set, an agent that has an answer and
 * whose next answer would put it more than the cap ahead of the slowest *active* peer (live, not
 * voted) gets no new round until the peers catch up (MassGen pauses it before its round starts; the
 * first answer is never held back). `injectionFor(state, shown, injected)`: the labels a round in flight is shown
 * next, or null: with `defer_peer_updates_until_restart` nothing is injected (the round goes on and
 * its agent's next round shows the new answers); with `max_midstream_injections_per_round` at most
 * that many agents' new answers reach one round, the first in config order, the others waiting for
 * the agent's next round (MassGen's per-round injection cap). Pure.
 *
 * Words: an agent's *update* is its latest label where the round shows another (or none) of it.
 */
import { type AgentState, isLive, latestLabels, type State } from "../state/index.ts"

/** The agent's next answer would put it more than `fairness_lead_cap_answers` ahead of the slowest active peer. */
export const fairnessPaused = (state: State, a: AgentState): boolean => {
  const cap = state.run?.settings.fairness_lead_cap_answers ?? null
  if (cap === null || a.answers.length === 0 || a.vote !== null) return false
  const active = state.agents.filter((b) => isLive(b) && b.vote === null)
  if (active.length <= 1 || !active.includes(a)) return false
  const slowest = Math.min(...active.filter((b) => b !== a).map((b) => b.answers.length))
  return a.answers.length + 1 - slowest > cap
}

/** The agents whose latest answer `shown` does not show yet, in config order. */
const updates = (state: State, shown: ReadonlyArray<string>): ReadonlyArray<AgentState> =>
  state.agents.filter((b) => b.answers.length > 0 && !shown.includes(b.answers[b.answers.length - 1]!))

/**
 * What a round in flight (showing `shown`, `injected` updates so far) is shown next at a step boundary, or null
 * for nothing: the latest labels, or, at the injection cap, only the first updates that fit.
 */
export const injectionFor = (state: State, shown: ReadonlyArray<string>, injected: number): ReadonlyArray<string> | null => {
  const settings = state.run?.settings
  if (settings === undefined || settings.defer_peer_updates_until_restart === true) return null
  const cap = settings.max_midstream_injections_per_round ?? null
  const latest = latestLabels(state)
  if (cap === null) return latest
  const fresh = updates(state, shown)
  const room = Math.max(0, cap - injected)
  if (room === 0) return null
  if (fresh.length <= room) return latest
  const taken = new Set(fresh.slice(0, room))
  // Config order: an agent's taken update, else the label the round shows of it (if any).
  return state.agents.flatMap((b) => {
    if (b.answers.length === 0) return []
    if (taken.has(b)) return [b.answers[b.answers.length - 1]!]
    const seen = shown.find((label) => b.answers.includes(label))
    return seen === undefined ? [] : [seen]
  })
}
