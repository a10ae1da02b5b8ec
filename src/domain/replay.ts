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
 */
import type { Agent } from "./config.ts"
import { type Command, type Reply, commandEvents, decide, judgeReply, stopRun, updateFor } from "./decide.ts"
import type { Event } from "./events.ts"
import { type LlmReply, type LlmRequest, type ToolSpec, hasErrorFlags, withoutErrorFlags } from "./llm.ts"
import { requestForPresentation, requestForRound, shownAnswers } from "./requests.ts"
import {
  type RoundMachine,
  type Transition,
  WORKFLOW_TOOLS,
  onCallFailed,
  onModelReply,
  onToolRecorded,
  onTimeWarning,
  onUpdate,
  replyOfRecord,
  startRound,
  unfinishedTools,
} from "./round-machine.ts"
import { type State, folding, initialState } from "./state.ts"
import { workspaceEventProblem } from "./workspaces.ts"
import { sameJsonWithout } from "./json-equal.ts"
import { type ReplayStart, isQuiet, quietPoint } from "./replay-start.ts"

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
  /** SHA-256 (hex) of a text: with it, each recorded tool result is checked against its digest. */
  readonly digestOf?: (text: string) => string
}

/** Fields that say where and when a run happened, not what it decided. */
const ENVIRONMENT_FIELDS = new Set(["time", "seconds", "run_id"])

/** Whether two events record the same decision: alike as JSON, but for where and when they happened (`ENVIRONMENT_FIELDS`). */
export const sameDecision = (a: Event, b: Event): boolean => sameJsonWithout(a, b, ENVIRONMENT_FIELDS)

/** The request this code builds for an agent's current round or presentation, before its transcript. */
const baseRequest = (
  state: State,
  agents: ReadonlyArray<Agent>,
  agentId: string,
  role: "round" | "presentation",
  tools: ReadonlyArray<ToolSpec>,
): LlmRequest | null => {
  const agent = agents.find((a) => a.id === agentId)
  if (agent === undefined) return null
  return role === "round" ? requestForRound(state, agent, tools) : requestForPresentation(state, agent, tools)
}

/** The agent's own tools a request offers (all but the workflow tools). */
const ownTools = (request: LlmRequest): ReadonlyArray<ToolSpec> => request.tools.filter((tool) => !WORKFLOW_TOOLS.has(tool.name))

/** A request as compared; `flags`: with the error flags of tool results (a log that recorded none is compared without them). */
const requestKey = (r: LlmRequest, flags: boolean): string =>
  JSON.stringify({ system: r.system, messages: flags ? r.messages : withoutErrorFlags(r.messages), tools: r.tools })

/** The events of the decider's commands now, the one like `rec` first. */
const decided = (state: State, time: string, like?: Event): ReadonlyArray<Event> => {
  const events = decide(state).flatMap((c: Command) => commandEvents(state, c, time))
  const match = like === undefined ? undefined : events.find((e) => e._tag === like._tag && sameDecision(e, like))
  return match === undefined ? events : [match, ...events.filter((e) => e !== match)]
}

export const replayRun = (
  recorded: ReadonlyArray<Event>,
  agents: ReadonlyArray<Agent>,
  callOf: (call: number) => RecordedCall | undefined,
  options: ReplayOptions = { checkRequests: true },
): ReplayResult => replayFrom(recorded, agents, callOf, options, { from: 0, state: initialState })

/**
 * `replayRun` from event `start.from`, whose events before are folded to `start.state` (or, null, are
 * folded here): a replay that only rebuilds what is in flight at the end, from a point where nothing was
 * (`replay-start.ts`). Its `events` are those from `from`. When the fold there is not quiet after all,
 * the whole log is replayed.
 */
const replayFrom = (
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
  const isStaleCall = (e: Event): boolean =>
    (e._tag === "call_start" ||
      e._tag === "call_end" ||
      e._tag === "call_retried" ||
      e._tag === "reply_rejected" ||
      e._tag === "tool_call_started" ||
      e._tag === "tool_call_finished" ||
      e._tag === "hosted_tool_used") &&
    (!("role" in e) || e.role === "round") &&
    cancelled.has(`${e.agent}#${e.round}`)
  /** An agent's own tools as any of its recorded requests offers them. */
  const recordedToolsOf = new Map<string, ReadonlyArray<ToolSpec>>()
  const agentTools = (agent: string): ReadonlyArray<ToolSpec> => {
    if (options.toolsOf) return options.toolsOf(agent)
    let tools = recordedToolsOf.get(agent)
    if (tools === undefined) {
      const call = recorded.find((e) => e._tag === "call_start" && e.agent === agent && callOf(e.call)?.request)
      tools = call?._tag === "call_start" ? ownTools(callOf(call.call)!.request!) : []
      recordedToolsOf.set(agent, tools)
    }
    return tools
  }
  const inFlight = (): ReadonlyMap<string, RoundMachine> =>
    new Map([...machines].flatMap(([agent, t]) => (t.step._tag === "done" ? [] : [[agent, t.machine] as const])))
  const continuations = (): ReadonlyMap<string, Transition> =>
    new Map(
      [...machines].flatMap(([agent, t]): ReadonlyArray<readonly [string, Transition]> => {
        if (t.step._tag !== "done") return [[agent, { ...t, events: [] }]]
        const result = pending.get(agent)
        // The reply it ended on goes with it: an update after a vote shows the model its stale vote.
        return result === undefined ? [] : [[agent, { machine: t.machine, events: [], step: { ...t.step, reply: result } }]]
      }),
    )
  const diverge = (index: number, replayed: Event | null, reason: string): ReplayResult => ({
    events: out,
    state,
    divergence: { index, recorded: recorded[index] ?? null, replayed, reason },
    rounds: inFlight(),
    continuations: continuations(),
  })
  /** The tool step of `agent` that `rec` (a tool call's start or end) belongs to, or why there is none. */
  const toolStepOf = (rec: Extract<Event, { _tag: "tool_call_started" | "tool_call_finished" }>): Transition | string => {
    const t = machines.get(rec.agent)
    if (t === undefined || t.step._tag !== "run_tools" || t.machine.round !== rec.round || t.machine.role !== rec.role) {
      return `this code runs no tool for ${rec.agent} here`
    }
    const call = unfinishedTools(t.machine).find((c) => c.id === rec.call_id)
    if (call === undefined || call.name !== rec.tool || call.arguments !== rec.arguments) {
      return `the reply of ${rec.agent} has no tool call ${rec.call_id} of ${rec.tool} with these arguments waiting to run`
    }
    return t
  }

  for (let i = from; i < recorded.length; i++) {
    const rec = recorded[i]!
    const time = rec.time
    let replayed: Event | null = null
    let reason = "this code makes a different event here"
    const fromQueue = queued.shift()
    if (fromQueue !== undefined) {
      replayed = fromQueue
    } else if (isStaleCall(rec)) {
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
          const t = toolStepOf(rec)
          if (typeof t === "string") reason = t
          else replayed = rec
          break
        }
        case "tool_call_finished": {
          const t = toolStepOf(rec)
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
          const reply = rec.reply ? replyOfRecord(rec.reply) : call?.reply
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

/**
 * The rounds (and a presentation) in flight at the end of a log, transcript
 * included, rebuilt from its events alone: what a resume continues.
 * Only the events from the last point where nothing was under way are replayed (`replay-start.ts`).
 */
export const roundsInFlight = (
  events: ReadonlyArray<Event>,
  agents: ReadonlyArray<Agent>,
  options: Omit<ReplayOptions, "checkRequests"> = {},
): ReadonlyMap<string, RoundMachine> =>
  replayFrom(events, agents, () => undefined, { ...options, checkRequests: false }, { from: quietPoint(events), state: null }).rounds

/**
 * What a resume continues: each round (and a presentation) in flight, with the step it goes on from.
 * `start`: where to replay from with the fold before it, when the caller folded the log already (`foldWithStart`).
 */
export const continuationsOf = (
  events: ReadonlyArray<Event>,
  agents: ReadonlyArray<Agent>,
  options: Omit<ReplayOptions, "checkRequests"> = {},
  start: ReplayStart | null = null,
): ReadonlyMap<string, Transition> =>
  replayFrom(events, agents, () => undefined, { ...options, checkRequests: false }, start ?? { from: quietPoint(events), state: null }).continuations
