/**
 * The round machines a replay (`driver.ts`) keeps, one per agent with work in flight, and what is read of them.
 *
 * Contract: pure functions of the driver's maps: `machines` (each agent's `Transition`, `round-machine.ts`)
 * and `pending` (each agent's result waiting to be judged). `machinesInFlight` gives the rounds a resume
 * continues, `continuationsFrom` the same with the step each goes on from, `toolStepOf` the tool step a
 * recorded tool event belongs to (its referenced arguments read through `blobOf`), and `isStaleCall` whether an event is of a cancelled round.
 *
 * Words: a round is *cancelled* when a new answer stopped it (its `workKey` in the driver's set); a call of
 * it may still be recorded after (its fiber got there first): a fact of the timing, nothing to judge.
 */
import type { Reply } from "../coordination/decide.ts"
import { type RoundMachine, type Transition, unfinishedTools } from "../coordination/round-machine.ts"
import { workKey } from "../coordination/work-key.ts"
import { argumentsText, type Event } from "../events/index.ts"

/** Whether `e` is a call of a round (not a presentation) that a new answer cancelled. */
export const isStaleCall = (e: Event, cancelled: ReadonlySet<string>): boolean =>
  (e._tag === "call_start" ||
    e._tag === "call_end" ||
    e._tag === "call_retried" ||
    e._tag === "reply_rejected" ||
    e._tag === "tool_call_started" ||
    e._tag === "tool_call_finished" ||
    e._tag === "hosted_tool_used") &&
  (!("role" in e) || e.role === "round") &&
  cancelled.has(workKey(e.agent, e.round))

/** The machines not done yet, by agent: the rounds (and a presentation) in flight. */
export const machinesInFlight = (machines: ReadonlyMap<string, Transition>): ReadonlyMap<string, RoundMachine> =>
  new Map([...machines].flatMap(([agent, t]) => (t.step._tag === "done" ? [] : [[agent, t.machine] as const])))

/** Each machine with the step it goes on from; one that is done goes on with its result waiting to be judged, if any. */
export const continuationsFrom = (
  machines: ReadonlyMap<string, Transition>,
  pending: ReadonlyMap<string, Reply>,
): ReadonlyMap<string, Transition> =>
  new Map(
    [...machines].flatMap(([agent, t]): ReadonlyArray<readonly [string, Transition]> => {
      if (t.step._tag !== "done") return [[agent, { ...t, events: [] }]]
      const result = pending.get(agent)
      // The reply it ended on goes with it: an update after a vote shows the model its stale vote.
      return result === undefined ? [] : [[agent, { machine: t.machine, events: [], step: { ...t.step, reply: result } }]]
    }),
  )

/** The tool step of the agent that `rec` (a tool call's start or end) belongs to, or why there is none. */
export const toolStepOf = (
  machines: ReadonlyMap<string, Transition>,
  rec: Extract<Event, { _tag: "tool_call_started" | "tool_call_finished" }>,
  blobOf?: (hash: string) => string | undefined,
): Transition | string => {
  const t = machines.get(rec.agent)
  if (t === undefined || t.step._tag !== "run_tools" || t.machine.round !== rec.round || t.machine.role !== rec.role) {
    return `this code runs no tool for ${rec.agent} here`
  }
  const call = unfinishedTools(t.machine).find((c) => c.id === rec.call_id)
  const args = argumentsText(rec.arguments, blobOf)
  if (args === undefined) return `the arguments of tool call ${rec.tool_call} are missing from blobs/`
  if (call === undefined || call.name !== rec.tool || call.arguments !== args) {
    return `the reply of ${rec.agent} has no tool call ${rec.call_id} of ${rec.tool} with these arguments waiting to run`
  }
  return t
}
