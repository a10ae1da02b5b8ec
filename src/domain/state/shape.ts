/**
 * The shape of a run's state (`index.ts`): its types, the initial state, and the questions asked of it.
 *
 * Contract: a `State` holds only what decisions and projections need; it is made by the fold
 * (`evolve.ts`, `folding.ts`) and read by `decide.ts`, `domain/projections/status.ts` and the views. The queries
 * here are pure and total.
 *
 * Words: an agent is *live* until it fails; a round is *in flight* from its round_started until its
 * answer, vote, cancellation or the agent's failure; the *latest labels* are the newest answer label of
 * every agent that has one, in config order, which is what a new round shows.
 */
import type {
  AgentInfo,
  ConversationMessage,
  Event,
  FailureKind,
  FinalSource,
  FinishReason,
  MemoryFile,
  OfferedSkill,
  QuestionMedia,
  RunSettings,
  TaskPlan,
  ToolKind,
} from "../events/index.ts"
import { isLongText } from "../log/index.ts"
import { noWorkspaceFacts, type WorkspaceFacts } from "../workspaces/facts.ts"

export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly reasoningTokens: number
  readonly cachedInputTokens: number
  /** Null until a call of a priced model is counted; unpriced calls add nothing. */
  readonly cost: number | null
  readonly unpricedCalls: number
}

export const emptyUsage: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0,
  cachedInputTokens: 0,
  cost: null,
  unpricedCalls: 0,
}

export interface InFlight {
  readonly round: number
  readonly shown: ReadonlyArray<string>
  readonly voteOnly: boolean
  /** Model calls of the round that came back with a reply: the work a restart would throw away. */
  readonly steps: number
  /** Agents' new answers injected into the round so far (`update_injected`), for `max_midstream_injections_per_round`; absent: 0. */
  readonly injected?: number
}

export interface Vote {
  readonly target: string
  readonly targetLabel: string
  readonly reason: string
  readonly time: number
}

export interface AgentState {
  readonly info: AgentInfo
  /** The number of the last round started; 0 before the first. */
  readonly rounds: number
  readonly inFlight: InFlight | null
  /** Labels of this agent's answers, oldest first. */
  readonly answers: ReadonlyArray<string>
  readonly vote: Vote | null
  readonly failure: { readonly kind: FailureKind; readonly message: string; readonly time: number } | null
  /** A new answer from another agent undid this agent's work; its next round is a restart. */
  readonly restartPending: boolean
  readonly timesRestarted: number
  /** Answers of this agent in the attempts before the current one: its next label is `anonId.(priorAnswers + answers + 1)`. */
  readonly priorAnswers?: number
  readonly lastActivity: number
  readonly usage: Usage
  /** The agent's tool calls that finished, those of them that gave an error result, and its replies' uses of provider tools. */
  readonly tools: ToolCounts
  /** Its latest `submit_checklist` (checklist-gated voting); absent before one. */
  readonly checklist?: Checklist
  /** The agent's task plan, from its last `task_plan_updated` (none before one). */
  readonly taskPlan?: TaskPlanEntry
}

/** An agent's task plan and the planning tool call that made it (`services/tools/planning-tools.ts`). */
export interface TaskPlanEntry {
  readonly plan: TaskPlan | null
  /** The plan before that call: a call a stop cut off is worked out again on it. */
  readonly before: TaskPlan | null
  readonly toolCall: number
  readonly callId: string
  /** The time of the `task_plan_updated`, as recorded. */
  readonly time: string
  /** Whether that tool call finished (its `tool_call_finished` is recorded). */
  readonly settled: boolean
}

/** A `checklist_submitted` without its tag, time and agent. */
export type Checklist = Omit<Extract<Event, { _tag: "checklist_submitted" }>, "_tag" | "time" | "agent">

export interface ToolCounts {
  readonly calls: number
  readonly errors: number
  readonly hosted: number
}

export const noToolCounts: ToolCounts = { calls: 0, errors: 0, hosted: 0 }

export interface Answer {
  readonly label: string
  readonly agent: string
  readonly round: number
  readonly content: string
  readonly time: number
}

export interface Presentation {
  readonly agent: string
  readonly label: string
  readonly votes: Readonly<Record<string, number>>
  readonly isTie: boolean
  readonly callsModel: boolean
  readonly time: number
}

export interface FinalAnswer {
  readonly agent: string
  readonly label: string
  readonly source: FinalSource
  readonly content: string
}

export interface RunInfo {
  readonly runId: string
  readonly question: string
  /** The conversation before the question, oldest first; empty for a run of one question. */
  readonly conversation: ReadonlyArray<ConversationMessage>
  /** The files sent with the question (`run_started.media`); empty for none. */
  readonly media: ReadonlyArray<QuestionMedia>
  readonly settings: RunSettings
  readonly startTime: number
  /** Time no process ran the run: from a stopped process's last event to each resume. */
  readonly pausedMs: number
}

export interface State {
  readonly run: RunInfo | null
  readonly agents: ReadonlyArray<AgentState>
  readonly answers: Readonly<Record<string, Answer>>
  readonly presentation: Presentation | null
  readonly final: FinalAnswer | null
  readonly finished: {
    readonly reason: FinishReason
    readonly winner: string | null
    readonly message: string
    readonly time: number
  } | null
  readonly usage: Usage
  /** Time of the newest event folded, ms since the epoch. */
  readonly lastTime: number
  /** Events folded that changed the state. */
  readonly eventCount: number
  /** Events folded that did not fit the state, and so changed nothing else. */
  readonly skippedEvents: number
  /** Calls started and not yet ended, by call number. */
  readonly openCalls: number
  /** Snapshots, the final workspace, writes to context paths (`domain/workspaces/facts.ts`). */
  readonly workspaces: WorkspaceFacts
  /** The agents' tools that did not start (`tool_start_failed`): the run finishes on it, before any model call. */
  readonly toolsFailed: { readonly kind: ToolKind; readonly name: string; readonly message: string } | null
  /** The skills the run offers (`skills_offered`); null until they are recorded. */
  readonly skills: ReadonlyArray<OfferedSkill> | null
  /** The memory files each round was shown (`memory_loaded`), by `memoryKey(agent, round)`. */
  readonly memory: Readonly<Record<string, ReadonlyArray<MemoryFile>>>
  /** The previous turn's memory files were copied into the workspaces (`memory_restored`). */
  readonly memoryRestored: boolean
  /** Orchestration restarts (`attempts.ts`); absent: attempt 1, nothing evaluated. */
  readonly attempts?: Attempts
}

/** The key of an agent's round (or its presentation) in `State.memory`. */
export const memoryKey = (agent: string, round: number | "present"): string => `${agent}/${round}`

/** A restart the presenter asked for: the attempt it began, why, what to do, and the final answer it set aside. */
export interface Restart {
  readonly attempt: number
  readonly agent: string
  readonly reason: string
  readonly instructions: string
  readonly previousAnswer: string
  readonly time: number
}

export interface Attempts {
  /** The current attempt, from 1. */
  readonly attempt: number
  /** The presenter evaluating the current attempt's final answer. */
  readonly evaluating: { readonly agent: string; readonly time: number } | null
  /** The current attempt's final answer stands (`answer_confirmed`). */
  readonly confirmed: boolean
  readonly restarts: ReadonlyArray<Restart>
}

export const firstAttempt: Attempts = { attempt: 1, evaluating: null, confirmed: false, restarts: [] }

export const initialState: State = {
  run: null,
  agents: [],
  answers: {},
  presentation: null,
  final: null,
  finished: null,
  usage: emptyUsage,
  lastTime: 0,
  eventCount: 0,
  skippedEvents: 0,
  openCalls: 0,
  workspaces: noWorkspaceFacts,
  toolsFailed: null,
  skills: null,
  memory: {},
  memoryRestored: false,
}

/** How long processes have run the run, up to `now` (or its finish): time while no process ran it is not counted. */
export const activeMs = (state: State, now: number): number =>
  state.run === null ? 0 : Math.max(0, (state.finished?.time ?? now) - state.run.startTime - state.run.pausedMs)

export const isLive = (agent: AgentState): boolean => agent.failure === null

/** A run that has not finished, or that a signal stopped, is taken up again by `massgen resume`; any other finish is final. */
export const isResumable = (finished: { readonly reason: FinishReason } | null): boolean =>
  finished === null || finished.reason === "interrupted"

export const agentIndex = (state: State, id: string): number => {
  const agents = state.agents
  for (let i = 0; i < agents.length; i++) if (agents[i]!.info.id === id) return i
  return -1
}

export const agentByAnonId = (state: State, anonId: string): AgentState | undefined => state.agents.find((a) => a.info.anon_id === anonId)

/** The newest answer label of every agent that has one, in config order. */
export const latestLabels = (state: State): ReadonlyArray<string> =>
  state.agents.flatMap((a) => (a.answers.length > 0 ? [a.answers[a.answers.length - 1]!] : []))

export const sameLabels = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((label, i) => label === b[i])

/** `sameLabels(labels, latestLabels(state))`, without making the latest labels (a vote is judged against them at every reply). */
export const showsLatest = (state: State, labels: ReadonlyArray<string>): boolean => {
  let i = 0
  for (const a of state.agents) {
    if (a.answers.length === 0) continue
    if (labels[i] !== a.answers[a.answers.length - 1]) return false
    i += 1
  }
  return i === labels.length
}

/**
 * The long texts of the run (`domain/log/long-texts.ts`): its question, the conversation it continues, its answers and final answer,
 * which the events keep once in the blob store, and which the call logs and `context.txt` reference rather than repeat.
 */
export const longTextsOf = (state: State): ReadonlyArray<string> => {
  const texts: Array<string> = []
  const add = (text: string) => void (isLongText(text) && !texts.includes(text) && texts.push(text))
  if (state.run !== null) {
    add(state.run.question)
    for (const m of state.run.conversation) add(m.content)
  }
  for (const label in state.answers) add(state.answers[label]!.content)
  if (state.final !== null) add(state.final.content)
  return texts
}
