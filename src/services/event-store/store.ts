/**
 * The event store: where every run's events are appended, and what every reader reads them through.
 *
 * A *stream* is one run's events, addressed by its log directory (the file
 * layer keeps them in `<dir>/events.jsonl`, one envelope per line, see
 * `domain/log/index.ts`). Its *version* is how many events it holds: lines
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
 *   stream's version, its skipped lines counted by cause (`domain/log/index.ts`:
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
 * `Storage` (`storage.ts`); `test/support/event-store-suite.ts` holds
 * them to one contract.
 *
 * This file holds the service's tag and layers, and `makeStore`, the store
 * over a storage; its parts: `types.ts` (the service, what it
 * gives, its failures), `known.ts` (what it knows of each stream),
 * `read.ts` (read, fold, subscribe, list), `append.ts`.
 */
import { Context, Effect, Layer } from "effect"
import { storeAppender } from "./append.ts"
import { knownStreams } from "./known.ts"
import { storeReader } from "./read.ts"
import { EVENTS_FILE, fileStorage, type MemoryStreams, memoryStorage, type Storage } from "./storage.ts"
import type { EventStoreService, NewEvent, StoreOverStorage } from "./types.ts"

export { EVENTS_FILE, type MemoryStreams }

/** How much of a stream `fold` reads at a time (more for a longer line). */
const FOLD_CHUNK = 4 * 1024 * 1024

/** How long a subscription waits for a change before it looks anyway. */
export const POLL_MS = 250

/** The store over `storage`: what every layer is (the Postgres layer keeps its mirror of the shared log in a memory storage). */
export const makeStore = (storage: Storage, foldChunk = FOLD_CHUNK): StoreOverStorage => {
  const streams = knownStreams(storage, foldChunk)
  const appendNow = storeAppender(storage, streams)
  const append = (stream: string, items: ReadonlyArray<NewEvent>, expectedVersion: number) =>
    Effect.suspend(() => appendNow(stream, items, expectedVersion))
  // The OS has each append when it returns: every append is settled.
  return { append, appendNow, settled: () => Effect.void, ...storeReader(storage, streams, foldChunk) }
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
    Layer.scoped(
      EventStore,
      Effect.map(fileStorage(options.pollMs ?? POLL_MS), (storage) => makeStore(storage, options.foldChunk)),
    )

  /** Streams in `texts`, which the caller keeps to read back or damage; raw changes are seen at the next poll. */
  static memory = (texts: MemoryStreams = new Map(), options: StoreOptions = {}): Layer.Layer<EventStore> =>
    Layer.sync(EventStore, () => makeStore(memoryStorage(texts, options.pollMs ?? 20), options.foldChunk))
}
