/**
 * Bench 12, batches: `massgen batch` throughput with zero-delay scripted
 * agents at concurrency 1 and 3 in one process (whole processes from source),
 * and of one against three `massgen worker` processes sharing a queued batch
 * on this machine (spawn to the last result in Postgres),
 * and the Postgres event store's cost per appended event over the file
 * store's (appends and the durability barrier after them; target: under 2x),
 * on a server of the bench's own (`test/support/postgres.ts`), with the
 * whole-run effect: ms per item run in this process through `runItem` with
 * the file store, and as a worker runs one (the Postgres store, a barrier
 * before each model call and at the run's end, and its files shared), A
 * and B interleaved, medians of rounds; and
 * the time from the kill -9 of the worker running an item to another
 * worker's `run_resumed` of it (target: under 10 s), taken over through the
 * item's lease (`src/services/batch/item-lease.ts`): the workers run with
 * `--takeover-seconds` `BENCH_TAKEOVER_SECONDS` (3, the default: a look for
 * free leases every 0.75 s).
 * `BENCH_BATCH_ITEMS` (24) and `BENCH_BATCH_EVENTS` (300) size it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Effect, Layer } from "effect"
import { runItem } from "../src/cli/batch/run-item.ts"
import { decodeDocument, parseConfigText } from "../src/cli/run/load-config.ts"
import type { Event } from "../src/domain/events/index.ts"
import { EventStore } from "../src/services/event-store/index.ts"
import { postgresEventStore } from "../src/services/event-store/postgres.ts"
import type { SharedRunFiles } from "../src/services/run-files/shared.ts"
import { postgresRunFiles } from "../src/services/run-files/shared-postgres.ts"
import { startPostgres } from "../test/support/postgres.ts"
import { fmt, line, median, targetLine } from "./support.ts"

const ITEMS = Number(process.env.BENCH_BATCH_ITEMS ?? 24)
const EVENTS = Number(process.env.BENCH_BATCH_EVENTS ?? 300)
const ROUNDS = 5
const TAKEOVER_SECONDS = Number(process.env.BENCH_TAKEOVER_SECONDS ?? 3)
const MAIN = resolve(import.meta.dir, "..", "src", "main.ts")

const TEAM = `agents:
  - { id: agent_a, backend: { type: scripted, answer: "Four.", vote: agent1, final: "The answer is 4." } }
  - { id: agent_b, backend: { type: scripted, answer: "4", vote: agent1 } }
  - { id: agent_c, backend: { type: scripted, answer: "2+2=4", vote: agent1 } }
`

/** Items per second of one `massgen batch` process at `concurrency`, start-up included. */
const throughput = (concurrency: number): number => {
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-batch-"))
  try {
    writeFileSync(join(dir, "team.yaml"), TEAM)
    writeFileSync(
      join(dir, "items.jsonl"),
      Array.from({ length: ITEMS }, (_, i) => JSON.stringify({ id: `q${i}`, question: `What is ${i}+${i}?` })).join("\n"),
    )
    const t0 = performance.now()
    const r = Bun.spawnSync(
      [process.execPath, MAIN, "batch", "items.jsonl", "--config", "team.yaml", "--concurrency", String(concurrency)],
      { cwd: dir, stdout: "ignore", stderr: "ignore" },
    )
    if (r.exitCode !== 0) throw new Error(`massgen batch exited ${r.exitCode}`)
    return ITEMS / ((performance.now() - t0) / 1000)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const round = (n: number): Event => ({
  _tag: "round_started",
  time: new Date(1_780_000_000_000 + n).toISOString(),
  agent: "agent_a",
  round: n,
  shown: [],
  vote_only: false,
  restart: false,
})

/**
 * Milliseconds per event of `EVENTS` appends of one event each (as a run appends), to a fresh stream, and
 * the barrier after them (`settled`: the Postgres store commits in groups; the file store's appends are settled).
 */
const perEvent = (layer: Layer.Layer<EventStore>, stream: string): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* EventStore
      yield* store.append(stream, [round(0)], 0)
      yield* store.settled(stream)
      const t0 = performance.now()
      for (let i = 1; i <= EVENTS; i++) yield* store.append(stream, [round(i)], i)
      yield* store.settled(stream)
      return (performance.now() - t0) / EVENTS
    }).pipe(Effect.provide(layer)),
  )

const ITEM_RUNS = 4

/**
 * Milliseconds per item of `ITEM_RUNS` items run one after another in this process through `runItem` (as a
 * batch or a worker runs one: config, backends, run directory, coordination with its barriers, final read),
 * each in a fresh batch folder under `dir`, with the store of `layer`.
 */
const perItem = (
  layer: (dir: string) => Layer.Layer<EventStore | SharedRunFiles> | Layer.Layer<EventStore>,
  dir: string,
): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function* () {
      mkdirSync(dir, { recursive: true })
      const path = join(dir, "team.yaml")
      writeFileSync(path, TEAM)
      const raw = yield* parseConfigText(TEAM, path)
      const config = yield* decodeDocument(raw, path, {})
      const loaded = { config, raw, path, env: {}, where: path }
      const observer = { onEvent: () => Effect.void, onText: () => Effect.void }
      const ctx = { cwd: dir, env: {}, argv: [], version: "bench", interrupt: Effect.never, dir, printError: () => undefined }
      const t0 = performance.now()
      for (let i = 0; i < ITEM_RUNS; i++) {
        const item = { id: `q${i}`, question: `What is ${i}+${i}?`, config: null, sessionId: null, metadata: null, line: i + 1 }
        const outcome = yield* runItem(item, loaded, observer, ctx)
        if (outcome.exitCode !== 0) throw new Error(`bench item ${i} exited ${outcome.exitCode}`)
      }
      return (performance.now() - t0) / ITEM_RUNS
    }).pipe(Effect.provide(layer(dir))),
  )

const SLOW_TEAM = TEAM.replaceAll("vote: agent1", "vote: agent1, delay_seconds: 4")

/** Seconds from the kill -9 of the worker running the one item of a batch to its `run_resumed` by another worker. */
const takeover = async (url: string, psql: (sql: string) => string, n: number): Promise<number> => {
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-takeover-"))
  const spawned: Array<Bun.Subprocess> = []
  try {
    writeFileSync(join(dir, "team.yaml"), SLOW_TEAM)
    writeFileSync(join(dir, `takeover${n}.jsonl`), JSON.stringify({ id: "q", question: "What is 2+2?" }))
    const queued = Bun.spawnSync([process.execPath, MAIN, "batch", `takeover${n}.jsonl`, "--config", "team.yaml", "--engine", url], {
      cwd: dir,
      stdout: "ignore",
      stderr: "ignore",
    })
    if (queued.exitCode !== 0) throw new Error("massgen batch --engine failed")
    const worker = (name: string) => {
      const cwd = join(dir, name)
      Bun.spawnSync(["mkdir", "-p", cwd])
      const p = Bun.spawn(
        [process.execPath, MAIN, "worker", "--engine", url, "--concurrency", "1", "--takeover-seconds", String(TAKEOVER_SECONDS)],
        { cwd, stdout: "ignore", stderr: "ignore" },
      )
      spawned.push(p)
      return p
    }
    const lines = () =>
      Buffer.from(
        psql(
          `SELECT encode(string_agg(text, ''::bytea ORDER BY seq), 'hex') FROM massgen_event_chunks WHERE stream = 'takeover${n}/items/q'`,
        ).trim(),
        "hex",
      )
        .toString("utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as { type: string; meta?: { pid: number } })
    const until = async (ok: () => boolean) => {
      const deadline = Date.now() + 60_000
      while (!ok()) {
        if (Date.now() > deadline) throw new Error("takeover bench: timed out")
        await Bun.sleep(50)
      }
    }
    // Sessions of the workers' lease pools: a worker has one once it looked for items to take over.
    const leaseSessions = () => Number(psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'massgen-lease'").trim())
    const a = worker("a")
    await until(() => lines().some((l) => l.type === "run_started"))
    const before = leaseSessions()
    const b = worker("b")
    await until(() => leaseSessions() > before) // b up and looking, so that only the takeover is timed
    a.kill(9)
    const killed = performance.now()
    await until(() => lines().some((l) => l.type === "run_resumed" && l.meta?.pid === b.pid))
    return (performance.now() - killed) / 1000
  } finally {
    for (const p of spawned) p.kill(9)
    // Its job, left active by the last worker killed, would be taken over by the next round's workers, keeping them busy.
    psql(`DELETE FROM pgboss.job WHERE name = 'massgen_items' AND data->>'batch' = 'takeover${n}'`)
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Items a worker batch has: more than a local batch's, so that the workers' start-up weighs less. */
const WORKER_ITEMS = ITEMS * 2

/** Items per second of `workers` worker processes (concurrency 2 each) taking one queued batch of `WORKER_ITEMS`, from their spawn to the last result. */
const workerThroughput = async (url: string, psql: (sql: string) => string, workers: number, n: number): Promise<number> => {
  const items = WORKER_ITEMS
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-workers-"))
  const spawned: Array<Bun.Subprocess> = []
  const batch = `throughput${workers}_${n}`
  try {
    writeFileSync(join(dir, "team.yaml"), TEAM)
    writeFileSync(
      join(dir, `${batch}.jsonl`),
      Array.from({ length: items }, (_, i) => JSON.stringify({ id: `q${i}`, question: `What is ${i}+${i}?` })).join("\n"),
    )
    const queued = Bun.spawnSync([process.execPath, MAIN, "batch", `${batch}.jsonl`, "--config", "team.yaml", "--engine", url], {
      cwd: dir,
      stdout: "ignore",
      stderr: "ignore",
    })
    if (queued.exitCode !== 0) throw new Error("massgen batch --engine failed")
    const results = () => Number(psql(`SELECT count(*) FROM massgen_batch_results WHERE batch = '${batch}'`).trim())
    const t0 = performance.now()
    for (let w = 0; w < workers; w++) {
      const cwd = join(dir, `w${w}`)
      mkdirSync(cwd)
      spawned.push(
        Bun.spawn([process.execPath, MAIN, "worker", "--engine", url, "--concurrency", "2"], { cwd, stdout: "ignore", stderr: "ignore" }),
      )
    }
    const deadline = Date.now() + 300_000
    while (results() < items) {
      if (Date.now() > deadline) throw new Error(`worker throughput bench: ${results()} of ${items} results`)
      await Bun.sleep(50)
    }
    return items / ((performance.now() - t0) / 1000)
  } finally {
    for (const p of spawned) p.kill(9)
    rmSync(dir, { recursive: true, force: true })
  }
}

export const batchBench = async (): Promise<void> => {
  console.log(`# 12. Batches: ${ITEMS} zero-delay items per batch; event appends, ${EVENTS} per stream (A/B interleaved, ${ROUNDS} rounds)`)
  const one: Array<number> = []
  const three: Array<number> = []
  for (let i = 0; i < 3; i++) {
    one.push(throughput(1))
    three.push(throughput(3))
  }
  line("massgen batch, one process, concurrency 1: items/s median / max", `${fmt(median(one))} / ${fmt(Math.max(...one))}`)
  line("massgen batch, one process, concurrency 3: items/s median / max", `${fmt(median(three))} / ${fmt(Math.max(...three))}`)

  const pg = await startPostgres()
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-store-"))
  try {
    const file: Array<number> = []
    const postgres: Array<number> = []
    for (let i = 0; i < ROUNDS + 1; i++) {
      const f = await perEvent(EventStore.file(), join(dir, `log_file_${i}`))
      const p = await perEvent(postgresEventStore(pg.url), `/bench/log_pg_${i}`)
      // The first round warms both up.
      if (i > 0) file.push(f), postgres.push(p)
    }
    const us = (ms: ReadonlyArray<number>) => ms.map((v) => v * 1000)
    line(
      "file event store: µs per appended event (appends + barrier), median / max",
      `${fmt(median(us(file)), 2)} / ${fmt(Math.max(...us(file)), 2)}`,
    )
    const floor = median(us(file))
    targetLine("postgres event store: µs per appended event (appends + barrier), median / max", us(postgres), "µs", {
      ratio: (v) => v / floor,
      op: "<",
      limit: 2,
      text: "< 2x the file store's",
    })
    // The whole-run effect: an item through the real run path, its barriers before every call included.
    const fileItems: Array<number> = []
    const pgItems: Array<number> = []
    for (let i = 0; i < ROUNDS + 1; i++) {
      const f = await perItem(() => EventStore.file(), join(dir, `items_file_${i}`))
      // As a worker runs it: its events in the shared log, its whole files shared too.
      const p = await perItem(() => Layer.merge(postgresEventStore(pg.url), postgresRunFiles(pg.url)), join(dir, `items_pg_${i}`))
      if (i > 0) fileItems.push(f), pgItems.push(p)
    }
    line(
      "one item run with the file event store (3 scripted agents): ms per item, median / max",
      `${fmt(median(fileItems), 2)} / ${fmt(Math.max(...fileItems), 2)}`,
    )
    const itemFloor = median(fileItems)
    line(
      "one item run as a worker runs it (postgres events + shared files): ms per item, median / max (x file)",
      `${fmt(median(pgItems), 2)} / ${fmt(Math.max(...pgItems), 2)} (${fmt(median(pgItems) / itemFloor, 2)}x / ${fmt(Math.max(...pgItems) / itemFloor, 2)}x)`,
    )
    // Across processes: the same queued batch taken by one worker, then by three, on this one machine.
    const oneWorker: Array<number> = []
    const threeWorkers: Array<number> = []
    for (let i = 0; i < 3; i++) {
      oneWorker.push(await workerThroughput(pg.url, pg.psql, 1, i))
      threeWorkers.push(await workerThroughput(pg.url, pg.psql, 3, i))
    }
    line(
      `massgen worker x1 (concurrency 2), postgres, ${WORKER_ITEMS} items: items/s median / max, spawn to last result`,
      `${fmt(median(oneWorker))} / ${fmt(Math.max(...oneWorker))}`,
    )
    line(
      "massgen worker x3 (concurrency 2 each), postgres: items/s median / max (x one worker)",
      `${fmt(median(threeWorkers))} / ${fmt(Math.max(...threeWorkers))} (${fmt(median(threeWorkers) / median(oneWorker), 2)}x)`,
    )
    const takeovers: Array<number> = []
    for (let i = 0; i < 5; i++) takeovers.push(await takeover(pg.url, pg.psql, i))
    targetLine(
      `worker killed -9 -> another worker's run_resumed of its item (--takeover-seconds ${TAKEOVER_SECONDS}: a look every ${fmt(TAKEOVER_SECONDS / 4)} s): s, median / max`,
      takeovers,
      "s",
      {
        ratio: (v) => v,
        op: "<",
        limit: 10,
        text: "< 10 s",
        name: "s",
      },
    )
  } finally {
    pg.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main) await batchBench()
