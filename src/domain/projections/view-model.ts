/**
 * What a view of a run shows, as a pure fold of its events and streamed text.
 *
 * Contract: a `ViewModel` is the run's `State` (folded with `advanceInPlace`: the
 * state `evolve` gives, in O(1) per answer, so a model that was folded further
 * is not to be used again; never re-derived), the tail of each agent's streamed text, and a bounded timeline.
 * `applyEvent` and `applyText` fold into it; `viewOf(model, now)` gives a
 * `View`: plain JSON data that the terminal view, the plain lines and the web
 * page all render. Statuses, phase, completion, votes and costs come from
 * `project` (the same numbers as status.json). No I/O, no clock: `now` is
 * passed in (ms since the epoch).
 *
 * One clock for the whole view, the run's *active time* (`activeMs`, status.json's
 * `elapsed_seconds`): time since `run_started` during which a process ran the run,
 * so the pause between a stopped process's last event and its `run_resumed` is not
 * counted. `elapsedSeconds` is the active time at `now` (at the run's finish once it
 * finished, at its last event once its process is gone), and each timeline entry's
 * `at` is the active time at its event: the newest entry's `at` is never past
 * `elapsedSeconds`, and equals it once the run finished.
 *
 * Words: an agent's *tail* is the end of what it streamed in its current round
 * (cleared when a round or its presentation starts); when it streamed nothing, views show the
 * end of its latest answer instead (`TAIL_LIMIT` characters at most, either way; every
 * answer is whole in `answers`). The *timeline* holds the newest `TIMELINE_LIMIT`
 * events worth a line, each with its offset from the run's start. An agent is
 * *awaiting* from its `call_start` until the first chunk of text of that call
 * (`applyText`) or its `call_end`: its status is then `waiting`, not
 * `streaming` (request sent, nothing back yet). `processGone` marks a run
 * that did not finish and whose process is gone (`markProcessGone`): its
 * agents that were at work are `stopped`.
 */

import { count, oneLine } from "../../lib/text.ts"
import { onlyHeaders } from "../agent-output.ts"
import {
  attemptText,
  checklistText,
  type Event,
  type FinalSource,
  type FinishReason,
  ignoredVoteText,
  resumedText,
} from "../events/index.ts"
import { skillEventLine } from "../skills/lines.ts"
import { activeMs, advanceInPlace, initialState, type State } from "../state/index.ts"
import { permissionLine, toolCallLine } from "../tools/calls.ts"
import { taskPlanLine } from "../tools/planning/plan.ts"
import { changedFiles, workspaceLine } from "../workspaces/facts.ts"
import { type AgentStatus, type Phase, project } from "./status.ts"

export const TAIL_LIMIT = 4000
export const TIMELINE_LIMIT = 200

export interface TimelineEntry {
  /** Seconds of the run's active time at the event (see above). */
  readonly at: number
  readonly agent: string | null
  readonly kind: Event["_tag"]
  readonly text: string
}

export interface ViewModel {
  readonly state: State
  readonly tails: Readonly<Record<string, string>>
  readonly timeline: ReadonlyArray<TimelineEntry>
  /** Agents whose open model call has sent nothing back yet. */
  readonly awaiting: ReadonlySet<string>
  readonly processGone: boolean
}

export const emptyViewModel: ViewModel = { state: initialState, tails: {}, timeline: [], awaiting: new Set(), processGone: false }

const awaitingAfter = (awaiting: ReadonlySet<string>, event: Event): ReadonlySet<string> => {
  if (event._tag === "call_start" && !awaiting.has(event.agent)) return new Set(awaiting).add(event.agent)
  if (event._tag !== "call_end" || !awaiting.has(event.agent)) return awaiting
  const rest = new Set(awaiting)
  rest.delete(event.agent)
  return rest
}

/** The run's process is gone before it finished: nothing is at work any more. */
export const markProcessGone = (model: ViewModel): ViewModel =>
  model.state.finished !== null || model.processGone ? model : { ...model, processGone: true }

export interface AgentView {
  readonly id: string
  readonly anonId: string
  readonly model: string | null
  readonly backend: string
  readonly status: AgentStatus
  readonly round: number
  readonly answers: ReadonlyArray<string>
  /** The end of the streamed text of the current round, else of the latest answer's content. */
  readonly tail: string
  readonly tailIsAnswer: boolean
  readonly vote: { readonly target: string; readonly label: string; readonly reason: string } | null
  readonly error: string | null
  readonly tokens: number
  readonly cost: number | null
  /** The agent's tool calls that finished, and those that gave an error result. */
  readonly toolCalls: number
  readonly toolErrors: number
}

/** One answer of the run, whoever gave it and whether or not it is still current. */
export interface AnswerView {
  readonly label: string
  readonly agent: string
  readonly round: number
  readonly content: string
  /** The label of its agent's next answer, which replaced it; null while it is its agent's latest. */
  readonly supersededBy: string | null
  /** The votes it holds (the tally's count; 0 once replaced). */
  readonly votes: number
}

export interface VoteRow {
  readonly voter: string
  readonly target: string | null
  readonly label: string | null
  readonly reason: string
}

export interface View {
  readonly started: boolean
  /** The run did not finish and its process is gone (`markProcessGone`). */
  readonly processGone: boolean
  readonly question: string
  readonly phase: Phase
  /** Orchestration restarts: the attempt under way and the attempts the run may have; null in a run without restarts. */
  readonly attempt: { readonly current: number; readonly max: number } | null
  readonly completion: number
  readonly elapsedSeconds: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cost: number | null
  readonly agents: ReadonlyArray<AgentView>
  /** Every answer submitted, in the order they came: the losing and replaced ones too. */
  readonly answers: ReadonlyArray<AnswerView>
  readonly timeline: ReadonlyArray<TimelineEntry>
  readonly votes: ReadonlyArray<VoteRow>
  /** Votes per answer label: the presentation's count once a winner is chosen. */
  readonly tally: Readonly<Record<string, number>>
  readonly winner: string | null
  readonly final: { readonly agent: string; readonly label: string; readonly source: FinalSource; readonly content: string } | null
  readonly finished: { readonly reason: FinishReason; readonly message: string } | null
  /** The winner's files (`final/<agent>/workspace`, relative to the log directory), once copied; the files written to context paths. */
  readonly workspace: {
    readonly final: {
      readonly path: string
      readonly files: number
      readonly bytes: number
      readonly listing: ReadonlyArray<string>
    } | null
    readonly changedFiles: ReadonlyArray<{ readonly path: string; readonly change: string; readonly bytes: number }>
  }
}

/** A short line for the timeline, or null for events not worth one. */
export const timelineText = (event: Event): string | null => {
  switch (event._tag) {
    case "run_started":
      return `run started: ${count(event.agents.length, "agent")}`
    case "tool_start_failed":
      return `tools did not start: ${oneLine(event.message, 80)}`
    case "run_resumed":
      return `run resumed: ${resumedText(event)}`
    case "round_started":
      return `round ${event.round}${event.restart ? " (restart)" : ""}${event.vote_only ? ", vote only" : ""}, ${event.shown.length} shown`
    case "round_cancelled":
      return `round ${event.round} cancelled: a new answer arrived`
    case "round_time_warned":
      return `round ${event.round} passed its ${event.stage} time limit`
    case "update_injected":
      return `new answers injected into round ${event.round}${event.after_vote ? " (its vote was not counted)" : ""}`
    case "reply_rejected":
      return `reply rejected (${event.reason})`
    case "checklist_submitted":
      return oneLine(checklistText(event), 120)
    case "answer_submitted":
      return `answer ${event.label}: ${oneLine(event.content, 60)}`
    case "vote_cast":
      return `votes for ${event.target} (${event.target_label})`
    case "vote_ignored":
      return ignoredVoteText(event)
    case "call_retried":
      return `call retry ${event.retry}: ${oneLine(event.error, 60)}`
    case "agent_failed":
      return `out (${event.kind}): ${oneLine(event.message, 60)}`
    case "presentation_started":
      return `winner chosen${event.is_tie ? " (tie)" : ""}, presenting ${event.label}`
    case "final_answer":
      return `final answer (${event.source.replace("_", " ")})`
    case "run_finished":
      return `run ${event.reason}${event.winner ? `, winner ${event.winner}` : ""}`
    case "tool_call_finished":
    case "hosted_tool_used":
      return toolCallLine(event)
    case "permission_asked":
    case "permission_decided":
      return permissionLine(event)
    case "workspace_snapshotted":
    case "workspace_finalized":
    case "context_path_written":
      return workspaceLine(event)
    case "evaluation_started":
    case "answer_confirmed":
    case "orchestration_restarted":
      return attemptText(event)
    case "context_write_intended":
      return null
    case "task_plan_updated":
      return taskPlanLine(event)
    case "skills_offered":
    case "memory_loaded":
    case "memory_restored":
      return skillEventLine(event)
    case "call_start":
    case "call_end":
    case "tool_call_started":
      return null
  }
}

const keepTail = (text: string): string => (text.length > TAIL_LIMIT ? text.slice(text.length - TAIL_LIMIT) : text)

/**
 * Folds one event: the state through `evolve`; a round's start, or the
 * presentation's, clears its agent's tail; a tool call's start and end are
 * lines of its agent's tail.
 */
export const applyEvent = (model: ViewModel, event: Event): ViewModel => {
  const state = advanceInPlace(model.state, event)
  // An event that does not fit is only counted.
  if (state.skippedEvents !== model.state.skippedEvents) return { ...model, state }
  const awaiting = awaitingAfter(model.awaiting, event)
  // The presenter's tail still holds its last round's text (its vote): stale once it starts presenting.
  let tails = event._tag === "round_started" || event._tag === "presentation_started" ? { ...model.tails, [event.agent]: "" } : model.tails
  // A tool call shows in its agent's text where it happened: name, short arguments, ok or error, duration.
  const toolLine = toolCallLine(event)
  if (toolLine !== null && "agent" in event)
    tails = { ...tails, [event.agent]: keepTail(`${(tails[event.agent] ?? "").trimEnd()}\n[${toolLine}]\n`) }
  const text = timelineText(event)
  if (text === null) return { ...model, state, tails, awaiting }
  const entry: TimelineEntry = {
    at: activeMs(state, Date.parse(event.time)) / 1000 || 0,
    agent: "agent" in event ? event.agent : null,
    kind: event._tag,
    text,
  }
  const timeline = [...model.timeline, entry]
  return { ...model, state, tails, awaiting, timeline: timeline.length > TIMELINE_LIMIT ? timeline.slice(-TIMELINE_LIMIT) : timeline }
}

export const applyText = (model: ViewModel, agent: string, text: string): ViewModel => {
  if (text === "") return model
  const tails = { ...model.tails, [agent]: keepTail((model.tails[agent] ?? "") + text) }
  // A followed log's output file brings each call's header first: that is not a byte of the reply.
  if (!model.awaiting.has(agent) || onlyHeaders(text)) return { ...model, tails }
  const awaiting = new Set(model.awaiting)
  awaiting.delete(agent)
  return { ...model, tails, awaiting }
}

export const foldView = (events: Iterable<Event>, from: ViewModel = emptyViewModel): ViewModel => {
  let model = from
  for (const event of events) model = applyEvent(model, event)
  return model
}

const answerViews = (state: State, tally: Readonly<Record<string, number>>): ReadonlyArray<AnswerView> => {
  const next = new Map<string, string>()
  for (const a of state.agents) for (let i = 1; i < a.answers.length; i++) next.set(a.answers[i - 1]!, a.answers[i]!)
  return Object.values(state.answers).map((a) => ({
    label: a.label,
    agent: a.agent,
    round: a.round,
    content: a.content,
    supersededBy: next.get(a.label) ?? null,
    votes: tally[a.label] ?? 0,
  }))
}

/** What a view shows at `now`. A run whose process is gone shows its clock stopped at its last event. */
export const viewOf = (model: ViewModel, now: number): View => {
  const { state } = model
  const at = model.processGone ? state.lastTime : Math.max(now, state.lastTime)
  const status = project(state, at, "", { awaiting: model.awaiting, processGone: model.processGone })
  const agents = state.agents.map((a): AgentView => {
    const json = status.agents[a.info.id]!
    const streamed = model.tails[a.info.id] ?? ""
    const latest = a.answers[a.answers.length - 1]
    const answer = latest === undefined ? "" : (state.answers[latest]?.content ?? "")
    const useAnswer = streamed.trim() === "" && answer !== ""
    return {
      id: a.info.id,
      anonId: a.info.anon_id,
      model: a.info.model,
      backend: a.info.backend,
      status: json.status,
      round: a.rounds,
      answers: a.answers,
      tail: useAnswer ? keepTail(answer) : streamed,
      tailIsAnswer: useAnswer,
      vote: a.vote === null ? null : { target: a.vote.target, label: a.vote.targetLabel, reason: a.vote.reason },
      error: a.failure?.message ?? null,
      tokens: a.usage.inputTokens + a.usage.outputTokens,
      cost: a.usage.cost,
      toolCalls: a.tools.calls,
      toolErrors: a.tools.errors,
    }
  })
  return {
    started: state.run !== null,
    processGone: model.processGone,
    question: state.run?.question ?? "",
    phase: status.coordination.phase,
    attempt: status.attempts === undefined ? null : { current: status.attempts.current, max: status.attempts.max },
    completion: status.coordination.completion_percentage,
    elapsedSeconds: status.meta.elapsed_seconds,
    inputTokens: state.usage.inputTokens,
    outputTokens: state.usage.outputTokens,
    cost: state.usage.cost,
    agents,
    answers: answerViews(state, status.results.votes),
    timeline: model.timeline,
    votes: agents.map((a) => ({
      voter: a.id,
      target: a.vote?.target ?? null,
      label: a.vote?.label ?? null,
      reason: a.vote?.reason ?? "",
    })),
    tally: status.results.votes,
    winner: state.presentation?.agent ?? state.finished?.winner ?? null,
    final: state.final,
    finished: state.finished === null ? null : { reason: state.finished.reason, message: state.finished.message },
    workspace: {
      final:
        state.workspaces.final === null
          ? null
          : {
              path: state.workspaces.final.path,
              files: state.workspaces.final.files,
              bytes: state.workspaces.final.bytes,
              listing: state.workspaces.final.listing,
            },
      changedFiles: changedFiles(state.workspaces),
    },
  }
}
