/**
 * The event store's reading side: `read`, `fold`, `subscribe` and `list` over what it knows of its streams.
 *
 * Contract (of each, in full: `index.ts`): `read` gives a stream's events
 * from a position with its version, skipped lines and torn tail; `fold` folds
 * them without keeping a stream the store has not read (read a chunk at a
 * time); `subscribe` gives the events from a position on, waking on each
 * change; `list` summarizes the runs under a log base, newest first, and never
 * fails. A stream that does not exist is an `EventStoreError` `missing`.
 */
import * as nodePath from "node:path"
import { Chunk, Effect, Stream } from "effect"
import {
  addSkips,
  type CountedSkipCause,
  decodeLines,
  decodeTail,
  type LinesRead,
  newLineMemory,
  noSkips,
  type StoredEvent,
} from "../../domain/log/index.ts"
import { type KnownStreams, readChunks, unreadable, versionOf } from "./known.ts"
import { blobTextsOf, type Storage } from "./storage.ts"
import { EventStoreError, type EventStoreService, type RunSummary, type StreamFold, type StreamRead } from "./types.ts"

const missing = (stream: string) => new EventStoreError({ reason: "missing", stream, detail: "no such stream" })

/** Folds `stream` (of `size`), which the store has not read, a chunk of whole lines at a time. */
const foldUnknown = <S>(
  storage: Storage,
  foldChunk: number,
  stream: string,
  size: number,
  init: S,
  f: (state: S, stored: StoredEvent) => S,
): StreamFold<S> => {
  const memory = newLineMemory()
  const skippedByCause = noSkips()
  let state = init
  let first: StoredEvent | null = null
  let version = 0
  let lines = 0
  const take = (read: LinesRead) => {
    for (const stored of read.events) {
      first ??= stored
      state = f(state, stored)
    }
    version += read.events.length
    lines += read.lines
    addSkips(skippedByCause, read.skippedByCause)
  }
  const texts = blobTextsOf(storage, stream)
  const rest = readChunks(storage, stream, 0, size, foldChunk, (whole) => {
    if (whole !== "") take(decodeLines(whole, version, lines, memory, texts))
  })
  const tornTail = rest !== ""
  if (tornTail) take(decodeTail(rest, version, lines, memory, texts))
  let skipped = 0
  for (const cause in skippedByCause) skipped += skippedByCause[cause as CountedSkipCause]
  return { state, first, version, skipped, skippedByCause, tornTail }
}

/** The reading operations of the store over `storage`, through what it knows of its streams. */
export const storeReader = (
  storage: Storage,
  streams: KnownStreams,
  foldChunk: number,
): Pick<EventStoreService, "read" | "fold" | "subscribe" | "list"> => {
  const { known, sync, syncOrFail } = streams

  const read = (stream: string, from = 0) =>
    Effect.flatMap(syncOrFail(stream), (k): Effect.Effect<StreamRead, EventStoreError> => {
      if (k === null) return Effect.fail(missing(stream))
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

  const fold = <S>(stream: string, init: S, f: (state: S, stored: StoredEvent) => S): Effect.Effect<StreamFold<S>, EventStoreError> =>
    Effect.suspend(() => {
      if (known.has(stream)) {
        return Effect.map(read(stream), ({ events, ...r }) => ({ ...r, state: events.reduce(f, init), first: events[0] ?? null }))
      }
      return Effect.flatMap(
        Effect.try({
          try: () => {
            const size = storage.size(stream)
            return size === null ? null : foldUnknown(storage, foldChunk, stream, size, init, f)
          },
          catch: (cause) => unreadable(stream, cause),
        }),
        (folded) => (folded === null ? Effect.fail(missing(stream)) : Effect.succeed(folded)),
      )
    })

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

  return { read, fold, subscribe, list }
}
