/**
 * `status.json` as a pure function of the state: `project(state, now, logDir)`.
 *
 * The shape is MassGen's status file reference (`meta`, `coordination`,
 * `agents`, `results`, with the same field names, types and status values),
 * plus `is_complete`, `finish_reason`, `error` and `costs`, and a per-agent `model`,
 * `answer_labels`, `token_usage` and `tool_calls`. Times are Unix seconds (floats). The
 * status writer (`services/run-files/status-writer.ts`) writes it every 2 s and at the
 * end; scripts read it with jq, so a field never changes its type.
 *
 * `meta.log_dir` and `meta.session_id` (its name) say where the run is now:
 * the log directory the caller writes to or read the run from, never one
 * recorded in the events (a log directory may be moved or copied).
 *
 * Words: `completion_percentage` counts, out of two steps per agent, the agents
 * that have an answer (or are out) and the live agents that have voted; it is
 * 100 only when the run completed (`finish_reason: completed`). A run that
 * finished otherwise keeps how far it got: its agents with an answer and its
 * votes, an agent that is out counting for nothing. `is_complete` is MassGen's:
 * true once the run has finished, however it finished (a viewer stops
 * following it then); `error` (`{reason, message}`) says why a finished run did
 * not complete, null otherwise, and `failureText` is that message with the
 * agents' errors.
 *
 * An agent's `status` is the contract's: `waiting` until its work starts and
 * while its model call has had nothing back yet (request sent, no byte: known
 * to the caller that sees the chunks, `LiveFacts.awaiting`; without it a call
 * in flight is `streaming`), `streaming` once the first chunk came (or while it
 * runs tools), and `stopped` (`LiveFacts.processGone`; massgen's, not among
 * MassGen's values) for an agent that was at work in a run whose process is
 * gone. `coordination.phase` is the phase the run reached, whatever ended it.
 */

import { truncate } from "../../lib/text.ts"
import { tally } from "../coordination/decide.ts"
import { maxAttempts } from "../coordination/restarts.ts"
import type { FinishReason } from "../events/index.ts"
import { shownLongText } from "../log/index.ts"
import { type AgentState, activeMs, attemptsOf, type Checklist, isLive, latestLabels, type State } from "../state/index.ts"
import { type WorkspacesJson, workspacesJson } from "../workspaces/facts.ts"

export type AgentStatus = "waiting" | "streaming" | "answered" | "voted" | "restarting" | "error" | "timeout" | "completed" | "stopped"

/** What the caller knows beside the state: not facts of the run's events. */
export interface LiveFacts {
  /** Agents whose open model call has had no byte back yet; absent when the caller does not see the chunks. */
  readonly awaiting?: ReadonlySet<string>
  /** The run did not finish and no process runs it any more (its `run.lock` has no live holder). */
  readonly processGone?: boolean
}
export type Phase = "initial_answer" | "enforcement" | "presentation"

export interface TokenUsageJson {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly reasoning_tokens: number
  readonly cached_input_tokens: number
  readonly estimated_cost: number | null
}

export interface AgentStatusJson {
  readonly status: AgentStatus
  readonly model: string | null
  readonly answer_count: number
  readonly latest_answer_label: string | null
  readonly answer_labels: ReadonlyArray<string>
  readonly vote_cast: { readonly voted_for_agent: string; readonly voted_for_label: string; readonly reason_preview: string } | null
  readonly times_restarted: number
  readonly last_activity: number
  readonly error: { readonly type: "error" | "timeout"; readonly message: string; readonly timestamp: number } | null
  readonly token_usage: TokenUsageJson
  /** The agent's own tool calls that finished (`errors` of them gave an error result), and its uses of provider tools. */
  readonly tool_calls: { readonly total: number; readonly errors: number; readonly hosted: number }
  /** Checklist-gated voting: the agent's latest `submit_checklist` (its round, scores by label and criterion, verdict); absent before one. */
  readonly checklist?: Checklist
}

export interface StatusJson {
  readonly meta: {
    readonly last_updated: number
    readonly session_id: string
    readonly log_dir: string
    readonly question: string
    readonly start_time: number
    readonly elapsed_seconds: number
  }
  readonly coordination: {
    readonly phase: Phase
    readonly active_agent: string | null
    readonly completion_percentage: number
    readonly is_final_presentation: boolean
  }
  readonly agents: Readonly<Record<string, AgentStatusJson>>
  readonly results: {
    readonly votes: Readonly<Record<string, number>>
    readonly winner: string | null
    readonly final_answer_preview: string | null
  }
  readonly is_complete: boolean
  readonly finish_reason: FinishReason | "in_progress"
  /** Why a finished run did not complete; null while it runs and once it completed. */
  readonly error: { readonly reason: Exclude<FinishReason, "completed">; readonly message: string } | null
  readonly costs: {
    readonly total_estimated_cost: number | null
    readonly total_input_tokens: number
    readonly total_output_tokens: number
  }
  /** Where the agents' files are (`docs/workspaces.md`); only in a run with workspaces or context paths. */
  readonly workspaces?: WorkspacesJson
  /** Orchestration restarts (`docs/coordination.md`); only in a run with `max_orchestration_restarts` above 0. */
  readonly attempts?: AttemptsJson
}

export interface AttemptsJson {
  /** The attempt under way (or the last one), from 1; MassGen's `attempt_N`. */
  readonly current: number
  /** `1 + max_orchestration_restarts`. */
  readonly max: number
  /** The presenter evaluating the current attempt's final answer, else null. */
  readonly evaluating: string | null
  /** The restarts so far: the attempt each began, who asked, why and what to do, when (Unix seconds). */
  readonly restarts: ReadonlyArray<{
    readonly attempt: number
    readonly agent: string
    readonly reason: string
    readonly instructions: string
    readonly timestamp: number
  }>
}

const attemptsJson = (state: State): { readonly attempts?: AttemptsJson } => {
  const settings = state.run?.settings
  if (settings === undefined || (settings.max_orchestration_restarts ?? 0) === 0) return {}
  const at = attemptsOf(state)
  return {
    attempts: {
      current: at.attempt,
      max: maxAttempts(settings),
      evaluating: at.evaluating?.agent ?? null,
      restarts: at.restarts.map((r) => ({
        attempt: r.attempt,
        agent: r.agent,
        reason: truncate(r.reason, 500),
        instructions: truncate(r.instructions, 500),
        timestamp: seconds(r.time),
      })),
    },
  }
}

const seconds = (ms: number): number => Math.round(ms) / 1000

const baseName = (path: string): string =>
  path
    .replace(/[/\\]+$/, "")
    .split(/[/\\]/)
    .pop() ?? path

const agentStatus = (state: State, a: AgentState, facts: LiveFacts): AgentStatus => {
  const status = workStatus(state, a)
  if (status !== "streaming" && status !== "waiting" && status !== "restarting") return status
  if (facts.processGone === true) return "stopped"
  return status === "streaming" && facts.awaiting?.has(a.info.id) === true ? "waiting" : status
}

const workStatus = (state: State, a: AgentState): AgentStatus => {
  if (a.failure !== null) return a.failure.kind
  // Once the run is over nobody is working any more; only the winner of a completed run finished all its work.
  if (state.finished !== null) {
    if (state.finished.reason === "completed" && state.final?.agent === a.info.id) return "completed"
    if (a.vote !== null) return "voted"
    return a.answers.length > 0 ? "answered" : "waiting"
  }
  if (state.presentation?.agent === a.info.id) {
    if (state.final !== null) return "completed"
    if (state.presentation.callsModel) return "streaming"
  }
  if (a.vote !== null) return "voted"
  if (a.inFlight !== null) return "streaming"
  if (a.restartPending) return "restarting"
  return a.answers.length > 0 ? "answered" : "waiting"
}

const usageJson = (a: AgentState): TokenUsageJson => ({
  input_tokens: a.usage.inputTokens,
  output_tokens: a.usage.outputTokens,
  reasoning_tokens: a.usage.reasoningTokens,
  cached_input_tokens: a.usage.cachedInputTokens,
  estimated_cost: a.usage.cost,
})

const completion = (state: State): number => {
  const finished = state.finished
  if (finished?.reason === "completed") return 100
  const n = state.agents.length
  if (n === 0) return 0
  // While the run goes on, an agent that is out has nothing left to do; once it ended otherwise, it did nothing.
  const done = (a: AgentState) => a.answers.length > 0 || (finished === null && !isLive(a))
  const answered = state.agents.filter(done).length
  const voted = state.agents.filter((a) => isLive(a) && a.vote !== null).length
  return Math.min(99, Math.floor(((answered + voted) / (2 * n)) * 100))
}

/** Why a run that finished did not complete, with the errors of the agents that are out; null for a completed run or one still going. */
export const failureText = (state: State): string | null => {
  const finished = state.finished
  if (finished === null || finished.reason === "completed") return null
  const failures = state.agents.filter((a) => a.failure !== null).map((a) => `${a.info.id}: ${a.failure!.message}`)
  return `${finished.message}${failures.length > 0 ? ` (${failures.join("; ")})` : ""}`
}

/** `logDir`: where the run is; empty when the caller has no directory (a view). */
export const project = (state: State, at: number, logDir = "", facts: LiveFacts = {}): StatusJson => {
  // A finished run's status is its final snapshot, the same whenever it is rebuilt.
  const now = state.finished?.time ?? at
  const run = state.run
  const startTime = run?.startTime ?? now
  const inFlight = state.agents
    .filter((a) => a.inFlight !== null)
    .reduce<AgentState | undefined>((best, a) => (best === undefined || a.lastActivity > best.lastActivity ? a : best), undefined)
  const presenting = state.presentation !== null && state.final === null && state.presentation.callsModel
  const votes = state.presentation?.votes ?? tally(state)?.votes ?? Object.fromEntries(latestLabels(state).map((l) => [l, 0]))
  const agents: Record<string, AgentStatusJson> = {}
  for (const a of state.agents) {
    agents[a.info.id] = {
      status: agentStatus(state, a, facts),
      model: a.info.model,
      answer_count: a.answers.length,
      latest_answer_label: a.answers[a.answers.length - 1] ?? null,
      answer_labels: a.answers,
      vote_cast:
        a.vote === null
          ? null
          : { voted_for_agent: a.vote.target, voted_for_label: a.vote.targetLabel, reason_preview: truncate(a.vote.reason, 100) },
      times_restarted: a.timesRestarted,
      last_activity: seconds(a.lastActivity),
      error: a.failure === null ? null : { type: a.failure.kind, message: a.failure.message, timestamp: seconds(a.failure.time) },
      token_usage: usageJson(a),
      tool_calls: { total: a.tools.calls, errors: a.tools.errors, hosted: a.tools.hosted },
      ...(a.checklist === undefined ? {} : { checklist: a.checklist }),
    }
  }
  const anyVote = state.agents.some((a) => a.vote !== null)
  return {
    meta: {
      last_updated: seconds(now),
      session_id: baseName(logDir),
      log_dir: logDir,
      // A long question is in the blob store; status.json, rewritten every 2 s, shows its beginning and where it is.
      question: shownLongText(run?.question ?? ""),
      start_time: seconds(startTime),
      elapsed_seconds: seconds(activeMs(state, now)),
    },
    coordination: {
      phase: state.presentation !== null ? "presentation" : anyVote ? "enforcement" : "initial_answer",
      // Nobody works in a run whose process is gone.
      active_agent: facts.processGone === true ? null : presenting ? state.presentation!.agent : (inFlight?.info.id ?? null),
      completion_percentage: completion(state),
      is_final_presentation: state.presentation !== null,
    },
    agents,
    results: {
      votes,
      // Set only once the answer file exists, so `cat final/$WINNER/answer.txt` never races.
      winner: state.final?.agent ?? null,
      final_answer_preview: state.final === null ? null : truncate(state.final.content, 200),
    },
    is_complete: state.finished !== null,
    finish_reason: state.finished?.reason ?? "in_progress",
    error:
      state.finished === null || state.finished.reason === "completed"
        ? null
        : { reason: state.finished.reason, message: failureText(state) ?? "" },
    costs: {
      total_estimated_cost: state.usage.cost,
      total_input_tokens: state.usage.inputTokens,
      total_output_tokens: state.usage.outputTokens,
    },
    ...workspacesJson(state.workspaces, state.run?.settings.context_paths ?? [], logDir),
    ...attemptsJson(state),
  }
}
