/**
 * Deterministic replay: the decisions of a recorded run, made again by this code.
 *
 * `replayRun` walks a recorded `events.jsonl` in its recorded order, on a
 * virtual clock whose time is each recorded event's time. For every recorded
 * event it computes what this code produces at that point from the same
 * inputs: the decider's commands (`decide`), the requests of each call (rebuilt
 * with `prompts.ts` and compared with the request recorded in `llm_log/`), the
 * check of each recorded reply (`checkReply`), the judgement of each result
 * (`judgeReply`) and the stops (`stopRun`). Inputs taken from the record are
 * only what the outside world decided: the replies in `llm_log/`, call
 * failures, timeouts, signals and the order in which results arrived. The
 * first event that differs (wall-clock fields aside) is the divergence; a
 * missing recorded reply or a request built differently is one too.
 *
 * Pure: the recorded calls come in as a lookup function.
 */
import type { Agent } from "./config.ts"
import { type Reply, commandEvent, decide, judgeReply, stopRun } from "./decide.ts"
import type { Event } from "./events.ts"
import type { LlmMessage, LlmReply, LlmRequest } from "./llm.ts"
import { retryMessages } from "./prompts.ts"
import { requestForPresentation, requestForRound } from "./requests.ts"
import { checkReply, MAX_ATTEMPTS } from "./reply-check.ts"
import { type State, evolve, initialState } from "./state.ts"

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
}

/** Fields that say where and when a run happened, not what it decided. */
const ENVIRONMENT_FIELDS = new Set(["time", "seconds", "pid", "version", "log_dir", "run_id"])

const comparable = (event: Event): string =>
  JSON.stringify(event, (key, value) => (ENVIRONMENT_FIELDS.has(key) ? undefined : value))

export const sameDecision = (a: Event, b: Event): boolean => comparable(a) === comparable(b)

/** The request this code builds for an agent's current round or presentation, before retries. */
const baseRequest = (state: State, agents: ReadonlyArray<Agent>, agentId: string, role: "round" | "presentation"): LlmRequest | null => {
  const agent = agents.find((a) => a.id === agentId)
  if (agent === undefined) return null
  return role === "round" ? requestForRound(state, agent) : requestForPresentation(state, agent)
}

const requestKey = (r: LlmRequest): string => JSON.stringify({ system: r.system, messages: r.messages, tools: r.tools })

interface Round {
  readonly round: number
  messages: ReadonlyArray<LlmMessage>
  rejected: { readonly reason: string; readonly message: string } | null
  attempts: number
}

export const replayRun = (
  recorded: ReadonlyArray<Event>,
  agents: ReadonlyArray<Agent>,
  callOf: (call: number) => RecordedCall | undefined,
): ReplayResult => {
  let state = initialState
  const out: Array<Event> = []
  const pending = new Map<string, Reply>()
  const rounds = new Map<string, Round>()
  const queued: Array<Event> = []
  // Rounds cancelled by a new answer: a call of theirs may still have been
  // recorded after the cancellation (its fiber got there first); such events are
  // facts of the timing, with no result to judge and no request to rebuild.
  const cancelled = new Set<string>()
  const isStaleCall = (e: Event): boolean =>
    (e._tag === "call_start" || e._tag === "call_end" || e._tag === "call_retried" || e._tag === "reply_rejected") &&
    (!("role" in e) || e.role === "round") &&
    cancelled.has(`${e.agent}#${e.round}`)
  const diverge = (index: number, replayed: Event | null, reason: string): ReplayResult => ({
    events: out,
    state,
    divergence: { index, recorded: recorded[index] ?? null, replayed, reason },
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
          rounds.clear()
          replayed = rec
          break
        case "round_started":
        case "round_cancelled":
        case "presentation_started": {
          const commands = decide(state).map((c) => commandEvent(c, time))
          replayed = commands.find((c) => c._tag === rec._tag && sameDecision(c, rec)) ?? commands[0] ?? null
          if (rec._tag === "round_started") rounds.set(rec.agent, { round: rec.round, messages: [], rejected: null, attempts: 0 })
          if (rec._tag === "round_cancelled") {
            pending.delete(rec.agent)
            cancelled.add(`${rec.agent}#${rec.round}`)
          }
          break
        }
        case "call_start": {
          const base = baseRequest(state, agents, rec.agent, rec.role)
          const r = rounds.get(rec.agent)
          const call = callOf(rec.call)
          if (base === null) {
            reason = `this code makes no ${rec.role} call for ${rec.agent} here`
            break
          }
          const messages = rec.role === "round" && r ? [...base.messages, ...r.messages] : base.messages
          const request = { ...base, messages }
          if (call?.request && requestKey(call.request) !== requestKey(request)) {
            return diverge(i, rec, `the request of call ${rec.call} is built differently from the recorded one`)
          }
          replayed = rec
          break
        }
        case "call_end": {
          replayed = rec
          if (rec.error !== null) {
            pending.set(rec.agent, rec.role === "round"
              ? { _tag: "failed", agent: rec.agent, round: rec.round, kind: "error", message: rec.error }
              : { _tag: "presentation_failed", agent: rec.agent, message: rec.error })
            break
          }
          const reply = callOf(rec.call)?.reply
          if (!reply) return diverge(i, rec, `the reply of call ${rec.call} is missing from llm_log/`)
          if (rec.role === "presentation") {
            pending.set(rec.agent, { _tag: "presented", agent: rec.agent, content: reply.text })
            break
          }
          const r = rounds.get(rec.agent)
          const a = state.agents.find((x) => x.info.id === rec.agent)
          const base = baseRequest(state, agents, rec.agent, "round")
          if (!r || !a?.inFlight || !base) break
          const checked = checkReply({ agent: rec.agent, round: rec.round, request: base }, reply)
          r.attempts += 1
          if (checked.ok) {
            pending.set(rec.agent, checked.reply)
          } else {
            r.rejected = { reason: checked.reason, message: checked.message }
            r.messages = [...r.messages, ...retryMessages(reply.text, checked.message)]
            if (r.attempts >= MAX_ATTEMPTS) {
              pending.set(rec.agent, {
                _tag: "failed",
                agent: rec.agent,
                round: rec.round,
                kind: "error",
                message: `no valid tool call after ${MAX_ATTEMPTS} attempts: ${checked.message}`,
              })
            }
          }
          break
        }
        case "call_retried":
          pending.delete(rec.agent)
          replayed = rec
          break
        case "reply_rejected": {
          const r = rounds.get(rec.agent)
          if (r?.rejected) replayed = { ...rec, reason: r.rejected.reason as typeof rec.reason, message: r.rejected.message }
          if (r) r.rejected = null
          break
        }
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
            const stop = recorded.slice(i + 1).find((e) => e._tag === "run_finished")
            if (stop?._tag === "run_finished" && stop.reason !== "completed") {
              const events = stopRun(state, stop.reason, stop.message, time)
              replayed = events[0] ?? null
              queued.push(...events.slice(1).map((e) => ({ ...e, time: stop.time })))
            }
            break
          }
          const p = state.presentation
          if (p !== null && !p.callsModel) {
            const command = decide(state)[0]
            replayed = command ? commandEvent(command, time) : null
            break
          }
          const reply = pending.get(rec.agent)
          if (reply === undefined) return diverge(i, null, `no presentation of ${rec.agent} is waiting here`)
          pending.delete(rec.agent)
          replayed = judgeReply(state, reply, time)[0] ?? null
          break
        }
        case "run_finished":
          if (rec.reason === "completed" || rec.reason === "error") {
            const command = decide(state)[0]
            replayed = command ? commandEvent(command, time) : null
          } else {
            replayed = stopRun(state, rec.reason, rec.message, time)[0] ?? null
          }
          break
      }
    }
    if (replayed === null || !sameDecision(replayed, rec)) return diverge(i, replayed, reason)
    out.push(replayed)
    state = evolve(state, replayed)
  }
  return { events: out, state, divergence: null }
}
