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
 * The round machines still in flight at the end of the log are the rounds a
 * resume would continue: `rounds` gives them, transcript included.
 *
 * Pure: the recorded calls come in as a lookup function.
 */
import type { Agent } from "./config.ts"
import { type Command, type Reply, commandEvents, decide, judgeReply, stopRun } from "./decide.ts"
import type { Event } from "./events.ts"
import type { LlmReply, LlmRequest } from "./llm.ts"
import { requestForPresentation, requestForRound } from "./requests.ts"
import { type RoundMachine, type Transition, onCallFailed, onModelReply, replyOfRecord, startRound } from "./round-machine.ts"
import { type State, folding } from "./state.ts"

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
}

/** Fields that say where and when a run happened, not what it decided. */
const ENVIRONMENT_FIELDS = new Set(["time", "seconds", "run_id"])

const comparable = (event: Event): string =>
  JSON.stringify(event, (key, value) => (ENVIRONMENT_FIELDS.has(key) ? undefined : value))

export const sameDecision = (a: Event, b: Event): boolean => comparable(a) === comparable(b)

/** The request this code builds for an agent's current round or presentation, before its transcript. */
const baseRequest = (state: State, agents: ReadonlyArray<Agent>, agentId: string, role: "round" | "presentation"): LlmRequest | null => {
  const agent = agents.find((a) => a.id === agentId)
  if (agent === undefined) return null
  return role === "round" ? requestForRound(state, agent) : requestForPresentation(state, agent)
}

const requestKey = (r: LlmRequest): string => JSON.stringify({ system: r.system, messages: r.messages, tools: r.tools })

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
  options: { readonly checkRequests: boolean } = { checkRequests: true },
): ReplayResult => {
  // The fast fold: the plain one copies every answer on every answer, O(n²) in a long run's answers.
  const fold = folding()
  let state = fold.state()
  const out: Array<Event> = []
  /** Results waiting to be judged, by agent. */
  const pending = new Map<string, Reply>()
  /** The round machine of each agent's work in flight. */
  const machines = new Map<string, Transition>()
  /** Events a machine produced that the log must show next for that agent. */
  const expected = new Map<string, Array<Event>>()
  const queued: Array<Event> = []
  // Rounds cancelled by a new answer: a call of theirs may still have been
  // recorded after the cancellation (its fiber got there first); such events are
  // facts of the timing, with no result to judge and no request to rebuild.
  const cancelled = new Set<string>()
  const isStaleCall = (e: Event): boolean =>
    (e._tag === "call_start" || e._tag === "call_end" || e._tag === "call_retried" || e._tag === "reply_rejected") &&
    (!("role" in e) || e.role === "round") &&
    cancelled.has(`${e.agent}#${e.round}`)
  const inFlight = (): ReadonlyMap<string, RoundMachine> =>
    new Map([...machines].flatMap(([agent, t]) => (t.step._tag === "done" ? [] : [[agent, t.machine] as const])))
  const diverge = (index: number, replayed: Event | null, reason: string): ReplayResult => ({
    events: out,
    state,
    divergence: { index, recorded: recorded[index] ?? null, replayed, reason },
    rounds: inFlight(),
  })

  for (let i = 0; i < recorded.length; i++) {
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
        case "run_resumed":
          // A process stopped here: what it had in flight is gone.
          pending.clear()
          machines.clear()
          expected.clear()
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
            const base = baseRequest(state, agents, rec.agent, rec.role)
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
          if (request && requestKey(request) !== requestKey(step.request)) {
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
          machines.set(rec.agent, next)
          if (next.events.length > 0) expected.set(rec.agent, [...(expected.get(rec.agent) ?? []), ...next.events])
          if (next.step._tag === "done") pending.set(rec.agent, next.step.reply)
          break
        }
        case "call_retried":
          pending.delete(rec.agent)
          replayed = rec
          break
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
        case "run_finished":
          replayed =
            rec.reason === "completed" || rec.reason === "error" || rec.reason === "budget"
              ? (decided(state, time)[0] ?? null)
              : (stopRun(state, rec.reason, rec.message, time)[0] ?? null)
          break
      }
    }
    if (replayed === null || !sameDecision(replayed, rec)) return diverge(i, replayed, reason)
    out.push(replayed)
    state = fold.add(replayed)
  }
  return { events: out, state, divergence: null, rounds: inFlight() }
}

/**
 * The rounds (and a presentation) in flight at the end of a log, transcript
 * included, rebuilt from its events alone: what a resume continues.
 */
export const roundsInFlight = (events: ReadonlyArray<Event>, agents: ReadonlyArray<Agent>): ReadonlyMap<string, RoundMachine> =>
  replayRun(events, agents, () => undefined, { checkRequests: false }).rounds
