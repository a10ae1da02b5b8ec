/**
 * `massgen status LOG_DIR [--json]`: what a run is doing or did, rebuilt from `events.jsonl`.
 *
 * It folds the log, read through the event store, and projects `status.json`
 * from it, for the directory it was given (where the run is now). A finished run's
 * `status.json` is rewritten from the log; a run still going (its lock is held
 * by a live process) is only read, never written. It prints a short summary:
 * phase, each agent's status, answers and vote, the votes, the winner and the
 * cost; with `--json`, the rebuilt status itself.
 */
import { join } from "node:path"
import { Effect } from "effect"
import { foldEvents } from "../domain/state.ts"
import { type StatusJson, project } from "../domain/status.ts"
import { EventStore, eventsOf } from "../services/event-store.ts"
import { holder } from "../services/run-lock.ts"
import { StatusWriter } from "../services/status-writer.ts"
import { openRunDir } from "./run-dir.ts"
import { preview } from "./automation-output.ts"
import { count, formatCost } from "../domain/text.ts"

export const statusSummary = (status: StatusJson, live: boolean): ReadonlyArray<string> => {
  const lines = [
    `Run ${status.meta.session_id}: ${live ? "running" : status.finish_reason} (${status.coordination.phase}, ${status.coordination.completion_percentage}%)`,
    `Question: ${preview(status.meta.question, 100)}`,
  ]
  for (const [id, a] of Object.entries(status.agents)) {
    const vote = a.vote_cast ? `, votes for ${a.vote_cast.voted_for_agent} (${a.vote_cast.voted_for_label})` : ""
    const error = a.error ? `, ${a.error.type}: ${a.error.message}` : ""
    lines.push(`  ${id}: ${a.status}, ${count(a.answer_count, "answer")}${vote}${error}`)
  }
  const votes = Object.entries(status.results.votes).map(([label, n]) => `${label}: ${n}`).join(", ")
  lines.push(`Votes: ${votes === "" ? "none" : votes}`)
  lines.push(`Winner: ${status.results.winner ?? "none yet"}`)
  const cost = Object.values(status.agents).some((a) => a.token_usage.estimated_cost !== null) ? status.costs.total_estimated_cost : null
  lines.push(`Tokens: ${status.costs.total_input_tokens} in, ${status.costs.total_output_tokens} out; cost ${formatCost(cost)}`)
  return lines
}

export const statusCommand = (logDir: string, json: boolean, print: (line: string) => void) =>
  Effect.gen(function* () {
    const dir = yield* openRunDir(logDir)
    const state = foldEvents(eventsOf(dir.read))
    const live = state.finished === null && holder(dir.path) !== null
    const status = project(state, state.finished !== null ? state.finished.time : Date.now(), dir.path)
    if (!live) {
      yield* Effect.flatMap(StatusWriter, (w) => w.write(status)).pipe(
        Effect.provide(StatusWriter.live(join(dir.path, "status.json"))),
        Effect.catchAll(() => Effect.void),
      )
    }
    if (json) print(JSON.stringify(status, null, 2))
    else for (const line of statusSummary(status, live)) print(line)
    return 0
  }).pipe(Effect.provide(EventStore.file()))
