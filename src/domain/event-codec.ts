/**
 * The wire format of `events.jsonl`: one event as one line, and a whole file's text back as events.
 *
 * Contract: `encodeEventLine` gives one JSON object, with no newline, whose
 * keys come in this order: `schema` (`SCHEMA_VERSION`), `type` (the event's
 * `_tag`), `time`, then the event's other fields. The event log service
 * (`services/event-log.ts`) writes it and a newline; anyone reading a run's log
 * (resume, viewers, tests, benches) reads it back with `decodeEventLine` or
 * `readEventsText`. Neither function throws, whatever the text.
 *
 * A line is decoded when its schema is this version or an older one; fields
 * this version does not know are ignored. Any other line is *skipped*, for one
 * cause, checked in this order:
 * - `blank`: nothing but whitespace. Not damage: `readEventsText` ignores it
 *   and does not count it as skipped;
 * - `not_json`: not JSON, such as a line a crash cut short;
 * - `not_an_object`: JSON, but not an object (an array, a string, null, ...);
 * - `newer_schema`: written by a newer version (`schema` > `SCHEMA_VERSION`);
 * - `unknown_type`: `type` names no event type of this version (or is missing);
 * - `invalid_fields`: `schema` is not a number, or the event's fields do not decode.
 *
 * A number JSON cannot hold (NaN, ±Infinity) is written as `null`, as
 * `JSON.stringify` does: it reads back as `null` where the field allows it, and
 * the line is skipped as `invalid_fields` where it does not.
 *
 * Words: a *torn tail* is a last line with no newline after it: the write of
 * that line did not finish.
 */
import { Either, type ParseResult, Schema } from "effect"
import { Event, SCHEMA_VERSION } from "./events.ts"

export const SkipCause = Schema.Literal(
  "blank",
  "not_json",
  "not_an_object",
  "newer_schema",
  "unknown_type",
  "invalid_fields",
)
export type SkipCause = typeof SkipCause.Type

/** The causes `readEventsText` counts: every cause but `blank`. */
export type CountedSkipCause = Exclude<SkipCause, "blank">
export const COUNTED_SKIP_CAUSES: ReadonlyArray<CountedSkipCause> = SkipCause.literals.filter(
  (c): c is CountedSkipCause => c !== "blank",
)

export type DecodedLine =
  | { readonly _tag: "event"; readonly event: Event }
  | { readonly _tag: "skipped"; readonly cause: SkipCause }

/** One event as one line of the file, without the newline. */
export const encodeEventLine = (event: Event): string => {
  const wire: Record<string, unknown> = { schema: SCHEMA_VERSION, type: event._tag, time: event.time }
  for (const key in event) {
    if (key !== "_tag" && key !== "time") wire[key] = (event as Record<string, unknown>)[key]
  }
  return JSON.stringify(wire)
}

type Decode = (input: unknown) => Either.Either<Event, ParseResult.ParseError>

// One decoder per wire name, compiled once: the line's `type` picks its member
// of the union directly, which is what the union itself would do, with less work.
const decoders: ReadonlyMap<string, Decode> = new Map(
  Event.members.map((member): [string, Decode] => [
    member.fields._tag.literals[0],
    Schema.decodeUnknownEither(member as Schema.Schema<Event, typeof Event.Encoded>),
  ]),
)

const skipped = (cause: SkipCause): DecodedLine => ({ _tag: "skipped", cause })
const BLANK = skipped("blank")

const isBlank = (line: string): boolean => line.length === 0 || line.trim().length === 0

/** One line of the file (with or without its newline) as an event, or why it is skipped. */
export const decodeEventLine = (line: string): DecodedLine => {
  if (isBlank(line)) return BLANK
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return skipped("not_json")
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return skipped("not_an_object")
  const wire = value as Record<string, unknown>
  const schema = wire.schema
  if (typeof schema !== "number") return skipped("invalid_fields")
  if (schema > SCHEMA_VERSION) return skipped("newer_schema")
  const type = wire.type
  const decode = typeof type === "string" ? decoders.get(type) : undefined
  if (decode === undefined) return skipped("unknown_type")
  wire._tag = type
  const decoded = decode(wire)
  return Either.isRight(decoded) ? { _tag: "event", event: decoded.right } : skipped("invalid_fields")
}

/** What a whole file's text holds. */
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

export const noSkips = (): Record<CountedSkipCause, number> => ({
  not_json: 0,
  not_an_object: 0,
  newer_schema: 0,
  unknown_type: 0,
  invalid_fields: 0,
})

/**
 * Every line of a file's text, decoded. A torn tail is decoded like any line:
 * cut inside its JSON it is skipped as `not_json`; if only its newline is
 * missing, its event is kept.
 */
export const readEventsText = (text: string): EventsRead => {
  const events: Event[] = []
  const lines: number[] = []
  let lineNumber = 0
  const skippedByCause = noSkips()
  let skippedCount = 0
  let start = 0
  while (start < text.length) {
    const end = text.indexOf("\n", start)
    const line = end === -1 ? text.slice(start) : text.slice(start, end)
    start = end === -1 ? text.length : end + 1
    lineNumber += 1
    const decoded = decodeEventLine(line)
    if (decoded._tag === "event") {
      events.push(decoded.event)
      lines.push(lineNumber)
    }
    else if (decoded.cause !== "blank") {
      skippedByCause[decoded.cause] += 1
      skippedCount += 1
    }
  }
  const tornTail = text.length > 0 && !text.endsWith("\n")
  return { events, lines, skipped: skippedCount, skippedByCause, tornTail }
}
