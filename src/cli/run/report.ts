/**
 * What the commands that read a run tell of it besides its events: what they skipped of its log, and whether it stopped and how to resume it.
 *
 * Contract: `reportSkips(printError, dir, read, skippedEvents)` prints the
 * skip report of the log in `dir` (`domain/log/skip-report.ts`: the read's skipped
 * lines by cause, and the events the fold skipped) as one stderr line,
 * `massgen: DIR/events.jsonl: skipped ...`, and nothing when nothing was
 * skipped; it returns the counts.
 * `stopOf(state, live, dir)` says how a run stopped that can be resumed: its
 * process is gone before `run_finished` (`process_gone`), the client of a
 * `massgen serve` request went away (`cancelled`: recorded `interrupted` with
 * the message `CLIENT_CANCELLED`), or a signal or the server's drain stopped
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

/** What a served run whose client went away records as its `run_finished` message. */
export const CLIENT_CANCELLED = "cancelled by the client"

export interface Stop {
  readonly cause: "process_gone" | "interrupted" | "cancelled"
  /** The command that resumes the run. */
  readonly resume: string
}

export const stopOf = (state: State, live: boolean, dir: string): Stop | null => {
  if (!isResumable(state.finished) || (state.finished === null && live)) return null
  // Older versions recorded a client's disconnect as "client disconnected".
  const message = state.finished?.message
  const cause =
    message === undefined ? "process_gone" : message === CLIENT_CANCELLED || message === "client disconnected" ? "cancelled" : "interrupted"
  return { cause, resume: resumeHint(dir) }
}
