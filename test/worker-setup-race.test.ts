/**
 * Workers started together (issue 25, M8): five `massgen worker` processes
 * whose set-up starts at the same moment on a fresh database, twenty times,
 * and every one of them comes up. Each process loads its modules, says
 * `ready`, and waits on its stdin (`support/worker-at-barrier.ts`); once all
 * five are ready, one byte to each releases them together. Every round has a
 * database of its own, so each starts from nothing: no table, no pg-boss
 * schema. And a worker waiting for the schema lock (another process holds
 * it) stops at once on SIGTERM.
 */
import { expect, test } from "bun:test"
import { SQL } from "bun"
import { SCHEMA_LOCK_KEY } from "../src/services/event-store/postgres.ts"
import { cleanupSandboxes, command, startCli, withSlots } from "./support/cli.ts"
import { postgresForFile, type TestPostgres } from "./support/postgres.ts"
import { stopInSetUp } from "./support/worker-signal.ts"

let pg: TestPostgres
postgresForFile((server) => (pg = server), cleanupSandboxes)

const WORKERS = 5
const ROUNDS = 20
const HELPER = new URL("./support/worker-at-barrier.ts", import.meta.url).pathname

interface Outcome {
  readonly code: number
  readonly stderr: string
}

/** Resolves once `proc` has printed a line `ready` on stdout. */
const ready = async (proc: Bun.Subprocess<"pipe", "pipe", "pipe">): Promise<void> => {
  const decoder = new TextDecoder()
  let seen = ""
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk, { stream: true })
    if (seen.split("\n").includes("ready")) return
  }
  throw new Error(`the worker exited before it was ready: ${await new Response(proc.stderr).text()}`)
}

/** One round: five workers released at once on the fresh database `name`; how each ended. */
const round = async (name: string): Promise<ReadonlyArray<Outcome>> => {
  pg.psql(`CREATE DATABASE ${name}`)
  const url = pg.url.replace(/\/postgres$/, `/${name}`)
  const procs = Array.from({ length: WORKERS }, () =>
    Bun.spawn([command("source")[0]!, HELPER, url], { stdin: "pipe", stdout: "pipe", stderr: "pipe" }),
  )
  const killer = setTimeout(() => procs.forEach((p) => p.kill("SIGKILL")), 120_000)
  try {
    await Promise.all(procs.map(ready))
    for (const p of procs) p.stdin.write("go\n")
    for (const p of procs) p.stdin.flush()
    return await Promise.all(procs.map(async (p) => ({ code: await p.exited, stderr: await new Response(p.stderr).text() })))
  } finally {
    clearTimeout(killer)
    pg.psql(`DROP DATABASE ${name} WITH (FORCE)`)
  }
}

test(`${WORKERS} workers started at the same moment on a fresh database all come up, ${ROUNDS} rounds`, async () => {
  const failed: Array<string> = []
  await withSlots(WORKERS, async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const outcomes = await round(`race_${i}`)
      outcomes.forEach((o, w) => {
        const up = o.code === 0 && o.stderr.includes(" takes items from massgen_items ") && !o.stderr.includes("error")
        if (!up) failed.push(`round ${i}, worker ${w}: exit ${o.code}: ${o.stderr.trim()}`)
      })
    }
  })
  expect(failed).toEqual([])
}, 600_000)

test("a worker waiting for the schema lock another process holds stops at once on SIGTERM, exit 4", async () => {
  pg.psql("CREATE DATABASE held")
  const url = pg.url.replace(/\/postgres$/, "/held")
  const sql = new SQL(url)
  const holder = await sql.reserve()
  try {
    await holder.unsafe(`SELECT pg_advisory_lock(${SCHEMA_LOCK_KEY})`)
    const worker = await startCli("source", ["worker", "--engine", url], { timeoutMs: 20_000 })
    // Polled (a bounded loop of short waits): no event tells another session's wait for a lock.
    const waiting = () => Number(pg.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").trim()) > 0
    for (let tries = 0; !waiting(); tries++) {
      if (tries > 300 || worker.proc.exitCode !== null)
        throw new Error(`the worker never waited for the schema lock: ${(await worker.done).stderr}`)
      await Bun.sleep(50)
    }
    await stopInSetUp(worker)
  } finally {
    holder.release()
    await sql.close()
    pg.psql("DROP DATABASE held WITH (FORCE)")
  }
}, 60_000)
