/**
 * What the commands that read a run tell of it besides its events: what they skipped of its log, and whether it stopped and how to resume it.
 *
 * Contract: `reportSkips(printError, dir, read, skippedEvents)` prints the
 * skip report of the log in `dir` (`domain/log/skip-report.ts`: the read's skipped
 * lines by cause, and the events the fold skipped) as one stderr line,
 * `massgen: DIR/events.jsonl: skipped ...`, and nothing when nothing was
 * skipped; it returns the counts.
 * `stopOf(state, live, dir)` says how a run stopped that can be resumed: its
 * process is gone before `run_finished` (`process_gone`), or a signal stopped
 * it (`interrupted`); null for a run still going (`live`: a live process holds
 * its lock) or one that finished.
 */
import { join } from "node:path"
import { type SkipCounts, skipCounts, skipSentence } from "../../domain/log/index.ts"
import { resumeHint } from "../../domain/run-paths.ts"
import { isResumable, type State } from "../../domain/state/index.ts"
import { EVENTS_FILE, type StreamRead } from "../../services/event-store/index.ts"

export const reportSkips = (
  printError: (line: string) => void,
  dir: string,
  read: Pick<StreamRead, "skippedByCause">,
  skippedEvents: number,
): SkipCounts => {
  const counts = skipCounts(read.skippedByCause, skippedEvents)
  const sentence = skipSentence(join(dir, EVENTS_FILE), counts)
  if (sentence !== null) printError(`massgen: ${sentence}`)
  return counts
}

export interface Stop {
  readonly cause: "process_gone" | "interrupted"
  /** The command that resumes the run. */
  readonly resume: string
}

export const stopOf = (state: State, live: boolean, dir: string): Stop | null => {
  if (!isResumable(state.finished) || (state.finished === null && live)) return null
  return { cause: state.finished === null ? "process_gone" : "interrupted", resume: resumeHint(dir) }
}
