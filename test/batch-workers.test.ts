/**
 * Issue 16 across machines, end to end: `massgen batch --engine` queues the
 * items in a Postgres server of the test's own, and `massgen worker` processes
 * (each in its own working directory, as on its own machine) run them.
 *
 * One worker is killed with -9 while it runs items: the others take them
 * over from the shared log and finish everything, each item has exactly one
 * result, every item's stream was written by one process at a time (its
 * `run_started`/`run_resumed` never go back to a process that was taken over
 * from) and no agent answered twice. A server restart in the middle: the
 * workers connect again and the batch completes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { type RunningCli, cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { ENV } from "./support/run-dirs.ts"
import { type TestPostgres, startPostgres } from "./support/postgres.ts"

let pg: TestPostgres
beforeAll(async () => {
  pg = await startPostgres()
}, 60_000)
afterAll(() => {
  pg?.stop()
  cleanupSandboxes()
})

const team = {
  agents: ["agent_a", "agent_b", "agent_c"].map((id, i) => ({
    id,
    backend: { type: "scripted", answer: `answer ${i}`, vote: "agent1", delay_seconds: 0.3, ...(i === 0 ? { final: "The answer is 4." } : {}) },
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
    pg.psql(
      `SELECT count(*) FROM (SELECT stream FROM massgen_event_chunks GROUP BY stream HAVING bool_or(position('"pid":${pid},' in convert_from(text, 'UTF8')) > 0) AND NOT bool_or(position('"type":"run_finished"' in convert_from(text, 'UTF8')) > 0)) AS s`,
    ).trim(),
  )

/** Every envelope line of an item's shared stream. */
const streamOf = (key: string): Array<any> =>
  Buffer.from(pg.psql(`SELECT encode(string_agg(text, ''::bytea ORDER BY seq), 'hex') FROM massgen_event_chunks WHERE stream = '${key}'`).trim(), "hex")
    .toString("utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l))

const queue = async (batch: string, n: number) => {
  const cwd = sandbox()
  writeConfig(cwd, team, "team.yaml")
  fs.writeFileSync(nodePath.join(cwd, `${batch}.jsonl`), Array.from({ length: n }, (_, i) => JSON.stringify({ id: `q${i}`, question: `What is ${i}+${i}?` })).join("\n"))
  const r = await runCli("source", ["batch", `${batch}.jsonl`, "--config", "team.yaml", "--engine", pg.url], { cwd, env: ENV, timeoutMs: 60_000 })
  expect({ code: r.exitCode, lines: r.lines, stderr: r.stderr }).toEqual({ code: 0, lines: [`BATCH: ${batch}`, `QUEUED: ${n}`], stderr: "" })
}

const worker = (): Promise<RunningCli> =>
  startCli("source", ["worker", "--engine", pg.url, "--concurrency", "3"], { cwd: sandbox(), env: { ...ENV, MASSGEN_TAKEOVER_SECONDS: "10" }, timeoutMs: 240_000 })

/** Stops the workers; their stderr, for a test that failed. */
const stopAll = async (workers: ReadonlyArray<RunningCli>): Promise<string> => {
  for (const w of workers) if (w.proc.exitCode === null) w.proc.kill("SIGTERM")
  const done = await Promise.all(workers.map((w) => w.done.catch((e: Error) => ({ stderr: e.message }))))
  return done.map((d, i) => `worker ${i}:\n${d.stderr}`).join("\n")
}

describe("massgen worker: one batch, several workers, one Postgres", () => {
  test("3 workers take 30 items; one is killed -9 mid-run; the others finish everything, one result per item, one writer at a time", async () => {
    await queue("thirty", 30)
    const workers = await Promise.all([worker(), worker(), worker()])
    try {
      await waitForResults("thirty", 5, 120_000)
      const victim = workers[0]!
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
        const writers = lines.filter((l) => l.type === "run_started" || l.type === "run_resumed").map((l) => l.meta.pid)
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

  test("a Postgres restart in the middle: the workers connect again and the batch completes", async () => {
    await queue("restart", 12)
    const workers = await Promise.all([worker(), worker()])
    try {
      await waitForResults("restart", 3, 120_000)
      pg.restart()
      await waitForResults("restart", 12, 180_000)
      expect(pg.psql("SELECT count(*) || ' ' || count(DISTINCT id) FROM massgen_batch_results WHERE batch = 'restart'").trim()).toBe("12 12")
      // Progress across workers, and the local layout from the shared log.
      const cwd = sandbox()
      const status = await runCli("source", ["batch", "status", "--engine", pg.url, "restart"], { cwd, env: ENV })
      expect({ code: status.exitCode, lines: status.lines }).toEqual({ code: 0, lines: [expect.stringMatching(/^batch restart: 12 with a result \(12 completed\), 0 running, 0 waiting, /)] })
      const exported = await runCli("source", ["batch", "export", "--engine", pg.url, "restart", "--out", "out"], { cwd, env: ENV })
      expect({ code: exported.exitCode, lines: exported.lines }).toEqual({ code: 0, lines: [`BATCH_DIR: ${cwd}/out`, "EXPORTED: 12 runs, 12 results"] })
      const one = await runCli("source", ["status", "out/items/q3"], { cwd, env: ENV })
      expect({ code: one.exitCode, completed: one.stdout.includes("completed") }).toEqual({ code: 0, completed: true })
      const results = fs.readFileSync(nodePath.join(cwd, "out", "results.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
      expect(results.map((r) => r.log_dir).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `${cwd}/out/items/q${i}`).sort())
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await stopAll(workers)}`)
    } finally {
      await stopAll(workers)
    }
  }, 300_000)
})
