/**
 * The fast fold of a run's events (`index.ts`): `foldingInPlace`, one event at a time, and `foldEvents`, a whole sequence.
 *
 * Contract: the state after each event is the one `evolve` gives (test/fold-linear.test.ts,
 * test/properties.test.ts), but a fold extends in place the answers it made itself (`Owned`,
 * `evolve.ts`), so that folding n answers costs O(n), not O(n²). `advanceInPlace` is the same for a
 * consumer that keeps only its newest state (a view, a display): `evolve`'s state, at a fold's cost.
 */
import type { Event } from "../events/index.ts"
import { type Owned, step } from "./evolve.ts"
import { initialState, type State } from "./shape.ts"

/**
 * A fold that goes on one event at a time, from `from`: `add(event)` gives
 * the state after it, as `foldEvents` would. Like `foldEvents`, it extends in
 * place what it made itself: a state it returned is not to be kept once the
 * next event is added (the next state may share, and extend, its answers).
 * `settle()` gives the state now as one to keep: the fold no longer extends
 * what it made so far (its next answer copies the answers once).
 */
export const foldingInPlace = (
  from: State = initialState,
): { readonly add: (event: Event) => State; readonly state: () => State; readonly settle: () => State } => {
  const own: Owned = { answers: null, arrays: new WeakSet() }
  let state = from
  return {
    add: (event) => (state = step(state, event, own)),
    state: () => state,
    settle: () => {
      own.answers = null
      own.arrays = new WeakSet()
      return state
    },
  }
}

/** Folds a whole sequence of events from the initial state. */
export const foldEvents = (events: Iterable<Event>, from: State = initialState): State => {
  const fold = foldingInPlace(from)
  for (const event of events) fold.add(event)
  return fold.state()
}

/** Who may extend each state `advanceInPlace` made: the one call that advances it next. */
const owners = new WeakMap<State, Owned>()

/**
 * The state after `event`, as `evolve` gives it, extending in place the
 * answers that the `advanceInPlace` which made `state` made itself: ownership passes
 * to the new state once, so advancing through n answers costs O(n). For a
 * consumer that keeps only its newest state: a state advanced from may see
 * the next answer added to it. (Advanced from twice, the second time copies.)
 */
export const advanceInPlace = (state: State, event: Event): State => {
  const own = owners.get(state) ?? { answers: null, arrays: new WeakSet() }
  owners.delete(state)
  const next = step(state, event, own)
  owners.set(next, own)
  return next
}
