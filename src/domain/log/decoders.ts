/**
 * The decoders of events and of their lines' machine facts (`index.ts`): one per event type,
 * compiled at first use, the plain one (`lib/plain-decoder.ts`) first and the Schema one for what it leaves undecided.
 *
 * Contract: `decodeWith` never throws (a value nested too deep to follow is UNDECIDED); `isEvent` and
 * `isEventMeta` are `Schema.is(Event)` and `Schema.is(EventMeta)`, for writers, false where those throw. `decodersByType` is derived
 * from the members of the `Event` union, keyed by wire name.
 *
 * Words: a *plain* decoder is one `lib/plain-decoder.ts` generates for a schema whose decoded and encoded
 * forms are the same, a *plain validator* one it generates from a schema's type side (what `Schema.is` checks);
 * UNDECIDED is what a decoder gives for a value it does not take.
 */
import { Either, type ParseResult, Schema } from "effect"
import { plainDecoder, plainValidator, UNDECIDED } from "../../lib/plain-decoder.ts"
import { Event, EventMeta } from "../events/index.ts"

type Decode<A> = (input: unknown) => Either.Either<A, ParseResult.ParseError>

/**
 * A schema's decoders: its plain one (`lib/plain-decoder.ts`) when it has one, and its Schema one for what the plain one leaves undecided;
 * and its plain validator, for writers (`Schema.is` for what it does not take).
 */
export interface Decoders<A> {
  readonly plain: ((input: unknown) => A | typeof UNDECIDED) | null
  readonly schema: Decode<A>
  readonly check: ((value: unknown) => value is A) | null
}

/** Compiled at their first use: a run that only appends never compiles the decoders of its events, a reader never their validators. */
const decodersOf = <A, I>(schema: Schema.Schema<A, I>): Decoders<A> => {
  let plain: Decoders<A>["plain"] | undefined
  let bySchema: Decode<A> | undefined
  let check: Decoders<A>["check"] | undefined
  return {
    get plain() {
      if (plain === undefined) plain = plainDecoder(schema)
      return plain
    },
    get check() {
      if (check === undefined) check = plainValidator(schema)
      return check
    },
    get schema() {
      bySchema ??= Schema.decodeUnknownEither(schema)
      return bySchema
    },
  }
}

// One decoder per wire name, compiled once: the line's `type` picks its member
// of the union directly, which is what the union itself would do, with less work.
export const decodersByType: ReadonlyMap<string, Decoders<Event>> = new Map(
  Event.members.map((member): [string, Decoders<Event>] => [
    member.fields._tag.literals[0],
    decodersOf(member as Schema.Schema<Event, typeof Event.Encoded>),
  ]),
)
export const metaDecoders: Decoders<EventMeta> = decodersOf(EventMeta)

let isEventBySchema: ((value: unknown) => boolean) | undefined
let isMetaBySchema: ((value: unknown) => boolean) | undefined

/** Whether the plain validator of `decoders` takes `value` (false for a value nested too deep for it: the Schema judges that). */
const passes = <A>(decoders: Decoders<A>, value: unknown): boolean => {
  try {
    const check = decoders.check
    return check !== null && check(value)
  } catch {
    return false
  }
}

/** What `is` says of `value`, false where it throws (a value nested too deep, or one it cannot print in its message). */
const judged = (is: (value: unknown) => boolean, value: unknown): boolean => {
  try {
    return is(value)
  } catch {
    return false
  }
}

/**
 * `Schema.is(Event)` and `Schema.is(EventMeta)`, for writers: a value the
 * plain validator of its member takes is one (it follows the type side of the
 * schema, as `Schema.is` does); any other is left to the Schema, and is none
 * where the Schema throws.
 */
export const isEvent = (value: unknown): value is Event => {
  const tag = typeof value === "object" && value !== null ? (value as { _tag?: unknown })._tag : undefined
  const decoders = typeof tag === "string" ? decodersByType.get(tag) : undefined
  if (decoders === undefined) return false
  return passes(decoders, value) || judged((isEventBySchema ??= Schema.is(Event)), value)
}
export const isEventMeta = (value: unknown): value is EventMeta =>
  passes(metaDecoders, value) || judged((isMetaBySchema ??= Schema.is(EventMeta)), value)

/**
 * What `decoders` make of `input`, or UNDECIDED when it does not decode;
 * UNDECIDED too when it is nested deeper than a decoder can follow (it overflows the stack).
 */
export const decodeWith = <A>(decoders: Decoders<A>, input: unknown, plain: boolean): A | typeof UNDECIDED => {
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
