/**
 * Where the event store keeps streams' text: the `Storage` of each of its layers.
 *
 * Contract: a storage holds one text per stream and only ever appends to it
 * (`write`, one write per call). `size` and `readFrom` measure in the
 * storage's own unit (bytes on disk, UTF-16 units in memory), and `readFrom`
 * cuts after the last newline, so what is before the cut is whole lines.
 * `changes` gives a wait that ends at the stream's next change, or after
 * `pollMs` at the latest, for as long as its scope lasts.
 *
 * `fileStorage`: a stream is a log directory, its text `<dir>/events.jsonl`,
 * written through a file opened in append mode (kept open until the scope
 * closes), read with node:fs; it wakes on `fs.watch` of the directory. The
 * size of a stream it has written is that of the file it holds (`fstat`: no
 * path to resolve), unless that file was removed (it has no link left): then
 * the path's, and the next write opens the file the path names.
 * Its long texts (`domain/log/long-texts.ts`) are in the run's blob store,
 * `<dir>/blobs/<sha256>.txt` (`blobs`): each written once, whole (a temporary
 * file renamed), private, before the line that references it.
 * `memoryStorage`: texts in a map, woken by its own writes; it has no blob
 * store, so its lines hold their long texts (as the Postgres layer's mirror does).
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Duration, Effect, Queue, type Scope } from "effect"
import { blobPath, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../domain/run-paths.ts"

export const EVENTS_FILE = "events.jsonl"

/** How a layer keeps its streams' text. Sizes and offsets are in the layer's own unit (bytes on disk). */
export interface Storage {
  /** The size of the stream's text, null when there is no such stream; throws when it cannot be told. */
  readonly size: (stream: string) => number | null
  /** The text from `offset` to `end`, cut after its last newline: `whole` (of `wholeSize`) ends with one, `rest` has none. */
  readonly readFrom: (
    stream: string,
    offset: number,
    end: number,
  ) => { readonly whole: string; readonly wholeSize: number; readonly rest: string }
  /** Appends `text` in one write, making the stream if needed. */
  readonly write: (stream: string, text: string) => void
  /** The size of `text` once written. */
  readonly sizeOf: (text: string) => number
  /** The streams directly under `base` that may be runs (named `log_*`). */
  readonly streamsUnder: (base: string) => ReadonlyArray<string>
  /** A wait for the stream's next change (or the poll), for as long as the scope lasts. */
  readonly changes: (stream: string) => Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
  /** The stream's blob store, where its long texts are kept once (absent: the lines hold them). */
  readonly blobs?: BlobStore
}

/** A stream's blob store: texts by the SHA-256 of their UTF-8. */
export interface BlobStore {
  /** Keeps `text` under `hash` (when it is not there yet), whole, before returning; throws when it cannot. */
  readonly put: (stream: string, hash: string, text: string) => void
  /** The text kept under `hash`, undefined when there is none (or it cannot be read). */
  readonly get: (stream: string, hash: string) => string | undefined
}

/** Where the lines of `stream` find the texts they reference: its blob store, undefined when its storage has none. */
export const blobTextsOf = (storage: Storage, stream: string): ((hash: string) => string | undefined) | undefined => {
  const blobs = storage.blobs
  return blobs === undefined ? undefined : (hash) => blobs.get(stream, hash)
}

const codeOf = (cause: unknown): unknown => (cause as { code?: unknown } | null)?.code

const isRunName = (name: string): boolean => name.startsWith("log_")

/** Waits for a poke, or `pollMs` at the latest; `watch` pokes it and returns what to close. */
const pokedOrPolled = (pollMs: number, watch: (poke: () => void) => () => void) =>
  Effect.gen(function* () {
    const wake = yield* Queue.sliding<void>(1)
    const stop = watch(() => void Queue.unsafeOffer(wake, undefined))
    yield* Effect.addFinalizer(() => Effect.sync(stop))
    return Queue.take(wake).pipe(Effect.timeoutOption(Duration.millis(pollMs)), Effect.asVoid)
  })

/** Writes all of `text` at the end of the file open as `fd`: one write of the string, its bytes only for a write cut short. */
export const writeAllSync = (fd: number, text: string): void => {
  let written = fs.writeSync(fd, text)
  const size = Buffer.byteLength(text, "utf8")
  if (written === size) return
  // Cut short: the rest, from its bytes.
  const bytes = Buffer.from(text, "utf8")
  while (written < size) written += fs.writeSync(fd, bytes, written, size - written)
}

/** The file storage, its files open until the scope closes. */
export const fileStorage = (pollMs: number): Effect.Effect<Storage, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => new Map<string, number>()),
      (fds) => Effect.sync(() => fds.forEach((fd) => fs.closeSync(fd))),
    ),
    (fds) => filesIn(pollMs, fds),
  )

/** The blob store of log directories: `<dir>/blobs/<hash>.txt`. */
const blobFiles: BlobStore = {
  put: (stream, hash, text) => {
    const path = nodePath.join(stream, blobPath(hash))
    if (fs.existsSync(path)) return
    fs.mkdirSync(nodePath.dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE })
    const temporary = `${path}.${process.pid}.tmp`
    try {
      fs.writeFileSync(temporary, text, { mode: PRIVATE_FILE_MODE })
      fs.renameSync(temporary, path)
    } catch (cause) {
      // A disk that filled up keeps no part of the blob.
      fs.rmSync(temporary, { force: true })
      throw cause
    }
  },
  get: (stream, hash) => {
    try {
      return fs.readFileSync(nodePath.join(stream, blobPath(hash)), "utf8")
    } catch {
      return undefined
    }
  },
}

const filesIn = (pollMs: number, fds: Map<string, number>): Storage => {
  const fileOf = (stream: string) => nodePath.join(stream, EVENTS_FILE)
  return {
    blobs: blobFiles,
    size: (stream) => {
      const fd = fds.get(stream)
      if (fd !== undefined) {
        // Written here: the file it holds open tells its size, another process's appends included.
        const held = fs.fstatSync(fd)
        if (held.nlink > 0) return held.size
        // Removed since: the path tells, and the next write opens what it names.
        fds.delete(stream)
        fs.closeSync(fd)
      }
      try {
        return fs.statSync(fileOf(stream)).size
      } catch (cause) {
        if (codeOf(cause) === "ENOENT" || codeOf(cause) === "ENOTDIR") return null
        throw cause
      }
    },
    readFrom: (stream, offset, end) => {
      const bytes = Buffer.alloc(end - offset)
      const fd = fs.openSync(fileOf(stream), "r")
      let got = 0
      try {
        while (got < bytes.length) {
          const n = fs.readSync(fd, bytes, got, bytes.length - got, offset + got)
          if (n === 0) break
          got += n
        }
      } finally {
        fs.closeSync(fd)
      }
      // A newline byte is never part of another UTF-8 character: cutting there keeps characters whole.
      const cut = bytes.subarray(0, got).lastIndexOf(0x0a) + 1
      return { whole: bytes.toString("utf8", 0, cut), wholeSize: cut, rest: bytes.toString("utf8", cut, got) }
    },
    write: (stream, text) => {
      let fd = fds.get(stream)
      if (fd === undefined) {
        fs.mkdirSync(stream, { recursive: true })
        fd = fs.openSync(fileOf(stream), "a")
        fds.set(stream, fd)
      }
      writeAllSync(fd, text)
    },
    sizeOf: (text) => Buffer.byteLength(text, "utf8"),
    streamsUnder: (base) =>
      fs
        .readdirSync(base)
        .filter((name) => isRunName(name) && fs.statSync(fileOf(nodePath.join(base, name)), { throwIfNoEntry: false })?.isFile() === true)
        .map((name) => nodePath.join(base, name)),
    changes: (stream) =>
      pokedOrPolled(pollMs, (poke) => {
        let watcher: fs.FSWatcher | null = null
        try {
          watcher = fs.watch(stream, poke).on("error", () => undefined)
        } catch {
          // No watcher (the directory is not there yet): the poll still sees every change.
        }
        return () => watcher?.close()
      }),
  }
}

/** Stream texts by stream name: the memory layer's stand-in for the log directories. */
export type MemoryStreams = Map<string, string>

export const memoryStorage = (texts: MemoryStreams, pollMs: number): Storage => {
  const pokes = new Set<() => void>()
  return {
    size: (stream) => texts.get(stream)?.length ?? null,
    readFrom: (stream, offset, end) => {
      const text = (texts.get(stream) ?? "").slice(offset, end)
      const cut = text.lastIndexOf("\n") + 1
      return { whole: text.slice(0, cut), wholeSize: cut, rest: text.slice(cut) }
    },
    write: (stream, text) => {
      texts.set(stream, (texts.get(stream) ?? "") + text)
      for (const poke of pokes) poke()
    },
    sizeOf: (text) => text.length,
    streamsUnder: (base) => [...texts.keys()].filter((s) => nodePath.dirname(s) === base && isRunName(nodePath.basename(s))),
    changes: () =>
      pokedOrPolled(pollMs, (poke) => {
        pokes.add(poke)
        return () => pokes.delete(poke)
      }),
  }
}
