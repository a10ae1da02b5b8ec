/**
 * Issue 16 across machines, end to end: `massgen batch --engine` queues the
 * items in a Postgres server of the test's own, and `massgen worker` processes
 * (each in its own working directory, as on its own machine) run them.
 *
 * One worker is killed with -9 while it runs items: the others take them
 * over from the shared log and finish everything, each item has exactly one
 * result, every item's stream was written by one process at a time (its
 * `run_started`/`run_resumed` never go back to a process that was taken over
 * from) and no agent answered twice. A worker killed -9 in the middle of
 * its one item: an idle worker's look at the leases puts it back (not
 * pg-boss's heartbeat backstop), and the idle worker resumes it (how soon:
 * `bun run bench`, section 12, from the kill to the `run_resumed`). An item given
 * to a second worker while a live one runs it (pg-boss's heartbeat backstop,
 * made to fire): the second waits for the item's lease, and never writes
 * into its run. A runner whose lease session the server ends stops its run,
 * which is resumed. A server restart in the middle: the workers connect again
 * and the batch completes.
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, type RunningCli, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { postgresForFile, type TestPostgres } from "./support/postgres.ts"
import { ENV } from "./support/run-dirs.ts"

let pg: TestPostgres
postgresForFile((server) => (pg = server), cleanupSandboxes)

const team = {
  agents: ["agent_a", "agent_b", "agent_c"].map((id, i) => ({
    id,
    backend: {
      type: "scripted",
      answer: `answer ${i}`,
      vote: "agent1",
      delay_seconds: 0.3,
      ...(i === 0 ? { final: "The answer is 4." } : {}),
    },
  })),
}

const count = (batch: string): number => Number(pg.psql(`SELECT count(*) FROM massgen_batch_results WHERE batch = '${batch}'`).trim())

/** Polls the results table (a bounded loop of short waits) until `n` items of `batch` have a result. */
const waitForResults = async (batch: string, n: number, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (count(batch) < n) {
    if (Date.now() > deadline) throw new Error(`${count(batch)} of ${n} results after ${timeoutMs} ms`)
    await Bun.sleep(200)
  }
}

/** How many item runs `pid` has started or resumed that have not finished yet (in the shared log). */
const runningBy = (pid: number): number =>
  Number(
    pg
      .psql(
        `SELECT count(*) FROM (SELECT stream FROM massgen_event_chunks GROUP BY stream HAVING bool_or(position('"pid":${pid},' in convert_from(text, 'UTF8')) > 0) AND NOT bool_or(position('"type":"run_finished"' in convert_from(text, 'UTF8')) > 0)) AS s`,
      )
      .trim(),
  )

/** Every envelope line of an item's shared stream. */
const streamOf = (key: string): Array<any> =>
  Buffer.from(
    pg.psql(`SELECT encode(string_agg(text, ''::bytea ORDER BY seq), 'hex') FROM massgen_event_chunks WHERE stream = '${key}'`).trim(),
    "hex",
  )
    .toString("utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l))

/** The same team, each call taking `seconds`: a run long enough to be killed or contended in the middle. */
const slowTeam = (seconds: number) => ({ agents: team.agents.map((a) => ({ ...a, backend: { ...a.backend, delay_seconds: seconds } })) })

const queue = async (batch: string, n: number, config: object = team) => {
  const cwd = sandbox()
  writeConfig(cwd, config, "team.yaml")
  fs.writeFileSync(
    nodePath.join(cwd, `${batch}.jsonl`),
    Array.from({ length: n }, (_, i) => JSON.stringify({ id: `q${i}`, question: `What is ${i}+${i}?` })).join("\n"),
  )
  const r = await runCli("source", ["batch", `${batch}.jsonl`, "--config", "team.yaml", "--engine", pg.url], {
    cwd,
    env: ENV,
    timeoutMs: 60_000,
  })
  expect({ code: r.exitCode, lines: r.lines, stderr: r.stderr }).toEqual({
    code: 0,
    lines: [`BATCH: ${batch}`, `QUEUED: ${n}`],
    stderr: "",
  })
}

const worker = (concurrency = 3, takeoverSeconds = 3): Promise<RunningCli> =>
  startCli("source", ["worker", "--engine", pg.url, "--concurrency", String(concurrency), "--takeover-seconds", String(takeoverSeconds)], {
    cwd: sandbox(),
    env: ENV,
    timeoutMs: 240_000,
  })

/** Polls (a bounded loop of short waits) until `ok`. */
const until = async (what: string, ok: () => boolean, timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await Bun.sleep(50)
  }
}

/** Sessions of workers' lease pools: an idle worker has one once it looked for items to take over. */
const leaseSessions = (): number =>
  Number(pg.psql("SELECT count(DISTINCT client_port) FROM pg_stat_activity WHERE application_name = 'massgen-lease'").trim())

/** The pids that started or resumed an item's run, in order. */
const writersOf = (lines: ReadonlyArray<any>): Array<number> =>
  lines.filter((l) => l.type === "run_started" || l.type === "run_resumed").map((l) => l.meta.pid)

/** Stops the workers; their stderr, for a test that failed. */
const stopAll = async (workers: ReadonlyArray<RunningCli>): Promise<string> => {
  for (const w of workers) if (w.proc.exitCode === null) w.proc.kill("SIGTERM")
  const done = await Promise.all(workers.map((w) => w.done.catch((e: Error) => ({ stderr: e.message }))))
  return done.map((d, i) => `worker ${i}:\n${d.stderr}`).join("\n")
}

describe("massgen worker: one batch, several workers, one Postgres", () => {
  test("3 workers take 30 items; one is killed -9 mid-run; the others finish everything, one result per item, one writer at a time", async () => {
    await queue("thirty", 30)
    // The victim starts first and is running items before the others start: on a loaded machine a worker
    // that started last could find every item taken.
    const workers = [await worker()]
    const victim = workers[0]!
    try {
      // (The shared log's table is made by the first worker.)
      await until(
        "the victim runs an item",
        () => pg.psql("SELECT to_regclass('massgen_event_chunks') IS NOT NULL").trim() === "t" && runningBy(victim.proc.pid) > 0,
        120_000,
      )
      workers.push(...(await Promise.all([worker(), worker()])))
      await waitForResults("thirty", 5, 120_000)
      // Mid-run: the victim is killed while it writes an item's run (the queue may have given it none yet).
      const deadline = Date.now() + 60_000
      while (runningBy(victim.proc.pid) === 0) {
        if (Date.now() > deadline) throw new Error("the victim never ran an item")
        await Bun.sleep(50)
      }
      victim.proc.kill("SIGKILL")
      await victim.done.catch(() => undefined)
      await waitForResults("thirty", 30, 180_000)
      expect(pg.psql("SELECT count(*) || ' ' || count(DISTINCT id) FROM massgen_batch_results WHERE batch = 'thirty'").trim()).toBe("30 30")
      let takenOver = 0
      for (let i = 0; i < 30; i++) {
        const lines = streamOf(`thirty/items/q${i}`)
        const writers = writersOf(lines)
        // A process once taken over from never writes again.
        const seen = new Set<number>()
        writers.forEach((pid, j) => {
          if (j > 0 && pid !== writers[j - 1]) expect({ item: i, pid, again: seen.has(pid) }).toEqual({ item: i, pid, again: false })
          seen.add(pid)
        })
        if (writers.includes(victim.proc.pid) && writers.at(-1) !== victim.proc.pid) takenOver += 1
        expect(lines.filter((l) => l.type === "run_finished")).toHaveLength(1)
        const answers = lines.filter((l) => l.type === "answer_submitted").map((l) => l.agent)
        expect({ item: i, answers: answers.sort() }).toEqual({ item: i, answers: ["agent_a", "agent_b", "agent_c"] })
      }
      expect(takenOver).toBeGreaterThan(0)
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await stopAll(workers)}`)
    } finally {
      await stopAll(workers)
    }
  }, 300_000)

  test("a worker killed -9 in the middle of a run: an idle worker takes it over through its lease and resumes it", async () => {
    const workers = await Promise.all([worker(1, 3), worker(1, 3)])
    try {
      // Both workers up and looking before the item is queued: only the takeover is timed.
      await until("two idle workers looking", () => leaseSessions() >= 2)
      await queue("killed", 1, slowTeam(2))
      await until("the item's run started", () => streamOf("killed/items/q0").some((l) => l.type === "run_started"))
      const victimPid = streamOf("killed/items/q0").find((l) => l.type === "run_started").meta.pid
      const victim = workers.find((w) => w.proc.pid === victimPid)!
      const survivor = workers.find((w) => w.proc.pid !== victimPid)!
      victim.proc.kill("SIGKILL")
      await until("the survivor's run_resumed", () =>
        streamOf("killed/items/q0").some((l) => l.type === "run_resumed" && l.meta.pid === survivor.proc.pid),
      )
      // Put back by a look at the leases (the attempt failed as taken over), not by pg-boss's heartbeat
      // backstop ("job heartbeat timeout"): the job's retry keeps that output while the survivor runs it,
      // a few 2 s calls more. How soon: `bun run bench`, section 12.
      const retried = pg
        .psql(
          "SELECT state || ' ' || retry_count || ' ' || output::text FROM pgboss.job WHERE name = 'massgen_items' AND data->>'batch' = 'killed'",
        )
        .trim()
      expect(retried).toMatch(/^active 1 .*its worker is gone \(its lease is free\): taken over/)
      await waitForResults("killed", 1, 60_000)
      const lines = streamOf("killed/items/q0")
      expect(writersOf(lines)).toEqual([victimPid, survivor.proc.pid])
      expect(lines.filter((l) => l.type === "run_finished")).toHaveLength(1)
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await stopAll(workers)}`)
    } finally {
      await stopAll(workers)
    }
  }, 120_000)

  test("an item whose lease a live worker holds is not run by a second worker it is given to: it waits, then finds it finished", async () => {
    const workers = await Promise.all([worker(1), worker(1)])
    try {
      await until("two idle workers looking", () => leaseSessions() >= 2)
      await queue("held", 1, slowTeam(2))
      await until("the item's run started", () => streamOf("held/items/q0").some((l) => l.type === "run_started"))
      const runnerPid = streamOf("held/items/q0").find((l) => l.type === "run_started").meta.pid
      const other = workers.find((w) => w.proc.pid !== runnerPid)!
      // pg-boss's heartbeat backstop declares the live runner dead (its heartbeat made stale) and retries the job: the other worker gets it.
      const attempt = () =>
        Number(pg.psql("SELECT retry_count FROM pgboss.job WHERE name = 'massgen_items' AND data->>'batch' = 'held'").trim())
      const first = attempt()
      await until("the job retried", () => {
        pg.psql(
          `UPDATE pgboss.job SET heartbeat_on = now() - interval '1 hour' WHERE name = 'massgen_items' AND data->>'batch' = 'held' AND state = 'active' AND retry_count = ${first}`,
        )
        return attempt() > first
      })
      await waitForResults("held", 1, 60_000)
      await until(
        "the job completed",
        () => pg.psql("SELECT state FROM pgboss.job WHERE name = 'massgen_items' AND data->>'batch' = 'held'").trim() === "completed",
      )
      const lines = streamOf("held/items/q0")
      expect(writersOf(lines)).toEqual([runnerPid])
      expect(lines.filter((l) => l.type === "run_finished")).toHaveLength(1)
      const stderr = (await stopAll([other])).split("\n")
      expect(stderr).toContain("massgen: item held/q0 is run by another worker: waiting for its lease")
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await stopAll(workers)}`)
    } finally {
      await stopAll(workers)
    }
  }, 120_000)

  test("a runner whose lease session ends (the server cut it) stops its run; the item is resumed, one writer at a time", async () => {
    const workers = await Promise.all([worker(1), worker(1)])
    try {
      await until("two idle workers looking", () => leaseSessions() >= 2)
      await queue("cut", 1, slowTeam(2))
      await until("the item's run started", () => streamOf("cut/items/q0").some((l) => l.type === "run_started"))
      // The session holding the item's lease, ended by the server as a lost connection would be.
      expect(pg.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted").trim()).toBe("1")
      await waitForResults("cut", 1, 60_000)
      const lines = streamOf("cut/items/q0")
      const finished = lines
        .filter((l) => l.type === "run_finished")
        .map((l) => ({ reason: l.reason, lease: String(l.message).includes("its lease was lost") }))
      expect(finished).toEqual([
        { reason: "interrupted", lease: true },
        { reason: "completed", lease: false },
      ])
      // Its run_started, then one run_resumed (by either worker).
      expect(writersOf(lines)).toHaveLength(2)
      const answers = lines.filter((l) => l.type === "answer_submitted").map((l) => l.agent)
      expect(answers.sort()).toEqual(["agent_a", "agent_b", "agent_c"])
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await stopAll(workers)}`)
    } finally {
      await stopAll(workers)
    }
  }, 120_000)

  test("a session's items run in file order across workers, each turn continuing the conversation from the earlier turns' results", async () => {
    const cwd = sandbox()
    writeConfig(cwd, team, "team.yaml")
    const items = [
      { id: "t1", question: "First?", session_id: "s" },
      { id: "x1", question: "Alone?" },
      { id: "t2", question: "Second?", session_id: "s" },
      { id: "t3", question: "Third?", session_id: "s" },
    ]
    fs.writeFileSync(nodePath.join(cwd, "chain.jsonl"), items.map((i) => JSON.stringify(i)).join("\n"))
    const queued = await runCli("source", ["batch", "chain.jsonl", "--config", "team.yaml", "--engine", pg.url], {
      cwd,
      env: ENV,
      timeoutMs: 60_000,
    })
    expect(queued.lines).toEqual(["BATCH: chain", "QUEUED: 4"])
    // The session's later items wait behind its first: counted as waiting before any worker runs.
    const before = await runCli("source", ["batch", "status", "--engine", pg.url, "chain"], { cwd, env: ENV })
    expect(before.lines).toEqual([expect.stringMatching(/^batch chain: 0 with a result, 0 running, 4 waiting, /)])
    const workers = await Promise.all([worker(2), worker(2)])
    try {
      await waitForResults("chain", 4, 120_000)
      const turn = (q: string) => [
        { role: "user", content: q },
        { role: "assistant", content: "The answer is 4." },
      ]
      const started = (id: string) => streamOf(`chain/items/${id}`).find((l) => l.type === "run_started")
      const finished = (id: string) => streamOf(`chain/items/${id}`).find((l) => l.type === "run_finished")
      expect(started("t1").conversation ?? []).toEqual([])
      expect(started("x1").conversation ?? []).toEqual([])
      expect(started("t2").conversation).toEqual(turn("First?"))
      expect(started("t3").conversation).toEqual([...turn("First?"), ...turn("Second?")])
      expect(Date.parse(started("t2").time)).toBeGreaterThanOrEqual(Date.parse(finished("t1").time))
      expect(Date.parse(started("t3").time)).toBeGreaterThanOrEqual(Date.parse(finished("t2").time))
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await stopAll(workers)}`)
    } finally {
      await stopAll(workers)
    }
  }, 180_000)

  test("a Postgres restart in the middle: the workers connect again and the batch completes", async () => {
    await queue("restart", 12)
    const workers = await Promise.all([worker(), worker()])
    try {
      await waitForResults("restart", 3, 120_000)
      pg.restart()
      await waitForResults("restart", 12, 180_000)
      expect(pg.psql("SELECT count(*) || ' ' || count(DISTINCT id) FROM massgen_batch_results WHERE batch = 'restart'").trim()).toBe(
        "12 12",
      )
      // Progress across workers, and the local layout from the shared log.
      const cwd = sandbox()
      const status = await runCli("source", ["batch", "status", "--engine", pg.url, "restart"], { cwd, env: ENV })
      expect({ code: status.exitCode, lines: status.lines }).toEqual({
        code: 0,
        lines: [expect.stringMatching(/^batch restart: 12 with a result \(12 completed\), 0 running, 0 waiting, /)],
      })
      const exported = await runCli("source", ["batch", "export", "--engine", pg.url, "restart", "--out", "out"], { cwd, env: ENV })
      expect({ code: exported.exitCode, lines: exported.lines }).toEqual({
        code: 0,
        lines: [`BATCH_DIR: ${cwd}/out`, "EXPORTED: 12 runs, 12 results"],
      })
      const one = await runCli("source", ["status", "out/items/q3"], { cwd, env: ENV })
      expect({ code: one.exitCode, completed: one.stdout.includes("completed") }).toEqual({ code: 0, completed: true })
      const results = fs
        .readFileSync(nodePath.join(cwd, "out", "results.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
      expect(results.map((r) => r.log_dir).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `${cwd}/out/items/q${i}`).sort())
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await stopAll(workers)}`)
    } finally {
      await stopAll(workers)
    }
  }, 300_000)
})
