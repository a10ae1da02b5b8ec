/**
 * Issue 10: the plain decoders (`src/lib/plain-decoder.ts`) change no result.
 *
 * `decodeEventLine` (plain decoders first) must give exactly what
 * `decodeEventLineBySchema` (the Schema decoders alone) gives: the same event,
 * keys in the same order, the same meta, or the same skip cause. Held on
 * random events of every type with random meta, encoded with
 * `encodeEnvelopeLine`; on those lines mutated (fields flipped to other JSON
 * values, dropped, added or moved to the end of their object at any depth, bad times, negative, fractional and
 * huge counters, unknown and missing types, other schemas, v1 lines, cut and
 * edited text); and on every line of the schema-1 fixtures.
 *
 * `isEvent` and `isEventMeta`, which the event store checks every appended
 * event with, say what `Schema.is(Event)` and `Schema.is(EventMeta)` say, on
 * random events and meta, on those mutated, and on those with a field
 * inherited rather than their own (`Schema.is` reads fields exactly); every
 * event type has its plain validator.
 *
 * A reader looks a line up among the lines it read only when its event is not
 * later than the last one read: `decodeLines` must skip exactly the lines the
 * plain rule (a set of every line read, checked first) skips, on random
 * streams of repeated, reordered and same-instant lines.
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Arbitrary, FastCheck as fc, Schema } from "effect"
import { EVENT_TYPES, Event, EventMeta, SCHEMA_VERSION } from "../src/domain/events/index.ts"
import { decodersByType, metaDecoders } from "../src/domain/log/decoders.ts"
import {
  type DecodedLine,
  decodeEventLine,
  decodeEventLineBySchema,
  decodeLines,
  encodeEnvelopeLine,
  encodeEventLine,
  isEvent,
  isEventMeta,
  noSkips,
} from "../src/domain/log/index.ts"

/** Both decoders agree on `line`, down to the order of keys; what they gave. */
const same = (line: string): DecodedLine => {
  const fast = decodeEventLine(line)
  const reference = decodeEventLineBySchema(line)
  expect(fast).toStrictEqual(reference)
  expect(JSON.stringify(fast)).toBe(JSON.stringify(reference))
  return fast
}

const envelopes = fc
  .tuple(Arbitrary.make(Event), fc.option(Arbitrary.make(EventMeta), { nil: null }))
  .map(([event, meta]) => encodeEnvelopeLine(event, meta))

/** Values that sit at the edges of the definitions. */
const edgy = fc.constantFrom<unknown>(
  -1,
  -0.5,
  0,
  1.5,
  2 ** 53 + 2,
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER,
  "",
  "x",
  "agent1.1",
  "agent1.x",
  "agent_a",
  "a/b",
  "..",
  "__proto__",
  "2026-11-29T11:05:49.531Z",
  "2026-11-29T11:05:49Z",
  "2026-02-30T11:05:49.531Z",
  "2026-11-29T11:05:49.5311Z",
  "2026-11-29 11:05:49Z",
  "+002026-11-29T11:05:49.531Z",
  null,
  true,
  false,
  [],
  {},
  [null],
  { text: "t", tool_calls: [], parts: [] },
  { __proto__: 1 },
  {
    max_new_answers_per_agent: null,
    skip_final_presentation: true,
    final_answer_strategy: "synthesize",
    orchestrator_timeout_seconds: 1,
    agent_timeout_seconds: 1,
  },
  ...EVENT_TYPES,
)
const anyValue = fc.oneof(edgy, fc.jsonValue({ maxDepth: 3 }))

type Json = unknown
/** Every path into a JSON value: object keys and array indexes. */
const paths = (value: Json, prefix: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  const out: Array<ReadonlyArray<string | number>> = [prefix]
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])))
  else if (typeof value === "object" && value !== null) for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]))
  return out
}

const parentOf = (root: Json, path: ReadonlyArray<string | number>): Record<string | number, Json> | null => {
  let at: Json = root
  for (const step of path.slice(0, -1)) at = (at as Record<string | number, Json>)[step]
  return typeof at === "object" && at !== null ? (at as Record<string | number, Json>) : null
}

type Mutation = (wire: Record<string, Json>, pick: number, value: Json) => void
const MUTATIONS: ReadonlyArray<Mutation> = [
  // a value anywhere becomes another
  (wire, pick, value) => {
    const all = paths(wire).filter((p) => p.length > 0)
    const path = all[pick % all.length]!
    parentOf(wire, path)![path[path.length - 1]!] = value
  },
  // a key anywhere is dropped
  (wire, pick) => {
    const all = paths(wire).filter((p) => p.length > 0 && typeof p[p.length - 1] === "string")
    if (all.length === 0) return
    const path = all[pick % all.length]!
    delete parentOf(wire, path)![path[path.length - 1]!]
  },
  // an object anywhere gets a key it does not know, or one it knows elsewhere
  (wire, pick, value) => {
    const objects = paths(wire).filter((p) => {
      const v = p.length === 0 ? wire : parentOf(wire, [...p, 0])
      return v !== null && !Array.isArray(v)
    })
    const path = objects[pick % objects.length]!
    const target = (path.length === 0 ? wire : parentOf(wire, [...path, 0])) as Record<string, Json>
    target[["extra", "meta", "type", "_tag", "schema", "host", "reply"][pick % 7]!] = value
  },
  // a number anywhere goes negative, fractional or huge
  (wire, pick) => {
    const numbers = paths(wire).filter((p) => p.length > 0 && typeof parentOf(wire, p)![p[p.length - 1]!] === "number")
    if (numbers.length === 0) return
    const path = numbers[pick % numbers.length]!
    const parent = parentOf(wire, path)!
    const n = parent[path[path.length - 1]!] as number
    parent[path[path.length - 1]!] = [-n - 1, n + 0.25, n * 1e300, 2 ** 64][pick % 4]
  },
  // the type, schema or time changes
  (wire, pick, value) => {
    wire[["type", "schema", "time"][pick % 3]!] = [value, EVENT_TYPES[pick % EVENT_TYPES.length], 1, 3, "2", 1.5][pick % 6]
  },
  // a key anywhere moves to the end of its object (a decoder gives back an object only with its fields in order)
  (wire, pick) => {
    const all = paths(wire).filter((p) => p.length > 0 && typeof p[p.length - 1] === "string")
    if (all.length === 0) return
    const path = all[pick % all.length]!
    const parent = parentOf(wire, path)!
    const key = path[path.length - 1]!
    const value = parent[key]
    delete parent[key]
    parent[key] = value
  },
  // a v1 line: machine facts among the fields, no meta
  (wire) => {
    wire.schema = 1
    const meta = wire.meta
    delete wire.meta
    if (typeof meta === "object" && meta !== null) Object.assign(wire, meta)
  },
]

/** Edits of the text itself: numbers JSON.stringify cannot write, repeated keys, cuts. */
const TEXT_EDITS: ReadonlyArray<(line: string, pick: number) => string> = [
  (line, pick) =>
    line.replace(/(?<=[:,[])\d+(\.\d+)?(?=[,}\]])/g, (m, _f, offset: number) =>
      offset % 3 === pick % 3 ? ["1e400", "-0", "1.0", "1E2"][pick % 4]! : m,
    ),
  (line, pick) => line.replace(/,"(\w+)":/, `,"$1":${["1", "null", '"x"', "-1"][pick % 4]},"$1":`),
  (line, pick) => line.slice(0, Math.max(1, line.length - 1 - (pick % 20))),
  (line) => `  ${line}\t`,
]

describe("the plain decoders give what the Schema decoders give", () => {
  test("on random events of every type, with and without meta", () => {
    const types = new Set<string>()
    fc.assert(
      fc.property(envelopes, (line) => {
        const decoded = same(line)
        expect(decoded._tag).toBe("event")
        if (decoded._tag === "event") types.add(decoded.event._tag)
      }),
      { numRuns: 1500 },
    )
    expect([...types].sort()).toEqual([...EVENT_TYPES].sort())
  })

  test("on random events mutated: values, keys, numbers, types, schemas, v1 lines", () => {
    const causes = new Set<string>()
    fc.assert(
      fc.property(
        envelopes,
        fc.array(fc.tuple(fc.nat(MUTATIONS.length - 1), fc.nat(), anyValue), { minLength: 1, maxLength: 3 }),
        (line, steps) => {
          const wire = JSON.parse(line) as Record<string, Json>
          for (const [m, pick, value] of steps) MUTATIONS[m]!(wire, pick, structuredClone(value))
          const decoded = same(JSON.stringify(wire))
          causes.add(decoded._tag === "event" ? "event" : decoded.cause)
        },
      ),
      { numRuns: 4000 },
    )
    expect([...causes].sort()).toEqual(["event", "invalid_fields", "newer_schema", "unknown_type"])
  })

  test("on random lines with their text edited", () => {
    fc.assert(
      fc.property(envelopes, fc.nat(TEXT_EDITS.length - 1), fc.nat(), (line, edit, pick) => {
        same(TEXT_EDITS[edit]!(line, pick))
      }),
      { numRuns: 2000 },
    )
  })

  test("on every line of the schema-1 fixtures, all of them events", () => {
    const root = nodePath.join(import.meta.dir, "fixtures", "v1")
    let lines = 0
    for (const name of fs.readdirSync(root)) {
      const file = nodePath.join(root, name, "events.jsonl")
      if (!fs.existsSync(file)) continue
      for (const line of fs.readFileSync(file, "utf8").split("\n")) {
        if (line.trim() === "") continue
        lines += 1
        expect(same(line)._tag).toBe("event")
      }
    }
    expect(lines).toBeGreaterThan(50)
  })

  test("on values nested too deep to decode, and on the current schema with no fields", () => {
    const deep = `{"schema":${SCHEMA_VERSION},"type":"call_end","time":"2026-01-01T00:00:00.000Z","call":1,"agent":"a","round":1,"role":"round","model":null,"seconds":0,"input_tokens":null,"cached_input_tokens":null,"output_tokens":null,"reasoning_tokens":null,"truncated":null,"cost":null,"error":null,"reply":{"text":"","tool_calls":[],"parts":[${"[".repeat(200_000)}${"]".repeat(200_000)}]}}`
    expect(same(deep)).toEqual({ _tag: "skipped", cause: "invalid_fields" })
    for (const type of EVENT_TYPES) same(JSON.stringify({ schema: SCHEMA_VERSION, type }))
  })
})

describe("isEvent and isEventMeta say what Schema.is says", () => {
  /** `Schema.is`, false where it throws: on a value it cannot print (an object whose `toString` is not a function), as isEvent says. */
  const orFalse = (is: (value: unknown) => boolean) => (value: unknown) => {
    try {
      return is(value)
    } catch {
      return false
    }
  }
  const schemaIsEvent = orFalse(Schema.is(Event))
  const schemaIsMeta = orFalse(Schema.is(EventMeta))
  /** The plain validators alone, with no Schema.is behind them: they say what it says. */
  const plainVerdicts = (value: unknown) => {
    const tag = typeof value === "object" && value !== null ? (value as { _tag?: unknown })._tag : undefined
    const decoders = typeof tag === "string" ? decodersByType.get(tag) : undefined
    return { event: decoders?.check?.(value) ?? false, meta: metaDecoders.check?.(value) ?? false }
  }

  test("on random events and meta, as they are and mutated", () => {
    const verdicts = new Set<string>()
    fc.assert(
      fc.property(
        Arbitrary.make(Event),
        Arbitrary.make(EventMeta),
        fc.array(fc.tuple(fc.nat(2), fc.nat(), anyValue), { maxLength: 3 }),
        (event, meta, steps) => {
          const values = [structuredClone(event), structuredClone(meta)] as Array<Record<string, Json>>
          // The first three mutations: a value changed, a key dropped, a key added, anywhere.
          for (const [m, pick, value] of steps) MUTATIONS[m]!(values[pick % 2]!, pick, structuredClone(value))
          const [e, mt] = values
          expect({ event: isEvent(e), meta: isEventMeta(mt) }).toEqual({ event: schemaIsEvent(e), meta: schemaIsMeta(mt) })
          expect({ event: plainVerdicts(e).event, meta: plainVerdicts(mt).meta }).toEqual({
            event: schemaIsEvent(e),
            meta: schemaIsMeta(mt),
          })
          verdicts.add(`${isEvent(e)}/${isEventMeta(mt)}`)
        },
      ),
      { numRuns: 3000 },
    )
    expect([...verdicts].sort()).toEqual(["false/false", "false/true", "true/false", "true/true"])
  })

  test("on events and meta with a field inherited, not their own, at any depth", () => {
    const verdicts = new Set<boolean>()
    fc.assert(
      fc.property(fc.oneof(Arbitrary.make(Event), Arbitrary.make(EventMeta)), fc.nat(), (value, pick) => {
        const copy = structuredClone(value) as Record<string, Json>
        const objects = paths(copy).filter((p) => {
          const v = p.length === 0 ? copy : parentOf(copy, [...p, 0])
          return v !== null && !Array.isArray(v) && Object.keys(v).length > 0
        })
        const path = objects[pick % objects.length]!
        const target = (path.length === 0 ? copy : parentOf(copy, [...path, 0])) as Record<string, Json>
        const keys = Object.keys(target)
        const key = keys[pick % keys.length]!
        const inherited = Object.create({ [key]: target[key] }) as Record<string, Json>
        for (const k of keys) if (k !== key) inherited[k] = target[k]
        const judged = path.length === 0 ? inherited : copy
        if (path.length > 0) parentOf(copy, path)![path[path.length - 1]!] = inherited
        expect({ event: isEvent(judged), meta: isEventMeta(judged) }).toEqual({ event: schemaIsEvent(judged), meta: schemaIsMeta(judged) })
        expect(plainVerdicts(judged)).toEqual({ event: schemaIsEvent(judged), meta: schemaIsMeta(judged) })
        verdicts.add(isEvent(judged) || isEventMeta(judged))
      }),
      { numRuns: 1500 },
    )
    expect([...verdicts].sort()).toEqual([false, true])
  })

  test("every event type and the meta have a plain validator: no append of a valid event waits for Schema.is", () => {
    expect([...decodersByType].filter(([, decoders]) => decoders.check === null).map(([type]) => type)).toEqual([])
    expect(metaDecoders.check).not.toBeNull()
  })

  test("on values that are not events at all", () => {
    // Nested too deep for the plain validator and for Schema.is, which throw: not an event.
    const deep = JSON.parse(
      `{"_tag":"call_end","time":"2026-01-01T00:00:00.000Z","call":1,"agent":"a","round":1,"role":"round","model":null,"seconds":0,"input_tokens":null,"cached_input_tokens":null,"output_tokens":null,"reasoning_tokens":null,"truncated":null,"cost":null,"error":null,"reply":{"text":"","tool_calls":[],"parts":[${"[".repeat(200_000)}${"]".repeat(200_000)}]}}`,
    )
    expect({ event: isEvent(deep), meta: isEventMeta(deep) }).toEqual({ event: false, meta: false })
    for (const value of [
      null,
      undefined,
      1,
      "run_started",
      [],
      {},
      { _tag: "nope" },
      { _tag: 1 },
      { _tag: { toString: 0 } },
      ...EVENT_TYPES.map((_tag) => ({ _tag })),
    ]) {
      expect({ value, event: isEvent(value), meta: isEventMeta(value) }).toEqual({
        value,
        event: schemaIsEvent(value),
        meta: schemaIsMeta(value),
      })
      expect({ value, ...plainVerdicts(value) }).toEqual({ value, event: schemaIsEvent(value), meta: schemaIsMeta(value) })
    }
  })
})

/** The rule as the docs state it: a line read before is a duplicate; an event earlier than the last read is out of order. */
const referenceRead = (lines: ReadonlyArray<string>) => {
  const read = new Set<string>()
  let last = Number.NEGATIVE_INFINITY
  const skippedByCause: Record<string, number> = noSkips()
  const events: Array<unknown> = []
  for (const line of lines) {
    if (read.has(line)) {
      skippedByCause.duplicate! += 1
      continue
    }
    const decoded = decodeEventLineBySchema(line)
    if (decoded._tag === "skipped") {
      if (decoded.cause !== "blank") skippedByCause[decoded.cause]! += 1
      continue
    }
    const time = Date.parse(decoded.event.time)
    if (time < last) {
      skippedByCause.out_of_order! += 1
      continue
    }
    read.add(line)
    last = time
    events.push(decoded.event)
  }
  return { events, skippedByCause }
}

describe("duplicates and lines out of order", () => {
  // Few instants, each written two ways, so that lines repeat, go back in time and share an instant.
  const times = fc.constantFrom(
    "2026-01-01T00:00:01Z",
    "2026-01-01T00:00:01.000Z",
    "2026-01-01T00:00:02.5Z",
    "2026-01-01T00:00:02.500Z",
    "2026-01-01T00:00:03.000Z",
  )
  const line = fc
    .tuple(times, fc.constantFrom("a", "b"), fc.nat(2))
    .map(([time, agent, round]) =>
      round === 2 ? "not json" : encodeEventLine({ _tag: "round_cancelled", time, agent, round, reason: "new_answer" }),
    )

  test("decodeLines skips what the plain rule skips, read at once or in pieces", () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 40 }), fc.nat(40), (lines, cut) => {
        const reference = referenceRead(lines)
        const whole = decodeLines(lines.map((l) => `${l}\n`).join(""))
        expect(whole.events.map((e) => e.event)).toEqual(reference.events as never)
        expect(whole.skippedByCause).toEqual(reference.skippedByCause as never)
        const memory = { events: [], seen: null, lastTime: "" }
        const first = decodeLines(
          lines
            .slice(0, cut)
            .map((l) => `${l}\n`)
            .join(""),
          0,
          0,
          memory,
        )
        const rest = decodeLines(
          lines
            .slice(cut)
            .map((l) => `${l}\n`)
            .join(""),
          first.events.length,
          first.lines,
          memory,
        )
        expect([...first.events, ...rest.events]).toEqual(whole.events)
      }),
      { numRuns: 1500 },
    )
  })
})
