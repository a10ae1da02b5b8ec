/**
 * The state of a run, and `evolve`, the fold of its events.
 *
 * `evolve(state, event)` never throws and never does I/O. An event that does
 * not fit the state changes nothing but `skippedEvents`: a second
 * run_started, anything before run_started or after run_finished (but a
 * run_resumed), an event of an unknown agent, a round started while one is in
 * flight, an answer, a vote or a failure of an agent that is out or has no
 * such round in flight, an answer under a label that is not its agent's next,
 * a vote for an agent or a label that is not a current answer, a second
 * presentation or final answer. So a log that a crash, a hand or a newer
 * writer left odd folds to a state the decider can trust. The state holds only what decisions and projections need:
 * the orchestrator (`services/orchestrator/index.ts`) folds every event it appends,
 * `decide.ts` reads the result, and `domain/projections/status.ts` projects it into status.json.
 *
 * Words: an agent is *live* until it fails; a round is *in flight* from its
 * round_started until its answer, vote, cancellation or the agent's failure;
 * the *latest labels* are the newest answer label of every agent that has one,
 * in config order, which is what a new round shows.
 *
 * This file is the module's face: the state's types and queries are in
 * `shape.ts`, `evolve` in `evolve.ts`, the fast fold in `folding.ts`.
 */

export { attemptsOf } from "./attempts.ts"
export { evolve } from "./evolve.ts"
export { advanceInPlace, foldEvents, foldingInPlace } from "./folding.ts"
export * from "./shape.ts"
