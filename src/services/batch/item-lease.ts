/**
 * Item leases: which worker runs a shared batch's item, told by a Postgres
 * session-level advisory lock, so that a dead worker's item is taken over in
 * about `takeoverSeconds` (pg-boss's own heartbeat cannot go under 10 s).
 *
 * A job's *lease* is the advisory lock `hashtextextended('massgen_items:' || id, 0)`,
 * held by the worker that runs the job's item, on a connection it reserves
 * for the run (`acquire`). Postgres releases a session's locks the moment the
 * session ends: a worker killed (-9 or otherwise) loses its leases at once;
 * a worker whose machine is gone loses them once the server's TCP keepalives
 * (set on these connections: idle `takeoverSeconds`, then 3 probes 1 s apart,
 * and `tcp_user_timeout`) find the peer gone.
 *
 * Every worker looks every `lookSeconds` (`sweep`) for jobs pg-boss has
 * `active` whose lease nobody holds. A job seen so on two looks in a row
 * (its lease free a look or more: its runner, if alive, has seen its loss by
 * then, below) has its lease taken for a moment to be sure, and is failed
 * through pg-boss, fenced to the attempt seen (`fail({id, retryCount})`): it
 * is retried at once (retry delay 0) by whichever worker fetches next.
 *
 * Never two runners: a run starts only under its lease, taken while the
 * job's attempt (`retry_count`) is still the current active one. A worker
 * handed an item whose lease another worker holds (pg-boss's heartbeat
 * backstop gave it away from a worker alive but slow) waits for the lease;
 * once it has it, the run is found finished or is resumed from the shared
 * log. A runner that loses its lease while it runs (its session ended: the
 * server restarted, the network cut) learns it within a look (`Lease.lost`:
 * its session checked every look) and stops, before the item is taken over;
 * and whatever the timing, the event store's fence keeps the item's stream
 * to one writer.
 */
import { SQL } from "bun"
import type { PgBoss } from "pg-boss"
import { messageOf } from "../event-store/postgres.ts"
import { QUEUE } from "./batch-queue.ts"

/** How often a worker looks for items whose worker is gone, and a runner at its lease: a quarter of the takeover bound. */
export const lookSeconds = (takeoverSeconds: number): number => takeoverSeconds / 4

const KEY_PREFIX = `${QUEUE}:`
/** How often a worker waiting for a lease another holds tries again, in ms. */
const WAIT_MS = 250

export interface JobAttempt {
  readonly id: string
  readonly retryCount: number
}

export interface Lease {
  /** Resolves (with why) once the lease is no longer held: the run must stop. */
  readonly lost: Promise<string>
  readonly release: () => Promise<void>
}

/** `held`: run the item. `stale`: the attempt was replaced meanwhile; it is not this worker's to run. `stopped`: `stop` came first. */
export type Acquired = { readonly _tag: "held"; readonly lease: Lease } | { readonly _tag: "stale" } | { readonly _tag: "stopped" }

export interface Leases {
  readonly acquire: (job: JobAttempt, stop: Promise<unknown>, onWait: () => void) => Promise<Acquired>
  /** Fails back to the queue every active job whose lease was free at this look and the last; how many. */
  readonly sweep: (boss: PgBoss) => Promise<number>
  readonly close: () => Promise<void>
}

export const openLeases = (url: string, takeoverSeconds: number, slots: number): Leases => {
  const look = lookSeconds(takeoverSeconds)
  const sql = new SQL(url, {
    max: slots + 2,
    connection: {
      application_name: "massgen-lease",
      tcp_keepalives_idle: Math.max(1, Math.ceil(takeoverSeconds)),
      tcp_keepalives_interval: 1,
      tcp_keepalives_count: 3,
      tcp_user_timeout: Math.max(1, Math.ceil(takeoverSeconds)) * 1000,
    },
  })
  let stopped = false
  /** The attempts (`id:retryCount`) whose lease was free at the last look. */
  let seenFree = new Set<string>()

  const tryLock = async (conn: SQL, id: string): Promise<boolean> => {
    const rows: Array<{ got: boolean }> = await conn`SELECT pg_try_advisory_lock(hashtextextended(${KEY_PREFIX + id}, 0)) AS got`
    return rows[0]!.got
  }
  const unlock = (conn: SQL, id: string): Promise<unknown> => conn`SELECT pg_advisory_unlock(hashtextextended(${KEY_PREFIX + id}, 0))`
  const current = async (conn: SQL, job: JobAttempt): Promise<boolean> => {
    const rows: Array<{ n: number | string }> =
      await conn`SELECT count(*) AS n FROM pgboss.job WHERE name = ${QUEUE} AND id = ${job.id}::uuid AND state = 'active' AND retry_count = ${job.retryCount}`
    return Number(rows[0]!.n) > 0
  }
  /** Gives a connection back: unlocked and to the pool, or closed (its session's locks go with it). */
  const giveBack = async (conn: Awaited<ReturnType<SQL["reserve"]>>, id: string | null) => {
    try {
      if (id !== null) await unlock(conn, id)
      await conn.release()
    } catch {
      await conn.close().catch(() => undefined)
    }
  }

  /** Calls `onLost` once `pid`'s session is gone or silent for max(2, S) seconds, checked every look; the stop of the checks. */
  const watch = (conn: SQL, pid: number, onLost: (why: string) => void): (() => void) => {
    let busy = false
    const timer = setInterval(async () => {
      if (busy) return
      busy = true
      let silent: ReturnType<typeof setTimeout> | undefined
      try {
        const rows = await Promise.race([
          conn`SELECT pg_backend_pid() AS pid` as Promise<Array<{ pid: number }>>,
          new Promise<never>(
            (_, reject) => (silent = setTimeout(() => reject(new Error("no answer from the server")), Math.max(2, takeoverSeconds) * 1000)),
          ),
        ])
        if (rows[0]!.pid !== pid) throw new Error("its session ended")
      } catch (e) {
        clearInterval(timer)
        onLost(`its lease was lost (${messageOf(e)})`)
      } finally {
        clearTimeout(silent)
        busy = false
      }
    }, look * 1000)
    return () => clearInterval(timer)
  }

  const acquire = async (job: JobAttempt, stop: Promise<unknown>, onWait: () => void): Promise<Acquired> => {
    let halted = false
    void stop.then(() => (halted = true))
    let waited = false
    while (!halted && !stopped) {
      const conn = await sql.reserve().catch(() => null)
      if (conn === null) {
        await Bun.sleep(WAIT_MS)
        continue
      }
      try {
        while (!halted && !stopped) {
          if (await tryLock(conn, job.id)) {
            if (!(await current(conn, job))) {
              await giveBack(conn, job.id)
              return { _tag: "stale" }
            }
            const [{ pid }] = (await conn`SELECT pg_backend_pid() AS pid`) as [{ pid: number }]
            let onLost: (why: string) => void = () => undefined
            const lost = new Promise<string>((resolve) => (onLost = resolve))
            const unwatch = watch(conn, pid, onLost)
            return { _tag: "held", lease: { lost, release: () => (unwatch(), giveBack(conn, job.id)) } }
          }
          if (!(await current(conn, job))) {
            await giveBack(conn, null)
            return { _tag: "stale" }
          }
          if (!waited) onWait()
          waited = true
          await Promise.race([Bun.sleep(WAIT_MS), stop])
        }
        await giveBack(conn, null)
      } catch {
        // The connection broke (a lock it took went with its session): another, after a pause.
        await conn.close().catch(() => undefined)
        await Bun.sleep(WAIT_MS)
      }
    }
    return { _tag: "stopped" }
  }

  const sweep = async (boss: PgBoss): Promise<number> => {
    const free: Array<JobAttempt> = await sql`
      SELECT j.id::text AS id, j.retry_count AS "retryCount" FROM pgboss.job j
      WHERE j.name = ${QUEUE} AND j.state = 'active'
        AND NOT EXISTS (
          SELECT 1 FROM pg_locks l
          WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
            AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended(${KEY_PREFIX} || j.id::text, 0))`
    const attempt = (job: JobAttempt) => `${job.id}:${job.retryCount}`
    const due = free.filter((job) => seenFree.has(attempt(job)))
    seenFree = new Set(free.map(attempt))
    let failed = 0
    for (const job of due) {
      const conn = await sql.reserve()
      let locked = false
      try {
        // Under the lease, so that the job's runner cannot be starting it meanwhile.
        locked = await tryLock(conn, job.id)
        if (locked && (await current(conn, job))) {
          const r = await boss.fail(
            QUEUE,
            { id: job.id, retryCount: Number(job.retryCount) },
            { message: "its worker is gone (its lease is free): taken over" },
          )
          failed += (r as { affected?: number }).affected ?? 0
        }
      } finally {
        await giveBack(conn, locked ? job.id : null)
      }
    }
    return failed
  }

  return {
    acquire,
    sweep,
    close: async () => {
      stopped = true
      await sql.close({ timeout: 1 }).catch(() => undefined)
    },
  }
}
