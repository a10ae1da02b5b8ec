/**
 * Where a run's call logs are on disk, and reading them back.
 *
 * A call log is the request and reply of one model call, one line of JSON
 * whose `call` field is the call's number (its long texts in `blobs/`, see
 * `blobs.ts`). `RunFiles` names it `llm_log/<n>.json` (`callLogPath`); on disk
 * the live layer appends it, as a line, to `llm_log/calls.jsonl`
 * (`CALL_LOG_FILE`), one file for the run: a file made per call cost the run
 * a file creation per reply, which a busy disk makes a millisecond or more.
 * Logs written before, and the files a worker restores from Postgres, are
 * `llm_log/<n>.json` files, which `callLogTexts` reads too (a file before a
 * line of the same call).
 *
 * A line a crash cut short is not a record: it is skipped, and it belongs to
 * a call whose `call_end` the events never got, since the line is written
 * before it. Of two lines of one call (never written so), the later counts.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

export const CALL_LOGS_DIR = "llm_log"
/** The file of a run's call logs, one line each, relative to the log directory. */
export const CALL_LOG_FILE = `${CALL_LOGS_DIR}/calls.jsonl`

/** The name `RunFiles` gives call `n`'s log (and a file of that name is read as it). */
export const callLogPath = (n: number): string => `${CALL_LOGS_DIR}/${n}.json`

const FILE_NAME = /^(\d+)\.json$/

/** Whether `relativePath` names a call log (`llm_log/<n>.json`). */
export const isCallLogPath = (relativePath: string): boolean =>
  relativePath.startsWith(`${CALL_LOGS_DIR}/`) && FILE_NAME.test(relativePath.slice(CALL_LOGS_DIR.length + 1))

/** The call number of one line of `calls.jsonl`, or null when it is not a whole record. */
const callOf = (line: string): number | null => {
  try {
    const record = JSON.parse(line) as { readonly call?: unknown }
    return typeof record === "object" && record !== null && Number.isInteger(record.call) ? (record.call as number) : null
  } catch {
    return null
  }
}

/** The text of every call log of the run in `logDir`, by call number, unexpanded (its blobs referenced). */
export const callLogTexts = (logDir: string): Map<number, string> => {
  const texts = new Map<number, string>()
  let lines = ""
  try {
    lines = readFileSync(join(logDir, CALL_LOG_FILE), "utf8")
  } catch {
    // No such file: a run of an older massgen, or one whose calls never came back.
  }
  for (const line of lines.split("\n")) {
    const call = line === "" ? null : callOf(line)
    if (call !== null) texts.set(call, line)
  }
  let names: Array<string> = []
  try {
    names = readdirSync(join(logDir, CALL_LOGS_DIR))
  } catch {
    return texts
  }
  for (const name of names) {
    const n = FILE_NAME.exec(name)?.[1]
    if (n === undefined) continue
    try {
      texts.set(Number(n), readFileSync(join(logDir, CALL_LOGS_DIR, name), "utf8"))
    } catch {
      // Unreadable: as if it were not there.
    }
  }
  return texts
}
