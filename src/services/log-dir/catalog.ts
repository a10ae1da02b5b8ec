/**
 * Finding a run to view: a log directory checked, or the newest run under a log base.
 *
 * Contract: `checkRunDir` accepts a directory that holds `events.jsonl` and
 * fails with a `ViewerError` naming what is wrong (`missing_dir`: nothing
 * there; `not_a_run`: a file, or a directory without `events.jsonl`).
 * `latestRun(base)` is the newest run the event store lists under a log base
 * (`EventStore.list`, which also gives the viewer's list of runs), or
 * `no_runs`. `progressOf(run)` tells a listed run that is `done` (its log ends
 * with `run_finished`) from one `live` (a live process holds its lock,
 * `run-lock.ts`) and one `stopped` (neither: its process died before it
 * finished, or before its first event). Nothing here writes.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect, Schema } from "effect"
import { EVENTS_FILE, EventStore, type RunSummary } from "../event-store/index.ts"
import { holder } from "./run-lock.ts"

export class ViewerError extends Schema.TaggedError<ViewerError>()("ViewerError", {
  reason: Schema.Literal("missing_dir", "not_a_run", "no_events", "no_runs", "bad_choice", "port_in_use"),
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    const what = {
      missing_dir: "no such log directory",
      not_a_run: "not a run's log directory (no events.jsonl)",
      no_events: "no events to view",
      no_runs: "no runs to view under",
      bad_choice: "no run chosen",
      port_in_use: "cannot serve the web view on",
    }
    return `${what[this.reason]}: ${this.path}${this.detail === "" ? "" : ` (${this.detail})`}`
  }
}

const statOf = (path: string): fs.Stats | null => {
  try {
    return fs.statSync(path)
  } catch {
    return null
  }
}

export const checkRunDir = (path: string): Effect.Effect<string, ViewerError> =>
  Effect.suspend(() => {
    const dir = nodePath.resolve(path)
    const stat = statOf(dir)
    if (stat === null) return Effect.fail(new ViewerError({ reason: "missing_dir", path: dir, detail: "" }))
    if (!stat.isDirectory()) return Effect.fail(new ViewerError({ reason: "not_a_run", path: dir, detail: "a file, not a directory" }))
    if (!statOf(nodePath.join(dir, EVENTS_FILE))?.isFile())
      return Effect.fail(new ViewerError({ reason: "not_a_run", path: dir, detail: "" }))
    return Effect.succeed(dir)
  })

/** The newest run under `base`. */
export const latestRun = (base: string): Effect.Effect<string, ViewerError, EventStore> =>
  Effect.flatMap(EventStore, (store) =>
    Effect.flatMap(store.list(base, 1), (runs) =>
      runs[0] === undefined
        ? Effect.fail(new ViewerError({ reason: "no_runs", path: base, detail: "pass LOG_DIR or set MASSGEN_LOG_BASE_DIR" }))
        : Effect.succeed(runs[0].stream),
    ),
  )

export type RunProgress = "done" | "live" | "stopped"

export const progressOf = (run: RunSummary): RunProgress => (run.complete ? "done" : holder(run.stream) !== null ? "live" : "stopped")
