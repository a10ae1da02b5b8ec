/**
 * The wire format of `events.jsonl`: one event in its envelope as one line, and lines back as events.
 *
 * Contract: `encodeEnvelopeLine(event, meta)` gives one JSON object, with no
 * newline, whose keys come in this order: `schema` (`SCHEMA_VERSION`), `type`
 * (the event's `_tag`), `time`, the event's other fields, then `meta` (the
 * writing process's machine facts, `EventMeta`) when given. That object is the
 * event's *envelope*; `encodeEventLine(event)` is the one with no `meta`. The event store (`services/event-store.ts`) writes it
 * and a newline; every reader of a run's log goes through the store, which
 * decodes with `decodeEventLine`/`decodeLines`. None of these functions throws,
 * whatever the text.
 *
 * A line of this schema is decoded as it is. A line of an older schema is
 * first *upcast*: lifted one version at a time by `UPCASTERS` to this one (v1
 * to v2: run_started's and run_resumed's `log_dir`, `pid` and `version` move
 * into `meta`), then decoded by the current definitions, which are strict: a
 * time is an ISO instant, a counter a whole number of 0 or more. Fields this
 * version does not know are ignored. Any other line is *skipped*, for one
 * cause, checked in this order:
 * - `blank`: nothing but whitespace. Not damage: it is neither read nor counted;
 * - `duplicate`: the same text as an earlier line of the stream that was read
 *   as an event (a line written twice);
 * - `not_json`: not JSON, such as a line a crash cut short; the stream's last
 *   line, with no newline after it, is the `torn_tail` instead (its write did
 *   not finish);
 * - `not_an_object`: JSON, but not an object (an array, a string, null, ...);
 * - `newer_schema`: written by a newer version (`schema` > `SCHEMA_VERSION`);
 * - `unknown_type`: `type` names no event type of this version (or is missing);
 * - `invalid_fields`: `schema` is not a version (a whole number from 1), or the
 *   event's fields or its `meta` do not decode (nested too deep to decode too);
 * - `out_of_order`: an event whose `time` is earlier than the time of the event
 *   read before it (writers append in time order: the line is not where it was
 *   written).
 * `decodeEventLine` judges one line alone (the first five); `duplicate` and
 * `out_of_order` need what was read before: a `LineMemory`, which
 * `decodeLines` and `decodeTail` take and `admitLine` keeps up to date for
 * lines a writer appends without reading them back.
 *
 * A number JSON cannot hold (NaN, ±Infinity) is written as `null`, as
 * `JSON.stringify` does: it reads back as `null` where the field allows it, and
 * the line is skipped as `invalid_fields` where it does not.
 *
 * Words: a *torn tail* is a last line with no newline after it: the write of
 * that line did not finish. An event's *position* is its place among the
 * decoded events of its stream, from 0; the stream's *version* is how many it
 * holds.
 */
import { Either, type ParseResult, Schema } from "effect"
import { Event, EventMeta, SCHEMA_VERSION } from "./events.ts"
import { UNDECIDED, plainDecoder } from "./event-validate.ts"

export const SkipCause = Schema.Literal(
  "blank",
  "not_json",
  "not_an_object",
  "newer_schema",
  "unknown_type",
  "invalid_fields",
  "duplicate",
  "out_of_order",
  "torn_tail",
)
export type SkipCause = typeof SkipCause.Type

/** The causes a read counts: every cause but `blank`. */
export type CountedSkipCause = Exclude<SkipCause, "blank">
export const COUNTED_SKIP_CAUSES: ReadonlyArray<CountedSkipCause> = SkipCause.literals.filter(
  (c): c is CountedSkipCause => c !== "blank",
)

export type DecodedLine =
  | { readonly _tag: "event"; readonly event: Event; readonly meta?: EventMeta }
  | { readonly _tag: "skipped"; readonly cause: SkipCause }

/** An event as a reader gets it: with the machine facts of its line, its position in the stream and its line. */
export interface StoredEvent {
  readonly event: Event
  /** The envelope's machine facts, on the events that have them (run_started, run_resumed). */
  readonly meta: EventMeta | null
  /** Its place among the stream's events, from 0. */
  readonly position: number
  /** The line of the file it was read from, from 1. */
  readonly line: number
}

/** One event in its envelope, with the writing process's machine facts, as one line of the file, without the newline. */
export const encodeEnvelopeLine = (event: Event, meta: EventMeta | null): string => {
  const wire: Record<string, unknown> = { schema: SCHEMA_VERSION, type: event._tag, time: event.time }
  for (const key in event) {
    if (key !== "_tag" && key !== "time") wire[key] = (event as Record<string, unknown>)[key]
  }
  if (meta !== null) wire.meta = meta
  return JSON.stringify(wire)
}

/** One event with no machine facts as one line of the file, without the newline. */
export const encodeEventLine = (event: Event): string => encodeEnvelopeLine(event, null)

/** Lifts the wire object of a line of one schema to the next; it may change the object it is given. */
type Upcaster = (wire: Record<string, unknown>) => Record<string, unknown>

const MACHINE_FACTS = ["log_dir", "pid", "version"] as const

/**
 * One upcaster per schema older than this one, keyed by the schema it reads.
 * v1 kept the machine facts among the fields of run_started and run_resumed.
 */
export const UPCASTERS: Readonly<Record<number, Upcaster>> = {
  1: (wire) => {
    if (wire.type !== "run_started" && wire.type !== "run_resumed") return wire
    const meta: Record<string, unknown> = {}
    for (const key of MACHINE_FACTS) {
      meta[key] = wire[key]
      delete wire[key]
    }
    wire.meta = meta
    return wire
  },
}

type Decode<A> = (input: unknown) => Either.Either<A, ParseResult.ParseError>

/** A schema's decoders: its plain one (`event-validate.ts`) when it has one, and its Schema one for what the plain one leaves undecided. */
interface Decoders<A> {
  readonly plain: ((input: unknown) => A | typeof UNDECIDED) | null
  readonly schema: Decode<A>
}

/** Compiled at their first use: a run that only appends never compiles the decoders of its events. */
const decodersOf = <A, I>(schema: Schema.Schema<A, I>): Decoders<A> => {
  let plain: Decoders<A>["plain"] | undefined
  let bySchema: Decode<A> | undefined
  return {
    get plain() {
      if (plain === undefined) plain = plainDecoder(schema)
      return plain
    },
    get schema() {
      bySchema ??= Schema.decodeUnknownEither(schema)
      return bySchema
    },
  }
}

// One decoder per wire name, compiled once: the line's `type` picks its member
// of the union directly, which is what the union itself would do, with less work.
const decodersByType: ReadonlyMap<string, Decoders<Event>> = new Map(
  Event.members.map((member): [string, Decoders<Event>] => [
    member.fields._tag.literals[0],
    decodersOf(member as Schema.Schema<Event, typeof Event.Encoded>),
  ]),
)
const metaDecoders: Decoders<EventMeta> = decodersOf(EventMeta)

let isEventBySchema: ((value: unknown) => boolean) | undefined
let isMetaBySchema: ((value: unknown) => boolean) | undefined

/** Whether `decoders` take `value` as it is (its plain decoder when it has one), else what `is` says. */
const holds = <A>(decoders: Decoders<A>, value: unknown, is: () => (value: unknown) => boolean): boolean => {
  try {
    if (decoders.plain !== null && decoders.plain(value) !== UNDECIDED) return true
  } catch {
    // nested too deep for the plain decoder: the Schema judges it
  }
  return is()(value)
}

/**
 * `Schema.is(Event)` and `Schema.is(EventMeta)`, for writers: a value the
 * plain decoder of its member takes is one (the plain decoders follow only
 * schemas whose decoded and encoded forms are the same); any other is left to
 * the Schema.
 */
export const isEvent = (value: unknown): value is Event => {
  const tag = typeof value === "object" && value !== null ? (value as { _tag?: unknown })._tag : undefined
  const decoders = typeof tag === "string" ? decodersByType.get(tag) : undefined
  return decoders !== undefined && holds(decoders, value, () => (isEventBySchema ??= Schema.is(Event)))
}
export const isEventMeta = (value: unknown): value is EventMeta => holds(metaDecoders, value, () => (isMetaBySchema ??= Schema.is(EventMeta)))

const skipped = (cause: SkipCause): DecodedLine => ({ _tag: "skipped", cause })
const BLANK = skipped("blank")

/**
 * What `decoders` make of `input`, or UNDECIDED when it does not decode;
 * UNDECIDED too when it is nested deeper than a decoder can follow (it overflows the stack).
 */
const decodeWith = <A>(decoders: Decoders<A>, input: unknown, plain: boolean): A | typeof UNDECIDED => {
  try {
    if (plain && decoders.plain !== null) {
      const plain = decoders.plain(input)
      if (plain !== UNDECIDED) return plain
    }
    const decoded = decoders.schema(input)
    return Either.isRight(decoded) ? decoded.right : UNDECIDED
  } catch {
    return UNDECIDED
  }
}

const isBlank = (line: string): boolean => line.length === 0 || line.trim().length === 0

/** `decodeEventLine`, with the plain decoders or with the Schema decoders alone. */
const lineDecoder = (plain: boolean) => (line: string): DecodedLine => {
  if (isBlank(line)) return BLANK
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return skipped("not_json")
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return skipped("not_an_object")
  let wire = value as Record<string, unknown>
  const schema = wire.schema
  if (typeof schema !== "number" || !Number.isInteger(schema) || schema < 1) return skipped("invalid_fields")
  if (schema > SCHEMA_VERSION) return skipped("newer_schema")
  for (let version = schema; version < SCHEMA_VERSION; version++) wire = UPCASTERS[version]!(wire)
  const type = wire.type
  const decoders = typeof type === "string" ? decodersByType.get(type) : undefined
  if (decoders === undefined) return skipped("unknown_type")
  const rawMeta = wire.meta
  if (rawMeta !== undefined) delete wire.meta
  wire._tag = type
  const event = decodeWith(decoders, wire, plain)
  if (event === UNDECIDED) return skipped("invalid_fields")
  if (rawMeta === undefined) return { _tag: "event", event }
  const meta = decodeWith(metaDecoders, rawMeta, plain)
  return meta !== UNDECIDED ? { _tag: "event", event, meta } : skipped("invalid_fields")
}

/** One line of the file (with or without its newline) as an event, or why it is skipped. */
export const decodeEventLine: (line: string) => DecodedLine = lineDecoder(true)

/** `decodeEventLine` through the Schema decoders alone: what the plain ones are held to (test/event-decode-plain.test.ts). */
export const decodeEventLineBySchema: (line: string) => DecodedLine = lineDecoder(false)

export const noSkips = (): Record<CountedSkipCause, number> => ({
  not_json: 0,
  not_an_object: 0,
  newer_schema: 0,
  unknown_type: 0,
  invalid_fields: 0,
  duplicate: 0,
  out_of_order: 0,
  torn_tail: 0,
})

/**
 * What a reader remembers of the lines of a stream it has read, to tell a `duplicate` and an event `out_of_order`.
 * It keeps a 53-bit hash of each line read as an event, not its text: a log of a million lines is not held
 * twice. Two different lines that hash alike would read the second as a duplicate; with a million lines that
 * is about one chance in ten billion for each line whose event is not later than the last one read (the only
 * lines looked up).
 */
export interface LineMemory {
  /** The hash of every line read as an event, in order. */
  readonly events: number[]
  /** `events` as a set, made when first needed: when a line's event is not later than the last one read. */
  seen: Set<number> | null
  /** The time of the last event read; "" before the first. */
  lastTime: string
}

export const newLineMemory = (): LineMemory => ({ events: [], seen: null, lastTime: "" })

/** A line's hash: 53 bits of a 64-bit hash of its text, as one number. */
const lineHash = (line: string): number => Number(BigInt.asUintN(53, Bun.hash.rapidhash(line)))

/** Whether instant `a` is before `b` (both decoded times). Of one length, they compare as text: digit by digit, most significant first. */
const before = (a: string, b: string): boolean => (a.length === b.length ? a < b : Date.parse(a) < Date.parse(b))

/**
 * Whether `line`, whose event happened at `time`, is the text of a line read as an event.
 * Events are read in time order: a line later than the last read is none of them.
 */
const isRead = (line: string, time: string, memory: LineMemory): boolean => {
  if (memory.lastTime === "" || before(memory.lastTime, time)) return false
  memory.seen ??= new Set(memory.events)
  return memory.seen.has(lineHash(line))
}

const remember = (line: string, time: string, memory: LineMemory): void => {
  const hash = lineHash(line)
  memory.events.push(hash)
  memory.seen?.add(hash)
  memory.lastTime = time
}

const DUPLICATE = skipped("duplicate")
const OUT_OF_ORDER = skipped("out_of_order")

/**
 * One line of a stream as a reader that has read `memory` sees it; with `remember`, the line is then part of `memory`.
 * A line that does not decode is no line read as an event: only a line that does can be a `duplicate`.
 */
const readLine = (line: string, memory: LineMemory, keep: boolean): DecodedLine => {
  const decoded = decodeEventLine(line)
  if (decoded._tag !== "event") return decoded
  const time = decoded.event.time
  if (isRead(line, time, memory)) return DUPLICATE
  if (memory.lastTime !== "" && before(time, memory.lastTime)) return OUT_OF_ORDER
  if (keep) remember(line, time, memory)
  return decoded
}

/**
 * Why a reader that has read `memory` would skip `line`, the line a writer
 * appends for `event` (`duplicate` or `out_of_order`), or null: then the line
 * is remembered as read.
 */
export const admitLine = (line: string, event: Event, memory: LineMemory): CountedSkipCause | null => {
  if (isRead(line, event.time, memory)) return "duplicate"
  if (memory.lastTime !== "" && before(event.time, memory.lastTime)) return "out_of_order"
  remember(line, event.time, memory)
  return null
}

/** What some lines of a stream hold. */
export interface LinesRead {
  /** The decoded events, in file order, numbered on from the position and line the text started at. */
  readonly events: StoredEvent[]
  /** How many non-blank lines were skipped: the sum of `skippedByCause`. */
  readonly skipped: number
  readonly skippedByCause: Record<CountedSkipCause, number>
  /** How many lines the text holds (a last line with no newline counts). */
  readonly lines: number
}

const decodeInto = (text: string, position: number, line: number, memory: LineMemory, tail: boolean): LinesRead => {
  const events: StoredEvent[] = []
  const skippedByCause = noSkips()
  let skippedCount = 0
  let lineNumber = line
  let start = 0
  while (start < text.length) {
    const end = text.indexOf("\n", start)
    const one = end === -1 ? text.slice(start) : text.slice(start, end)
    start = end === -1 ? text.length : end + 1
    lineNumber += 1
    const decoded = readLine(one, memory, !tail)
    if (decoded._tag === "event") {
      events.push({ event: decoded.event, meta: decoded.meta ?? null, position: position + events.length, line: lineNumber })
    } else if (decoded.cause !== "blank") {
      skippedByCause[tail && decoded.cause === "not_json" ? "torn_tail" : decoded.cause] += 1
      skippedCount += 1
    }
  }
  return { events, skipped: skippedCount, skippedByCause, lines: lineNumber - line }
}

/**
 * Every line of a text, decoded, after the lines `memory` remembers (which
 * then remembers these too); the first event gets `position`, the first line
 * `line + 1`. A last line with no newline is decoded like any line: cut
 * inside its JSON it is skipped as `not_json`; if only its newline is missing,
 * its event is kept. (`decodeTail` reads such a line as a stream's last.)
 */
export const decodeLines = (text: string, position = 0, line = 0, memory: LineMemory = newLineMemory()): LinesRead =>
  decodeInto(text, position, line, memory, false)

/**
 * A stream's last line, with no newline after it (`line`: the lines before
 * it), after the lines `memory` remembers, which it does not change: the
 * line may yet be finished. Not JSON, it is skipped as the `torn_tail`.
 */
export const decodeTail = (text: string, position: number, line: number, memory: LineMemory): LinesRead =>
  decodeInto(text, position, line, memory, true)

/** Adds the skips of `from` to `into`. */
export const addSkips = (into: Record<CountedSkipCause, number>, from: Readonly<Record<CountedSkipCause, number>>): void => {
  for (const cause in from) into[cause as CountedSkipCause] += from[cause as CountedSkipCause]
}

/** What a whole file's text holds, as plain events. */
export interface EventsRead {
  /** The decoded events, in file order. */
  readonly events: Event[]
  /** The line of the file (from 1) each decoded event was read from. */
  readonly lines: number[]
  /** How many non-blank lines were skipped: the sum of `skippedByCause`. */
  readonly skipped: number
  readonly skippedByCause: Record<CountedSkipCause, number>
  /** The text is not empty and does not end with a newline: its last write did not finish. */
  readonly tornTail: boolean
}

/** Every line of a whole file's text, decoded as the event store reads a stream; for tests and tools that hold a log's text. */
export const readEventsText = (text: string): EventsRead => {
  const cut = text.lastIndexOf("\n") + 1
  const memory = newLineMemory()
  const whole = decodeLines(text.slice(0, cut), 0, 0, memory)
  const tail = cut < text.length ? decodeTail(text.slice(cut), whole.events.length, whole.lines, memory) : null
  const stored = tail === null ? whole.events : [...whole.events, ...tail.events]
  const skippedByCause = { ...whole.skippedByCause }
  if (tail !== null) addSkips(skippedByCause, tail.skippedByCause)
  return {
    events: stored.map((s) => s.event),
    lines: stored.map((s) => s.line),
    skipped: whole.skipped + (tail?.skipped ?? 0),
    skippedByCause,
    tornTail: tail !== null,
  }
}
