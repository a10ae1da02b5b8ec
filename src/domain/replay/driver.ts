/**
 * The driver of deterministic replay (`index.ts`): the walk of a recorded log, event by event, each
 * made again by this code and compared with the record.
 *
 * Contract: `replayFrom(recorded, agents, callOf, options, start)` never throws and does no I/O (the
 * recorded calls come in through `callOf`, tool results through `options`). It stops at the first event
 * this code makes differently (the divergence) or at the end, and gives the events it made, the state
 * they fold to, and the round machines in flight (`machines.ts`). What it makes at each point and
 * how that is compared is `compare.ts`; what each kind of event makes is its step (`steps.ts`).
 * Words as in `index.ts`.
 */
import type { Agent } from "../config/index.ts"
import type { Event } from "../events/index.ts"
import type { LlmReply } from "../llm.ts"
import { foldingInPlace, initialState, type State } from "../state/index.ts"
import { agentToolsOf, sameDecision } from "./compare.ts"
import { continuationsFrom, isStaleCall, machinesInFlight } from "./machines.ts"
import { isQuiet } from "./start.ts"
import { made, stepOf, type Walk } from "./steps.ts"
import type { Divergence, RecordedCall, ReplayOptions, ReplayResult } from "./types.ts"

/**
 * `replayRun` from event `start.from`, whose events before are folded to `start.state` (or, null, are
 * folded here): a replay that only rebuilds what is in flight at the end, from a point where nothing was
 * (`start.ts`). Its `events` are those from `from`. When the fold there is not quiet after all,
 * the whole log is replayed.
 */
export const replayFrom = (
  recorded: ReadonlyArray<Event>,
  agents: ReadonlyArray<Agent>,
  callOf: (call: number) => RecordedCall | undefined,
  options: ReplayOptions,
  start: { readonly from: number; readonly state: State | null },
): ReplayResult => {
  const from = start.from
  // The fast fold: the plain one copies every answer on every answer, O(n²) in a long run's answers.
  const fold = foldingInPlace(start.state ?? initialState)
  let state = fold.state()
  if (start.state === null) for (let i = 0; i < from; i++) state = fold.add(recorded[i]!)
  if (from > 0 && !isQuiet(state)) return replayFrom(recorded, agents, callOf, options, { from: 0, state: initialState })
  const walk: Walk = {
    recorded,
    agents,
    callOf,
    options,
    agentTools: agentToolsOf(recorded, (n) => callOf(n)?.request, options.toolsOf),
    state,
    pending: new Map(),
    machines: new Map(),
    lastReply: new Map<string, LlmReply>(),
    expected: new Map(),
    queued: [],
    cancelled: new Set(),
    openToolCalls: new Map(),
  }
  const out: Array<Event> = []
  const end = (divergence: Divergence | null): ReplayResult => ({
    events: out,
    state: walk.state,
    divergence,
    rounds: machinesInFlight(walk.machines),
    continuations: continuationsFrom(walk.machines, walk.pending),
  })
  for (let i = from; i < recorded.length; i++) {
    const rec = recorded[i]!
    const fromQueue = walk.queued.shift()
    const step = fromQueue !== undefined ? made(fromQueue) : isStaleCall(rec, walk.cancelled) ? made(rec) : stepOf(walk, rec, i)
    const replayed = step.event
    if (step._tag === "stop" || replayed === null || !sameDecision(replayed, rec)) {
      return end({ index: i, recorded: rec, replayed, reason: step.reason ?? "this code makes a different event here" })
    }
    if (replayed._tag === "tool_call_started") walk.openToolCalls.set(replayed.tool_call, replayed.agent)
    if (replayed._tag === "tool_call_finished") walk.openToolCalls.delete(replayed.tool_call)
    out.push(replayed)
    walk.state = fold.add(replayed)
  }
  return end(null)
}
