/**
 * The event log service: appends the events of one run to its `events.jsonl`, and reads such files back.
 *
 * Contract: `append` writes the event as one line (`domain/event-codec.ts`)
 * and a newline, in one write to a file opened in append mode, and returns
 * only once the OS has the line: the orchestrator acts on an event only after
 * its append returned, so a crash of the process loses no event it acted on (a
 * power loss may: there is no fsync). Appends from concurrent fibers are
 * serialized; lines never interleave. Before its first append, a log whose
 * last line is torn (a crash cut it) ends that line with a newline, so the
 * next event starts its own line; the torn line stays and reads as skipped.
 * Reading before that first append still reports the torn tail.
 *
 * `read` reads a whole file with `readEventsText`: never failing on its
 * content, counting what it skips. A missing file is an `EventLogError` with
 * reason `missing`; the caller decides whether that means "no events".
 *
 * Layers: `EventLog.live(path)` over the real file (node:fs, which also works
 * in compiled binaries); `EventLog.memory(files, path)` over a map of file
 * texts by path, which tests read and damage directly.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Context, Effect, Layer, Schema } from "effect"
import { encodeEventLine, type EventsRead, readEventsText } from "../domain/event-codec.ts"
import type { Event } from "../domain/events.ts"

export const EventLogErrorReason = Schema.Literal("missing", "unreadable", "write_failed")
export type EventLogErrorReason = typeof EventLogErrorReason.Type

export class EventLogError extends Schema.TaggedError<EventLogError>()("EventLogError", {
  reason: EventLogErrorReason,
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    const what = { missing: "no event log at", unreadable: "cannot read event log", write_failed: "cannot write event log" }
    return `${what[this.reason]} ${this.path}: ${this.detail}`
  }
}

export interface EventLogService {
  /** The file this log appends to. */
  readonly path: string
  readonly append: (event: Event) => Effect.Effect<void, EventLogError>
  /** The events of the log file at `path` (this run's or another's). */
  readonly read: (path: string) => Effect.Effect<EventsRead, EventLogError>
}

/** File texts by path: the memory layer's stand-in for the file system. */
export type MemoryFiles = Map<string, string>

const detailOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))
const codeOf = (cause: unknown): unknown => (cause as { code?: unknown } | null)?.code

const endsTorn = (text: string): boolean => text.length > 0 && !text.endsWith("\n")

const readFile = (path: string) =>
  Effect.try({
    try: () => readEventsText(fs.readFileSync(path, "utf8")),
    catch: (cause) =>
      new EventLogError({
        reason: codeOf(cause) === "ENOENT" ? "missing" : "unreadable",
        path,
        detail: detailOf(cause),
      }),
  })

/** The last byte of the file open as `fd`, or undefined when it is empty. */
const lastByte = (fd: number): number | undefined => {
  const size = fs.fstatSync(fd).size
  if (size === 0) return undefined
  const byte = Buffer.alloc(1)
  fs.readSync(fd, byte, 0, 1, size - 1)
  return byte[0]
}

const writeAll = (fd: number, text: string): void => {
  const bytes = Buffer.from(text, "utf8")
  let written = 0
  while (written < bytes.length) written += fs.writeSync(fd, bytes, written, bytes.length - written)
}

const openLive = (path: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        fs.mkdirSync(nodePath.dirname(path), { recursive: true })
        return fs.openSync(path, "a+")
      },
      catch: (cause) => new EventLogError({ reason: "write_failed", path, detail: detailOf(cause) }),
    }),
    (fd) => Effect.sync(() => fs.closeSync(fd)),
  )

/** How a layer reaches its file. */
interface Storage {
  /** Whether the file's last line has no newline (a torn tail). */
  readonly endsTorn: () => boolean
  readonly write: (text: string) => void
  readonly read: (path: string) => Effect.Effect<EventsRead, EventLogError>
}

const makeService = (path: string, storage: Storage) =>
  Effect.map(Effect.makeSemaphore(1), (lock): EventLogService => {
    let tailChecked = false
    const appendLine = (line: string) => {
      if (!tailChecked) {
        if (storage.endsTorn()) storage.write("\n")
        tailChecked = true
      }
      try {
        storage.write(line)
      } catch (cause) {
        tailChecked = false // a write that failed midway may have left a torn line
        throw cause
      }
    }
    return {
      path,
      read: storage.read,
      append: (event) =>
        lock.withPermits(1)(
          Effect.try({
            try: () => appendLine(`${encodeEventLine(event)}\n`),
            catch: (cause) => new EventLogError({ reason: "write_failed", path, detail: detailOf(cause) }),
          }),
        ),
    }
  })

export class EventLog extends Context.Tag("massgen/EventLog")<EventLog, EventLogService>() {
  /** The log at `path` on disk, created (with its directory) if missing, open until the layer's scope closes. */
  static live = (path: string): Layer.Layer<EventLog, EventLogError> =>
    Layer.scoped(
      EventLog,
      Effect.flatMap(openLive(path), (fd) =>
        makeService(path, {
          endsTorn: () => {
            const last = lastByte(fd)
            return last !== undefined && last !== 0x0a
          },
          write: (text) => writeAll(fd, text),
          read: readFile,
        }),
      ),
    )

  /** The log at `path` in `files`, which the caller keeps to read back or damage. */
  static memory = (files: MemoryFiles = new Map(), path = "events.jsonl"): Layer.Layer<EventLog> =>
    Layer.effect(
      EventLog,
      Effect.suspend(() => {
        if (!files.has(path)) files.set(path, "")
        return makeService(path, {
          endsTorn: () => endsTorn(files.get(path) ?? ""),
          write: (text) => files.set(path, (files.get(path) ?? "") + text),
          read: (at) =>
            Effect.suspend(() => {
              const text = files.get(at)
              return text === undefined
                ? Effect.fail(new EventLogError({ reason: "missing", path: at, detail: "no such file" }))
                : Effect.succeed(readEventsText(text))
            }),
        })
      }),
    )
}
