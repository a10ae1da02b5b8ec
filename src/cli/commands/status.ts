/**
 * `massgen status LOG_DIR [--json]`: what a run is doing or did, rebuilt from `events.jsonl`.
 *
 * It folds the log in one pass through the event store (`EventStore.fold`:
 * in chunks, no event kept), and projects `status.json`
 * from it, for the directory it was given (where the run is now). A finished run's
 * `status.json` is rewritten from the log; a run still going (its lock is held
 * by a live process) is only read, never written. It prints a short summary:
 * phase, each agent's status, answers and vote, the votes, the winner and the
 * cost; for a run that finished without completing, a `Failed:` line with its
 * finish reason, its message and its agents' errors (the headline says
 * `failed` for `finish_reason: error`); for a run that stopped (its process is
 * gone unfinished: its agents that were at work are `stopped`; a signal
 * stopped it; its `serve` client went away: `cancelled by the client`) the
 * command that resumes it. With `--json`, the rebuilt status
 * itself, plus `log` (the log read, and what of it was skipped, by kind) and
 * `stopped` (how the run stopped and the command that resumes it, or null).
 * What was skipped is also said on stderr, in one line (`cli/run/report.ts`).
 * Text from the run is printed plain (`lib/plain-text.ts`): the summary
 * folds and cleans the question and errors, and the JSON writes the
 * characters a terminal would act on as `\uXXXX` (`plainJson`).
 */
import { join } from "node:path"
import { Effect } from "effect"
import { project, type StatusJson } from "../../domain/projections/status.ts"
import { foldedText, plainJson } from "../../lib/plain-text.ts"
import { count, formatCost } from "../../lib/text.ts"
import { EVENTS_FILE, EventStore } from "../../services/event-store/index.ts"
import { holder } from "../../services/log-dir/run-lock.ts"
import { StatusWriter } from "../../services/run-files/index.ts"
import { preview } from "../run/automation-output.ts"
import { CLIENT_CANCELLED, reportSkips, type Stop, stopOf } from "../run/report.ts"
import { foldRunDir } from "../run/run-dir.ts"

const HOW_STOPPED: Record<Stop["cause"], string> = {
  process_gone: "its process is gone and the run did not finish",
  interrupted: "interrupted by a signal",
  cancelled: CLIENT_CANCELLED,
}

export const statusSummary = (status: StatusJson, live: boolean, stop: Stop | null = null): ReadonlyArray<string> => {
  const state = live
    ? "running"
    : stop?.cause === "process_gone"
      ? "stopped"
      : stop?.cause === "cancelled"
        ? CLIENT_CANCELLED
        : status.finish_reason === "error"
          ? "failed"
          : status.finish_reason
  const lines = [`Run ${status.meta.session_id}: ${state} (${status.coordination.phase}, ${status.coordination.completion_percentage}%)`]
  // A run that finished without completing says why, with the errors of its agents that are out.
  if (status.error !== null && stop === null) lines.push(`Failed: ${status.error.reason}: ${foldedText(status.error.message)}`)
  lines.push(`Question: ${preview(status.meta.question, 100)}`)
  // Orchestration restarts: the attempt, and why each restart was asked for.
  if (status.attempts !== undefined) {
    const at = status.attempts
    lines.push(`Attempt: ${at.current} of ${at.max}${at.evaluating !== null ? `, ${at.evaluating} evaluating the final answer` : ""}`)
    for (const r of at.restarts) lines.push(`  restarted by ${r.agent} for attempt ${r.attempt}: ${preview(r.reason, 100)}`)
  }
  for (const [id, a] of Object.entries(status.agents)) {
    const vote = a.vote_cast ? `, votes for ${a.vote_cast.voted_for_agent} (${a.vote_cast.voted_for_label})` : ""
    const error = a.error ? `, ${a.error.type}: ${foldedText(a.error.message)}` : ""
    lines.push(`  ${id}: ${a.status}, ${count(a.answer_count, "answer")}${vote}${error}`)
  }
  const votes = Object.entries(status.results.votes)
    .map(([label, n]) => `${label}: ${n}`)
    .join(", ")
  lines.push(`Votes: ${votes === "" ? "none" : votes}`)
  lines.push(`Winner: ${status.results.winner ?? (status.is_complete ? "none" : "none yet")}`)
  lines.push(
    `Tokens: ${status.costs.total_input_tokens} in, ${status.costs.total_output_tokens} out; cost ${formatCost(status.costs.total_estimated_cost)}`,
  )
  if (stop !== null) lines.push(`Stopped: ${HOW_STOPPED[stop.cause]}; continue it with: ${stop.resume}`)
  return lines
}

/** `printError`: where the skip report goes (stderr). */
export const statusCommand = (
  logDir: string,
  json: boolean,
  print: (line: string) => void,
  printError: (line: string) => void = console.error,
) =>
  Effect.gen(function* () {
    const dir = yield* foldRunDir(logDir)
    const state = dir.read.state
    const live = state.finished === null && holder(dir.path) !== null
    const processGone = state.finished === null && !live
    const status = project(state, state.finished !== null ? state.finished.time : Date.now(), dir.path, { processGone })
    if (!live) {
      yield* Effect.flatMap(StatusWriter, (w) => w.write(status)).pipe(
        Effect.provide(StatusWriter.live(join(dir.path, "status.json"))),
        Effect.catchAll(() => Effect.void),
      )
    }
    const skipped = reportSkips(printError, dir.path, dir.read, state.skippedEvents)
    const stop = stopOf(state, live, dir.path)
    if (json) print(plainJson({ ...status, log: { events: join(dir.path, EVENTS_FILE), skipped }, stopped: stop }, 2))
    else for (const line of statusSummary(status, live, stop)) print(line)
    return 0
  }).pipe(Effect.provide(EventStore.file()))
