/**
 * The event store's Postgres layer: every run's stream in one shared table, so
 * that any process on any machine reads and appends the same log.
 *
 * A stream's text is kept as the file layer would write it, in pieces:
 * `massgen_event_chunks(stream, seq, text)`, one row per append (its lines as
 * UTF-8 bytes, with the newline that closes a torn line before them), `seq` counting from 1
 * per stream, `(stream, seq)` the primary key. The layer keeps a mirror of
 * every stream it touched in a memory storage and is the ordinary store over
 * it (`makeStore`), so it reads, decodes, skips and folds exactly as the file
 * and memory layers do (`test/support/event-store-suite.ts` holds it to the
 * same contract). Before a read it pulls the rows past its mirror's.
 *
 * An append is checked against the mirror, written to the mirror, then
 * inserted as the row after the mirror's last: when another process appended
 * meanwhile, that row is taken (a unique violation), the append is undone in
 * the mirror, and it fails with `EventStoreConflict`. So two writers never
 * both append at one version: a worker that lost its item to another stops at
 * its next append. Appends of one process take turns (a semaphore).
 *
 * A lost connection (the server restarted) is tried again, every 200 ms, for
 * `reconnectMs` (30 s); then the operation fails with `EventStoreError`.
 * Bun's own Postgres client (`bun`'s `SQL`) talks to the server: no dependency.
 * A process keeps one connection pool per server (`clientFor`), for all its
 * stores: a connection costs a server process, hundreds of ms on a busy machine.
 */
import { SQL } from "bun"
import { Chunk, Duration, Effect, Layer, Stream } from "effect"
import { memoryStorage } from "./event-storage.ts"
import { EventStore, EventStoreConflict, EventStoreError, type EventStoreService, type StoreOptions, makeStore } from "./event-store.ts"

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

const codeOf = (e: unknown): string | undefined => {
  const o = e as { errno?: unknown; code?: unknown } | null
  return typeof o?.errno === "string" ? o.errno : typeof o?.code === "string" ? o.code : undefined
}

export const isUniqueViolation = (e: unknown): boolean => codeOf(e) === UNIQUE_VIOLATION

const messageOf = (e: unknown): string => (e instanceof Error ? e.message.split("\n")[0]! : String(e))

/** `work`, tried again while it fails other than on a unique violation, for `ms` at most. */
export const withReconnect = async <A>(ms: number, work: () => Promise<A>): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return await work()
    } catch (e) {
      if (isUniqueViolation(e) || Date.now() >= deadline) throw e
      await Bun.sleep(200)
    }
  }
}

export const ensureChunksTable = (sql: SQL): Promise<unknown> =>
  sql.unsafe(`CREATE TABLE IF NOT EXISTS ${CHUNKS_TABLE} (stream text NOT NULL, seq integer NOT NULL, text bytea NOT NULL, PRIMARY KEY (stream, seq))`)

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

/** The store over the shared table at `url`, its connections closed with the layer's scope. */
export const postgresEventStore = (url: string, options: PostgresStoreOptions = {}): Layer.Layer<EventStore> =>
  Layer.scoped(
    EventStore,
    Effect.gen(function* () {
      const reconnectMs = options.reconnectMs ?? 30_000
      const root = options.root
      const keyOf = (stream: string): string => (root !== undefined && stream.startsWith(`${root}/`) ? stream.slice(root.length + 1) : stream)
      const client = (): SQL => clientFor(url)
      yield* Effect.promise(() => withReconnect(reconnectMs, () => tableReady(url, client())))
      const texts = new Map<string, string>()
      const seqs = new Map<string, number>()
      const pollMs = options.pollMs ?? 250
      const inner = makeStore(memoryStorage(texts, pollMs), options.foldChunk)
      const turns = yield* Effect.makeSemaphore(1)

      const failure = (stream: string, reason: "unreadable" | "write_failed") => (e: unknown) =>
        new EventStoreError({ reason, stream, detail: `postgres: ${messageOf(e)}` })

      /** Brings the mirror of `stream` up to the shared table. */
      const pull = (stream: string) =>
        Effect.tryPromise({
          try: async () => {
            const after = seqs.get(stream) ?? 0
            const key = keyOf(stream)
            const rows: Array<{ seq: number; text: Uint8Array }> = await withReconnect(
              reconnectMs,
              () => client()`SELECT seq, text FROM massgen_event_chunks WHERE stream = ${key} AND seq > ${after} ORDER BY seq`,
            )
            const fresh = rows.filter((r) => r.seq > (seqs.get(stream) ?? 0))
            if (fresh.length === 0) return
            texts.set(stream, (texts.get(stream) ?? "") + fresh.map((r) => Buffer.from(r.text).toString("utf8")).join(""))
            seqs.set(stream, fresh[fresh.length - 1]!.seq)
          },
          catch: failure(stream, "unreadable"),
        })

      /** Sets the mirror of `stream` back to `text` (the store reads a stream that shrank again whole). */
      const rollBack = (stream: string, text: string | undefined) =>
        Effect.gen(function* () {
          texts.set(stream, "")
          yield* Effect.ignore(inner.read(stream))
          if (text === undefined) texts.delete(stream)
          else texts.set(stream, text)
        })

      const appendOnce = (stream: string, events: Parameters<EventStoreService["append"]>[1], expected: number) =>
        Effect.gen(function* () {
          const before = texts.get(stream)
          const version = yield* inner.append(stream, events, expected)
          const added = (texts.get(stream) ?? "").slice(before?.length ?? 0)
          if (added === "") return version
          const seq = (seqs.get(stream) ?? 0) + 1
          const inserted = yield* Effect.either(
            Effect.tryPromise({
              try: () => withReconnect(reconnectMs, () => client()`INSERT INTO massgen_event_chunks (stream, seq, text) VALUES (${keyOf(stream)}, ${seq}, ${Buffer.from(added, "utf8")})`),
              catch: (e) => e,
            }),
          )
          if (inserted._tag === "Right") {
            seqs.set(stream, seq)
            return version
          }
          yield* rollBack(stream, before)
          if (!isUniqueViolation(inserted.left)) return yield* failure(stream, "write_failed")(inserted.left)
          yield* pull(stream)
          const actual = yield* Effect.map(Effect.either(inner.read(stream)), (r) => (r._tag === "Right" ? r.right.version : 0))
          return yield* new EventStoreConflict({ reason: "conflict", stream, expected, actual })
        })

      /** A pull that waits for the appends in progress: the mirror changes in one place at a time. */
      const pullInTurn = (stream: string) => turns.withPermits(1)(pull(stream))

      const service: EventStoreService = {
        append: (stream, events, expected) =>
          turns.withPermits(1)(
            Effect.catchTag(appendOnce(stream, events, expected), "EventStoreConflict", () =>
              // The mirror may be behind the table: look, and try once more against what is there now.
              Effect.zipRight(pull(stream), appendOnce(stream, events, expected)),
            ),
          ),
        read: (stream, from) => Effect.zipRight(pullInTurn(stream), inner.read(stream, from)),
        fold: (stream, init, f) => Effect.zipRight(pullInTurn(stream), inner.fold(stream, init, f)),
        subscribe: (stream, from) => {
          let next = from
          const batch = Effect.gen(function* () {
            yield* pullInTurn(stream)
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
            const rows = yield* Effect.tryPromise(
              (): Promise<Array<{ stream: string }>> => client()`SELECT DISTINCT stream FROM massgen_event_chunks WHERE stream LIKE ${prefix}`,
            ).pipe(Effect.orElseSucceed(() => []))
            for (const { stream } of rows) if (!stream.slice(base.length + 1).includes("/")) yield* Effect.ignore(pullInTurn(stream))
            return yield* inner.list(base, limit)
          }),
      }
      return service
    }),
  )
