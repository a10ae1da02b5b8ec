/**
 * The driver of deterministic replay (`replay.ts`): the walk of a recorded log, event by event, each
 * made again by this code and compared with the record.
 *
 * Contract: `replayFrom(recorded, agents, callOf, options, start)` never throws and does no I/O (the
 * recorded calls come in through `callOf`, tool results through `options`). It stops at the first event
 * this code makes differently (the divergence) or at the end, and gives the events it made, the state
 * they fold to, and the round machines in flight (`replay-machines.ts`). What it makes at each point and
 * how that is compared is `replay-compare.ts`. Words as in `replay.ts`.
 */
import type { Agent } from "./config.ts"
import { type Reply, judgeReply, stopRun, updateFor } from "./decide.ts"
import type { Event } from "./events.ts"
import { type LlmReply, type LlmRequest, type ToolSpec, hasErrorFlags } from "./llm.ts"
import { agentToolsOf, baseRequest, decided, ownTools, requestKey, sameDecision } from "./replay-compare.ts"
import { continuationsFrom, isStaleCall, machinesInFlight, toolStepOf } from "./replay-machines.ts"
import { isQuiet } from "./replay-start.ts"
import { shownAnswers } from "./requests.ts"
import {
  type RoundMachine,
  type Transition,
  onCallFailed,
  onModelReply,
  onToolRecorded,
  onTimeWarning,
  onUpdate,
  replyOfRecord,
  startRound,
} from "./round-machine.ts"
import { type State, folding, initialState } from "./state.ts"
import { workspaceEventProblem } from "./workspaces.ts"

export interface RecordedCall {
  readonly request: LlmRequest | null
  readonly reply: LlmReply | null
  readonly error: string | null
}

export interface Divergence {
  /** 0-based index of the event in the recorded log. */
  readonly index: number
  readonly recorded: Event | null
  readonly replayed: Event | null
  readonly reason: string
}

export interface ReplayResult {
  readonly events: ReadonlyArray<Event>
  readonly state: State
  readonly divergence: Divergence | null
  /** The rounds (and a presentation) in flight at the end of the log, by agent: what a resume would continue. */
  readonly rounds: ReadonlyMap<string, RoundMachine>
  /** The same, each with the step it goes on from; a round whose result is not judged yet is `done` with it. */
  readonly continuations: ReadonlyMap<string, Transition>
}

export interface ReplayOptions {
  readonly checkRequests: boolean
  /** The agent's own tools, for a call whose recorded request is not at hand (resume). */
  readonly toolsOf?: (agent: string) => ReadonlyArray<ToolSpec>
  /** The whole result of tool call `n` (`tool_log/<n>.json`), for a `tool_call_finished` that does not hold it. */
  readonly toolResultOf?: (n: number) => string | undefined
  /** The text of blob `hash` (`blobs/<hash>.txt`): the long tool-call arguments the events reference (`ArgumentsText`). */
  readonly blobOf?: (hash: string) => string | undefined
  /** SHA-256 (hex) of a text: with it, each recorded tool result is checked against its digest. */
  readonly digestOf?: (text: string) => string
}
/**
 * `replayRun` from event `start.from`, whose events before are folded to `start.state` (or, null, are
 * folded here): a replay that only rebuilds what is in flight at the end, from a point where nothing was
 * (`replay-start.ts`). Its `events` are those from `from`. When the fold there is not quiet after all,
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
  const fold = folding(start.state ?? initialState)
  let state = fold.state()
  if (start.state === null) for (let i = 0; i < from; i++) state = fold.add(recorded[i]!)
  if (from > 0 && !isQuiet(state)) return replayFrom(recorded, agents, callOf, options, { from: 0, state: initialState })
  const out: Array<Event> = []
  /** Results waiting to be judged, by agent. */
  const pending = new Map<string, Reply>()
  /** The round machine of each agent's work in flight. */
  const machines = new Map<string, Transition>()
  /** The last model reply of each agent's work in flight: a vote an update comes right after. */
  const lastReply = new Map<string, LlmReply>()
  /** Events a machine produced that the log must show next for that agent. */
  const expected = new Map<string, Array<Event>>()
  const queued: Array<Event> = []
  // Rounds cancelled by a new answer: a call of theirs may still have been
  // recorded after the cancellation (its fiber got there first); such events are
  // facts of the timing, with no result to judge and no request to rebuild.
  const cancelled = new Set<string>()
  /** Tool calls started and not finished, with their agent: a context write belongs to one. */
  const openToolCalls = new Map<number, string>()
  const agentTools = agentToolsOf(recorded, (n) => callOf(n)?.request, options.toolsOf)
  const inFlight = (): ReadonlyMap<string, RoundMachine> => machinesInFlight(machines)
  const continuations = (): ReadonlyMap<string, Transition> => continuationsFrom(machines, pending)
  const diverge = (index: number, replayed: Event | null, reason: string): ReplayResult => ({
    events: out,
    state,
    divergence: { index, recorded: recorded[index] ?? null, replayed, reason },
    rounds: inFlight(),
    continuations: continuations(),
  })
  for (let i = from; i < recorded.length; i++) {
    const rec = recorded[i]!
    const time = rec.time
    let replayed: Event | null = null
    let reason = "this code makes a different event here"
    const fromQueue = queued.shift()
    if (fromQueue !== undefined) {
      replayed = fromQueue
    } else if (isStaleCall(rec, cancelled)) {
      replayed = rec
    } else {
      switch (rec._tag) {
        case "run_started":
          replayed = state.run === null ? rec : null
          break
        case "run_resumed": {
          // A process stopped here: what it had in flight is gone, but for the rounds it continues.
          const kept = new Set((rec.continued_rounds ?? []).map((r) => `${r.agent}#round#${r.round}`))
          for (const [agent, t] of [...machines]) {
            const key = t.machine.role === "presentation" ? (rec.presentation_continued === true ? null : agent) : `${agent}#round#${t.machine.round}`
            if (key !== null && !kept.has(key)) {
              machines.delete(agent)
              pending.delete(agent)
            }
          }
          for (const agent of [...pending.keys()]) if (!machines.has(agent)) pending.delete(agent)
          expected.clear()
          replayed = rec
          break
        }
        case "tool_call_started": {
          const t = toolStepOf(machines, rec, options.blobOf)
          if (typeof t === "string") reason = t
          else replayed = rec
          break
        }
        case "tool_call_finished": {
          const t = toolStepOf(machines, rec, options.blobOf)
          if (typeof t === "string") {
            reason = t
            break
          }
          const content = rec.result ?? options.toolResultOf?.(rec.tool_call)
          if (content === undefined) return diverge(i, null, `the result of tool call ${rec.tool_call} is missing from tool_log/`)
          if (options.digestOf !== undefined && options.digestOf(content) !== rec.digest) {
            return diverge(i, null, `the recorded result of tool call ${rec.tool_call} (${rec.tool}) does not match its digest: it was changed`)
          }
          machines.set(rec.agent, onToolRecorded(t.machine, { callId: rec.call_id, name: rec.tool, content, isError: !rec.ok }))
          replayed = rec
          break
        }
        case "hosted_tool_used":
          replayed = rec
          break
        case "round_started":
        case "round_cancelled":
        case "presentation_started": {
          replayed = decided(state, time, rec)[0] ?? null
          machines.delete(rec.agent)
          expected.delete(rec.agent)
          if (rec._tag === "round_cancelled") {
            pending.delete(rec.agent)
            cancelled.add(`${rec.agent}#${rec.round}`)
          }
          break
        }
        case "call_start": {
          let t = machines.get(rec.agent)
          if (t === undefined) {
            const own = callOf(rec.call)?.request
            const base = baseRequest(state, agents, rec.agent, rec.role, own ? ownTools(own) : agentTools(rec.agent))
            if (base === null) {
              reason = `this code makes no ${rec.role} call for ${rec.agent} here`
              break
            }
            t = startRound({ agent: rec.agent, round: rec.round, role: rec.role, request: base })
            machines.set(rec.agent, t)
          }
          const step = t.step
          if (step._tag !== "call_model") {
            reason = `this code makes no call for ${rec.agent} here: its ${rec.role} is at step ${step._tag}`
            break
          }
          const request = callOf(rec.call)?.request
          const flags = request ? hasErrorFlags(request.messages) : false
          if (request && requestKey(request, flags) !== requestKey(step.request, flags)) {
            return diverge(i, rec, `the request of call ${rec.call} is built differently from the recorded one`)
          }
          replayed = { ...rec, round: t.machine.round, role: t.machine.role, attempt: step.attempt }
          break
        }
        case "call_end": {
          replayed = rec
          const t = machines.get(rec.agent)
          const call = callOf(rec.call)
          if (t === undefined) break
          if (options.checkRequests && !call?.request) return diverge(i, rec, `the request of call ${rec.call} is missing from llm_log/`)
          if (rec.error !== null) {
            // Unless a call_retried follows, the call failed for good.
            const failed = onCallFailed(t.machine, rec.error).step
            if (failed._tag === "done") pending.set(rec.agent, failed.reply)
            break
          }
          const reply = rec.reply ? replyOfRecord(rec.reply, options.blobOf) : call?.reply
          if (reply === null && rec.reply) return diverge(i, rec, `the arguments of a tool call of call ${rec.call} are missing from blobs/`)
          if (!reply) return diverge(i, rec, `the reply of call ${rec.call} is missing from llm_log/`)
          const next = onModelReply(t.machine, reply, time)
          lastReply.set(rec.agent, reply)
          machines.set(rec.agent, next)
          if (next.events.length > 0) expected.set(rec.agent, [...(expected.get(rec.agent) ?? []), ...next.events])
          if (next.step._tag === "done") pending.set(rec.agent, next.step.reply)
          break
        }
        case "call_retried":
          pending.delete(rec.agent)
          replayed = rec
          break
        case "round_time_warned": {
          // When the round passed its time limit is the timing's; what it is told is this code's.
          const t = machines.get(rec.agent)
          if (t === undefined || t.machine.round !== rec.round || t.machine.role !== "round" || t.step._tag !== "call_model") {
            reason = `this code warns round ${rec.round} of ${rec.agent} of no time limit here`
            break
          }
          replayed = rec
          machines.set(rec.agent, onTimeWarning(t.machine, rec.stage))
          break
        }
        case "update_injected": {
          // When the round reached a step boundary is the timing's; what it is told is this code's.
          const t = machines.get(rec.agent)
          const latest = updateFor(state, rec.agent, rec.round)
          const waiting = pending.get(rec.agent)
          const afterVote = t?.step._tag === "done" && waiting?._tag === "voted"
          if (t === undefined || latest === null || t.machine.round !== rec.round || (t.step._tag !== "call_model" && !afterVote)) {
            reason = `this code injects no update into round ${rec.round} of ${rec.agent} here`
            break
          }
          replayed = { _tag: "update_injected", time, agent: rec.agent, round: rec.round, shown: latest, after_vote: afterVote }
          if (afterVote) pending.delete(rec.agent)
          machines.set(rec.agent, onUpdate(t.machine, shownAnswers(state, latest), afterVote ? (lastReply.get(rec.agent) ?? null) : null))
          break
        }
        case "reply_rejected":
          replayed = expected.get(rec.agent)?.shift() ?? null
          if (replayed === null) reason = `this code rejects no reply of ${rec.agent} here`
          break
        case "answer_submitted":
        case "vote_cast":
        case "vote_ignored":
        case "agent_failed": {
          const reply =
            rec._tag === "agent_failed" && rec.kind === "timeout"
              ? ({ _tag: "failed", agent: rec.agent, round: rec.round, kind: "timeout", message: rec.message } as const)
              : pending.get(rec.agent)
          if (reply === undefined) return diverge(i, null, `no result of ${rec.agent} is waiting to be judged here`)
          pending.delete(rec.agent)
          replayed = judgeReply(state, reply, time)[0] ?? null
          break
        }
        case "final_answer": {
          if (rec.source === "salvaged") {
            // The decider's own stop (the budget), else a stop from outside, recorded by the run_finished after it.
            const stop = recorded.slice(i + 1).find((e) => e._tag === "run_finished")
            let events = decided(state, time)
            if (events[0]?._tag !== "final_answer") {
              events = stop?._tag === "run_finished" && stop.reason !== "completed" ? stopRun(state, stop.reason, stop.message, time) : []
            }
            replayed = events[0] ?? null
            queued.push(...events.slice(1).map((e) => ({ ...e, time: stop?.time ?? time })))
            break
          }
          const p = state.presentation
          if (p !== null && !p.callsModel) {
            replayed = decided(state, time)[0] ?? null
            break
          }
          const reply = pending.get(rec.agent)
          if (reply === undefined) return diverge(i, null, `no presentation of ${rec.agent} is waiting here`)
          pending.delete(rec.agent)
          replayed = judgeReply(state, reply, time)[0] ?? null
          break
        }
        case "workspace_snapshotted":
        case "workspace_finalized":
        case "context_write_intended":
        case "context_path_written": {
          // Replay runs no tool and copies no file: it checks that each file fact fits the run where it stands.
          const why = workspaceEventProblem(state, rec, openToolCalls)
          if (why === null) replayed = rec
          else reason = why
          break
        }
        case "run_finished":
          replayed =
            rec.reason === "completed" || rec.reason === "error" || rec.reason === "budget"
              ? (decided(state, time)[0] ?? null)
              : (stopRun(state, rec.reason, rec.message, time)[0] ?? null)
          break
      }
    }
    if (replayed === null || !sameDecision(replayed, rec)) return diverge(i, replayed, reason)
    if (replayed._tag === "tool_call_started") openToolCalls.set(replayed.tool_call, replayed.agent)
    if (replayed._tag === "tool_call_finished") openToolCalls.delete(replayed.tool_call)
    out.push(replayed)
    state = fold.add(replayed)
  }
  return { events: out, state, divergence: null, rounds: inFlight(), continuations: continuations() }
}
