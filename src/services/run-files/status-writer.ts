/**
 * The status writer service: writes a run's `status.json`, whole or not at all.
 *
 * Contract: `write` serializes the status as JSON with a 2-space indent and a
 * final newline, and replaces the file atomically: a reader (a viewer, a
 * script polling the log directory) sees the previous status or the new one,
 * never a mix or a partial file. Writes through one writer happen one at a
 * time, in the order asked, so an older status never lands over a newer one.
 * `writeFileAtomic` does the same for any text
 * file (final answer files, `coordination_events.json`).
 *
 * How: the text goes to a temporary file in the target's directory, named
 * `<target>.<pid>.<counter>.tmp` so that no two writers (fibers or processes)
 * share one, which is then renamed over the target; a rename within one
 * directory is atomic. A failed write removes its temporary file. Files are
 * made private (0600) and missing directories too (0700), as everything under
 * a log directory is (`services/log-dir/create.ts`).
 *
 * Layers: `StatusWriter.live(path)` on disk; `StatusWriter.memory(written)`
 * keeps every status written, as a reader of the file would parse it.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Context, Effect, Layer, Schema } from "effect"
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../domain/run-paths.ts"
import { ioCause } from "../io-errors.ts"

export const StatusWriteErrorReason = Schema.Literal("not_serializable", "write_failed")
export type StatusWriteErrorReason = typeof StatusWriteErrorReason.Type

/** A file of the log directory could not be written; the previous content, if any, is unchanged. */
export class StatusWriteError extends Schema.TaggedError<StatusWriteError>()("StatusWriteError", {
  reason: StatusWriteErrorReason,
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    const what = { not_serializable: "cannot serialize as JSON for", write_failed: "cannot write" }
    return `${what[this.reason]} ${this.path}: ${this.detail}`
  }
}

const detailOf = (cause: unknown): string => ioCause(cause)

let tempCounter = 0

/**
 * Replaces the file at `path` with `text` atomically, creating its directory if
 * missing. Uninterruptible: a write once begun ends (renamed or removed) before
 * its fiber does, so no interrupted write can land after a later one.
 */
export const writeFileAtomic = (path: string, text: string): Effect.Effect<void, StatusWriteError> =>
  Effect.uninterruptible(
    Effect.suspend(() => {
      tempCounter += 1
      const temp = `${path}.${process.pid}.${tempCounter}.tmp`
      return Effect.tryPromise({
        try: async () => {
          try {
            await fs.promises.mkdir(nodePath.dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE })
            await fs.promises.writeFile(temp, text, { encoding: "utf8", mode: PRIVATE_FILE_MODE })
            await fs.promises.rename(temp, path)
          } catch (cause) {
            await fs.promises.rm(temp, { force: true }).catch(() => undefined)
            throw cause
          }
        },
        catch: (cause) => new StatusWriteError({ reason: "write_failed", path, detail: detailOf(cause) }),
      })
    }),
  )

/**
 * `writeFileAtomic` done synchronously: for the small files a run writes on its
 * critical path (call logs, final answers), one blocking write is far cheaper
 * than three trips through the thread pool. `madeDirs` remembers directories
 * already created.
 */
export const writeFileAtomicSync = (path: string, text: string, madeDirs?: Set<string>): void => {
  tempCounter += 1
  const temp = `${path}.${process.pid}.${tempCounter}.tmp`
  const dir = nodePath.dirname(path)
  if (!madeDirs?.has(dir)) {
    fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
    madeDirs?.add(dir)
  }
  try {
    fs.writeFileSync(temp, text, { encoding: "utf8", mode: PRIVATE_FILE_MODE })
    fs.renameSync(temp, path)
  } catch (cause) {
    fs.rmSync(temp, { force: true })
    throw cause
  }
}

/** The status as `status.json` holds it. */
export const statusText = (path: string, status: unknown): Effect.Effect<string, StatusWriteError> =>
  Effect.try({
    try: () => {
      // Bun takes seconds to reject a cyclic value when indenting, milliseconds when not.
      if (JSON.stringify(status) === undefined) throw new Error(`a ${typeof status} has no JSON form`)
      return `${JSON.stringify(status, null, 2)}\n`
    },
    catch: (cause) => new StatusWriteError({ reason: "not_serializable", path, detail: detailOf(cause) }),
  })

export interface StatusWriterService {
  readonly path: string
  readonly write: (status: unknown) => Effect.Effect<void, StatusWriteError>
  /** Writes at once, synchronously, for a process about to exit; throws on failure. */
  readonly writeNow: (status: unknown) => void
}

export class StatusWriter extends Context.Tag("massgen/StatusWriter")<StatusWriter, StatusWriterService>() {
  /** Writes `status.json` at `path`, one write at a time: the last write asked for is the one the file keeps. */
  static live = (path: string): Layer.Layer<StatusWriter> =>
    Layer.effect(
      StatusWriter,
      Effect.map(Effect.makeSemaphore(1), (lock) => ({
        path,
        write: (status: unknown) => lock.withPermits(1)(Effect.flatMap(statusText(path, status), (text) => writeFileAtomic(path, text))),
        writeNow: (status: unknown) => writeFileAtomicSync(path, Effect.runSync(statusText(path, status))),
      })),
    )

  /** Appends every status written to `written`, parsed back from its JSON text; the last is the current one. */
  static memory = (written: Array<unknown> = [], path = "status.json"): Layer.Layer<StatusWriter> =>
    Layer.succeed(StatusWriter, {
      path,
      write: (status) =>
        Effect.map(statusText(path, status), (text) => {
          written.push(JSON.parse(text))
        }),
      writeNow: (status) => void written.push(JSON.parse(Effect.runSync(statusText(path, status)))),
    })
}
