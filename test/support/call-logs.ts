/**
 * Reading call logs in tests as `massgen replay` reads them: `llm_log/<n>.json`
 * with its long texts put back from `blobs/` (`services/blobs.ts`).
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type { RecordedCall } from "../../src/domain/replay.ts"
import { blobPath, expandJson } from "../../src/services/blobs.ts"

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

/** The call log `n` of a log directory on disk, blobs put back. */
export const readCallLog = (logDir: string, n: number): any =>
  expandJson(JSON.parse(fs.readFileSync(nodePath.join(logDir, "llm_log", `${n}.json`), "utf8")), (hash) => {
    try {
      return fs.readFileSync(nodePath.join(logDir, blobPath(hash)), "utf8")
    } catch {
      return undefined
    }
  })
