/**
 * Reading call logs in tests as `massgen replay` reads them: a line of
 * `llm_log/calls.jsonl` on disk (`services/run-files/call-logs.ts`), `llm_log/<n>.json`
 * in the memory layer, with its long texts put back from `blobs/` (`services/run-files/blobs.ts`).
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type { RecordedCall } from "../../src/domain/replay/index.ts"
import { blobPath } from "../../src/domain/run-paths.ts"
import { expandJson } from "../../src/services/run-files/blobs.ts"
import { callLogTexts } from "../../src/services/run-files/call-logs.ts"

/** The call log `n` among a run's files (memory layer), blobs put back; undefined when it has none. */
export const callLogOf =
  (files: ReadonlyMap<string, string>) =>
  (n: number): any => {
    const text = files.get(`llm_log/${n}.json`)
    return text === undefined ? undefined : expandJson(JSON.parse(text), (hash) => files.get(blobPath(hash)))
  }

/** The recorded call `n` of a run's files, as replay takes it. */
export const callsOf =
  (files: ReadonlyMap<string, string>) =>
  (n: number): RecordedCall | undefined => {
    const record = callLogOf(files)(n)
    return record === undefined ? undefined : { request: record.request ?? null, reply: record.reply ?? null, error: record.error ?? null }
  }

/** The call log `n` of a log directory on disk (`llm_log/calls.jsonl`, or an older `llm_log/<n>.json`), blobs put back; throws when it has none. */
export const readCallLog = (logDir: string, n: number): any => {
  const text = callLogTexts(logDir).get(n)
  if (text === undefined) throw new Error(`no call log ${n} in ${logDir}`)
  return expandJson(JSON.parse(text), (hash) => {
    try {
      return fs.readFileSync(nodePath.join(logDir, blobPath(hash)), "utf8")
    } catch {
      return undefined
    }
  })
}

/** How many call logs a log directory on disk holds. */
export const callLogCount = (logDir: string): number => callLogTexts(logDir).size
