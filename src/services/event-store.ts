/**
 * The event store: where every run's events are appended, and what every reader reads them through.
 *
 * A *stream* is one run's events, addressed by its log directory (the file
 * layer keeps them in `<dir>/events.jsonl`, one envelope per line, see
 * `domain/event-codec.ts`). Its *version* is how many events it holds: lines
 * that are skipped are not events.
 *
 * Contract:
 * - `append(stream, events, expectedVersion)` writes the events (each alone, or
 *   `{ event, meta }` with the machine facts of its envelope) when the stream
 *   holds exactly `expectedVersion` events (a missing stream holds 0), and
 *   returns the new version. Otherwise it fails with `EventStoreConflict` and
 *   writes nothing; an event (or meta) the schema rejects fails with
 *   `invalid_event` and writes nothing. The lines go out in one write in append
 *   mode, and `append` returns once the OS has them (no fsync: a crash of the
 *   process loses nothing appended, a power loss may). An append is one step
 *   that no other append interleaves with. A stream whose last line is torn
 *   gets a newline first, in the same write, so the next event starts its own
 *   line; the torn line stays and reads as skipped. A line that readers skip
 *   (an event earlier than the stream's last, or the same line as an earlier
 *   one: writers are to append neither) is written, and not counted in the
 *   version, as a read would not count it.
 * - `settled(stream)` is the durability barrier: it completes once every
 *   append of the stream so far is as durable as the layer makes it, and fails
 *   with the conflict or error of one that is not. The file and memory layers
 *   settle each append before it returns (`settled` does nothing); the
 *   Postgres layer commits appends in groups after they return, so a conflict
 *   with another process may show only at the barrier (or at a later append).
 *   Contract for writers: an event is settled before anything outside the
 *   process acts on it (a model call, a tool call, a context path write, the
 *   report of the run's end): a crash loses only events nothing depended on.
 * - `read(stream, from = 0)` gives the events from position `from`, with the
 *   stream's version, its skipped lines counted by cause (`domain/event-codec.ts`:
 *   unreadable lines, newer schemas, duplicates, events out of order, a torn
 *   last line) and whether its tail is torn. It never fails on what the lines
 *   hold; a stream that does not exist is an `EventStoreError` `missing`.
 * - `fold(stream, init, f)` folds every event `read(stream)` would give with
 *   `f`, and says what `read` says of the stream but its events, plus its first
 *   event. A stream this store has not read is read in chunks and nothing of it
 *   is kept (a one-pass reader such as `massgen status` holds no log in memory).
 * - `subscribe(stream, from)` is a `Stream` of the events from position `from`
 *   on: those there now, then each one appended later, in order, read from
 *   whole lines only (a torn last line waits for its newline). It wakes when
 *   the stream changes, or after `pollMs` at the latest. It never ends by
 *   itself: its consumer ends it. A stream not there yet is waited for.
 * - `list(base, limit)`: the runs under a log base (its `log_*` streams),
 *   newest first (their names are UTC start times), each complete or not (its
 *   last event is `run_finished`), started or not (it has a `run_started`),
 *   with its number of agents and its question (from `run_started`). Never
 *   fails: what cannot be read lists as empty.
 *
 * A store decodes each line at most once: it keeps what it read and appended
 * of each stream, and later reads decode only what was appended since (a
 * stream is append-only; one that shrank is read again whole).
 *
 * Layers: `EventStore.file()` over log directories on disk (node:fs, which
 * also works in compiled binaries), open until the layer's scope closes;
 * `EventStore.memory(texts)` over a map of stream texts by stream name, which
 * tests read and damage directly. Both are this one store over a different
 * `Storage` (`event-storage.ts`); `test/support/event-store-suite.ts` holds
 * them to one contract.
 */
import * as nodePath from "node:path"
import { Chunk, Context, Effect, Either, Layer, Schema, Stream } from "effect"
import {
  type CountedSkipCause,
  type LineMemory,
  type LinesRead,
  type StoredEvent,
  addSkips,
  admitLine,
  decodeLines,
  decodeTail,
  encodeEnvelopeLine,
  isEvent,
  isEventMeta,
  newLineMemory,
  noSkips,
} from "../domain/event-codec.ts"
import { Event, EventMeta } from "../domain/events.ts"
import { EVENTS_FILE, type MemoryStreams, type Storage, fileStorage, memoryStorage } from "./event-storage.ts"
import { ioCause } from "./io-errors.ts"

export { EVENTS_FILE, type MemoryStreams }

/** How much of a stream `fold` reads at a time (more for a longer line). */
const FOLD_CHUNK = 4 * 1024 * 1024

/** How long a subscription waits for a change before it looks anyway. */
export const POLL_MS = 250

export const EventStoreErrorReason = Schema.Literal("missing", "unreadable", "write_failed", "invalid_event")
export type EventStoreErrorReason = typeof EventStoreErrorReason.Type

export class EventStoreError extends Schema.TaggedError<EventStoreError>()("EventStoreError", {
  reason: EventStoreErrorReason,
  stream: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    const what = {
      missing: "no events for",
      unreadable: "cannot read the events of",
      write_failed: "cannot write the events of",
      invalid_event: "refused to write an invalid event to",
    }
    return `${what[this.reason]} ${this.stream}: ${this.detail}`
  }
}

/** An append found the stream at another version than the one its writer expected. */
export class EventStoreConflict extends Schema.TaggedError<EventStoreConflict>()("EventStoreConflict", {
  reason: Schema.Literal("conflict"),
  stream: Schema.String,
  expected: Schema.Number,
  actual: Schema.Number,
}) {
  override get message(): string {
    return `${this.stream} was changed by another writer: expected ${this.expected} events, found ${this.actual}`
  }
}

export type EventStoreFailure = EventStoreError | EventStoreConflict

/** An event to append: alone, or with the machine facts of its envelope. */
export type NewEvent = Event | { readonly event: Event; readonly meta: EventMeta }

/** What a read gives. */
export interface StreamRead {
  /** The events from the position asked for, in order. */
  readonly events: ReadonlyArray<StoredEvent>
  /** How many events the whole stream holds. */
  readonly version: number
  /** How many non-blank lines of the whole stream were skipped: the sum of `skippedByCause`. */
  readonly skipped: number
  readonly skippedByCause: Readonly<Record<CountedSkipCause, number>>
  /** The last line has no newline: its write did not finish (or is under way). */
  readonly tornTail: boolean
}

/** A run as `list` shows it. */
export interface RunSummary {
  readonly stream: string
  /** The last part of the stream's name: `log_YYYYMMDD_HHMMSS_ffffff`. */
  readonly name: string
  readonly complete: boolean
  /** It has a run_started: a run killed before its first event has none. */
  readonly started: boolean
  readonly agents: number
  readonly question: string
}

/** What `fold` gives: the fold of the stream's events, and what a read says of the stream but its events. */
export interface StreamFold<S> extends Omit<StreamRead, "events"> {
  readonly state: S
  /** The stream's first event, if it has one. */
  readonly first: StoredEvent | null
}

export interface EventStoreService {
  readonly append: (stream: string, events: ReadonlyArray<NewEvent>, expectedVersion: number) => Effect.Effect<number, EventStoreFailure>
  /**
   * The durability barrier: completes once every append of the stream so far is durable, or fails with
   * why one is not (a conflict found late). Nothing outside the process may act on an event before it.
   */
  readonly settled: (stream: string) => Effect.Effect<void, EventStoreFailure>
  readonly read: (stream: string, from?: number) => Effect.Effect<StreamRead, EventStoreError>
  /**
   * Folds every event of the stream with `f`, from `init`, as `read` would give them; a stream the store
   * has not read is read in chunks, and neither its text nor its events are kept: one pass, in little memory.
   */
  readonly fold: <S>(stream: string, init: S, f: (state: S, stored: StoredEvent) => S) => Effect.Effect<StreamFold<S>, EventStoreError>
  readonly subscribe: (stream: string, from: number) => Stream.Stream<StoredEvent, EventStoreError>
  readonly list: (base: string, limit?: number) => Effect.Effect<ReadonlyArray<RunSummary>>
}

/** The plain events of a read. */
export const eventsOf = (read: { readonly events: ReadonlyArray<StoredEvent> }): Array<Event> => read.events.map((s) => s.event)

/** What the store knows of a stream: its whole lines decoded, and its torn tail as it was last seen. */
interface Known {
  /** The size read so far. */
  size: number
  /** Where the whole lines end: the size read so far less the torn tail. */
  wholeSize: number
  readonly events: Array<StoredEvent>
  readonly skippedByCause: Record<CountedSkipCause, number>
  skipped: number
  lines: number
  /** The whole lines read as events, and the last event's time: what tells a duplicate or an event out of order. */
  readonly memory: LineMemory
  /** The torn tail, with what it decodes to, when there is one. */
  tail: { readonly text: string; readonly read: LinesRead } | null
}

const unknown = (): Known => ({
  size: 0,
  wholeSize: 0,
  events: [],
  skippedByCause: noSkips(),
  skipped: 0,
  lines: 0,
  memory: newLineMemory(),
  tail: null,
})

const addLines = (known: Known, read: LinesRead): void => {
  for (const stored of read.events) known.events.push(stored)
  addSkips(known.skippedByCause, read.skippedByCause)
  known.skipped += read.skipped
  known.lines += read.lines
}

const versionOf = (known: Known): number => known.events.length + (known.tail?.read.events.length ?? 0)

const detailOf = (cause: unknown): string => ioCause(cause)

const envelopeOf = (item: NewEvent): { readonly event: Event; readonly meta: EventMeta | null } =>
  "_tag" in item ? { event: item, meta: null } : { event: item.event, meta: item.meta }

/** The store over a storage, with its append as one synchronous step (`appendNow`), for a layer built over it. */
export interface StoreOverStorage extends EventStoreService {
  readonly appendNow: (stream: string, events: ReadonlyArray<NewEvent>, expectedVersion: number) => Either.Either<number, EventStoreFailure>
}

/** The store over `storage`: what every layer is (the Postgres layer keeps its mirror of the shared log in a memory storage). */
export const makeStore = (storage: Storage, foldChunk = FOLD_CHUNK): StoreOverStorage => {
  const known = new Map<string, Known>()

  /** Brings what is known of `stream` up to date, decoding only what was appended since; null when it does not exist. */
  const sync = (stream: string): Known | null => {
    const size = storage.size(stream)
    if (size === null) {
      known.delete(stream)
      return null
    }
    let k = known.get(stream)
    if (k === undefined || size < k.size) {
      k = unknown()
      known.set(stream, k)
    }
    if (size === k.size) return k
    // A chunk of whole lines at a time: a long log is never one text in memory.
    let chunk = foldChunk
    let rest = ""
    while (k.wholeSize < size) {
      const end = Math.min(size, k.wholeSize + chunk)
      const read = storage.readFrom(stream, k.wholeSize, end)
      if (read.wholeSize === 0 && end < size) {
        // A line longer than the chunk.
        chunk *= 2
        continue
      }
      if (read.whole !== "") addLines(k, decodeLines(read.whole, k.events.length, k.lines, k.memory))
      k.wholeSize += read.wholeSize
      if (end === size) {
        rest = read.rest
        break
      }
    }
    k.tail = rest === "" ? null : { text: rest, read: decodeTail(rest, k.events.length, k.lines, k.memory) }
    k.size = size
    return k
  }

  const syncOrFail = (stream: string) =>
    Effect.try({
      try: () => sync(stream),
      catch: (cause) => new EventStoreError({ reason: "unreadable", stream, detail: detailOf(cause) }),
    })

  const read = (stream: string, from = 0) =>
    Effect.flatMap(syncOrFail(stream), (k): Effect.Effect<StreamRead, EventStoreError> => {
      if (k === null) return Effect.fail(new EventStoreError({ reason: "missing", stream, detail: "no such stream" }))
      const tail = k.tail?.read ?? null
      const skippedByCause = { ...k.skippedByCause }
      if (tail !== null) addSkips(skippedByCause, tail.skippedByCause)
      const events = k.events.slice(from)
      if (tail !== null) for (const stored of tail.events) if (stored.position >= from) events.push(stored)
      return Effect.succeed({
        events,
        version: versionOf(k),
        skipped: k.skipped + (tail?.skipped ?? 0),
        skippedByCause,
        tornTail: tail !== null,
      })
    })

  /** Folds a stream the store has not read, a chunk of whole lines at a time. */
  const foldUnknown = <S>(stream: string, size: number, init: S, f: (state: S, stored: StoredEvent) => S): StreamFold<S> => {
    const memory = newLineMemory()
    const skippedByCause = noSkips()
    let state = init
    let first: StoredEvent | null = null
    let version = 0
    let lines = 0
    let offset = 0
    let chunk = foldChunk
    const take = (read: LinesRead) => {
      for (const stored of read.events) {
        first ??= stored
        state = f(state, stored)
      }
      version += read.events.length
      lines += read.lines
      addSkips(skippedByCause, read.skippedByCause)
    }
    let tornTail = false
    while (offset < size) {
      const end = Math.min(size, offset + chunk)
      const { whole, wholeSize, rest } = storage.readFrom(stream, offset, end)
      if (wholeSize === 0 && end < size) {
        // A line longer than the chunk.
        chunk *= 2
        continue
      }
      if (whole !== "") take(decodeLines(whole, version, lines, memory))
      offset += wholeSize
      if (end === size && rest !== "") {
        take(decodeTail(rest, version, lines, memory))
        tornTail = true
        offset = size
      }
    }
    let skipped = 0
    for (const cause in skippedByCause) skipped += skippedByCause[cause as CountedSkipCause]
    return { state, first, version, skipped, skippedByCause, tornTail }
  }

  const fold = <S>(stream: string, init: S, f: (state: S, stored: StoredEvent) => S): Effect.Effect<StreamFold<S>, EventStoreError> =>
    Effect.suspend(() => {
      if (known.has(stream)) {
        return Effect.map(read(stream), ({ events, ...r }) => ({ ...r, state: events.reduce(f, init), first: events[0] ?? null }))
      }
      return Effect.flatMap(
        Effect.try({
          try: () => {
            const size = storage.size(stream)
            return size === null ? null : foldUnknown(stream, size, init, f)
          },
          catch: (cause) => new EventStoreError({ reason: "unreadable", stream, detail: detailOf(cause) }),
        }),
        (folded) => (folded === null ? Effect.fail(new EventStoreError({ reason: "missing", stream, detail: "no such stream" })) : Effect.succeed(folded)),
      )
    })

  // One synchronous step from the version check to the write: no other fiber's append comes in between.
  const appendNow = (stream: string, items: ReadonlyArray<NewEvent>, expectedVersion: number): Either.Either<number, EventStoreFailure> => {
    const envelopes = items.map(envelopeOf)
    const invalid = envelopes.find((e) => !isEvent(e.event) || (e.meta !== null && !isEventMeta(e.meta)))
    if (invalid !== undefined) {
      return Either.left(new EventStoreError({ reason: "invalid_event", stream, detail: `${invalid.event._tag} does not fit its schema` }))
    }
    let found: Known | null
    try {
      found = sync(stream)
    } catch (cause) {
      return Either.left(new EventStoreError({ reason: "unreadable", stream, detail: detailOf(cause) }))
    }
    const version = found === null ? 0 : versionOf(found)
    if (version !== expectedVersion) {
      return Either.left(new EventStoreConflict({ reason: "conflict", stream, expected: expectedVersion, actual: version }))
    }
    if (envelopes.length === 0) return Either.right(version)
    const k = found ?? unknown()
    const lines = envelopes.map((e) => encodeEnvelopeLine(e.event, e.meta))
    const text = (k.tail !== null ? "\n" : "") + lines.map((line) => `${line}\n`).join("")
    try {
      storage.write(stream, text)
    } catch (cause) {
      // A write that failed midway may have left a torn line: the stream is read again next time.
      known.delete(stream)
      return Either.left(new EventStoreError({ reason: "write_failed", stream, detail: detailOf(cause) }))
    }
    // The torn tail is a whole line now, read as any other (cut, it is no longer the tail).
    if (k.tail !== null) addLines(k, decodeLines(k.tail.text, k.events.length, k.lines, k.memory))
    k.tail = null
    // What a reader would skip of these lines is skipped here too: the store knows what a read of the stream gives.
    envelopes.forEach((e, i) => {
      k.lines += 1
      const cause = admitLine(lines[i]!, e.event, k.memory)
      if (cause === null) {
        k.events.push({ event: e.event, meta: e.meta, position: k.events.length, line: k.lines })
      } else {
        k.skippedByCause[cause] += 1
        k.skipped += 1
      }
    })
    k.size += storage.sizeOf(text)
    k.wholeSize = k.size
    known.set(stream, k)
    return Either.right(k.events.length)
  }
  const append = (stream: string, items: ReadonlyArray<NewEvent>, expectedVersion: number): Effect.Effect<number, EventStoreFailure> =>
    Effect.suspend(() => appendNow(stream, items, expectedVersion))

  const subscribe = (stream: string, from: number): Stream.Stream<StoredEvent, EventStoreError> =>
    Stream.unwrapScoped(
      Effect.map(storage.changes(stream), (changed) => {
        let next = from
        const batch = Effect.flatMap(syncOrFail(stream), (k) => {
          const fresh = k === null ? [] : k.events.slice(next)
          if (fresh.length === 0) return Effect.as(changed, Chunk.empty<StoredEvent>())
          next = fresh[fresh.length - 1]!.position + 1
          return Effect.succeed(Chunk.unsafeFromArray(fresh))
        })
        return Stream.repeatEffectChunk(batch)
      }),
    )

  const summary = (stream: string): RunSummary => {
    const name = nodePath.basename(stream)
    let events: ReadonlyArray<StoredEvent> = []
    try {
      const k = sync(stream)
      if (k !== null) events = k.tail === null ? k.events : [...k.events, ...k.tail.read.events]
    } catch {
      // Listed as empty.
    }
    const started = events.find((s) => s.event._tag === "run_started")?.event
    return {
      stream,
      name,
      complete: events[events.length - 1]?.event._tag === "run_finished",
      started: started?._tag === "run_started",
      agents: started?._tag === "run_started" ? started.agents.length : 0,
      question: started?._tag === "run_started" ? started.question : "",
    }
  }

  const list = (base: string, limit = 20) =>
    Effect.sync(() => {
      let streams: ReadonlyArray<string>
      try {
        streams = storage.streamsUnder(base)
      } catch {
        return []
      }
      return [...streams]
        .sort((a, b) => (nodePath.basename(a) < nodePath.basename(b) ? 1 : -1))
        .slice(0, limit)
        .map(summary)
    })

  // The OS has each append when it returns: every append is settled.
  return { append, appendNow, settled: () => Effect.void, read, fold, subscribe, list }
}

export interface StoreOptions {
  /** The longest a subscription waits before it looks again, in ms. */
  readonly pollMs?: number
  /** How much of a stream `fold` reads at a time, in the storage's unit (4 MB on disk). */
  readonly foldChunk?: number
}

export class EventStore extends Context.Tag("massgen/EventStore")<EventStore, EventStoreService>() {
  /** Streams on disk: a stream is a log directory, its events in `events.jsonl`; files stay open until the scope closes. */
  static file = (options: StoreOptions = {}): Layer.Layer<EventStore> =>
    Layer.scoped(EventStore, Effect.map(fileStorage(options.pollMs ?? POLL_MS), (storage) => makeStore(storage, options.foldChunk)))

  /** Streams in `texts`, which the caller keeps to read back or damage; raw changes are seen at the next poll. */
  static memory = (texts: MemoryStreams = new Map(), options: StoreOptions = {}): Layer.Layer<EventStore> =>
    Layer.sync(EventStore, () => makeStore(memoryStorage(texts, options.pollMs ?? 20), options.foldChunk))
}
