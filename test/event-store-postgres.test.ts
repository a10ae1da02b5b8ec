/**
 * The event store's Postgres layer (`services/event-store-postgres.ts`) on a
 * server of the test's own (`support/postgres.ts`): the shared suite, then what
 * only a shared log does: two processes' stores on one stream (the second
 * writer at a version gets a conflict and writes nothing), and a server
 * restart between appends (the store connects again).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Context, Effect, Layer } from "effect"
import type { Event } from "../src/domain/events.ts"
import { EventStore, type EventStoreService, eventsOf } from "../src/services/event-store.ts"
import { CHUNKS_TABLE, postgresEventStore } from "../src/services/event-store-postgres.ts"
import { type StoreFixture, eventStoreSuite } from "./support/event-store-suite.ts"
import { type TestPostgres, startPostgres } from "./support/postgres.ts"

let pg: TestPostgres
beforeAll(async () => {
  pg = await startPostgres()
}, 60_000)
afterAll(() => pg?.stop())

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
      Buffer.from(pg.psql(`SELECT encode(string_agg(text, ''::bytea ORDER BY seq), 'hex') FROM ${CHUNKS_TABLE} WHERE stream = ${quoted(stream)}`).trim(), "hex").toString("utf8"),
  }
}

eventStoreSuite("postgres", pgFixture)

const TIME = "2025-06-01T12:00:00.000Z"
const round = (n: number): Event => ({ _tag: "round_started", time: TIME, agent: "agent_0", round: n, shown: [], vote_only: false, restart: false })

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
  test("two stores (two workers) on one stream: the second append at one version is a conflict and writes nothing", async () => {
    const stream = "/pg/shared/log_20260101_000000_000001"
    const outcome = await twoStores((a, b) =>
      Effect.gen(function* () {
        expect(yield* a.read(stream).pipe(Effect.either)).toMatchObject({ _tag: "Left" })
        expect(yield* b.append(stream, [round(1)], 0)).toBe(1)
        const lost = yield* Effect.either(a.append(stream, [round(2)], 0))
        const won = yield* a.append(stream, [round(3)], 1)
        return { lost: lost._tag === "Left" ? lost.left : null, won, rounds: eventsOf(yield* b.read(stream)).map((e) => (e._tag === "round_started" ? e.round : 0)) }
      }),
    )
    expect(outcome).toMatchObject({ lost: { _tag: "EventStoreConflict", expected: 0, actual: 1 }, won: 2, rounds: [1, 3] })
  })

  test("a server restart between appends: the store connects again and appends", async () => {
    const stream = "/pg/shared/log_20260101_000000_000002"
    const rounds = await twoStores((a) =>
      Effect.gen(function* () {
        yield* a.append(stream, [round(1)], 0)
        pg.restart()
        yield* a.append(stream, [round(2)], 1)
        return eventsOf(yield* a.read(stream)).map((e) => (e._tag === "round_started" ? e.round : 0))
      }),
    )
    expect(rounds).toEqual([1, 2])
  }, 60_000)
})
