/**
 * The event store's contract, as one suite to run against each of its layers.
 *
 * `eventStoreSuite(name, makeFixture)` registers the tests; a fixture gives a
 * fresh store over its layer's storage (built anew at each call, as a second
 * process would open it), a log base holding no runs, and raw access to a
 * stream's stored lines: to damage them, or to write lines of an older schema.
 * Nothing here names a layer: a new layer (a database) passes the same suite.
 * Each test runs on the real clock; a subscription wakes on appends and polls
 * for raw changes.
 */
import { describe, expect, test } from "bun:test"
import { Chunk, Effect, Fiber, type Layer, Queue, Stream } from "effect"
import fc from "fast-check"
import type { Event, EventMeta } from "../../src/domain/events/index.ts"
import { encodeEnvelopeLine, encodeEventLine } from "../../src/domain/log/index.ts"
import { EventStore, type EventStoreService, eventsOf, type StoreOptions } from "../../src/services/event-store/index.ts"

export interface StoreFixture {
  /** A store over this fixture's storage; each call opens it anew. */
  readonly layer: (options?: StoreOptions) => Layer.Layer<EventStore>
  /** A log base with no runs under it. */
  readonly base: string
  /** Appends text to a stream's stored lines as they are, making the stream. */
  readonly rawAppend: (stream: string, text: string) => void
  /** A stream's stored lines as text. */
  readonly rawText: (stream: string) => string
}

const TIME = "2025-06-01T12:00:00.000Z"
const META: EventMeta = { log_dir: "/where/it/ran", pid: 4242, host: "a-host", version: "9.9.9" }

const started = (question = "What is 2+2?", agents = 2): Event => ({
  _tag: "run_started",
  time: TIME,
  run_id: "log_x",
  question,
  agents: Array.from({ length: agents }, (_, i) => ({ id: `agent_${i}`, anon_id: `agent${i + 1}`, backend: "scripted", model: null })),
  settings: {
    max_new_answers_per_agent: null,
    skip_final_presentation: false,
    final_answer_strategy: "winner_present",
    disable_injection: false,
    orchestrator_timeout_seconds: 60,
    agent_timeout_seconds: 30,
    budget_usd: null,
  },
})
const round = (n: number): Event => ({
  _tag: "round_started",
  time: TIME,
  agent: "agent_0",
  round: n,
  shown: [],
  vote_only: false,
  restart: false,
})
const answered: Event = {
  _tag: "answer_submitted",
  time: TIME,
  agent: "agent_1",
  round: 1,
  label: "agent2.1",
  content: 'ünïcode ✓ "quoted"',
}
const finished: Event = { _tag: "run_finished", time: TIME, reason: "completed", winner: "agent_1", message: "done" }

const line = (event: Event, meta: EventMeta | null = null) => `${encodeEnvelopeLine(event, meta)}\n`

/** A subscription from `from` that stops after `count` events, in a fiber; `seen` gets each position as it comes. */
const subscribed = (store: EventStoreService, stream: string, from: number, count: number) =>
  Effect.gen(function* () {
    const seen = yield* Queue.unbounded<number>()
    const fiber = yield* store.subscribe(stream, from).pipe(
      Stream.tap((s) => Queue.offer(seen, s.position)),
      Stream.take(count),
      Stream.runCollect,
      Effect.map(Chunk.toReadonlyArray),
      Effect.fork,
    )
    return { seen, fiber }
  })

export const eventStoreSuite = (name: string, makeFixture: () => StoreFixture) =>
  describe(`EventStore (${name})`, () => {
    let streams = 0
    /** A fixture and a fresh stream (a run) under its base. */
    const fresh = () => {
      const f = makeFixture()
      streams += 1
      return { f, stream: `${f.base}/log_2026010${1 + (streams % 9)}_000000_${String(streams).padStart(6, "0")}` }
    }
    const withStore = <A, E>(f: StoreFixture, body: (store: EventStoreService) => Effect.Effect<A, E>, options?: StoreOptions) =>
      Effect.runPromise(Effect.flatMap(EventStore, body).pipe(Effect.provide(f.layer(options))))

    test("append then read gives the events back in order, with their meta, positions and lines", async () => {
      const { f, stream } = fresh()
      const read = await withStore(f, (store) =>
        Effect.gen(function* () {
          expect(yield* store.append(stream, [{ event: started(), meta: META }, round(1)], 0)).toBe(2)
          expect(yield* store.append(stream, [answered, finished], 2)).toBe(4)
          return yield* store.read(stream)
        }),
      )
      expect(read).toEqual({
        events: [
          { event: started(), meta: META, position: 0, line: 1 },
          { event: round(1), meta: null, position: 1, line: 2 },
          { event: answered, meta: null, position: 2, line: 3 },
          { event: finished, meta: null, position: 3, line: 4 },
        ],
        version: 4,
        skipped: 0,
        skippedByCause: {
          not_json: 0,
          not_an_object: 0,
          newer_schema: 0,
          unknown_type: 0,
          invalid_fields: 0,
          duplicate: 0,
          out_of_order: 0,
          torn_tail: 0,
        },
        tornTail: false,
      })
      expect(f.rawText(stream)).toBe(line(started(), META) + line(round(1)) + line(answered) + line(finished))
      // Another store over the same storage (another process) reads the same.
      expect(await withStore(f, (store) => store.read(stream))).toEqual(read)
    })

    test("an append at another version fails with a conflict and writes nothing", async () => {
      const { f, stream } = fresh()
      await withStore(f, (store) => store.append(stream, [started(), round(1)], 0))
      const before = f.rawText(stream)
      for (const expected of [0, 1, 3]) {
        const error = await withStore(f, (store) => Effect.flip(store.append(stream, [finished], expected)))
        expect(error).toMatchObject({ _tag: "EventStoreConflict", reason: "conflict", stream, expected, actual: 2 })
        expect(error.message).toContain("expected")
      }
      expect(f.rawText(stream)).toBe(before)
      // A stream that does not exist holds 0 events: expecting more makes nothing.
      const { stream: none } = fresh()
      expect(await withStore(f, (store) => Effect.flip(store.append(none, [started()], 1)))).toMatchObject({
        _tag: "EventStoreConflict",
        actual: 0,
      })
      expect(await withStore(f, (store) => Effect.flip(store.read(none)))).toMatchObject({ _tag: "EventStoreError", reason: "missing" })
    })

    test("a writer whose version is stale because another writer appended meanwhile gets a conflict, at its append or its barrier", async () => {
      const { f, stream } = fresh()
      await Effect.runPromise(
        Effect.gen(function* () {
          const mine = yield* Effect.provide(EventStore, f.layer())
          const theirs = yield* Effect.provide(EventStore, f.layer())
          const version = yield* mine.append(stream, [started()], 0)
          yield* mine.settled(stream)
          expect(yield* theirs.append(stream, [round(1)], version)).toBe(2)
          yield* theirs.settled(stream)
          const stale = Effect.zipRight(mine.append(stream, [round(2)], version), mine.settled(stream))
          expect(yield* Effect.flip(stale)).toMatchObject({ _tag: "EventStoreConflict", expected: 1, actual: 2 })
          expect(eventsOf(yield* mine.read(stream))).toEqual([started(), round(1)])
        }),
      )
    })

    test("read from a position gives the events from there, with the whole stream's version and counts", async () => {
      const { f, stream } = fresh()
      f.rawAppend(stream, "garbage\n")
      const read = await withStore(f, (store) =>
        Effect.gen(function* () {
          yield* store.append(stream, [started(), round(1), round(2), finished], 0)
          return yield* store.read(stream, 2)
        }),
      )
      expect(read.events).toEqual([
        { event: round(2), meta: null, position: 2, line: 4 },
        { event: finished, meta: null, position: 3, line: 5 },
      ])
      expect(read).toMatchObject({ version: 4, skipped: 1, tornTail: false })
      expect((await withStore(f, (store) => store.read(stream, 9))).events).toEqual([])
    })

    test("subscribe gives the events there, then each later append, in order, until its consumer stops", async () => {
      const { f, stream } = fresh()
      const got = await withStore(f, (store) =>
        Effect.gen(function* () {
          yield* store.append(stream, [started(), round(1)], 0)
          const { seen, fiber } = yield* subscribed(store, stream, 1, 5)
          expect(yield* Queue.take(seen)).toBe(1)
          let version = 2
          for (let n = 2; n <= 5; n++) version = yield* store.append(stream, [round(n)], version)
          return yield* Fiber.join(fiber)
        }),
      )
      expect(got.map((s) => s.position)).toEqual([1, 2, 3, 4, 5])
      expect(got.map((s) => s.event)).toEqual([round(1), round(2), round(3), round(4), round(5)])
    })

    test("subscribe waits for a stream that is not there yet, and for the newline of a torn last line", async () => {
      const { f, stream } = fresh()
      const got = await withStore(f, (store) =>
        Effect.gen(function* () {
          const { seen, fiber } = yield* subscribed(store, stream, 0, 4)
          f.rawAppend(stream, line(started()) + line(round(1)).slice(0, 30))
          expect(yield* Queue.take(seen)).toBe(0)
          // The rest of the cut line, then a line that only lacks its newline.
          f.rawAppend(stream, line(round(1)).slice(30) + encodeEventLine(round(2)))
          expect(yield* Queue.take(seen)).toBe(1)
          yield* store.append(stream, [round(3)], 3)
          return yield* Fiber.join(fiber)
        }),
      )
      expect(got.map((s) => [s.position, s.event])).toEqual([
        [0, started()],
        [1, round(1)],
        [2, round(2)],
        [3, round(3)],
      ])
    })

    test("list: the runs under a base, newest first, complete or not, with agents and question; at most limit", async () => {
      const f = makeFixture()
      const run = (name: string) => `${f.base}/${name}`
      f.rawAppend(run("log_20260101_000000_000000"), line(started("Old", 3), META) + line(finished))
      f.rawAppend(run("log_20260103_000000_000000"), line(started("Newest, still going")) + line(round(1)))
      f.rawAppend(run("log_20260102_000000_000000"), "not an event\n")
      f.rawAppend(run("not_a_run"), line(started()))
      f.rawAppend(`${f.base}/elsewhere/log_20260104_000000_000000`, line(started()))
      const runs = await withStore(f, (store) => store.list(f.base))
      expect(runs.map((r) => [r.name, r.complete, r.agents, r.question])).toEqual([
        ["log_20260103_000000_000000", false, 2, "Newest, still going"],
        ["log_20260102_000000_000000", false, 0, ""],
        ["log_20260101_000000_000000", true, 3, "Old"],
      ])
      expect(runs[0]!.stream).toBe(run("log_20260103_000000_000000"))
      expect((await withStore(f, (store) => store.list(f.base, 1))).map((r) => r.name)).toEqual(["log_20260103_000000_000000"])
      expect(await withStore(f, (store) => store.list(`${f.base}/nowhere`))).toEqual([])
    })

    test("a torn last line is skipped and counted; the next append ends it with a newline in the same write", async () => {
      const { f, stream } = fresh()
      f.rawAppend(stream, line(started()) + line(round(1)).slice(0, 25))
      const torn = await withStore(f, (store) => store.read(stream))
      expect(eventsOf(torn)).toEqual([started()])
      expect(torn).toMatchObject({ version: 1, skipped: 1, tornTail: true, skippedByCause: { torn_tail: 1, not_json: 0 } })
      const after = await withStore(f, (store) => Effect.zipRight(store.append(stream, [round(2)], 1), store.read(stream)))
      expect(eventsOf(after)).toEqual([started(), round(2)])
      // Ended by a newline, the cut line is a whole line that is not JSON, for this store and any other.
      expect(after).toMatchObject({ version: 2, skipped: 1, tornTail: false, skippedByCause: { torn_tail: 0, not_json: 1 } })
      expect(await withStore(f, (store) => store.read(stream))).toEqual(after)
      expect(f.rawText(stream)).toBe(`${line(started())}${line(round(1)).slice(0, 25)}\n${line(round(2))}`)
    })

    test("a last line missing only its newline is an event: it counts in the version, and an append ends it", async () => {
      const { f, stream } = fresh()
      f.rawAppend(stream, line(started()) + encodeEventLine(round(1)))
      const read = await withStore(f, (store) => store.read(stream))
      expect(read).toMatchObject({ version: 2, skipped: 0, tornTail: true })
      expect(read.events[1]).toEqual({ event: round(1), meta: null, position: 1, line: 2 })
      expect(await withStore(f, (store) => store.append(stream, [round(2)], 2))).toBe(3)
      expect(eventsOf(await withStore(f, (store) => store.read(stream)))).toEqual([started(), round(1), round(2)])
    })

    test("skipped lines are counted by cause and are not events", async () => {
      const { f, stream } = fresh()
      const wire = JSON.parse(encodeEventLine(round(1)))
      f.rawAppend(
        stream,
        [
          line(started()).trimEnd(),
          "",
          "   ",
          "{not json",
          "[1,2]",
          JSON.stringify({ ...wire, schema: 99 }),
          JSON.stringify({ ...wire, type: "agent_danced" }),
          JSON.stringify({ ...wire, round: -1 }),
          JSON.stringify({ ...wire, round: 1.5 }),
          JSON.stringify({ ...wire, time: "yesterday" }),
          JSON.stringify({ ...wire, schema: 0 }),
          line(round(1)),
        ].join("\n"),
      )
      const read = await withStore(f, (store) => store.read(stream))
      expect(eventsOf(read)).toEqual([started(), round(1)])
      expect(read.skippedByCause).toEqual({
        not_json: 1,
        not_an_object: 1,
        newer_schema: 1,
        unknown_type: 1,
        invalid_fields: 4,
        duplicate: 0,
        out_of_order: 0,
        torn_tail: 0,
      })
      expect(read).toMatchObject({ version: 2, skipped: 8, tornTail: false })
      expect(await withStore(f, (store) => store.append(stream, [finished], 2))).toBe(3)
    })

    test("a line written twice is read once; an event earlier than the one before it is skipped; both are counted", async () => {
      const { f, stream } = fresh()
      const early = { ...round(2), time: "2025-06-01T11:00:00.000Z" }
      f.rawAppend(stream, line(started()) + line(round(1)) + line(round(1)) + line(early) + line(started()) + line(round(3)))
      const read = await withStore(f, (store) => store.read(stream))
      expect(read.events.map((s) => [s.event, s.line])).toEqual([
        [started(), 1],
        [round(1), 2],
        [round(3), 6],
      ])
      expect(read).toMatchObject({ version: 3, skipped: 3, skippedByCause: { duplicate: 2, out_of_order: 1 } })
      // The store's own appends are judged the same way: what it knows is what a fresh read gives.
      const appended = await withStore(f, (store) =>
        Effect.gen(function* () {
          expect(yield* store.read(stream)).toEqual(read)
          expect(yield* store.append(stream, [round(3), early, round(4)], 3)).toBe(4)
          return yield* store.read(stream)
        }),
      )
      expect(appended).toMatchObject({ version: 4, skipped: 5, skippedByCause: { duplicate: 3, out_of_order: 2 } })
      expect(await withStore(f, (store) => store.read(stream))).toEqual(appended)
      // A torn last line that repeats a line is a duplicate until it ends; subscribers never see it.
      f.rawAppend(stream, line(round(4)).trimEnd())
      expect(await withStore(f, (store) => store.read(stream))).toMatchObject({
        version: 4,
        tornTail: true,
        skippedByCause: { duplicate: 4 },
      })
    })

    test("lines of schema 1 are upcast: their machine facts move into meta, nothing is skipped", async () => {
      const { f, stream } = fresh()
      const v1 = (event: Event, extra: Record<string, unknown> = {}) =>
        `${JSON.stringify({ ...JSON.parse(encodeEventLine(event)), schema: 1, ...extra })}\n`
      const resumed: Event = {
        _tag: "run_resumed",
        time: TIME,
        dropped_lines: 0,
        torn_tail: false,
        restarted_rounds: [{ agent: "agent_0", round: 1 }],
        presentation_restarted: false,
      }
      f.rawAppend(
        stream,
        v1(started(), { log_dir: "/old/place", version: "0.1.0", pid: 7 }) +
          v1(round(1)) +
          v1(resumed, { log_dir: "/new/place", pid: 8, version: "0.2.0" }),
      )
      const read = await withStore(f, (store) =>
        Effect.zipRight(store.append(stream, [{ event: round(2), meta: META }], 3), store.read(stream)),
      )
      expect(read.skipped).toBe(0)
      expect(read.events.map((s) => [s.event, s.meta])).toEqual([
        [started(), { log_dir: "/old/place", pid: 7, version: "0.1.0" }],
        [round(1), null],
        [resumed, { log_dir: "/new/place", pid: 8, version: "0.2.0" }],
        [round(2), META],
      ])
    })

    test("an event or meta the schema refuses is not written", async () => {
      const { f, stream } = fresh()
      await withStore(f, (store) => store.append(stream, [started()], 0))
      const before = f.rawText(stream)
      const bad: ReadonlyArray<Event> = [
        { ...round(1), time: "2025-06-01 12:00" },
        { ...round(1), round: -1 } as Event,
        { ...round(1), round: 1.5 } as Event,
        { ...answered, label: "__proto__" },
      ]
      for (const event of bad) {
        expect(await withStore(f, (store) => Effect.flip(store.append(stream, [round(1), event], 1)))).toMatchObject({
          reason: "invalid_event",
        })
      }
      expect(
        await withStore(f, (store) => Effect.flip(store.append(stream, [{ event: round(1), meta: { ...META, pid: -1 } }], 1))),
      ).toMatchObject({
        reason: "invalid_event",
      })
      expect(f.rawText(stream)).toBe(before)
    })

    test("appends from concurrent fibers, each retrying on conflict, land once each and never interleave", async () => {
      const { f, stream } = fresh()
      const read = await withStore(f, (store) =>
        Effect.gen(function* () {
          yield* store.append(stream, [started()], 0)
          const appendOne = (n: number): Effect.Effect<void> =>
            Effect.flatMap(Effect.orDie(store.read(stream)), (r) =>
              store.append(stream, [round(n)], r.version).pipe(
                Effect.catchTag("EventStoreConflict", () => Effect.zipRight(Effect.yieldNow(), appendOne(n))),
                Effect.orDie,
                Effect.asVoid,
              ),
            )
          yield* Effect.forEach(
            Array.from({ length: 100 }, (_, i) => i + 1),
            appendOne,
            { concurrency: "unbounded", discard: true },
          )
          return yield* store.read(stream)
        }),
      )
      expect(read.skipped).toBe(0)
      expect(read.events.map((s) => (s.event._tag === "round_started" ? s.event.round : 0)).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 101 }, (_, i) => i),
      )
      expect(read.events.map((s) => s.position)).toEqual(Array.from({ length: 101 }, (_, i) => i))
    })

    test("reading never fails on what the lines hold, and counts every non-blank line", async () => {
      const eventLine = fc.constantFrom(started(), round(3), answered, finished).map(encodeEventLine)
      const someLine = fc
        .oneof(
          fc.string(),
          fc.string({ unit: "binary" }),
          fc.json(),
          eventLine,
          eventLine.map((l) => l.slice(0, -3)),
        )
        .map((l) => l.replaceAll("\n", ""))
      await fc.assert(
        fc.asyncProperty(fc.array(someLine, { maxLength: 12 }), fc.boolean(), async (lines, newlineAtEnd) => {
          const { f, stream } = fresh()
          const text = lines.join("\n") + (newlineAtEnd ? "\n" : "")
          f.rawAppend(stream, text)
          const read = await withStore(f, (store) => store.read(stream))
          const nonBlank = text.split("\n").filter((l) => l.trim() !== "").length
          expect(read.events.length + read.skipped).toBe(nonBlank)
          expect(read.version).toBe(read.events.length)
        }),
        { numRuns: 60 },
      )
    }, 60_000)

    test("fold gives what read gives: the fold of its events, its counts, its first event; in chunks of any size", async () => {
      const eventLine = fc.constantFrom(started(), round(3), round(1), answered, finished).map(encodeEventLine)
      const someLine = fc
        .oneof(
          eventLine,
          eventLine,
          eventLine.map((l) => l.slice(0, -3)),
          fc.string(),
        )
        .map((l) => l.replaceAll("\n", ""))
      await fc.assert(
        fc.asyncProperty(
          fc.array(someLine, { maxLength: 14 }),
          fc.boolean(),
          fc.integer({ min: 1, max: 400 }),
          async (lines, newlineAtEnd, chunk) => {
            const { f, stream } = fresh()
            f.rawAppend(stream, lines.join("\n") + (newlineAtEnd ? "\n" : ""))
            const { events, ...read } = await withStore(f, (store) => store.read(stream))
            const positions = (seen: ReadonlyArray<number>, s: { readonly position: number }) => [...seen, s.position]
            // A store that has not read the stream reads it in chunks; one that has folds what it holds.
            const cold = await withStore(f, (store) => store.fold(stream, [] as ReadonlyArray<number>, positions), { foldChunk: chunk })
            const warm = await withStore(f, (store) =>
              Effect.zipRight(store.read(stream), store.fold(stream, [] as ReadonlyArray<number>, positions)),
            )
            const expected = { ...read, state: events.map((s) => s.position), first: events[0] ?? null }
            expect(cold).toEqual(expected)
            expect(warm).toEqual(expected)
          },
        ),
        { numRuns: 80 },
      )
      const { f, stream: none } = fresh()
      expect(await withStore(f, (store) => Effect.flip(store.fold(none, 0, (n) => n + 1)))).toMatchObject({
        _tag: "EventStoreError",
        reason: "missing",
      })
    }, 60_000)
  })
