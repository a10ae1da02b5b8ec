/**
 * The event store's words: what it promises (`EventStoreService`), what an append takes
 * (`NewEvent`), what a read, a fold and a list give, and how it fails.
 *
 * The contract of each operation is in `index.ts`. A *stream* is one run's
 * events, addressed by its log directory; its *version* is how many events it holds.
 */
import { type Effect, type Either, Schema, type Stream } from "effect"
import type { Event, EventMeta } from "../../domain/events/index.ts"
import type { CountedSkipCause, StoredEvent } from "../../domain/log/index.ts"

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
    if (this.actual === 0 && this.expected > 0)
      return `the events of ${this.stream} were deleted or emptied while they were written: expected ${this.expected} events, found none`
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

/** The store over a storage, with its append as one synchronous step (`appendNow`), for a layer built over it. */
export interface StoreOverStorage extends EventStoreService {
  readonly appendNow: (stream: string, events: ReadonlyArray<NewEvent>, expectedVersion: number) => Either.Either<number, EventStoreFailure>
}
