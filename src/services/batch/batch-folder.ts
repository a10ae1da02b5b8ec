/**
 * The batch folder on disk: its manifest, its items' run directories, its results.
 *
 * Layout of `DIR` (`--out`, by default `.massgen/batches/<items file name>`):
 * - `manifest.json`: what the batch is (the items file, its SHA-256, the
 *   config, the number of items, when it began), written once, atomically;
 * - `items/<id>/`: one ordinary log directory per item (`massgen status`,
 *   `replay`, `viewer` and `resume` work on it);
 * - `results.jsonl`: one `BatchResult` line per finished item, appended once
 *   the item's run finished (`domain/batch.ts`);
 * - `run.lock`: held by the process running the batch (`run-lock.ts`), so two
 *   processes never run one batch, and a killed one's lock is taken over.
 *
 * `openBatchFolder` makes the folder or checks that an existing one is the
 * same batch (same items file contents): a batch folder of another items file
 * is a `BatchError` (`changed_items`), and nothing is written. `readResults`
 * reads every whole line of `results.jsonl` (a line cut by a kill, and a
 * second line for an id, are not read). Everything is private (0700/0600).
 */
import * as fs from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import type { BatchResult } from "../../domain/batch.ts"
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../domain/run-paths.ts"
import { ioCause } from "../io-errors.ts"

export const MANIFEST_FILE = "manifest.json"
export const RESULTS_FILE = "results.jsonl"
export const ITEMS_DIR = "items"

/** A batch's items or folder cannot be used: exit 1, nothing run. */
export class BatchError extends Schema.TaggedError<BatchError>()("BatchError", {
  /** `no_batches`: a database (`path`, its URL masked) that has no batch tables, so no batch to read. */
  reason: Schema.Literal("bad_items", "unreadable", "changed_items", "unusable_folder", "no_batches"),
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    switch (this.reason) {
      case "bad_items":
        return `${this.path}: ${this.detail}`
      case "unreadable":
        return `cannot read ${this.path}: ${this.detail}`
      case "changed_items":
        return `${this.path} holds a batch of other items (${this.detail}); give another --out, or the items file it was made from`
      case "unusable_folder":
        return `cannot use the batch folder ${this.path}: ${this.detail}`
      case "no_batches":
        return `no batches in the database ${this.path}: ${this.detail}`
    }
  }
}

/** Writing the batch's own files failed (results.jsonl, the manifest): exit 2; the runs themselves are kept. */
export class BatchStorageError extends Schema.TaggedError<BatchStorageError>()("BatchStorageError", {
  path: Schema.String,
  cause: Schema.String,
}) {
  override get message(): string {
    return `cannot write ${this.path}: ${this.cause}; run the same command again once the cause is gone`
  }
}

export interface Manifest {
  readonly format: 1
  readonly items_file: string
  readonly items_sha256: string
  readonly config_path: string
  readonly items: number
  readonly created: string
  readonly massgen_version: string
}

export const itemDir = (dir: string, id: string): string => join(dir, ITEMS_DIR, id)

/** Makes the batch folder, or checks an existing one is this batch's; its manifest. */
export const openBatchFolder = (dir: string, fresh: Omit<Manifest, "created">): Effect.Effect<Manifest, BatchError | BatchStorageError> =>
  Effect.gen(function* () {
    const path = join(dir, MANIFEST_FILE)
    const existing = yield* Effect.try({
      try: () => (fs.existsSync(path) ? (JSON.parse(fs.readFileSync(path, "utf8")) as Manifest) : null),
      catch: (e) => new BatchError({ reason: "unusable_folder", path: dir, detail: `${MANIFEST_FILE}: ${ioCause(e)}` }),
    })
    if (existing !== null) {
      if (existing.items_sha256 !== fresh.items_sha256) {
        return yield* new BatchError({
          reason: "changed_items",
          path: dir,
          detail: `made from ${existing.items_file}, whose contents differ`,
        })
      }
      return existing
    }
    const manifest: Manifest = { ...fresh, created: new Date().toISOString() }
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(join(dir, ITEMS_DIR), { recursive: true, mode: PRIVATE_DIR_MODE })
        const temp = `${path}.${process.pid}.tmp`
        fs.writeFileSync(temp, `${JSON.stringify(manifest, null, 2)}\n`, { mode: PRIVATE_FILE_MODE })
        fs.renameSync(temp, path)
      },
      catch: (e) => new BatchStorageError({ path, cause: ioCause(e) }),
    })
    return manifest
  })

/** The results recorded so far, by item id (the first line of an id; a torn last line is not read). */
export const readResults = (dir: string): ReadonlyMap<string, BatchResult> => {
  const out = new Map<string, BatchResult>()
  let text: string
  try {
    text = fs.readFileSync(join(dir, RESULTS_FILE), "utf8")
  } catch {
    return out
  }
  const lines = text.split("\n")
  // The last piece has no newline: empty, or a line a kill cut short.
  for (const line of lines.slice(0, -1)) {
    try {
      const r = JSON.parse(line) as BatchResult
      if (typeof r.id === "string" && !out.has(r.id)) out.set(r.id, r)
    } catch {
      // A damaged line: its item runs its check again (its run is finished, so nothing is asked again).
    }
  }
  return out
}

/** Appends one result line, after a newline when a kill left the last line torn. */
export const appendResult = (dir: string, result: BatchResult): Effect.Effect<void, BatchStorageError> => {
  const path = join(dir, RESULTS_FILE)
  return Effect.try({
    try: () => {
      const size = fs.statSync(path, { throwIfNoEntry: false })?.size ?? 0
      let torn = false
      if (size > 0) {
        const fd = fs.openSync(path, "r")
        const last = Buffer.alloc(1)
        fs.readSync(fd, last, 0, 1, size - 1)
        fs.closeSync(fd)
        torn = last[0] !== 0x0a
      }
      fs.appendFileSync(path, `${torn ? "\n" : ""}${JSON.stringify(result)}\n`, { mode: PRIVATE_FILE_MODE })
    },
    catch: (e) => new BatchStorageError({ path, cause: ioCause(e) }),
  })
}
