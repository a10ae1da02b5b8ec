/**
 * Deterministic replay: the decisions of a recorded run, made again by this code.
 *
 * `replayRun` walks a recorded `events.jsonl` in its recorded order, on a
 * virtual clock whose time is each recorded event's time. For every recorded
 * event it computes what this code produces at that point from the same
 * inputs: the decider's commands (`decide`, which also stops a run whose budget
 * is spent), the round machine's steps (`round-machine.ts`: the request and
 * attempt of each call, what each recorded reply means, the problems the model
 * is told of), the judgement of each result (`judgeReply`) and the stops from
 * outside (`stopRun`). Inputs taken from the record are only what the outside
 * world decided: the model replies (carried by `call_end`, or in `llm_log/`
 * for logs older than that), call failures and retries, timeouts, signals and
 * the order in which results arrived. Every request is compared with the one
 * recorded in `llm_log/`. The first event that differs (wall-clock fields
 * aside) is the divergence; a missing recorded reply or request, or a request
 * built differently, is one too.
 *
 * Tool calls are fed back, never run: a `tool_call_started` must be a call
 * the machine's tool step has not had a result for, and a
 * `tool_call_finished` gives the machine its recorded result (from the event,
 * or from `tool_log/` through `toolResultOf`), checked against the event's
 * `digest` when `digestOf` is given: a changed result is a divergence at that
 * event. The agent's own tools a request offers are taken from the recorded
 * request of the call, else from `toolsOf`, else from another recorded request
 * of the agent (a call cut off by a crash has none of its own).
 *
 * The round machines still in flight at the end of the log are the rounds a
 * resume would continue: `rounds` gives them, transcript included, and
 * `continuations` gives each with the step it goes on from (a round whose
 * result was not judged yet is `done` with it). A `run_resumed` keeps the
 * machines of the rounds it continues (`continued_rounds`,
 * `presentation_continued`) and drops the others.
 *
 * Pure: the recorded calls come in as a lookup function.
 *
 * The walk is `driver.ts`; what is made again and how it is compared,
 * `compare.ts`; the round machines it keeps, `machines.ts`.
 */

export { sameDecision } from "./compare.ts"
export * from "./replay-run.ts"
export * from "./resume-plan.ts"
export * from "./start.ts"
export type { Divergence, RecordedCall, ReplayOptions, ReplayResult } from "./types.ts"
