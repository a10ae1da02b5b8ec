/**
 * What a run prints on stdout: the automation lines, or a readable line per event.
 *
 * Automation mode prints exactly the lines of MassGen's automation guide and
 * nothing else: `LOG_DIR:`, `STATUS:`, `QUESTION:`, the in-progress line, and at
 * the end `WINNER:`, `ANSWER_FILE:`, `DURATION:`, `ANSWER_PREVIEW:` (when there is
 * an answer), in a run with workspaces `WORKSPACE:` (the winner's files) and
 * one `CHANGED_FILE:` per file written to a context path, and `COMPLETED:` for
 * a run that completed; a run that finished otherwise (error, timeout, budget,
 * interrupted) ends with `FAILED: <finish_reason>: <message>` instead: the
 * run's message and the errors of the agents that are out (`failureText`), `oneLine`.
 * Every value is one line, so no text of a model, a tool or a file name can
 * add a line of its own: a preview (`QUESTION:` and `ANSWER_PREVIEW:`, cut at
 * 200 characters) is `foldedText` (escapes and controls gone, white space
 * folded); a path or a name is `oneLine` (`\`, line breaks and controls
 * written as `\\`, `\n`, `\uXXXX`; `lib/plain-text.ts`).
 * The plain display prints one line per coordination event and the final
 * answer, all of it `plainText` (no escape sequence, no control character but
 * newlines and tabs); a context path's file name is `oneLine`. Its last line
 * gives the tokens and the cost (`$—` when no call was priced).
 */
import { join } from "node:path"
import { attemptText, checklistText, type Event, ignoredVoteText, resumedText } from "../../domain/events/index.ts"
import { failureText } from "../../domain/projections/status.ts"
import { agentFile } from "../../domain/run-paths.ts"
import { skillEventLine } from "../../domain/skills/lines.ts"
import { activeMs, type State } from "../../domain/state/index.ts"
import { permissionLine, toolCallLine } from "../../domain/tools/calls.ts"
import { taskPlanLine } from "../../domain/tools/planning/plan.ts"
import { changedFiles, workspaceLine } from "../../domain/workspaces/facts.ts"
import { foldedText, oneLine, plainText } from "../../lib/plain-text.ts"
import { count, formatCost, truncate } from "../../lib/text.ts"

export const IN_PROGRESS = "[Coordination in progress - monitor status.json for real-time updates]"

/** The `QUESTION:` line's length cap: a longer question shows its start and `...` (the events keep it whole). */
export const QUESTION_LINE_MAX = 200

export const automationHeader = (logDir: string, question: string): ReadonlyArray<string> => [
  `LOG_DIR: ${oneLine(logDir)}`,
  `STATUS: ${oneLine(join(logDir, "status.json"))}`,
  `QUESTION: ${preview(question, QUESTION_LINE_MAX)}`,
  IN_PROGRESS,
]

/** How much of a long text a preview folds first: folding 20 MB whole makes several copies of it. */
const PREVIEW_WINDOW = 64 * 1024

/** `text` folded to one line and cleaned (`foldedText`), cut at `max` with `...`. */
export const preview = (text: string, max = 200): string => {
  if (text.length > PREVIEW_WINDOW) {
    // The beginning folds as the whole does, but near the cut: when it gives well over `max`, the preview is the same.
    const start = foldedText(text.slice(0, PREVIEW_WINDOW))
    if (start.length > max + 64) return `${truncate(start, max)}...`
  }
  const flat = foldedText(text)
  return flat.length > max ? `${truncate(flat, max)}...` : flat
}

const duration = (state: State): string => `${(activeMs(state, state.lastTime) / 1000).toFixed(1)}s`

/** `logDir`: where the run is now; `hasFile`: whether the answer file is there (no `ANSWER_FILE:` line when not). */
export const automationFooter = (state: State, logDir: string, hasFile: (path: string) => boolean = () => true): ReadonlyArray<string> => {
  const lines: Array<string> = []
  const final = state.final
  if (final !== null) {
    const answerFile = join(logDir, agentFile(final.agent, "final_answer"))
    lines.push(`WINNER: ${oneLine(final.agent)}`)
    if (hasFile(answerFile)) lines.push(`ANSWER_FILE: ${oneLine(answerFile)}`)
    lines.push(`DURATION: ${duration(state)}`)
    lines.push(`ANSWER_PREVIEW: ${preview(final.content)}`)
  }
  // Only in runs with workspaces or context paths: where the winner's files are, and what reached the user's folders.
  if (state.workspaces.final !== null) lines.push(`WORKSPACE: ${oneLine(join(logDir, state.workspaces.final.path))}`)
  for (const f of changedFiles(state.workspaces)) lines.push(`CHANGED_FILE: ${oneLine(f.path)} (${f.change}, ${f.bytes} bytes)`)
  const reason = state.finished?.reason ?? "interrupted"
  lines.push(
    reason === "completed"
      ? `COMPLETED: ${count(state.agents.length, "agent")}, ${duration(state)} total`
      : `FAILED: ${reason}: ${oneLine(failureText(state) ?? "the run did not finish")}`,
  )
  return lines
}

/** A readable line for an event, or null for events a person does not need to see; `logDir`: where the run is. */
export const plainLine = (event: Event, state: State, logDir: string): string | null => {
  const line = eventLine(event, state, logDir)
  return line === null ? null : plainText(line)
}

const eventLine = (event: Event, state: State, logDir: string): string | null => {
  switch (event._tag) {
    case "run_started":
      return `Run ${event.run_id}: ${count(event.agents.length, "agent")} on "${preview(event.question, 80)}" (logs: ${logDir})`
    case "tool_start_failed":
      return `Tools did not start: ${event.message}`
    case "run_resumed":
      return `Resumed: ${resumedText(event)}${event.dropped_lines > 0 ? `, ${count(event.dropped_lines, "unreadable line")} dropped` : ""}`
    case "round_started":
      return `[${event.agent}] round ${event.round}${event.restart ? " (restart)" : ""}: ${count(event.shown.length, "answer")} shown${event.vote_only ? ", vote only" : ""}`
    case "round_cancelled":
      return `[${event.agent}] round ${event.round} stopped: a new answer arrived`
    case "round_time_warned":
      return `[${event.agent}] round ${event.round} passed its ${event.stage} time limit`
    case "update_injected":
      return `[${event.agent}] round ${event.round} goes on with the new answers (${event.shown.join(", ")})${event.after_vote ? ": its vote did not see them and is not counted" : ""}`
    case "checklist_submitted":
      return `[${event.agent}] ${checklistText(event)}`
    case "reply_rejected":
      return `[${event.agent}] reply rejected (attempt ${event.attempt}): ${event.message}`
    case "answer_submitted":
      return `[${event.agent}] answer ${event.label}: ${preview(event.content, 100)}`
    case "vote_cast":
      return `[${event.agent}] votes for ${event.target} (${event.target_label}): ${preview(event.reason, 100)}`
    case "vote_ignored":
      return `[${event.agent}] ${ignoredVoteText(event)}`
    case "call_retried":
      return `[${event.agent}] call failed, retry ${event.retry} in ${event.delay_seconds.toFixed(1)}s: ${event.error}`
    case "agent_failed":
      return `[${event.agent}] out (${event.kind}): ${event.message}`
    case "presentation_started":
      return `Winner: ${event.agent} (${Object.entries(event.votes)
        .map(([l, n]) => `${l}: ${n}`)
        .join(", ")})${event.is_tie ? ", tie broken by config order" : ""}`
    case "final_answer":
      return `Final answer (${event.agent}, ${event.source.replace("_", " ")}):\n${event.content}`
    case "run_finished":
      return `Run ${event.reason} in ${duration(state)}: ${event.message} (${count(state.usage.inputTokens + state.usage.outputTokens, "token")}, cost ${formatCost(state.usage.cost)})`
    case "tool_call_finished":
    case "hosted_tool_used":
      return `[${event.agent}] ${toolCallLine(event)}`
    case "permission_asked":
    case "permission_decided":
      return `[${event.agent}] ${permissionLine(event)}`
    case "workspace_snapshotted":
    case "workspace_finalized":
      return `[${event.agent}] ${workspaceLine(event)}`
    case "context_path_written":
      return `[${event.agent}] ${workspaceLine({ ...event, path: oneLine(event.path) })}`
    case "evaluation_started":
    case "answer_confirmed":
      return `[${event.agent}] ${attemptText(event)}`
    case "orchestration_restarted":
      return `[${event.agent}] ${attemptText(event)}\nInstructions: ${event.instructions}`
    case "context_write_intended":
      return null
    case "task_plan_updated":
      return `[${event.agent}] ${taskPlanLine(event)}`
    case "skills_offered":
    case "memory_restored":
      return skillEventLine(event)
    case "memory_loaded":
      return `[${event.agent}] ${skillEventLine(event)}`
    case "call_start":
    case "call_end":
    case "tool_call_started":
      return null
  }
}
