/**
 * `evolve`, the fold of one event into a run's state (`shape.ts`).
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
 * `step` is `evolve` for a fold that owns what it made (`Owned`): `folding.ts` folds many events
 * through it, extending in place the answers it made itself. Words as in `shape.ts`.
 */

import { instantMs } from "../../lib/instant.ts"
import type { Event } from "../events/index.ts"
import { evolveWorkspaces } from "../workspaces/facts.ts"
import { evolveAttempts } from "./attempts.ts"
import {
  type AgentState,
  type Answer,
  agentIndex,
  type Checklist,
  emptyUsage,
  type InFlight,
  memoryKey,
  noToolCounts,
  type State,
  type Usage,
} from "./shape.ts"

const addUsage = (u: Usage, e: Extract<Event, { _tag: "call_end" }>): Usage => ({
  inputTokens: u.inputTokens + (e.input_tokens ?? 0),
  outputTokens: u.outputTokens + (e.output_tokens ?? 0),
  reasoningTokens: u.reasoningTokens + (e.reasoning_tokens ?? 0),
  cachedInputTokens: u.cachedInputTokens + (e.cached_input_tokens ?? 0),
  cost: e.cost === null ? u.cost : (u.cost ?? 0) + e.cost,
  unpricedCalls: u.unpricedCalls + (e.cost === null && e.error === null ? 1 : 0),
})

/** The agents of `state` with the `i`-th one replaced by `agent`. */
const withAgent = (state: State, i: number, agent: AgentState): ReadonlyArray<AgentState> => {
  const agents = state.agents.slice()
  agents[i] = agent
  return agents
}

/** `state` with agent `id` changed by `f`; `state` itself when there is no such agent or `f` changes nothing. */
const updateAgent = (state: State, id: string, f: (a: AgentState) => AgentState): State => {
  const i = agentIndex(state, id)
  if (i < 0) return state
  const before = state.agents[i]!
  const after = f(before)
  if (after === before) return state
  return { ...state, agents: withAgent(state, i, after) }
}

/**
 * A resumed run: nothing is in flight any more but the rounds and the
 * presentation it continues (the others start again), and a run stopped by a
 * signal is open again.
 */
const resumed = (state: State, event: Extract<Event, { _tag: "run_resumed" }>, t: number): State => {
  if (state.finished !== null && state.finished.reason !== "interrupted") return state
  // What a signal salvaged was a stand-in; the resumed run decides again.
  const final = state.finished?.reason === "interrupted" && state.final?.source === "salvaged" ? null : state.final
  const presentation = final === null && event.presentation_continued !== true ? null : state.presentation
  const continued = new Map((event.continued_rounds ?? []).map((r) => [r.agent, r]))
  return {
    ...state,
    run: state.run === null ? null : { ...state.run, pausedMs: state.run.pausedMs + Math.max(0, t - state.lastTime) },
    final,
    // The salvaged answer's files were a stand-in too.
    workspaces: final === null && state.workspaces.final !== null ? { ...state.workspaces, final: null } : state.workspaces,
    agents: state.agents.map((a) => {
      const goesOn = continued.get(a.info.id)
      if (goesOn !== undefined && a.failure === null && goesOn.round >= a.rounds && presentation === null) {
        const same = a.inFlight?.round === goesOn.round ? a.inFlight : null
        const steps = same?.steps ?? 0
        const injected = same?.injected === undefined ? {} : { injected: same.injected }
        return {
          ...a,
          rounds: goesOn.round,
          inFlight: { round: goesOn.round, shown: goesOn.shown, voteOnly: goesOn.vote_only, steps, ...injected },
        }
      }
      return a.inFlight === null ? a : { ...a, inFlight: null }
    }),
    presentation,
    // An evaluation in flight is asked again: it is one call, and nothing of it is on record but its call.
    ...(state.attempts?.evaluating ? { attempts: { ...state.attempts, evaluating: null } } : {}),
    finished: null,
    openCalls: 0,
  }
}

/** Folds one event into the state. Total: an event that does not fit only counts as skipped. */
export const evolve = (state: State, event: Event): State => step(state, event, null)

/**
 * What one fold owns: the answers record and the agents' label arrays it made
 * itself, which it may then extend in place. No state but the fold's last one
 * is ever seen outside `foldEvents`, so that stays pure as seen from outside,
 * and a fold of n answers costs O(n), not O(n²).
 */
export interface Owned {
  answers: Record<string, Answer> | null
  arrays: WeakSet<Array<string>>
}

const withLabel = (own: Owned | null, labels: ReadonlyArray<string>, label: string): ReadonlyArray<string> => {
  if (own !== null && own.arrays.has(labels as Array<string>)) {
    ;(labels as Array<string>).push(label)
    return labels
  }
  const copy = [...labels, label]
  own?.arrays.add(copy)
  return copy
}

const withAnswer = (own: Owned | null, answers: Readonly<Record<string, Answer>>, answer: Answer): Readonly<Record<string, Answer>> => {
  if (own !== null && own.answers === answers) {
    own.answers[answer.label] = answer
    return answers
  }
  const copy = { ...answers, [answer.label]: answer }
  if (own !== null) own.answers = copy
  return copy
}

export const step = (state: State, event: Event, own: Owned | null): State => {
  const time = instantMs(event.time)
  const t = Number.isNaN(time) ? state.lastTime : time
  const next = applyEvent(state, event, t, own)
  if (next === state) return { ...state, skippedEvents: state.skippedEvents + 1 }
  // A state `applyEvent` changed is one it made just now, which no one else holds yet: it is finished in place.
  const made = next as { -readonly [K in keyof State]: State[K] }
  made.lastTime = Math.max(next.lastTime, t)
  made.eventCount = state.eventCount + 1
  return made
}

/** Whether `agent` is live and has round `round` in flight. */
const inRound = (a: AgentState | undefined, round: number): a is AgentState & { readonly inFlight: InFlight } =>
  a !== undefined && a.failure === null && a.inFlight !== null && a.inFlight.round === round

/** The agent whose answer `label` is, when it is that agent's latest. */
const currentAnswerOf = (state: State, label: string): AgentState | undefined => {
  const owner = state.answers[label]?.agent
  const a = owner === undefined ? undefined : state.agents[agentIndex(state, owner)]
  return a !== undefined && a.answers[a.answers.length - 1] === label ? a : undefined
}

const checklistOf = ({ _tag, time, agent, ...scored }: Extract<Event, { _tag: "checklist_submitted" }>): Checklist => scored

const applyEvent = (state: State, event: Event, t: number, own: Owned | null): State => {
  if (event._tag === "run_resumed") return state.run === null ? state : resumed(state, event, t)
  if (state.run === null && event._tag !== "run_started") return state
  if (state.finished !== null) return state
  switch (event._tag) {
    case "run_started":
      if (state.run !== null) return state
      return {
        ...state,
        run: {
          runId: event.run_id,
          question: event.question,
          conversation: event.conversation ?? [],
          media: event.media ?? [],
          settings: event.settings,
          startTime: t,
          pausedMs: 0,
        },
        agents: event.agents.map((info) => ({
          info,
          rounds: 0,
          inFlight: null,
          answers: [],
          vote: null,
          failure: null,
          restartPending: false,
          timesRestarted: 0,
          lastActivity: t,
          usage: emptyUsage,
          tools: noToolCounts,
        })),
      }
    case "round_started":
      if (state.presentation !== null) return state
      return updateAgent(state, event.agent, (a) =>
        a.failure !== null || a.inFlight !== null || event.round <= a.rounds
          ? a
          : {
              ...a,
              rounds: event.round,
              inFlight: { round: event.round, shown: event.shown, voteOnly: event.vote_only, steps: 0 },
              vote: null,
              restartPending: false,
              timesRestarted: a.timesRestarted + (event.restart ? 1 : 0),
              lastActivity: t,
            },
      )
    case "round_time_warned":
      return updateAgent(state, event.agent, (a) => (inRound(a, event.round) ? { ...a, lastActivity: t } : a))
    case "update_injected":
      return updateAgent(state, event.agent, (a) =>
        inRound(a, event.round)
          ? {
              ...a,
              inFlight: {
                ...a.inFlight,
                shown: event.shown,
                injected: (a.inFlight.injected ?? 0) + event.shown.filter((label) => !a.inFlight.shown.includes(label)).length,
              },
              lastActivity: t,
            }
          : a,
      )
    case "round_cancelled":
      return updateAgent(state, event.agent, (a) =>
        a.inFlight?.round === event.round ? { ...a, inFlight: null, restartPending: true, lastActivity: t } : a,
      )
    case "answer_submitted": {
      const i = agentIndex(state, event.agent)
      const author = state.agents[i]
      if (!inRound(author, event.round) || author.inFlight.voteOnly) return state
      if (event.label !== `${author.info.anon_id}.${(author.priorAnswers ?? 0) + author.answers.length + 1}`) return state
      const answer: Answer = { label: event.label, agent: event.agent, round: event.round, content: event.content, time: t }
      // A new answer clears every vote: everyone must look again.
      const agents = state.agents.map((a, j): AgentState => {
        if (j === i) return { ...a, inFlight: null, answers: withLabel(own, a.answers, event.label), vote: null, lastActivity: t }
        if (a.failure !== null) return a
        const undone = a.vote !== null || (a.inFlight !== null && a.answers.length > 0)
        // Unchanged agents stay the same objects: with many agents, most are.
        if (a.vote === null && (a.restartPending || !undone)) return a
        return { ...a, vote: null, restartPending: a.restartPending || undone }
      })
      return { ...state, agents, answers: withAnswer(own, state.answers, answer) }
    }
    case "vote_cast": {
      const target = currentAnswerOf(state, event.target_label)
      if (!inRound(state.agents[agentIndex(state, event.agent)], event.round)) return state
      if (target === undefined || target.info.id !== event.target) return state
      return updateAgent(state, event.agent, (a) => ({
        ...a,
        inFlight: null,
        vote: { target: event.target, targetLabel: event.target_label, reason: event.reason, time: t },
        lastActivity: t,
      }))
    }
    case "checklist_submitted":
      if (!inRound(state.agents[agentIndex(state, event.agent)], event.round)) return state
      return updateAgent(state, event.agent, (a) => ({ ...a, checklist: checklistOf(event), lastActivity: t }))
    case "vote_ignored":
      if (!inRound(state.agents[agentIndex(state, event.agent)], event.round)) return state
      return updateAgent(state, event.agent, (a) => ({ ...a, inFlight: null, restartPending: true, lastActivity: t }))
    case "call_start": {
      const i = agentIndex(state, event.agent)
      if (i < 0) return state
      return { ...state, openCalls: state.openCalls + 1, agents: withAgent(state, i, { ...state.agents[i]!, lastActivity: t }) }
    }
    case "reply_rejected":
    case "call_retried":
    case "tool_call_started":
    case "permission_asked":
    case "permission_decided":
      return updateAgent(state, event.agent, (a) => ({ ...a, lastActivity: t }))
    case "tool_call_finished":
      return updateAgent(state, event.agent, (a) => ({
        ...a,
        tools: { ...a.tools, calls: a.tools.calls + 1, errors: a.tools.errors + (event.ok ? 0 : 1) },
        lastActivity: t,
        ...(a.taskPlan?.toolCall === event.tool_call ? { taskPlan: { ...a.taskPlan, settled: true } } : {}),
      }))
    case "task_plan_updated":
      return updateAgent(state, event.agent, (a) => ({
        ...a,
        taskPlan: {
          plan: event.plan,
          before: a.taskPlan?.plan ?? null,
          toolCall: event.tool_call,
          callId: event.call_id,
          time: event.time,
          settled: false,
        },
        lastActivity: t,
      }))
    case "hosted_tool_used":
      return updateAgent(state, event.agent, (a) => ({ ...a, tools: { ...a.tools, hosted: a.tools.hosted + 1 }, lastActivity: t }))
    case "call_end": {
      const i = agentIndex(state, event.agent)
      if (i < 0) return state
      const a = state.agents[i]!
      const inFlight =
        event.role === "round" && event.error === null && inRound(a, event.round)
          ? { ...a.inFlight, steps: a.inFlight.steps + 1 }
          : a.inFlight
      return {
        ...state,
        usage: addUsage(state.usage, event),
        openCalls: Math.max(0, state.openCalls - 1),
        agents: withAgent(state, i, { ...a, usage: addUsage(a.usage, event), lastActivity: t, inFlight }),
      }
    }
    case "agent_failed":
      return updateAgent(state, event.agent, (a) =>
        !inRound(a, event.round)
          ? a
          : { ...a, inFlight: null, vote: null, failure: { kind: event.kind, message: event.message, time: t }, lastActivity: t },
      )
    case "presentation_started":
      if (state.presentation !== null || currentAnswerOf(state, event.label)?.info.id !== event.agent) return state
      return updateAgent(
        {
          ...state,
          presentation: {
            agent: event.agent,
            label: event.label,
            votes: event.votes,
            isTie: event.is_tie,
            callsModel: event.calls_model,
            time: t,
          },
        },
        event.agent,
        (a) => ({ ...a, lastActivity: t }),
      )
    case "final_answer":
      if (state.final !== null || agentIndex(state, event.agent) < 0) return state
      return {
        ...state,
        final: { agent: event.agent, label: event.label, source: event.source, content: event.content },
      }
    case "workspace_snapshotted":
    case "workspace_finalized":
    case "context_write_intended":
    case "context_path_written": {
      if (agentIndex(state, event.agent) < 0) return state
      const workspaces = evolveWorkspaces(state.workspaces, event)
      return workspaces === state.workspaces ? state : { ...state, workspaces }
    }
    case "skills_offered":
      return state.skills !== null ? state : { ...state, skills: event.skills }
    case "memory_restored":
      return state.memoryRestored ? state : { ...state, memoryRestored: true }
    case "memory_loaded": {
      const key = memoryKey(event.agent, event.presentation === true ? "present" : event.round)
      if (agentIndex(state, event.agent) < 0 || key in state.memory) return state
      return { ...state, memory: { ...state.memory, [key]: event.files } }
    }
    case "evaluation_started":
    case "answer_confirmed":
    case "orchestration_restarted":
      return evolveAttempts(state, event, t)
    case "tool_start_failed":
      if (state.toolsFailed !== null) return state
      return { ...state, toolsFailed: { kind: event.kind, name: event.name, message: event.message } }
    case "run_finished":
      return {
        ...state,
        agents: state.agents.map((a) => (a.inFlight === null ? a : { ...a, inFlight: null })),
        finished: { reason: event.reason, winner: event.winner, message: event.message, time: t },
      }
  }
}
