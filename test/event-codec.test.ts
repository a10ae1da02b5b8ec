/**
 * The wire format of events.jsonl: round trip, key order, the envelope's meta,
 * strict times and counters, schema versions and upcasting, and never throwing.
 */
import { describe, expect, test } from "bun:test"
import { Arbitrary, FastCheck } from "effect"
import fc from "fast-check"
import { EVENT_TYPES, Event, type EventMeta, SCHEMA_VERSION } from "../src/domain/events/index.ts"
import { decodeEventLine, encodeEnvelopeLine, encodeEventLine, readEventsText } from "../src/domain/log/index.ts"

const TIME = "2025-06-01T12:00:00.000Z"

const answer: Event = {
  _tag: "answer_submitted",
  time: TIME,
  agent: "agent_a",
  round: 1,
  label: "agent1.1",
  content: "Practice daily.\nShip small projects.",
}

/** `value` as JSON holds numbers: NaN and infinities have no JSON form and -0 reads back as 0. */
const jsonNumbers = (value: unknown): unknown => {
  if (typeof value === "number") return Number.isFinite(value) ? value + 0 : 0
  if (Array.isArray(value)) return value.map(jsonNumbers)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonNumbers(v)]))
  }
  return value
}

const events = Arbitrary.make(Event).map((e) => jsonNumbers(e) as Event)

describe("encodeEventLine / decodeEventLine", () => {
  test("decoding an encoded event gives it back, for every event type", () => {
    const seen = new Set<string>()
    FastCheck.assert(
      FastCheck.property(events, (event) => {
        seen.add(event._tag)
        const line = encodeEventLine(event)
        expect(line).not.toContain("\n")
        expect(decodeEventLine(line)).toEqual({ _tag: "event", event })
      }),
      // Enough runs that every one of the event types comes up (the check below), whatever the seed.
      { numRuns: 800 },
    )
    expect(seen.size).toBe(EVENT_TYPES.length)
  })

  test("schema, type and time come first on the wire", () => {
    const keys = Object.keys(JSON.parse(encodeEventLine(answer)))
    expect(keys).toEqual(["schema", "type", "time", "agent", "round", "label", "content"])
    expect(JSON.parse(encodeEventLine(answer))).toMatchObject({ schema: SCHEMA_VERSION, type: "answer_submitted" })
  })

  test("no event has a field named like a wire key", () => {
    for (const member of Event.members) {
      expect(Object.keys(member.fields).filter((k) => k === "schema" || k === "type" || k === "meta")).toEqual([])
    }
  })

  const wire = (patch: Record<string, unknown>) => JSON.stringify({ ...JSON.parse(encodeEventLine(answer)), ...patch })

  test("a line of a newer schema is skipped as newer_schema, an older one is decoded", () => {
    expect(decodeEventLine(wire({ schema: SCHEMA_VERSION + 1 }))).toEqual({ _tag: "skipped", cause: "newer_schema" })
    expect(decodeEventLine(wire({ schema: SCHEMA_VERSION + 1, type: "from_the_future" }))).toEqual({
      _tag: "skipped",
      cause: "newer_schema",
    })
    expect(decodeEventLine(wire({ schema: SCHEMA_VERSION - 1 }))).toEqual({ _tag: "event", event: answer })
  })

  const meta: EventMeta = { log_dir: "/logs/log_x", pid: 12, host: "box", version: "1.2.3" }

  test("meta, the writing process's machine facts, comes last and is read back beside the event", () => {
    const line = encodeEnvelopeLine(answer, meta)
    expect(Object.keys(JSON.parse(line)).at(-1)).toBe("meta")
    expect(decodeEventLine(line)).toEqual({ _tag: "event", event: answer, meta })
    expect(decodeEventLine(encodeEventLine(answer))).toEqual({ _tag: "event", event: answer })
    expect(decodeEventLine(wire({ meta: { ...meta, pid: "12" } }))).toEqual({ _tag: "skipped", cause: "invalid_fields" })
  })

  test("times are ISO instants in UTC; counters are whole numbers of 0 or more; amounts are not negative", () => {
    const cause = (patch: Record<string, unknown>) => decodeEventLine(wire(patch))._tag
    for (const time of ["2025-06-01T12:00:00Z", "2025-06-01T12:00:00.5Z", TIME]) expect(cause({ time })).toBe("event")
    for (const time of [
      "2025-06-01 12:00:00",
      "2025-06-01T12:00:00+02:00",
      "2025-06-01T12:00:00.000",
      "2025-13-01T00:00:00Z",
      "yesterday",
      1748779200000,
    ]) {
      expect([time, cause({ time })]).toEqual([time, "skipped"])
    }
    for (const round of [-1, 1.5, "1", null]) expect([round, cause({ round })]).toEqual([round, "skipped"])
    const ended = JSON.parse(
      encodeEventLine({
        _tag: "call_end",
        time: TIME,
        call: 3,
        agent: "agent_a",
        round: 1,
        role: "round",
        model: null,
        seconds: 0.25,
        input_tokens: 10,
        cached_input_tokens: null,
        output_tokens: 2,
        reasoning_tokens: 0,
        truncated: false,
        cost: 0.001,
        error: null,
      }),
    )
    const endCause = (patch: Record<string, unknown>) => decodeEventLine(JSON.stringify({ ...ended, ...patch }))._tag
    expect(endCause({})).toBe("event")
    for (const patch of [{ call: 0.5 }, { input_tokens: 1.5 }, { output_tokens: -2 }, { seconds: -0.1 }, { cost: -1 }]) {
      expect([patch, endCause(patch)]).toEqual([patch, "skipped"])
    }
  })

  test("a schema-1 line is upcast: run_started's and run_resumed's log_dir, pid and version become its meta", () => {
    const started = {
      schema: 1,
      type: "run_started",
      time: TIME,
      run_id: "log_x",
      question: "Q?",
      log_dir: "/then/log_x",
      agents: [{ id: "agent_a", anon_id: "agent1", backend: "scripted", model: null }],
      settings: {
        max_new_answers_per_agent: 2,
        skip_final_presentation: false,
        final_answer_strategy: "winner_present" as const,
        orchestrator_timeout_seconds: 60,
        agent_timeout_seconds: 30,
      },
      version: "0.1.0",
      pid: 99,
    }
    expect(decodeEventLine(JSON.stringify(started))).toEqual({
      _tag: "event",
      event: {
        _tag: "run_started",
        time: TIME,
        run_id: "log_x",
        question: "Q?",
        agents: started.agents,
        settings: { ...started.settings, budget_usd: null, disable_injection: false },
      },
      meta: { log_dir: "/then/log_x", pid: 99, version: "0.1.0" },
    })
    const resumed = {
      schema: 1,
      type: "run_resumed",
      time: TIME,
      log_dir: "/now/log_x",
      pid: 100,
      version: "0.1.1",
      dropped_lines: 1,
      torn_tail: true,
      restarted_rounds: [],
      presentation_restarted: false,
    }
    expect(decodeEventLine(JSON.stringify(resumed))).toMatchObject({
      _tag: "event",
      meta: { log_dir: "/now/log_x", pid: 100, version: "0.1.1" },
    })
    expect(decodeEventLine(JSON.stringify({ ...resumed, pid: undefined }))).toEqual({ _tag: "skipped", cause: "invalid_fields" })
    // Schema 2 has no such fields: there they are unknown fields, ignored, and make no meta.
    expect(decodeEventLine(JSON.stringify({ ...resumed, schema: 2 }))).not.toHaveProperty("meta")
  })

  test("unknown fields are ignored", () => {
    expect(decodeEventLine(wire({ extra: [1, 2], _tag: "run_finished" }))).toEqual({ _tag: "event", event: answer })
  })

  test("each cause of a skipped line", () => {
    const cause = (line: string) => {
      const decoded = decodeEventLine(line)
      return decoded._tag === "skipped" ? decoded.cause : "event"
    }
    expect(cause("")).toBe("blank")
    expect(cause(" \t\r")).toBe("blank")
    expect(cause('{"schema":1,"type":"answer_sub')).toBe("not_json")
    expect(cause("[1,2]")).toBe("not_an_object")
    expect(cause("null")).toBe("not_an_object")
    expect(cause('"text"')).toBe("not_an_object")
    expect(cause(wire({ type: "agent_danced" }))).toBe("unknown_type")
    expect(cause(wire({ type: undefined }))).toBe("unknown_type")
    expect(cause(wire({ round: "one" }))).toBe("invalid_fields")
    expect(cause(wire({ content: undefined }))).toBe("invalid_fields")
    expect(cause(wire({ schema: "1" }))).toBe("invalid_fields")
    expect(cause(wire({ schema: 0 }))).toBe("invalid_fields")
    expect(cause(wire({ schema: 1.5 }))).toBe("invalid_fields")
    expect(cause(`${wire({})}\r`)).toBe("event")
  })

  test("a number with no JSON form is written as null", () => {
    const ended: Event = {
      _tag: "call_end",
      time: TIME,
      call: 1,
      agent: "agent_a",
      round: 1,
      role: "round",
      model: null,
      seconds: 2,
      input_tokens: null,
      cached_input_tokens: null,
      output_tokens: null,
      reasoning_tokens: null,
      truncated: null,
      cost: Number.NaN,
      error: null,
    }
    expect(decodeEventLine(encodeEventLine(ended))).toEqual({ _tag: "event", event: { ...ended, cost: null } })
    expect(decodeEventLine(encodeEventLine({ ...ended, seconds: Infinity }))).toEqual({
      _tag: "skipped",
      cause: "invalid_fields",
    })
  })

  test("never throws on any string", () => {
    const someLine = fc.oneof(
      fc.string(),
      fc.string({ unit: "binary" }),
      fc.json(),
      fc
        .record({
          schema: fc.oneof(fc.constant(SCHEMA_VERSION), fc.jsonValue()),
          type: fc.oneof(fc.constantFrom(...EVENT_TYPES), fc.jsonValue()),
          time: fc.oneof(fc.constant(TIME), fc.jsonValue()),
          agent: fc.jsonValue(),
          round: fc.jsonValue(),
        })
        .map((o) => JSON.stringify(o)),
    )
    fc.assert(
      fc.property(someLine, (line) => {
        expect(["event", "skipped"]).toContain(decodeEventLine(line)._tag)
      }),
      { numRuns: 1000 },
    )
  })

  test("every strict prefix of an encoded line is skipped, not thrown on", () => {
    FastCheck.assert(
      FastCheck.property(events, (event) => {
        const line = encodeEventLine(event)
        for (let end = 0; end < line.length; end++) {
          const decoded = decodeEventLine(line.slice(0, end))
          expect(decoded._tag).toBe("skipped")
        }
      }),
      { numRuns: 50 },
    )
  })
})

describe("readEventsText", () => {
  const later: Event = { ...answer, round: 2, label: "agent1.2", time: "2025-06-01T12:00:01.000Z" }

  test("decodes every line, counts the skipped ones by cause, ignores blank lines", () => {
    const line = encodeEventLine(answer)
    const read = readEventsText([line, "", "garbage", "  ", "[]", encodeEventLine(later), ""].join("\n"))
    expect(read.events).toEqual([answer, later])
    expect(read.lines).toEqual([1, 6])
    expect(read.skipped).toBe(2)
    expect(read.skippedByCause).toEqual({
      not_json: 1,
      not_an_object: 1,
      newer_schema: 0,
      unknown_type: 0,
      invalid_fields: 0,
      duplicate: 0,
      out_of_order: 0,
      torn_tail: 0,
    })
    expect(read.tornTail).toBe(false)
  })

  test("a cut last line is skipped as the torn tail; a line missing only its newline is kept", () => {
    const line = encodeEventLine(answer)
    const cut = readEventsText(`${line}\n${line.slice(0, 20)}`)
    expect(cut).toMatchObject({ events: [answer], skipped: 1, tornTail: true, skippedByCause: { torn_tail: 1, not_json: 0 } })
    // Cut and then followed by a newline, it is a whole line that is not JSON.
    expect(readEventsText(`${line}\n${line.slice(0, 20)}\n`)).toMatchObject({
      skipped: 1,
      tornTail: false,
      skippedByCause: { torn_tail: 0, not_json: 1 },
    })
    expect(readEventsText(`${line}\n${encodeEventLine(later)}`)).toMatchObject({ events: [answer, later], skipped: 0, tornTail: true })
    expect(readEventsText("")).toMatchObject({ events: [], skipped: 0, tornTail: false })
  })

  test("a line that repeats an earlier event's line is a duplicate; an event earlier than the one before is out of order", () => {
    const first = encodeEventLine(answer)
    const earlier = encodeEventLine({ ...later, time: "2025-06-01T11:59:59.999Z" })
    // The same event in other words (another key order) is not the same line.
    const reworded = JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(first)).reverse()))
    const read = readEventsText([first, first, earlier, reworded, encodeEventLine(later), earlier, first, ""].join("\n"))
    expect(read.events).toEqual([answer, answer, later])
    expect(read.lines).toEqual([1, 4, 5])
    expect(read.skippedByCause).toMatchObject({ duplicate: 2, out_of_order: 2 })
    expect(read.skipped).toBe(4)
    // Equal times are in order; times compare as instants, whatever their digits.
    const sameInstant = encodeEventLine({ ...later, time: "2025-06-01T12:00:01Z" })
    expect(readEventsText([encodeEventLine(later), sameInstant, ""].join("\n")).skipped).toBe(0)
    // A torn last line that repeats an earlier line is a duplicate, and is not remembered: its write may finish.
    expect(readEventsText(`${first}\n${first}`).skippedByCause).toMatchObject({ duplicate: 1, torn_tail: 0 })
  })

  test("an agent id that is not a safe name does not decode: it would name a file outside the agent's", () => {
    for (const id of ["../../etc", "agent a", "", ".hidden", "a/b", "x.reasoning", "agenմ_b"]) {
      expect(decodeEventLine(encodeEventLine({ ...answer, agent: id }))).toEqual({ _tag: "skipped", cause: "invalid_fields" })
      expect(
        decodeEventLine(
          encodeEventLine({ ...answer, time: TIME, _tag: "vote_cast", target: id, target_label: "agent1.1", reason: "r" } as Event),
        ),
      ).toMatchObject({ cause: "invalid_fields" })
    }
  })

  test("a value nested deeper than the decoder can follow skips the line; it does not throw", () => {
    const deep = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`
    const end = JSON.parse(
      encodeEventLine({
        _tag: "call_end",
        time: TIME,
        call: 1,
        agent: "agent_a",
        round: 1,
        role: "round",
        model: "m",
        seconds: 1,
        input_tokens: null,
        cached_input_tokens: null,
        output_tokens: null,
        reasoning_tokens: null,
        truncated: null,
        cost: null,
        error: null,
        reply: { text: "", tool_calls: [], parts: [] },
      }),
    )
    const line = JSON.stringify(end).replace('"parts":[]', `"parts":[${deep(50_000)}]`)
    expect(decodeEventLine(line)).toEqual({ _tag: "skipped", cause: "invalid_fields" })
    expect(decodeEventLine(JSON.stringify(end).replace('"parts":[]', `"parts":[${deep(20)}]`))._tag).toBe("event")
  })

  // How fast: `bun run bench`, section 2 (decoding and folding 10,000 to 1,000,000 events).
  test("100k events read back whole and in order", () => {
    const lines: string[] = []
    for (let i = 0; i < 100_000; i++) lines.push(encodeEventLine({ ...answer, round: i }))
    const read = readEventsText(`${lines.join("\n")}\n`)
    expect({ events: read.events.length, skipped: read.skipped, tornTail: read.tornTail }).toEqual({
      events: 100_000,
      skipped: 0,
      tornTail: false,
    })
    expect(read.events.findIndex((e, i) => e._tag !== "answer_submitted" || e.round !== i)).toBe(-1)
  })
})
