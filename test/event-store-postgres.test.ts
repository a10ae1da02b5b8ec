/**
 * The event store's Postgres layer (`services/event-store/postgres.ts`) on a
 * server of the test's own (`support/postgres.ts`): the shared suite, then what
 * only a shared log does: two processes' stores on one stream (the second
 * writer at a version gets a conflict and writes nothing), and a server
 * restart between appends (the store connects again).
 */
import { describe, expect, test } from "bun:test"
import { Context, Effect, Layer } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import { EventStore, type EventStoreService, eventsOf } from "../src/services/event-store/index.ts"
import { CHUNKS_TABLE, postgresEventStore } from "../src/services/event-store/postgres.ts"
import { eventStoreSuite, type StoreFixture } from "./support/event-store-suite.ts"
import { postgresForFile, type TestPostgres } from "./support/postgres.ts"

let pg: TestPostgres
postgresForFile((server) => (pg = server))

let bases = 0
const quoted = (text: string) => `$massgen_q$${text}$massgen_q$`

const pgFixture = (): StoreFixture => {
  bases += 1
  return {
    base: `/pg/base${bases}`,
    layer: (options = {}) => postgresEventStore(pg.url, { pollMs: 20, ...options }),
    rawAppend: (stream, text) =>
      void pg.psql(
        `INSERT INTO ${CHUNKS_TABLE} (stream, seq, text) SELECT ${quoted(stream)}, coalesce(max(seq), 0) + 1, decode('${Buffer.from(text, "utf8").toString("hex")}', 'hex') FROM ${CHUNKS_TABLE} WHERE stream = ${quoted(stream)}`,
      ),
    rawText: (stream) =>
      Buffer.from(
        pg
          .psql(`SELECT encode(string_agg(text, ''::bytea ORDER BY seq), 'hex') FROM ${CHUNKS_TABLE} WHERE stream = ${quoted(stream)}`)
          .trim(),
        "hex",
      ).toString("utf8"),
  }
}

eventStoreSuite("postgres", pgFixture)

const TIME = "2025-06-01T12:00:00.000Z"
const round = (n: number): Event => ({
  _tag: "round_started",
  time: TIME,
  agent: "agent_0",
  round: n,
  shown: [],
  vote_only: false,
  restart: false,
})
const roundOf = (e: Event): number => (e._tag === "round_started" ? e.round : -1)

/** Runs `body` with two stores of their own on the same server, as two workers have. */
const twoStores = <A, E>(body: (a: EventStoreService, b: EventStoreService) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const a = yield* Layer.build(postgresEventStore(pg.url)).pipe(Effect.map(Context.get(EventStore)))
      const b = yield* Layer.build(postgresEventStore(pg.url)).pipe(Effect.map(Context.get(EventStore)))
      return yield* body(a, b)
    }).pipe(Effect.scoped),
  )

describe("EventStore (postgres): a shared log", () => {
  test("two stores (two workers) on one stream: the second writer at one version finds the conflict at its barrier, and every later append fails", async () => {
    const stream = "/pg/shared/log_20260101_000000_000001"
    const outcome = await twoStores((a, b) =>
      Effect.gen(function* () {
        expect(yield* a.read(stream).pipe(Effect.either)).toMatchObject({ _tag: "Left" })
        expect(yield* b.append(stream, [round(1)], 0)).toBe(1)
        yield* b.settled(stream)
        // a's mirror is behind: its append is taken, and refused when it is flushed.
        expect(yield* a.append(stream, [round(2)], 0)).toBe(1)
        const barrier = yield* Effect.flip(a.settled(stream))
        const later = yield* Effect.flip(a.append(stream, [round(3)], 1))
        const again = yield* Effect.flip(a.settled(stream))
        return {
          barrier,
          later,
          again,
          mine: eventsOf(yield* a.read(stream)).map(roundOf),
          theirs: eventsOf(yield* b.read(stream)).map(roundOf),
        }
      }),
    )
    expect(outcome).toMatchObject({
      barrier: { _tag: "EventStoreConflict", expected: 0, actual: 1 },
      later: { _tag: "EventStoreConflict", expected: 1 },
      again: { _tag: "EventStoreConflict" },
      mine: [1],
      theirs: [1],
    })
    expect(pg.psql(`SELECT count(*) FROM ${CHUNKS_TABLE} WHERE stream = ${quoted(stream)}`).trim()).toBe("1")
  })

  test("appends before a barrier are all in the table after it, in order, in fewer rows than appends", async () => {
    const stream = "/pg/shared/log_20260101_000000_000003"
    await twoStores((a) =>
      Effect.gen(function* () {
        for (let n = 0; n < 50; n++) expect(yield* a.append(stream, [round(n)], n)).toBe(n + 1)
        yield* a.settled(stream)
      }),
    )
    const rows = Number(pg.psql(`SELECT count(*) FROM ${CHUNKS_TABLE} WHERE stream = ${quoted(stream)}`).trim())
    expect(rows).toBeLessThan(50)
    expect(rows).toBeGreaterThan(0)
    const text = Buffer.from(
      pg
        .psql(`SELECT encode(string_agg(text, ''::bytea ORDER BY seq), 'hex') FROM ${CHUNKS_TABLE} WHERE stream = ${quoted(stream)}`)
        .trim(),
      "hex",
    ).toString("utf8")
    expect(
      text
        .trimEnd()
        .split("\n")
        .map((l) => (JSON.parse(l) as { round: number }).round),
    ).toEqual(Array.from({ length: 50 }, (_, n) => n))
    // Another process reads them all.
    expect(await twoStores((_, b) => Effect.map(b.read(stream), (r) => eventsOf(r).map(roundOf)))).toEqual(
      Array.from({ length: 50 }, (_, n) => n),
    )
  })

  test("a server restart between appends: the store connects again and appends", async () => {
    const stream = "/pg/shared/log_20260101_000000_000002"
    const rounds = await twoStores((a) =>
      Effect.gen(function* () {
        yield* a.append(stream, [round(1)], 0)
        yield* a.settled(stream)
        pg.restart()
        yield* a.append(stream, [round(2)], 1)
        return eventsOf(yield* a.read(stream)).map(roundOf)
      }),
    )
    expect(rounds).toEqual([1, 2])
  }, 60_000)

  test("a server restart while appends are queued: the flusher connects again, and the barrier finds them all in order", async () => {
    const stream = "/pg/shared/log_20260101_000000_000004"
    await twoStores((a) =>
      Effect.gen(function* () {
        for (let n = 0; n < 10; n++) yield* a.append(stream, [round(n)], n)
        // The first flush is under way or queued: the server goes away under it.
        pg.restart()
        for (let n = 10; n < 20; n++) yield* a.append(stream, [round(n)], n)
        yield* a.settled(stream)
      }),
    )
    const fresh = await twoStores((_, b) => Effect.map(b.read(stream), (r) => eventsOf(r).map(roundOf)))
    expect(fresh).toEqual(Array.from({ length: 20 }, (_, n) => n))
  }, 60_000)

  test("a process killed -9 while it appends: the table holds a prefix of its appends, every settled one in it, and another writer goes on from there", async () => {
    const stream = "/pg/shared/log_20260101_000000_000005"
    const script = `
      import { Effect } from "effect"
      import { EventStore } from ${JSON.stringify(`${import.meta.dir}/../src/services/event-store/index.ts`)}
      import { postgresEventStore } from ${JSON.stringify(`${import.meta.dir}/../src/services/event-store/postgres.ts`)}
      const round = (n) => ({ _tag: "round_started", time: ${JSON.stringify(TIME)}, agent: "agent_0", round: n, shown: [], vote_only: false, restart: false })
      await Effect.runPromise(Effect.gen(function* () {
        const store = yield* EventStore
        for (let n = 0; ; n++) {
          yield* store.append(${JSON.stringify(stream)}, [round(n)], n)
          if (n % 10 === 9) {
            yield* store.settled(${JSON.stringify(stream)})
            process.stdout.write("settled " + (n + 1) + "\\n")
          }
        }
      }).pipe(Effect.provide(postgresEventStore(${JSON.stringify(pg.url)}))))
    `
    const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" })
    let settled = 0
    let seen = ""
    const reader = child.stdout.getReader()
    while (settled < 200) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`the writer ended: ${await new Response(child.stderr).text()}`)
      seen += Buffer.from(value).toString("utf8")
      const counts = [...seen.matchAll(/settled (\d+)\n/g)].map((m) => Number(m[1]))
      settled = counts.at(-1) ?? 0
    }
    child.kill(9)
    await child.exited
    const after = await twoStores((_, b) =>
      Effect.gen(function* () {
        const read = yield* b.read(stream)
        const version = yield* b.append(stream, [round(1_000_000)], read.version)
        yield* b.settled(stream)
        return { rounds: eventsOf(read).map(roundOf), skipped: read.skipped, version }
      }),
    )
    expect(after.rounds.length).toBeGreaterThanOrEqual(settled)
    expect(after.rounds).toEqual(Array.from({ length: after.rounds.length }, (_, n) => n))
    expect({ skipped: after.skipped, version: after.version }).toEqual({ skipped: 0, version: after.rounds.length + 1 })
  }, 60_000)
})
