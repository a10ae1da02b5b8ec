/**
 * Where a replay that only rebuilds the work in flight at the end of a log
 * (`index.ts`'s `continuationsOf`, for a resume) may start: what comes before
 * is folded, not replayed.
 *
 * Contract: `quietPoint(events)` is the last index `p` (0 when there is none)
 * such that, by the events before `p` alone, nothing was under way: no round of
 * any agent in flight, no presentation, final answer or finish, no model call or
 * tool call open, and no event at or after `p` of a round that was cancelled
 * before it (such a round's late calls are told apart by its cancellation).
 * It reads the events the way the fold would only roughly, so the replay checks
 * the fold's state at `p` (`isQuiet`) and replays the whole log when it is not
 * quiet. `foldWithStart(events)` is `foldEvents(events)` that keeps, on the
 * way, the fold at their quiet point: a resume folds its log once and hands
 * that to its replay (`ReplayStart`). Pure.
 */
import type { Event } from "../events/index.ts"
import { foldingInPlace, type State } from "../state/index.ts"

/** Where a resume's replay starts, and the fold of the events before it. */
export interface ReplayStart {
  readonly from: number
  readonly state: State
}

/** The state at a point where a replay may start: nothing in flight, open or decided. */
export const isQuiet = (state: State): boolean =>
  state.run !== null &&
  state.presentation === null &&
  state.final === null &&
  state.finished === null &&
  state.openCalls === 0 &&
  state.agents.every((a) => a.inFlight === null)

const ROUND_ENDS = new Set<Event["_tag"]>(["answer_submitted", "vote_cast", "vote_ignored", "round_cancelled", "agent_failed"])

const roundKey = (e: Event): string | null => ("agent" in e && "round" in e && typeof e.round === "number" ? `${e.agent}#${e.round}` : null)

export const quietPoint = (events: ReadonlyArray<Event>): number => {
  const lastOf = new Map<string, number>()
  events.forEach((e, i) => {
    const key = roundKey(e)
    if (key !== null) lastOf.set(key, i)
  })
  const inFlight = new Set<string>()
  let started = false
  let decided = false
  let calls = 0
  let tools = 0
  /** The last index of any event of a round cancelled so far. */
  let staleUntil = -1
  let point = 0
  for (let i = 0; i < events.length; i++) {
    if (i > 0 && started && !decided && calls === 0 && tools === 0 && inFlight.size === 0 && staleUntil < i) point = i
    const e = events[i]!
    switch (e._tag) {
      case "run_started":
        started = true
        break
      case "run_resumed":
        // The rounds it continues are in flight again; calls cut off by the stop stay open for good.
        inFlight.clear()
        for (const r of e.continued_rounds ?? []) inFlight.add(r.agent)
        calls = 0
        tools = 0
        decided = decided || e.presentation_continued === true
        break
      case "round_started":
        inFlight.add(e.agent)
        break
      case "call_start":
        calls += 1
        break
      case "call_end":
        calls -= 1
        break
      case "tool_call_started":
        tools += 1
        break
      case "tool_call_finished":
        tools -= 1
        break
      case "presentation_started":
      case "final_answer":
      case "run_finished":
        decided = true
        break
      default:
        if (ROUND_ENDS.has(e._tag) && "agent" in e) inFlight.delete(e.agent)
    }
    if (e._tag === "round_cancelled") staleUntil = Math.max(staleUntil, lastOf.get(`${e.agent}#${e.round}`) ?? i)
  }
  if (started && !decided && calls === 0 && tools === 0 && inFlight.size === 0 && staleUntil < events.length) point = events.length
  return point
}

/** The fold of `events`, as `foldEvents` gives it, and the fold of those before their quiet point. */
export const foldWithStart = (events: ReadonlyArray<Event>): { readonly state: State; readonly start: ReplayStart } => {
  const from = quietPoint(events)
  const fold = foldingInPlace()
  let before = fold.state()
  for (let i = 0; i < events.length; i++) {
    if (i === from) before = fold.settle()
    fold.add(events[i]!)
  }
  if (from === events.length) before = fold.settle()
  return { state: fold.state(), start: { from, state: before } }
}
