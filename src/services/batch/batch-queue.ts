/**
 * A shared batch's items in Postgres: the queue (pg-boss) and the results table.
 *
 * Each item is one pg-boss job on the queue `massgen_items`, its id derived
 * from the batch and the item id (so the same batch queued twice queues
 * nothing twice), its data a `QueuedItem`: the question and the item's config
 * as YAML text (workers on other machines have no copy of the file; API keys
 * are never in it, they come from each worker's environment). A dead
 * worker's jobs are taken over through their leases (`item-lease.ts`), in
 * seconds; the queue's heartbeat (`HEARTBEAT_SECONDS`, pg-boss's floor) is
 * the backstop: a job whose worker stops beating is retried once pg-boss's
 * supervisor sees it (every second), and its new worker still waits for the
 * lease.
 *
 * A session's items are one chain (`chainsOf`): only its first is queued, with
 * the rest in its data (`later`); whoever records an item's result queues the
 * next (`queueNext`, its job id fixed, so twice is once). Each carries the
 * session's items before it (`earlier`), whose results make its conversation
 * (`conversationFrom`), so a session's turns run in order on any workers.
 *
 * `massgen_batch_results(batch, id, result)` holds one `BatchResult` per
 * finished item; the first insert for an item wins.
 */
import { createHash } from "node:crypto"
import type { SQL } from "bun"
import { PgBoss } from "pg-boss"
import type { BatchResult } from "../../domain/batch.ts"
import type { ConversationMessage } from "../../domain/events/index.ts"
import { clientFor, ensureTables, withReconnect } from "../event-store/postgres.ts"

export const QUEUE = "massgen_items"

export interface QueuedItem {
  readonly batch: string
  readonly id: string
  readonly question: string
  readonly configYaml: string
  readonly configPath: string
  readonly sessionId: string | null
  readonly metadata: unknown
  /** The session's items before this one, in file order (absent: none). */
  readonly earlier?: ReadonlyArray<{ readonly id: string; readonly question: string }>
  /** The session's items after this one, queued one at a time (absent: none). */
  readonly later?: ReadonlyArray<QueuedItem>
}

/** A uuid made from the batch and the item: the job's id. */
const jobId = (batch: string, id: string): string => {
  const h = createHash("sha256").update(`${batch}\u0000${id}`).digest("hex")
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`
}

/** The jobs' heartbeat, in seconds: pg-boss's floor. */
export const HEARTBEAT_SECONDS = 10

export const openQueue = async (url: string): Promise<PgBoss> => {
  const boss = new PgBoss({ connectionString: url, superviseIntervalSeconds: 1, monitorIntervalSeconds: 1 } as ConstructorParameters<
    typeof PgBoss
  >[0])
  boss.on("error", () => undefined)
  await withReconnect(30_000, () => boss.start())
  await withReconnect(30_000, async () => {
    if ((await boss.getQueue(QUEUE)) === null) {
      await boss.createQueue(QUEUE, { heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 1000, retryDelay: 0 } as Parameters<
        PgBoss["createQueue"]
      >[1])
    }
  })
  await withReconnect(30_000, () => ensureResultsTable(clientFor(url)))
  return boss
}

const ensureResultsTable = (sql: SQL) =>
  ensureTables(sql, [
    "CREATE TABLE IF NOT EXISTS massgen_batch_results (batch text NOT NULL, id text NOT NULL, result jsonb NOT NULL, PRIMARY KEY (batch, id))",
  ])

/** Queues the first item of each chain, the rest of the chain in its data, each knowing the items before it. */
export const enqueue = async (boss: PgBoss, chains: ReadonlyArray<ReadonlyArray<QueuedItem>>): Promise<void> => {
  for (const chain of chains) {
    const linked = chain.map((item, i) => ({ ...item, earlier: chain.slice(0, i).map((e) => ({ id: e.id, question: e.question })) }))
    await boss.send(QUEUE, { ...linked[0]!, later: linked.slice(1) } as unknown as object, { id: jobId(linked[0]!.batch, linked[0]!.id) })
  }
}

/** Queues the item after `item` in its session, if any (once however often it is asked). */
export const queueNext = async (boss: PgBoss, item: QueuedItem): Promise<void> => {
  const [next, ...rest] = item.later ?? []
  if (next !== undefined)
    await withReconnect(30_000, () => boss.send(QUEUE, { ...next, later: rest } as unknown as object, { id: jobId(next.batch, next.id) }))
}

/** The conversation `item` continues: the question and answer of each earlier item of its session that has an answer. */
export const conversationFrom = async (url: string, item: QueuedItem): Promise<ReadonlyArray<ConversationMessage>> => {
  const earlier = item.earlier ?? []
  if (earlier.length === 0) return []
  const answers = new Map(
    (
      await resultsOf(
        url,
        item.batch,
        earlier.map((e) => e.id),
      )
    ).map((r) => [r.id, r.answer]),
  )
  return earlier.flatMap((e) => {
    const answer = answers.get(e.id)
    return typeof answer === "string"
      ? [
          { role: "user" as const, content: e.question },
          { role: "assistant" as const, content: answer },
        ]
      : []
  })
}

export const recordResult = (url: string, batch: string, result: BatchResult): Promise<unknown> =>
  withReconnect(
    30_000,
    () =>
      clientFor(
        url,
      )`INSERT INTO massgen_batch_results (batch, id, result) VALUES (${batch}, ${result.id}, ${JSON.stringify(result)}::jsonb) ON CONFLICT DO NOTHING`,
  )

/** The results of `batch`'s items, or of those of them in `ids`, by id. */
export const resultsOf = async (url: string, batch: string, ids?: ReadonlyArray<string>): Promise<ReadonlyArray<BatchResult>> => {
  const sql = clientFor(url)
  const rows: Array<{ result: BatchResult | string }> = await withReconnect(30_000, () =>
    ids === undefined
      ? sql`SELECT result FROM massgen_batch_results WHERE batch = ${batch} ORDER BY id`
      : sql`SELECT result FROM massgen_batch_results WHERE batch = ${batch} AND id IN ${sql(ids as Array<string>)} ORDER BY id`,
  )
  return rows.map((r) => (typeof r.result === "string" ? (JSON.parse(r.result) as BatchResult) : r.result))
}

/**
 * How many of `batch`'s jobs are in each pg-boss state (`created`, `active`,
 * `retry`, `completed`, `failed`...), and `later`: the items of sessions not
 * queued yet, behind a job that is not done.
 */
export const jobStates = async (url: string, batch: string): Promise<Readonly<Record<string, number>>> => {
  const rows: Array<{ state: string; n: number | string; later: number | string | null }> = await withReconnect(
    30_000,
    () =>
      clientFor(
        url,
      )`SELECT state::text AS state, count(*) AS n, sum(CASE WHEN state::text IN ('created', 'retry', 'active') THEN coalesce(jsonb_array_length(data->'later'), 0) ELSE 0 END) AS later FROM pgboss.job WHERE name = ${QUEUE} AND data->>'batch' = ${batch} GROUP BY state`,
  )
  return { ...Object.fromEntries(rows.map((r) => [r.state, Number(r.n)])), later: rows.reduce((n, r) => n + Number(r.later ?? 0), 0) }
}

/** Every stream of `batch`'s items in the shared log, by item id, as the text of its events. */
export const streamsOf = async (url: string, batch: string): Promise<ReadonlyMap<string, string>> => {
  const prefix = `${batch}/items/`
  const rows: Array<{ stream: string; text: Uint8Array }> = await withReconnect(
    30_000,
    () =>
      clientFor(url)`SELECT stream, text FROM massgen_event_chunks WHERE left(stream, ${prefix.length}) = ${prefix} ORDER BY stream, seq`,
  )
  const out = new Map<string, string>()
  for (const r of rows) {
    const id = r.stream.slice(prefix.length)
    out.set(id, (out.get(id) ?? "") + Buffer.from(r.text).toString("utf8"))
  }
  return out
}
