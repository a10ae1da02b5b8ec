/**
 * `status.json` as a pure function of the state: `project(state, now, logDir)`.
 *
 * The shape is MassGen's status file reference (`meta`, `coordination`,
 * `agents`, `results`, with the same field names, types and status values),
 * plus `is_complete`, `finish_reason` and `costs`, and a per-agent `model`,
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
 * 100 only when the run is complete.
 */

import { truncate } from "../../lib/text.ts"
import { tally } from "../coordination/decide.ts"
import type { FinishReason } from "../events/index.ts"
import { type AgentState, activeMs, isLive, latestLabels, type State } from "../state/index.ts"
import { type WorkspacesJson, workspacesJson } from "../workspaces/facts.ts"

export type AgentStatus = "waiting" | "streaming" | "answered" | "voted" | "restarting" | "error" | "timeout" | "completed"
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
  readonly costs: {
    readonly total_estimated_cost: number | null
    readonly total_input_tokens: number
    readonly total_output_tokens: number
  }
  /** Where the agents' files are (`docs/workspaces.md`); only in a run with workspaces or context paths. */
  readonly workspaces?: WorkspacesJson
}

const seconds = (ms: number): number => Math.round(ms) / 1000

const baseName = (path: string): string =>
  path
    .replace(/[/\\]+$/, "")
    .split(/[/\\]/)
    .pop() ?? path

const agentStatus = (state: State, a: AgentState): AgentStatus => {
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
  if (state.finished !== null) return 100
  const n = state.agents.length
  if (n === 0) return 0
  const answered = state.agents.filter((a) => a.answers.length > 0 || !isLive(a)).length
  const voted = state.agents.filter((a) => isLive(a) && a.vote !== null).length
  return Math.min(99, Math.floor(((answered + voted) / (2 * n)) * 100))
}

/** `logDir`: where the run is; empty when the caller has no directory (a view). */
export const project = (state: State, at: number, logDir = ""): StatusJson => {
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
      status: agentStatus(state, a),
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
    }
  }
  const anyVote = state.agents.some((a) => a.vote !== null)
  return {
    meta: {
      last_updated: seconds(now),
      session_id: baseName(logDir),
      log_dir: logDir,
      question: run?.question ?? "",
      start_time: seconds(startTime),
      elapsed_seconds: seconds(activeMs(state, now)),
    },
    coordination: {
      phase: state.presentation !== null ? "presentation" : anyVote ? "enforcement" : "initial_answer",
      active_agent: presenting ? state.presentation!.agent : (inFlight?.info.id ?? null),
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
    costs: {
      total_estimated_cost: state.usage.cost,
      total_input_tokens: state.usage.inputTokens,
      total_output_tokens: state.usage.outputTokens,
    },
    ...workspacesJson(state.workspaces, state.run?.settings.context_paths ?? [], logDir),
  }
}
