/**
 * One step of replay's walk per kind of event (`driver.ts`): what this code makes again where the log has a recorded event.
 *
 * Contract: `STEPS[event._tag](walk, event, i)` never throws and does no I/O;
 * it reads and updates the walk's collections (its round machines, the
 * results waiting to be judged, the events a machine announced) and says
 * what it made: the event made again (`made`), nothing with the reason
 * (`none`), or a stop of the whole walk (`stop`: a recorded fact is missing
 * or was changed). Whether what it made is the recorded event is the
 * driver's comparison (`sameDecision`), not the step's.
 *
 * Words: a *walk* is one pass over a recorded log; a round is *cancelled*
 * when a new answer stopped it (its `workKey` in `cancelled`).
 */
import type { Agent } from "../config/index.ts"
import { judgeReply, type Reply, stopRun, updateFor } from "../coordination/decide.ts"
import { shownAnswers } from "../coordination/requests.ts"
import {
  onCallFailed,
  onModelReply,
  onTimeWarning,
  onToolRecorded,
  onUpdate,
  replyOfRecord,
  startRound,
  type Transition,
} from "../coordination/round-machine.ts"
import { workKey } from "../coordination/work-key.ts"
import type { Event } from "../events/index.ts"
import { hasErrorFlags, type LlmReply, type ToolSpec } from "../llm.ts"
import type { State } from "../state/index.ts"
import { workspaceEventProblem } from "../workspaces/facts.ts"
import { baseRequest, decided, ownTools, requestKey } from "./compare.ts"
import { toolStepOf } from "./machines.ts"
import type { RecordedCall, ReplayOptions } from "./types.ts"

/** The state of one walk over a recorded log. */
export interface Walk {
  readonly recorded: ReadonlyArray<Event>
  readonly agents: ReadonlyArray<Agent>
  readonly callOf: (call: number) => RecordedCall | undefined
  readonly options: ReplayOptions
  readonly agentTools: (agent: string) => ReadonlyArray<ToolSpec>
  /** The fold of the events made so far. */
  state: State
  /** Results waiting to be judged, by agent. */
  readonly pending: Map<string, Reply>
  /** The round machine of each agent's work in flight. */
  readonly machines: Map<string, Transition>
  /** The last model reply of each agent's work in flight: a vote an update comes right after. */
  readonly lastReply: Map<string, LlmReply>
  /** Events a machine produced that the log must show next for that agent. */
  readonly expected: Map<string, Array<Event>>
  /** Events made ahead, which the next recorded events must be. */
  readonly queued: Array<Event>
  /**
   * Rounds cancelled by a new answer: a call of theirs may still have been
   * recorded after the cancellation (its fiber got there first); such events
   * are facts of the timing, with no result to judge and no request to rebuild.
   */
  readonly cancelled: Set<string>
  /** Tool calls started and not finished, with their agent: a context write belongs to one. */
  readonly openToolCalls: Map<number, string>
}

/** What a step made of a recorded event. */
export type Step =
  | { readonly _tag: "made"; readonly event: Event | null; readonly reason?: string }
  | { readonly _tag: "stop"; readonly event: Event | null; readonly reason: string }

export const made = (event: Event | null): Step => ({ _tag: "made", event })
const none = (reason: string): Step => ({ _tag: "made", event: null, reason })
const stop = (event: Event | null, reason: string): Step => ({ _tag: "stop", event, reason })

type Of<T extends Event["_tag"]> = Extract<Event, { _tag: T }>
type StepOf<T extends Event["_tag"]> = (walk: Walk, rec: Of<T>, index: number) => Step

/** A process stopped here: what it had in flight is gone, but for the rounds it continues. */
const runResumed: StepOf<"run_resumed"> = (w, rec) => {
  const kept = new Set((rec.continued_rounds ?? []).map((r) => workKey(r.agent, r.round)))
  for (const [agent, t] of [...w.machines]) {
    const key = t.machine.role === "presentation" ? (rec.presentation_continued === true ? null : agent) : workKey(agent, t.machine.round)
    if (key !== null && !kept.has(key)) {
      w.machines.delete(agent)
      w.pending.delete(agent)
    }
  }
  for (const agent of [...w.pending.keys()]) if (!w.machines.has(agent)) w.pending.delete(agent)
  w.expected.clear()
  return made(rec)
}

const toolStarted: StepOf<"tool_call_started"> = (w, rec) => {
  const t = toolStepOf(w.machines, rec, w.options.blobOf)
  return typeof t === "string" ? none(t) : made(rec)
}

const toolFinished: StepOf<"tool_call_finished"> = (w, rec) => {
  const t = toolStepOf(w.machines, rec, w.options.blobOf)
  if (typeof t === "string") return none(t)
  const content = rec.result ?? w.options.toolResultOf?.(rec.tool_call)
  if (content === undefined) return stop(null, `the result of tool call ${rec.tool_call} is missing from tool_log/`)
  if (w.options.digestOf !== undefined && w.options.digestOf(content) !== rec.digest) {
    return stop(null, `the recorded result of tool call ${rec.tool_call} (${rec.tool}) does not match its digest: it was changed`)
  }
  w.machines.set(rec.agent, onToolRecorded(t.machine, { callId: rec.call_id, name: rec.tool, content, isError: !rec.ok }))
  return made(rec)
}

/** A round's start, its cancellation, a presentation's start: the decider's, at this point of the run. */
const roundEdge = (w: Walk, rec: Of<"round_started"> | Of<"round_cancelled"> | Of<"presentation_started">): Step => {
  const event = decided(w.state, rec.time, rec)[0] ?? null
  w.machines.delete(rec.agent)
  w.expected.delete(rec.agent)
  if (rec._tag === "round_cancelled") {
    w.pending.delete(rec.agent)
    w.cancelled.add(workKey(rec.agent, rec.round))
  }
  return made(event)
}

const callStart: StepOf<"call_start"> = (w, rec) => {
  let t = w.machines.get(rec.agent)
  if (t === undefined) {
    const own = w.callOf(rec.call)?.request
    const base = baseRequest(w.state, w.agents, rec.agent, rec.role, own ? ownTools(own) : w.agentTools(rec.agent))
    if (base === null) return none(`this code makes no ${rec.role} call for ${rec.agent} here`)
    t = startRound({ agent: rec.agent, round: rec.round, role: rec.role, request: base })
    w.machines.set(rec.agent, t)
  }
  const step = t.step
  if (step._tag !== "call_model") return none(`this code makes no call for ${rec.agent} here: its ${rec.role} is at step ${step._tag}`)
  const request = w.callOf(rec.call)?.request
  const flags = request ? hasErrorFlags(request.messages) : false
  if (request && requestKey(request, flags) !== requestKey(step.request, flags)) {
    return stop(rec, `the request of call ${rec.call} is built differently from the recorded one`)
  }
  return made({ ...rec, round: t.machine.round, role: t.machine.role, attempt: step.attempt })
}

const callEnd: StepOf<"call_end"> = (w, rec) => {
  const t = w.machines.get(rec.agent)
  const call = w.callOf(rec.call)
  if (t === undefined) return made(rec)
  if (w.options.checkRequests && !call?.request) return stop(rec, `the request of call ${rec.call} is missing from llm_log/`)
  if (rec.error !== null) {
    // Unless a call_retried follows, the call failed for good.
    const failed = onCallFailed(t.machine, rec.error).step
    if (failed._tag === "done") w.pending.set(rec.agent, failed.reply)
    return made(rec)
  }
  const reply = rec.reply ? replyOfRecord(rec.reply, w.options.blobOf) : call?.reply
  if (reply === null && rec.reply) return stop(rec, `the arguments of a tool call of call ${rec.call} are missing from blobs/`)
  if (!reply) return stop(rec, `the reply of call ${rec.call} is missing from llm_log/`)
  const next = onModelReply(t.machine, reply, rec.time)
  w.lastReply.set(rec.agent, reply)
  w.machines.set(rec.agent, next)
  if (next.events.length > 0) w.expected.set(rec.agent, [...(w.expected.get(rec.agent) ?? []), ...next.events])
  if (next.step._tag === "done") w.pending.set(rec.agent, next.step.reply)
  return made(rec)
}

/** When the round passed its time limit is the timing's; what it is told is this code's. */
const timeWarned: StepOf<"round_time_warned"> = (w, rec) => {
  const t = w.machines.get(rec.agent)
  if (t === undefined || t.machine.round !== rec.round || t.machine.role !== "round" || t.step._tag !== "call_model") {
    return none(`this code warns round ${rec.round} of ${rec.agent} of no time limit here`)
  }
  w.machines.set(rec.agent, onTimeWarning(t.machine, rec.stage))
  return made(rec)
}

/** When the round reached a step boundary is the timing's; what it is told is this code's. */
const updateInjected: StepOf<"update_injected"> = (w, rec) => {
  const t = w.machines.get(rec.agent)
  const latest = updateFor(w.state, rec.agent, rec.round)
  const afterVote = t?.step._tag === "done" && w.pending.get(rec.agent)?._tag === "voted"
  if (t === undefined || latest === null || t.machine.round !== rec.round || (t.step._tag !== "call_model" && !afterVote)) {
    return none(`this code injects no update into round ${rec.round} of ${rec.agent} here`)
  }
  if (afterVote) w.pending.delete(rec.agent)
  w.machines.set(rec.agent, onUpdate(t.machine, shownAnswers(w.state, latest), afterVote ? (w.lastReply.get(rec.agent) ?? null) : null))
  return made({ _tag: "update_injected", time: rec.time, agent: rec.agent, round: rec.round, shown: latest, after_vote: afterVote })
}

/** What the round machine made of a reply (a rejection, a checklist's scores): the next it owes for that agent. */
const machineMade = (w: Walk, rec: Of<"reply_rejected"> | Of<"checklist_submitted">): Step => {
  const event = w.expected.get(rec.agent)?.shift() ?? null
  return event === null ? none(`this code makes no ${rec._tag} of ${rec.agent} here`) : made(event)
}

/** An answer, a vote, an ignored vote, a failure: the judgement of the result waiting for that agent. */
const judged = (w: Walk, rec: Of<"answer_submitted"> | Of<"vote_cast"> | Of<"vote_ignored"> | Of<"agent_failed">): Step => {
  const reply =
    rec._tag === "agent_failed" && rec.kind === "timeout"
      ? ({ _tag: "failed", agent: rec.agent, round: rec.round, kind: "timeout", message: rec.message } as const)
      : w.pending.get(rec.agent)
  if (reply === undefined) return stop(null, `no result of ${rec.agent} is waiting to be judged here`)
  w.pending.delete(rec.agent)
  return made(judgeReply(w.state, reply, rec.time)[0] ?? null)
}

const finalAnswer: StepOf<"final_answer"> = (w, rec, i) => {
  if (rec.source === "salvaged") {
    // The decider's own stop (the budget), else a stop from outside, recorded by the run_finished after it.
    const finish = w.recorded.slice(i + 1).find((e) => e._tag === "run_finished")
    let events = decided(w.state, rec.time)
    if (events[0]?._tag !== "final_answer") {
      events =
        finish?._tag === "run_finished" && finish.reason !== "completed" ? stopRun(w.state, finish.reason, finish.message, rec.time) : []
    }
    w.queued.push(...events.slice(1).map((e) => ({ ...e, time: finish?.time ?? rec.time })))
    return made(events[0] ?? null)
  }
  const p = w.state.presentation
  if (p !== null && !p.callsModel) return made(decided(w.state, rec.time)[0] ?? null)
  const reply = w.pending.get(rec.agent)
  if (reply === undefined) return stop(null, `no presentation of ${rec.agent} is waiting here`)
  w.pending.delete(rec.agent)
  return made(judgeReply(w.state, reply, rec.time)[0] ?? null)
}

/** Replay runs no tool and copies no file: it checks that each file fact fits the run where it stands. */
const fileFact = (
  w: Walk,
  rec: Of<"workspace_snapshotted"> | Of<"workspace_finalized"> | Of<"context_write_intended"> | Of<"context_path_written">,
): Step => {
  const why = workspaceEventProblem(w.state, rec, w.openToolCalls)
  return why === null ? made(rec) : none(why)
}

/** The presenter's evaluation began: the decider's, at this point of the run (`restarts.ts`). */
const evaluationStarted: StepOf<"evaluation_started"> = (w, rec) => {
  const event = decided(w.state, rec.time, rec)[0] ?? null
  w.machines.delete(rec.agent)
  w.expected.delete(rec.agent)
  return made(event)
}

/** The evaluation's decision: the judgement of its result (a timed-out evaluation, which recorded none, confirms). */
const evaluationDecided = (w: Walk, rec: Of<"answer_confirmed"> | Of<"orchestration_restarted">): Step => {
  const waiting = w.pending.get(rec.agent)
  const reply: Reply | undefined =
    waiting ??
    (rec._tag === "answer_confirmed" && rec.how === "no_decision" ? { _tag: "evaluated", agent: rec.agent, verdict: "none" } : undefined)
  if (reply === undefined) return stop(null, `no evaluation of ${rec.agent} is waiting to be judged here`)
  w.pending.delete(rec.agent)
  w.machines.delete(rec.agent)
  return made(judgeReply(w.state, reply, rec.time)[0] ?? null)
}

const runFinished: StepOf<"run_finished"> = (w, rec) =>
  made(
    rec.reason === "completed" || rec.reason === "error" || rec.reason === "budget"
      ? (decided(w.state, rec.time)[0] ?? null)
      : (stopRun(w.state, rec.reason, rec.message, rec.time)[0] ?? null),
  )

/** The step of each kind of event. */
export const STEPS: { readonly [T in Event["_tag"]]: StepOf<T> } = {
  run_started: (w, rec) => made(w.state.run === null ? rec : null),
  run_resumed: runResumed,
  // A fact of the machine the run started on, as a hosted tool use is of the provider: the decider finishes the run on it.
  tool_start_failed: (w, rec) => made(w.state.run !== null && w.state.toolsFailed === null ? rec : null),
  tool_call_started: toolStarted,
  tool_call_finished: toolFinished,
  hosted_tool_used: (_w, rec) => made(rec),
  // Replay asks nobody: the recorded decision is the fact.
  permission_asked: (_w, rec) => made(rec),
  permission_decided: (_w, rec) => made(rec),
  round_started: roundEdge,
  round_cancelled: roundEdge,
  presentation_started: roundEdge,
  call_start: callStart,
  call_end: callEnd,
  call_retried: (w, rec) => {
    w.pending.delete(rec.agent)
    return made(rec)
  },
  round_time_warned: timeWarned,
  update_injected: updateInjected,
  reply_rejected: machineMade,
  checklist_submitted: machineMade,
  answer_submitted: judged,
  vote_cast: judged,
  vote_ignored: judged,
  agent_failed: judged,
  final_answer: finalAnswer,
  workspace_snapshotted: fileFact,
  workspace_finalized: fileFact,
  context_write_intended: fileFact,
  context_path_written: fileFact,
  // A plan is a fact of its tool call: replay runs no tool, so it checks that the call is in flight.
  task_plan_updated: (w, rec) =>
    w.openToolCalls.get(rec.tool_call) === rec.agent
      ? made(rec)
      : none(`${rec.agent} has no tool call ${rec.tool_call} in flight to plan in`),
  // Facts of the files the run found (skills, memory): replay reads them, it never scans again.
  skills_offered: (w, rec) => made(w.state.skills === null ? rec : null),
  memory_loaded: (_w, rec) => made(rec),
  memory_restored: (w, rec) => made(w.state.memoryRestored ? null : rec),
  run_finished: runFinished,
  evaluation_started: evaluationStarted,
  answer_confirmed: evaluationDecided,
  orchestration_restarted: evaluationDecided,
}

/** The step of `rec`'s kind. */
export const stepOf = (walk: Walk, rec: Event, index: number): Step =>
  (STEPS[rec._tag] as StepOf<typeof rec._tag>)(walk, rec as never, index)
