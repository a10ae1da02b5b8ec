/**
 * The event store's Postgres layer: every run's stream in one shared table, so
 * that any process on any machine reads and appends the same log.
 *
 * A stream's text is kept as the file layer would write it, in pieces:
 * `massgen_event_chunks(stream, seq, text)`, one row per flush (the lines of
 * the appends it carries as UTF-8 bytes, with the newline that closes a torn
 * line before them), `seq` counting from 1 per stream, `(stream, seq)` the
 * primary key. The layer keeps a mirror of every stream it touched in a memory
 * storage and is the ordinary store over it (`makeStore`), so it reads,
 * decodes, skips and folds exactly as the file and memory layers do
 * (`test/support/event-store-suite.ts` holds it to the same contract).
 *
 * Group commit: an append is checked against the mirror and written to it at
 * once (a conflict with the mirror fails it at once; the first append of a
 * stream brings the mirror up to the table first), its text is queued, and
 * it returns. One flusher per stream writes all that is queued as the row
 * after the table's last, one round trip per flush, in order: appends that
 * come while a flush is under way go together in the next. When another
 * process appended meanwhile, that row is taken (a unique violation): the
 * stream is *lost* to this store. Its queued text is dropped, its mirror is
 * set back to the table, and every later append and barrier of it fails with
 * `EventStoreConflict`, so a stale writer (a worker that lost its item to
 * another) stops; for good: only another store (another process) writes it
 * again. A row taken whose bytes are the flush's own is its own insert, whose
 * answer a lost connection cut off. A flush that fails otherwise fails the
 * stream the same way, with `EventStoreError` `write_failed`. Appends take no
 * lock: from the check to the queueing an append is one synchronous step
 * (`appendNow`), which no other append, pull or loss comes into.
 *
 * The barrier, `settled(stream)`, waits until every append of the stream so
 * far is in the table, or fails with what its flush failed with. Durability
 * contract: what an effect outside the process depends on (a model call, a
 * tool call, a context path write, the run's end) is settled before it
 * happens; the orchestrator settles after each append of an event that
 * announces one (`announcesEffect`). So a process killed with queued appends
 * loses only events nothing acted on yet. A read (and a poll of `subscribe`,
 * `list`) pulls the rows past its mirror's (and reads its own appends, settled
 * or not). Closing the layer flushes what is queued.
 *
 * A lost connection (the server restarted) is tried again, every 200 ms, for
 * `reconnectMs` (30 s); then the operation fails with `EventStoreError`. A
 * command's first word with a server is not tried again (`reachServer`): one
 * that cannot be reached at start is a `DatabaseError` at once, naming the
 * host and the cause (`postgres-errors.ts`).
 *
 * The schema lock: every statement that makes one of massgen's tables (this
 * one, `massgen_run_files`, `massgen_batch_results`) runs through
 * `ensureTables`, in a transaction that first takes the transaction-level
 * advisory lock `SCHEMA_LOCK_KEY`, one fixed key for every massgen process on
 * the database: one process makes the tables, the others wait, then find
 * them. (Two `CREATE TABLE IF NOT EXISTS` of one table at once are not safe
 * in Postgres: the loser fails on the catalog's `pg_type_typname_nsp_index`.)
 * Bun's own Postgres client (`bun`'s `SQL`) talks to the server: no dependency.
 * A process keeps one connection pool per server (`clientFor`), for all its
 * stores: a connection costs a server process, hundreds of ms on a busy machine.
 */
import { SQL } from "bun"
import { Chunk, Duration, Effect, Either, Layer, Stream } from "effect"
import { codeOf, connectionError, messageOf } from "./postgres-errors.ts"
import { memoryStorage } from "./storage.ts"
import { EventStore, makeStore, type StoreOptions } from "./store.ts"
import { EventStoreConflict, EventStoreError, type EventStoreFailure, type EventStoreService } from "./types.ts"

export { codeOf, DatabaseError, messageOf, setupError } from "./postgres-errors.ts"

export const CHUNKS_TABLE = "massgen_event_chunks"

export interface PostgresStoreOptions extends StoreOptions {
  /**
   * Streams are named in the table by their path under this directory
   * (`<batch>/items/<id>`), so that workers whose log directories are in
   * different places share one stream; absent: by the whole path.
   */
  readonly root?: string
  /** How long a lost connection is tried again before an operation fails, in ms. */
  readonly reconnectMs?: number
}

const UNIQUE_VIOLATION = "23505"

export const isUniqueViolation = (e: unknown): boolean => codeOf(e) === UNIQUE_VIOLATION

/**
 * A failure that trying again does not mend: a unique violation, or a statement the server refuses
 * as such (SQLSTATE classes 42 and 3F: a table or schema that does not exist, a syntax error).
 */
const isFinal = (e: unknown): boolean => isUniqueViolation(e) || /^(42|3F)/.test(codeOf(e) ?? "")

/** `work`, tried again while it fails other than finally (`isFinal`), for `ms` at most. */
export const withReconnect = async <A>(ms: number, work: () => Promise<A>): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return await work()
    } catch (e) {
      if (isFinal(e) || Date.now() >= deadline) throw e
      await Bun.sleep(200)
    }
  }
}

/** The advisory lock massgen's table set-up holds (`ensureTables`): `massgen\0` as a 64-bit number. */
export const SCHEMA_LOCK_KEY = BigInt("0x6d61737367656e00").toString()

/** Runs `statements` in one transaction, under the schema lock. */
export const ensureTables = (sql: SQL, statements: ReadonlyArray<string>): Promise<unknown> =>
  sql.begin(async (tx) => {
    await tx.unsafe(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`)
    for (const statement of statements) await tx.unsafe(statement)
  })

export const ensureChunksTable = (sql: SQL): Promise<unknown> =>
  ensureTables(sql, [
    `CREATE TABLE IF NOT EXISTS ${CHUNKS_TABLE} (stream text NOT NULL, seq integer NOT NULL, text bytea NOT NULL, PRIMARY KEY (stream, seq))`,
  ])

const clients = new Map<string, SQL>()
const tables = new Map<string, Promise<unknown>>()

/** This process's connection pool to `url`, open until the process exits. */
export const clientFor = (url: string): SQL => {
  let client = clients.get(url)
  if (client === undefined) {
    client = new SQL(url)
    clients.set(url, client)
  }
  return client
}

/** Asks `url`'s server once (no second try): fails with the `DatabaseError` naming its host and why. */
export const reachServer = async (url: string): Promise<void> => {
  try {
    await clientFor(url)`SELECT 1`
  } catch (e) {
    throw await connectionError(url, e)
  }
}

const tableReady = (url: string, sql: SQL): Promise<unknown> => {
  let ready = tables.get(url)
  if (ready === undefined) {
    ready = ensureChunksTable(sql).catch((e) => {
      tables.delete(url)
      throw e
    })
    tables.set(url, ready)
  }
  return ready
}

/** What the store knows of a stream's rows: the table's part of its mirror, and what is queued past it. */
interface Rows {
  /** The last row of the table the mirror holds. */
  seq: number
  /** How much of the mirror's text is in the table (the rest is queued or being flushed). */
  committed: number
  /** Text appended to the mirror and not yet flushed. */
  queued: string
  /** The version the first queued append expected: what a conflict at its flush names. */
  expected: number
  /** The flush under way, which goes on while anything is queued. */
  flushing: Promise<void> | null
  /** Why the stream is lost to this store, for good. */
  failed: EventStoreFailure | null
  /** The mirror was brought up to the table once: a first append pulls before it checks. */
  pulled: boolean
}

/** How a stream (or log directory) is named in a shared table: its path under `root`, or its whole path when it is not under it. */
export const keyUnder =
  (root: string | undefined) =>
  (stream: string): string =>
    root !== undefined && stream.startsWith(`${root}/`) ? stream.slice(root.length + 1) : stream

/** The store over the shared table at `url`; closing the layer flushes what is queued. */
export const postgresEventStore = (url: string, options: PostgresStoreOptions = {}): Layer.Layer<EventStore> =>
  Layer.scoped(
    EventStore,
    Effect.gen(function* () {
      const reconnectMs = options.reconnectMs ?? 30_000
      const root = options.root
      const keyOf = keyUnder(root)
      const client = (): SQL => clientFor(url)
      yield* Effect.promise(() => withReconnect(reconnectMs, () => tableReady(url, client())))
      const texts = new Map<string, string>()
      const rows = new Map<string, Rows>()
      const pollMs = options.pollMs ?? 250
      const mirror = memoryStorage(texts, pollMs)
      /** What the mirror's last write added: an append's text, without cutting it from the whole stream. */
      let written = ""
      const inner = makeStore(
        {
          ...mirror,
          write: (stream, text) => {
            mirror.write(stream, text)
            written = text
          },
        },
        options.foldChunk,
      )

      const rowsOf = (stream: string): Rows => {
        let r = rows.get(stream)
        if (r === undefined) {
          r = { seq: 0, committed: 0, queued: "", expected: 0, flushing: null, failed: null, pulled: false }
          rows.set(stream, r)
        }
        return r
      }
      const versionOf = (stream: string): number =>
        Effect.runSync(Effect.map(Effect.either(inner.read(stream)), (r) => (r._tag === "Right" ? r.right.version : 0)))

      const failure = (stream: string, reason: "unreadable" | "write_failed") => (e: unknown) =>
        new EventStoreError({ reason, stream, detail: `postgres: ${messageOf(e)}` })

      const select = (stream: string, after: number): Promise<Array<{ seq: number; text: Uint8Array }>> =>
        withReconnect(
          reconnectMs,
          () => client()`SELECT seq, text FROM massgen_event_chunks WHERE stream = ${keyOf(stream)} AND seq > ${after} ORDER BY seq`,
        )

      /** Sets the mirror of `stream` to `text` (the store reads a stream that shrank again whole). */
      const setMirror = (stream: string, text: string | undefined): void => {
        texts.set(stream, "")
        Effect.runSync(Effect.ignore(inner.read(stream)))
        if (text === undefined) texts.delete(stream)
        else texts.set(stream, text)
      }

      /** Adds the rows read past the mirror's last (nothing is queued). */
      const take = (stream: string, r: Rows, fresh: ReadonlyArray<{ seq: number; text: Uint8Array }>): void => {
        const next = fresh.filter((row) => row.seq > r.seq)
        if (next.length === 0) return
        texts.set(stream, (texts.get(stream) ?? "") + next.map((row) => Buffer.from(row.text).toString("utf8")).join(""))
        r.seq = next[next.length - 1]!.seq
        r.committed = texts.get(stream)!.length
      }

      /** The stream is lost: what is queued is dropped, the mirror is the table's again, and `failed` says why from now on. */
      const lose = async (stream: string, r: Rows, error: unknown, expected: number): Promise<void> => {
        const conflict = isUniqueViolation(error)
        const fresh = conflict ? await select(stream, r.seq).catch(() => []) : []
        // One step from here on: no append comes in between.
        const kept = (texts.get(stream) ?? "").slice(0, r.committed)
        setMirror(stream, r.seq === 0 && kept === "" ? undefined : kept)
        r.queued = ""
        take(stream, r, fresh)
        r.failed = conflict
          ? new EventStoreConflict({ reason: "conflict", stream, expected, actual: versionOf(stream) })
          : failure(stream, "write_failed")(error)
      }

      const isOurs = (stream: string, seq: number, text: string): Promise<boolean> =>
        withReconnect(
          reconnectMs,
          (): Promise<Array<{ text: Uint8Array }>> =>
            client()`SELECT text FROM massgen_event_chunks WHERE stream = ${keyOf(stream)} AND seq = ${seq}`,
        ).then(
          (found) => found.length === 1 && Buffer.from(found[0]!.text).equals(Buffer.from(text, "utf8")),
          () => false,
        )

      /** Writes what is queued, a row per round trip, until nothing is. */
      const flush = async (stream: string, r: Rows): Promise<void> => {
        await Promise.resolve()
        for (;;) {
          if (r.queued === "" || r.failed !== null) {
            r.flushing = null
            return
          }
          const text = r.queued
          const expected = r.expected
          r.queued = ""
          const seq = r.seq + 1
          try {
            await withReconnect(
              reconnectMs,
              () =>
                client()`INSERT INTO massgen_event_chunks (stream, seq, text) VALUES (${keyOf(stream)}, ${seq}, ${Buffer.from(text, "utf8")})`,
            )
            r.seq = seq
            r.committed += text.length
          } catch (e) {
            // A row taken by this very insert, whose answer a lost connection cut off, is this flush's.
            if (isUniqueViolation(e) && (await isOurs(stream, seq, text))) {
              r.seq = seq
              r.committed += text.length
              continue
            }
            await lose(stream, r, e, expected)
            r.flushing = null
            return
          }
        }
      }

      /** Until nothing of `stream` is queued or being flushed. */
      const drain = async (r: Rows): Promise<void> => {
        while (r.flushing !== null) await r.flushing
      }

      const settled = (stream: string): Effect.Effect<void, EventStoreFailure> =>
        Effect.suspend(() => {
          const r = rows.get(stream)
          if (r === undefined) return Effect.void
          return Effect.flatMap(
            Effect.promise(() => drain(r)),
            () => (r.failed === null ? Effect.void : Effect.fail(r.failed)),
          )
        })

      /**
       * Brings the mirror of `stream` up to the shared table. While appends of its own are queued or being
       * flushed, rows of another writer cannot go after them: those appends are lost (their flush finds
       * the row taken and sets the mirror back), and the mirror waits for that.
       */
      const pull = (stream: string) =>
        Effect.tryPromise({
          try: async () => {
            const r = rowsOf(stream)
            const fresh = await select(stream, r.seq)
            if (r.queued !== "" || r.flushing !== null) return
            take(stream, r, fresh)
            r.pulled = true
          },
          catch: failure(stream, "unreadable"),
        })

      /** Appends to the mirror and queues the text; a stream not pulled yet is pulled first. */
      const appendOnce = (
        stream: string,
        events: Parameters<EventStoreService["append"]>[1],
        expected: number,
      ): Effect.Effect<number, EventStoreFailure> =>
        Effect.suspend(() => {
          const r = rowsOf(stream)
          return r.pulled
            ? appendNow(stream, r, events, expected)
            : Effect.zipRight(
                pull(stream),
                Effect.suspend(() => appendNow(stream, r, events, expected)),
              )
        })

      /** An append; one that the mirror refuses is tried once more after a pull (the mirror may be behind the table). */
      const append = (
        stream: string,
        events: Parameters<EventStoreService["append"]>[1],
        expected: number,
      ): Effect.Effect<number, EventStoreFailure> =>
        Effect.suspend(() => {
          const r = rowsOf(stream)
          if (!r.pulled)
            return Effect.catchTag(appendOnce(stream, events, expected), "EventStoreConflict", (e) => retry(stream, e, events, expected))
          const appended = appendNow(stream, r, events, expected)
          return Either.isLeft(appended) && appended.left._tag === "EventStoreConflict"
            ? retry(stream, appended.left, events, expected)
            : appended
        })

      const retry = (stream: string, e: EventStoreConflict, events: Parameters<EventStoreService["append"]>[1], expected: number) =>
        rowsOf(stream).failed !== null ? Effect.fail(e) : Effect.zipRight(pull(stream), appendOnce(stream, events, expected))

      /** One synchronous step from the check to the queueing: no other append, pull or loss comes in between. */
      const appendNow = (
        stream: string,
        r: Rows,
        events: Parameters<EventStoreService["append"]>[1],
        expected: number,
      ): Either.Either<number, EventStoreFailure> => {
        if (r.failed !== null) return Either.left(lostFailure(stream, r.failed, expected))
        written = ""
        const appended = inner.appendNow(stream, events, expected)
        if (written === "") return appended
        if (r.queued === "") r.expected = expected
        r.queued += written
        r.flushing ??= flush(stream, r)
        return appended
      }

      const lostFailure = (stream: string, failed: EventStoreFailure, expected: number): EventStoreFailure =>
        failed._tag === "EventStoreConflict"
          ? new EventStoreConflict({ reason: "conflict", stream, expected, actual: versionOf(stream) })
          : failed

      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([...rows.values()].map(drain))))

      const service: EventStoreService = {
        // No lock: from the check to the queueing, an append is one synchronous step, as the mirror's own.
        append,
        settled,
        read: (stream, from) => Effect.zipRight(pull(stream), inner.read(stream, from)),
        fold: (stream, init, f) => Effect.zipRight(pull(stream), inner.fold(stream, init, f)),
        subscribe: (stream, from) => {
          let next = from
          const batch = Effect.gen(function* () {
            yield* pull(stream)
            const read = yield* Effect.either(inner.read(stream, next))
            const fresh = read._tag === "Right" ? read.right.events : []
            if (fresh.length === 0) {
              yield* Effect.sleep(Duration.millis(pollMs))
              return Chunk.empty()
            }
            next = fresh[fresh.length - 1]!.position + 1
            return Chunk.unsafeFromArray(fresh)
          })
          return Stream.repeatEffectChunk(batch)
        },
        list: (base, limit) =>
          Effect.gen(function* () {
            const prefix = `${base.replace(/[\\%_]/g, (c) => `\\${c}`)}/log\\_%`
            const found = yield* Effect.tryPromise(
              (): Promise<Array<{ stream: string }>> =>
                client()`SELECT DISTINCT stream FROM massgen_event_chunks WHERE stream LIKE ${prefix}`,
            ).pipe(Effect.orElseSucceed(() => []))
            for (const { stream } of found) if (!stream.slice(base.length + 1).includes("/")) yield* Effect.ignore(pull(stream))
            return yield* inner.list(base, limit)
          }),
      }
      return service
    }),
  )
