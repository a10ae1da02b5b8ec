/**
 * The building blocks of the event definitions (`index.ts`): the field types they share and `defineEvent`.
 *
 * Contract: every event is `defineEvent(wireName, fields)`, a struct with its `_tag` (the wire name) and
 * its `time`; a field is one of these types or a schema of the events file that names it. Words as in `index.ts`:
 * a *counter* is a whole number of 0 or more, an *amount* a finite number of 0 or more, a *label* `agentN.M`.
 */
import { Schema } from "effect"
import { instantMs } from "../../lib/instant.ts"
import { SafeName } from "../run-paths.ts"

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/

/** An instant, UTC, ISO 8601 as `Date.toISOString` writes it: `YYYY-MM-DDTHH:MM:SS(.fff)Z`. */
export const Time = Schema.String.pipe(
  Schema.pattern(ISO_INSTANT),
  Schema.filter((s) => !Number.isNaN(instantMs(s)), { message: () => "Expected a real instant" }),
).annotations({
  description: "UTC, ISO 8601",
  arbitrary: () => (fc) =>
    fc.date({ min: new Date(0), max: new Date("2200-01-01T00:00:00.000Z"), noInvalidDate: true }).map((d) => d.toISOString()),
})
/** A counter: a round, a call, an attempt, a number of lines or votes. */
export const Count = Schema.NonNegativeInt
/** A finite amount of 0 or more: seconds, dollars. */
export const Amount = Schema.JsonNumber.pipe(Schema.nonNegative())
export const AgentId = SafeName.annotations({
  arbitrary: () => (fc) => fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,15}$/).filter((id) => !id.endsWith(".reasoning")),
})
/** `agentN.M`; keeping labels to this shape also keeps keys such as `__proto__` out of a record. */
export const Label = Schema.String.pipe(Schema.pattern(/^agent\d+\.\d+$/))

/** An event type: its wire name, the time it happened, and its own fields. */
export const defineEvent = <Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.Struct({ _tag: Schema.Literal(tag), time: Time, ...fields })
