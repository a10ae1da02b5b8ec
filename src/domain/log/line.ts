/**
 * One line of `events.jsonl` (`index.ts`): an event in its envelope written as a line, and a line
 * read back as an event (upcast from an older schema first) or as the cause it is skipped for.
 *
 * Contract: as in `index.ts`. `decodeEventLine` judges one line alone (`blank`, `not_json`,
 * `not_an_object`, `newer_schema`, `unknown_type`, `invalid_fields`) and never throws; the causes that
 * need the lines read before are `stream.ts`'s. Words as in `index.ts`.
 */
import { Schema } from "effect"
import { UNDECIDED } from "../../lib/plain-decoder.ts"
import { type Event, type EventMeta, SCHEMA_VERSION } from "../events/index.ts"
import { decodersByType, decodeWith, metaDecoders } from "./decoders.ts"
import { mayHoldLongTexts, readLongTexts, referenceLongTexts } from "./long-texts.ts"

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
export const COUNTED_SKIP_CAUSES: ReadonlyArray<CountedSkipCause> = SkipCause.literals.filter((c): c is CountedSkipCause => c !== "blank")

export type DecodedLine =
  | { readonly _tag: "event"; readonly event: Event; readonly meta?: EventMeta }
  | { readonly _tag: "skipped"; readonly cause: SkipCause }

/**
 * One event in its envelope, with the writing process's machine facts, as one line of the file, without the newline.
 * With `store`, its long texts are kept there and referenced (`long-texts.ts`).
 */
export const encodeEnvelopeLine = (event: Event, meta: EventMeta | null, store?: (text: string) => string): string => {
  const wire: Record<string, unknown> = { schema: SCHEMA_VERSION, type: event._tag, time: event.time }
  for (const key in event) {
    if (key !== "_tag" && key !== "time") wire[key] = (event as Record<string, unknown>)[key]
  }
  if (store !== undefined) referenceLongTexts(event._tag, wire, store)
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

/** A line skipped for `cause`. */
export const skipped = (cause: SkipCause): DecodedLine => ({ _tag: "skipped", cause })
const BLANK = skipped("blank")

const isBlank = (line: string): boolean => line.length === 0 || line.trim().length === 0

/** Where a reader finds the texts a line references by hash (the run's blob store); undefined when it has none. */
export type BlobTexts = (hash: string) => string | undefined

/** `decodeEventLine`, with the plain decoders or with the Schema decoders alone. */
const lineDecoder =
  (plain: boolean) =>
  (line: string, texts?: BlobTexts): DecodedLine => {
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
    // A long text's reference reads as its text; without the blob store, or with its blob missing, the line does not decode.
    if (texts !== undefined && mayHoldLongTexts(type as string) && line.includes('"$blob"') && !readLongTexts(type as string, wire, texts))
      return skipped("invalid_fields")
    const rawMeta = wire.meta
    if (rawMeta !== undefined) delete wire.meta
    wire._tag = type
    const event = decodeWith(decoders, wire, plain)
    if (event === UNDECIDED) return skipped("invalid_fields")
    if (rawMeta === undefined) return { _tag: "event", event }
    const meta = decodeWith(metaDecoders, rawMeta, plain)
    return meta !== UNDECIDED ? { _tag: "event", event, meta } : skipped("invalid_fields")
  }

/** One line of the file (with or without its newline) as an event, or why it is skipped; `texts`: the blob store its long texts are read from. */
export const decodeEventLine: (line: string, texts?: BlobTexts) => DecodedLine = lineDecoder(true)

/** `decodeEventLine` through the Schema decoders alone: what the plain ones are held to (test/event-decode-plain.test.ts). */
export const decodeEventLineBySchema: (line: string, texts?: BlobTexts) => DecodedLine = lineDecoder(false)

/** No skips yet: a count of 0 for every counted cause. */
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

/** Adds the skips of `from` to `into`. */
export const addSkips = (into: Record<CountedSkipCause, number>, from: Readonly<Record<CountedSkipCause, number>>): void => {
  for (const cause in from) into[cause as CountedSkipCause] += from[cause as CountedSkipCause]
}
