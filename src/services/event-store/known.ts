/**
 * What the event store knows of its streams: each one's whole lines decoded, and its torn tail.
 *
 * Contract: `sync(stream)` brings what is known of a stream up to date, decoding
 * only what was appended since it was last seen (a stream is append-only; one
 * that shrank is read again whole), and gives null for a stream that does not
 * exist; it throws what the storage throws. `readChunks` reads a stream's text
 * a chunk of whole lines at a time, so a long log is never one text in memory.
 *
 * Words: a stream's *version* is how many events it holds (`versionOf`); its
 * *torn tail* is a last line without its newline.
 */
import { Effect } from "effect"
import {
  addSkips,
  type CountedSkipCause,
  decodeLines,
  decodeTail,
  type LineMemory,
  type LinesRead,
  newLineMemory,
  noSkips,
  type StoredEvent,
} from "../../domain/log/index.ts"
import { ioCause } from "../io-errors.ts"
import { blobTextsOf, type Storage } from "./storage.ts"
import { EventStoreError } from "./types.ts"

/** What the store knows of a stream: its whole lines decoded, and its torn tail as it was last seen. */
export interface Known {
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

export const unknown = (): Known => ({
  size: 0,
  wholeSize: 0,
  events: [],
  skippedByCause: noSkips(),
  skipped: 0,
  lines: 0,
  memory: newLineMemory(),
  tail: null,
})

export const addLines = (known: Known, read: LinesRead): void => {
  for (const stored of read.events) known.events.push(stored)
  addSkips(known.skippedByCause, read.skippedByCause)
  known.skipped += read.skipped
  known.lines += read.lines
}

export const versionOf = (known: Known): number => known.events.length + (known.tail?.read.events.length ?? 0)

/** An `unreadable` failure of `stream`, for what the storage threw. */
export const unreadable = (stream: string, cause: unknown): EventStoreError =>
  new EventStoreError({ reason: "unreadable", stream, detail: ioCause(cause) })

/**
 * Reads `stream` from `offset` to `size` a chunk of whole lines at a time (a chunk doubles for a line
 * longer than it), giving each chunk's whole lines to `onWhole`; returns the torn tail after them ("" if none).
 */
export const readChunks = (
  storage: Storage,
  stream: string,
  offset: number,
  size: number,
  chunk: number,
  onWhole: (whole: string, wholeSize: number) => void,
): string => {
  while (offset < size) {
    const end = Math.min(size, offset + chunk)
    const { whole, wholeSize, rest } = storage.readFrom(stream, offset, end)
    if (wholeSize === 0 && end < size) {
      // A line longer than the chunk.
      chunk *= 2
      continue
    }
    onWhole(whole, wholeSize)
    offset += wholeSize
    if (end === size) return rest
  }
  return ""
}

/** The streams a store knows, kept up to date from `storage`. */
export interface KnownStreams {
  readonly known: Map<string, Known>
  /** Brings what is known of `stream` up to date, decoding only what was appended since; null when it does not exist. */
  readonly sync: (stream: string) => Known | null
  /** `sync`, failing with `unreadable` where the storage throws. */
  readonly syncOrFail: (stream: string) => Effect.Effect<Known | null, EventStoreError>
}

export const knownStreams = (storage: Storage, foldChunk: number): KnownStreams => {
  const known = new Map<string, Known>()

  const sync = (stream: string): Known | null => {
    const size = storage.size(stream)
    if (size === null) {
      known.delete(stream)
      return null
    }
    const had = known.get(stream)
    const k = had === undefined || size < had.size ? unknown() : had
    if (k !== had) known.set(stream, k)
    if (size === k.size) return k
    const texts = blobTextsOf(storage, stream)
    const rest = readChunks(storage, stream, k.wholeSize, size, foldChunk, (whole, wholeSize) => {
      if (whole !== "") addLines(k, decodeLines(whole, k.events.length, k.lines, k.memory, texts))
      k.wholeSize += wholeSize
    })
    k.tail = rest === "" ? null : { text: rest, read: decodeTail(rest, k.events.length, k.lines, k.memory, texts) }
    k.size = size
    return k
  }

  const syncOrFail = (stream: string) =>
    Effect.try({
      try: () => sync(stream),
      catch: (cause) => unreadable(stream, cause),
    })

  return { known, sync, syncOrFail }
}
