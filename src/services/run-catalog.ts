/**
 * Finding runs to view: a log directory checked, the runs under a log base listed, newest first.
 *
 * Contract: `checkRunDir` accepts a directory that holds `events.jsonl` and
 * fails with a `ViewerError` naming what is wrong (`missing_dir`: nothing
 * there; `not_a_run`: a file, or a directory without `events.jsonl`).
 * `listRuns(base, limit)` lists the `log_*` directories of a base that hold
 * `events.jsonl`, newest first (their names are UTC start times), each with
 * whether it is complete, its number of agents and its question: from
 * `status.json` when it reads, else from the events. `isComplete(dir)`: the
 * log's last event is `run_finished` (a resumed run is live again; status.json's
 * `is_complete` only when no event reads). Reading never
 * writes anything.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect, Schema } from "effect"
import { decodeEventLine, readEventsText } from "../domain/event-codec.ts"

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

const TAIL_BYTES = 64 * 1024

/** The last event of the log that decodes (read from its tail, else whole), or null. */
const lastEvent = (dir: string) => {
  const path = nodePath.join(dir, EVENTS_FILE)
  const fromEnd = (text: string) => {
    const lines = text.split("\n")
    for (let i = lines.length - 1; i >= 0; i--) {
      const decoded = decodeEventLine(lines[i]!)
      if (decoded._tag === "event") return decoded.event
    }
    return null
  }
  try {
    const size = fs.statSync(path).size
    if (size > TAIL_BYTES) {
      const fd = fs.openSync(path, "r")
      try {
        const buffer = Buffer.alloc(TAIL_BYTES)
        const read = fs.readSync(fd, buffer, 0, TAIL_BYTES, size - TAIL_BYTES)
        const text = buffer.subarray(0, read).toString("utf8")
        // The first line of the tail may be cut: it is never taken as the last event unless it is the only one.
        const found = fromEnd(text.slice(text.indexOf("\n") + 1))
        if (found !== null) return found
      } finally {
        fs.closeSync(fd)
      }
    }
    return fromEnd(fs.readFileSync(path, "utf8"))
  } catch {
    return null
  }
}

/**
 * A run is complete when its log ends with `run_finished` (nothing is appended
 * after it, except by a resume: a `run_resumed` reopens a run that a signal
 * stopped, and status.json says `is_complete` until the resume rewrites it).
 */
export const isComplete = (dir: string): boolean => {
  const last = lastEvent(dir)
  return last === null ? readStatus(dir)?.is_complete === true : last._tag === "run_finished"
}

export const summarize = (dir: string): RunSummary => {
  const status = readStatus(dir)
  const name = nodePath.basename(dir)
  const complete = isComplete(dir)
  if (status !== null && typeof status.agents === "object" && status.agents !== null && complete) {
    return { dir, name, complete: true, agents: Object.keys(status.agents).length, question: String(status.meta?.question ?? "") }
  }
  const events = readEvents(dir)
  const started = events.find((e) => e._tag === "run_started")
  return {
    dir,
    name,
    complete,
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
