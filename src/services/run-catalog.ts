/**
 * Finding runs to view: a log directory checked, the runs under a log base listed, newest first.
 *
 * Contract: `checkRunDir` accepts a directory that holds `events.jsonl` and
 * fails with a `ViewerError` naming what is wrong (`missing_dir`: nothing
 * there; `not_a_run`: a file, or a directory without `events.jsonl`).
 * `listRuns(base, limit)` lists the `log_*` directories of a base that hold
 * `events.jsonl`, newest first (their names are UTC start times), each with
 * whether it is complete, its number of agents and its question: from
 * `status.json` when it reads, else from the events. `isComplete(dir)` is
 * status.json's `is_complete`, or a `run_finished` in the events. Reading never
 * writes anything.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect, Schema } from "effect"
import { readEventsText } from "../domain/event-codec.ts"

export class ViewerError extends Schema.TaggedError<ViewerError>()("ViewerError", {
  reason: Schema.Literal("missing_dir", "not_a_run", "no_runs", "bad_choice", "port_in_use"),
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    const what = {
      missing_dir: "no such log directory",
      not_a_run: "not a run's log directory (no events.jsonl)",
      no_runs: "no runs to view under",
      bad_choice: "no run chosen",
      port_in_use: "cannot serve the web view on",
    }
    return `${what[this.reason]}: ${this.path}${this.detail === "" ? "" : ` (${this.detail})`}`
  }
}

export interface RunSummary {
  readonly dir: string
  readonly name: string
  readonly complete: boolean
  readonly agents: number
  readonly question: string
}

export const EVENTS_FILE = "events.jsonl"

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
    if (!statOf(nodePath.join(dir, EVENTS_FILE))?.isFile()) return Effect.fail(new ViewerError({ reason: "not_a_run", path: dir, detail: "" }))
    return Effect.succeed(dir)
  })

const readStatus = (dir: string): Record<string, any> | null => {
  try {
    const value = JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))
    return typeof value === "object" && value !== null ? value : null
  } catch {
    return null
  }
}

const readEvents = (dir: string) => {
  try {
    return readEventsText(fs.readFileSync(nodePath.join(dir, EVENTS_FILE), "utf8")).events
  } catch {
    return []
  }
}

export const isComplete = (dir: string): boolean =>
  readStatus(dir)?.is_complete === true || readEvents(dir).some((e) => e._tag === "run_finished")

export const summarize = (dir: string): RunSummary => {
  const status = readStatus(dir)
  const name = nodePath.basename(dir)
  if (status !== null && typeof status.agents === "object" && status.agents !== null && status.is_complete === true) {
    return { dir, name, complete: true, agents: Object.keys(status.agents).length, question: String(status.meta?.question ?? "") }
  }
  const events = readEvents(dir)
  const started = events.find((e) => e._tag === "run_started")
  return {
    dir,
    name,
    complete: status?.is_complete === true || events.some((e) => e._tag === "run_finished"),
    agents: started?._tag === "run_started" ? started.agents.length : Object.keys(status?.agents ?? {}).length,
    question: started?._tag === "run_started" ? started.question : String(status?.meta?.question ?? ""),
  }
}

/** The runs under `base`, newest first, at most `limit`. */
export const listRuns = (base: string, limit = 20): Effect.Effect<ReadonlyArray<RunSummary>> =>
  Effect.sync(() => {
    let names: Array<string>
    try {
      names = fs.readdirSync(base)
    } catch {
      return []
    }
    return names
      .filter((n) => n.startsWith("log_") && statOf(nodePath.join(base, n, EVENTS_FILE))?.isFile() === true)
      .sort()
      .reverse()
      .slice(0, limit)
      .map((n) => summarize(nodePath.join(base, n)))
  })

export const latestRun = (base: string): Effect.Effect<string, ViewerError> =>
  Effect.flatMap(listRuns(base, 1), (runs) =>
    runs[0] === undefined
      ? Effect.fail(new ViewerError({ reason: "no_runs", path: base, detail: "pass LOG_DIR or set MASSGEN_LOG_BASE_DIR" }))
      : Effect.succeed(runs[0].dir),
  )
