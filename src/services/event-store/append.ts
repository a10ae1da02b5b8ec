/**
 * The event store's append path: the version check and the write, as one synchronous step.
 *
 * Contract (in full: `index.ts`): `appendNow(stream, events, expectedVersion)`
 * writes the events in one write when the stream holds exactly `expectedVersion`
 * events, and gives the new version; otherwise an `EventStoreConflict`, or an
 * `EventStoreError` (`invalid_event`, `unreadable`, `write_failed`), and
 * nothing written. No other fiber's append comes in between its check and its
 * write. What it wrote is added to what the store knows of the stream, skipped
 * lines included, as a read would give them. With a blob store (the file
 * layer), an event's long texts are written there first and its line
 * references them (`domain/log/long-texts.ts`); the store keeps the event itself, texts and all.
 */
import { Either } from "effect"
import type { Event, EventMeta } from "../../domain/events/index.ts"
import { admitLine, decodeLines, encodeEnvelopeLine, isEvent, isEventMeta } from "../../domain/log/index.ts"
import { hashText } from "../../lib/sha256.ts"
import { ioCause } from "../io-errors.ts"
import { addLines, type Known, type KnownStreams, unknown, unreadable, versionOf } from "./known.ts"
import { blobTextsOf, type Storage } from "./storage.ts"
import { EventStoreConflict, EventStoreError, type EventStoreFailure, type NewEvent } from "./types.ts"

/** The event of an item, and the machine facts of its envelope (null when it has none). */
const eventOf = (item: NewEvent): Event => ("_tag" in item ? item : item.event)
const metaOf = (item: NewEvent): EventMeta | null => ("_tag" in item ? null : item.meta)

/** The append of the store over `storage`, through what it knows of its streams. */
export const storeAppender =
  (storage: Storage, { known, sync }: KnownStreams) =>
  (stream: string, items: ReadonlyArray<NewEvent>, expectedVersion: number): Either.Either<number, EventStoreFailure> => {
    for (const item of items) {
      const meta = metaOf(item)
      if (!isEvent(eventOf(item)) || (meta !== null && !isEventMeta(meta))) {
        return Either.left(
          new EventStoreError({ reason: "invalid_event", stream, detail: `${eventOf(item)._tag} does not fit its schema` }),
        )
      }
    }
    let found: Known | null
    try {
      found = sync(stream)
    } catch (cause) {
      return Either.left(unreadable(stream, cause))
    }
    const version = found === null ? 0 : versionOf(found)
    if (version !== expectedVersion) {
      return Either.left(new EventStoreConflict({ reason: "conflict", stream, expected: expectedVersion, actual: version }))
    }
    if (items.length === 0) return Either.right(version)
    const k = found ?? unknown()
    const lines: Array<string> = []
    let text = k.tail !== null ? "\n" : ""
    const blobs = storage.blobs
    const store =
      blobs === undefined
        ? undefined
        : (long: string) => {
            const hash = hashText(long)
            blobs.put(stream, hash, long)
            return hash
          }
    try {
      for (const item of items) {
        const line = encodeEnvelopeLine(eventOf(item), metaOf(item), store)
        lines.push(line)
        text += `${line}\n`
      }
      storage.write(stream, text)
    } catch (cause) {
      // A write that failed midway may have left a torn line: the stream is read again next time.
      known.delete(stream)
      return Either.left(new EventStoreError({ reason: "write_failed", stream, detail: ioCause(cause) }))
    }
    // The torn tail is a whole line now, read as any other (cut, it is no longer the tail).
    if (k.tail !== null) addLines(k, decodeLines(k.tail.text, k.events.length, k.lines, k.memory, blobTextsOf(storage, stream)))
    k.tail = null
    // What a reader would skip of these lines is skipped here too: the store knows what a read of the stream gives.
    for (let i = 0; i < items.length; i++) {
      const event = eventOf(items[i]!)
      k.lines += 1
      const cause = admitLine(lines[i]!, event, k.memory)
      if (cause === null) {
        k.events.push({ event, meta: metaOf(items[i]!), position: k.events.length, line: k.lines })
      } else {
        k.skippedByCause[cause] += 1
        k.skipped += 1
      }
    }
    k.size += storage.sizeOf(text)
    k.wholeSize = k.size
    known.set(stream, k)
    return Either.right(k.events.length)
  }
