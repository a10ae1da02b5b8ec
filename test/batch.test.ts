/**
 * Issue 16 on one machine, end to end (`bun src/main.ts batch ...`): many
 * scripted runs in one batch folder, resumed after kill -9 and after a signal,
 * stopped by the batch budget, refused when the items file is malformed.
 *
 * "Asked of a model at most once" is read from the item runs' own logs: a
 * scripted agent answers once per run (its first round) and then only votes,
 * so a recorded answer asked again would show as a second `call_end` whose
 * reply calls `new_answer` for that agent, or a second `answer_submitted`.
 * No fixed sleeps: the tests wait for stdout lines and for exits.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, type RunningCli, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { ENV, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const team = (delaySeconds: number, extra: Record<string, unknown> = {}) => ({
  agents: [
    {
      id: "agent_a",
      backend: { type: "scripted", model: "m", answer: "Four.", vote: "agent1", final: "The answer is 4.", delay_seconds: delaySeconds },
    },
    { id: "agent_b", backend: { type: "scripted", model: "m", answer: "4", vote: "agent1", delay_seconds: delaySeconds } },
    { id: "agent_c", backend: { type: "scripted", model: "m", answer: "2+2=4", vote: "agent1", delay_seconds: delaySeconds } },
  ],
  ...extra,
})

const writeItems = (dir: string, n: number, name = "items.jsonl"): string => {
  const path = nodePath.join(dir, name)
  fs.writeFileSync(
    path,
    Array.from({ length: n }, (_, i) => JSON.stringify({ id: `q${i + 1}`, question: `What is ${i}+${i}?`, metadata: { n: i } })).join(
      "\n",
    ) + "\n",
  )
  return path
}

const batchDir = (cwd: string) => nodePath.join(cwd, ".massgen", "batches", "items")
const resultLines = (cwd: string): Array<any> =>
  fs
    .readFileSync(nodePath.join(batchDir(cwd), "results.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l))
const itemRuns = (cwd: string): Array<string> =>
  fs.readdirSync(nodePath.join(batchDir(cwd), "items")).map((id) => nodePath.join(batchDir(cwd), "items", id))

const batch = (_cwd: string, extra: ReadonlyArray<string> = []) => [
  "batch",
  "items.jsonl",
  "--config",
  "team.yaml",
  "--automation",
  ...extra,
]

/** Every agent of the run in `dir` was asked for its answer at most once, and answered at most once. */
const answersAskedOnce = (dir: string) => {
  const events = readEvents(dir)
  const asked: Record<string, number> = {}
  const answered: Record<string, number> = {}
  for (const e of events) {
    if (e.type === "call_end" && e.reply?.tool_calls?.some((c: any) => c.name === "new_answer")) asked[e.agent] = (asked[e.agent] ?? 0) + 1
    if (e.type === "answer_submitted") answered[e.agent] = (answered[e.agent] ?? 0) + 1
  }
  return { asked: Math.max(0, ...Object.values(asked)), answered: Math.max(0, ...Object.values(answered)) }
}

/** Resolves once `count` stdout lines start with `prefix` (checked as lines arrive). */
const waitForLines = async (cli: RunningCli, prefix: string, count: number): Promise<void> => {
  for (;;) {
    if (cli.lines.filter((l) => l.startsWith(prefix)).length >= count) return
    await Promise.race([cli.done.then(() => undefined), Bun.sleep(10)])
    if (cli.proc.exitCode !== null) throw new Error(`massgen batch exited before ${count} ${prefix} lines`)
  }
}

describe("massgen batch on one machine", () => {
  test("50 scripted items at concurrency 8 complete: one result each, ordinary run directories, the documented lines", async () => {
    const cwd = sandbox()
    writeConfig(cwd, team(0), "team.yaml")
    writeItems(cwd, 50)
    const r = await runCli("source", batch(cwd, ["--concurrency", "8"]), { cwd, env: ENV, timeoutMs: 120_000 })
    expect({ code: r.exitCode, stderr: r.stderr.split("\n").at(-2) }).toEqual({
      code: 0,
      stderr: expect.stringContaining("massgen: batch: 50/50 done, 0 running, 0 failed"),
    })
    const dir = batchDir(cwd)
    expect(r.lines.slice(0, 3)).toEqual([`BATCH_DIR: ${dir}`, `RESULTS: ${dir}/results.jsonl`, "ITEMS: 50 (0 with a result already)"])
    expect(r.lines.filter((l) => l.startsWith("ITEM: ")).sort()).toEqual(
      Array.from({ length: 50 }, (_, i) => `ITEM: q${i + 1} completed 0`).sort(),
    )
    expect(r.lines.slice(-2)).toEqual(["BATCH: completed", "DONE: 50/50, 50 completed"])
    const results = resultLines(cwd)
    expect(results.map((x) => x.id).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `q${i + 1}`).sort())
    for (const x of results) {
      expect(x).toMatchObject({
        finish_reason: "completed",
        winner: "agent_a",
        answer: "The answer is 4.",
        exit_code: 0,
        metadata: { n: Number(x.id.slice(1)) - 1 },
      })
      expect(fs.readFileSync(x.answer_file, "utf8")).toBe(x.answer)
      expect(x.input_tokens).toBeGreaterThan(0)
    }
    expect(JSON.parse(fs.readFileSync(nodePath.join(dir, "manifest.json"), "utf8"))).toMatchObject({
      items: 50,
      items_file: nodePath.join(cwd, "items.jsonl"),
    })
    // An item's directory is an ordinary run: status reads it.
    const status = await runCli("source", ["status", nodePath.join(dir, "items", "q7")], { cwd, env: ENV })
    expect(status.exitCode).toBe(0)
    expect(status.stdout).toContain("completed")
    // The same command again: nothing to do, the same results.
    const again = await runCli("source", batch(cwd), { cwd, env: ENV, timeoutMs: 60_000 })
    expect({ code: again.exitCode, lines: again.lines }).toEqual({
      code: 0,
      lines: [
        `BATCH_DIR: ${dir}`,
        `RESULTS: ${dir}/results.jsonl`,
        "ITEMS: 50 (50 with a result already)",
        "BATCH: completed",
        "DONE: 50/50, 50 completed",
      ],
    })
    expect(resultLines(cwd)).toHaveLength(50)
  }, 180_000)

  test("kill -9 mid-batch, then the same command: exactly 50 results, and no recorded answer asked of a model again", async () => {
    const cwd = sandbox()
    writeConfig(cwd, team(0.1), "team.yaml")
    writeItems(cwd, 50)
    const first = await startCli("source", batch(cwd, ["--concurrency", "8"]), { cwd, env: ENV, timeoutMs: 120_000 })
    await waitForLines(first, "ITEM: ", 8)
    first.proc.kill("SIGKILL")
    await first.done
    const before = resultLines(cwd).length
    expect(before).toBeGreaterThanOrEqual(8)
    expect(before).toBeLessThan(50)
    // Some runs were cut in the middle: started, not finished.
    const cut = itemRuns(cwd).filter((d) => {
      const events = fs.existsSync(nodePath.join(d, "events.jsonl")) ? readEvents(d) : []
      return events.some((e) => e.type === "run_started") && !events.some((e) => e.type === "run_finished")
    })
    expect(cut.length).toBeGreaterThan(0)

    const second = await runCli("source", batch(cwd, ["--concurrency", "8"]), { cwd, env: ENV, timeoutMs: 120_000 })
    expect(second.exitCode).toBe(0)
    expect(second.lines).toContain(`ITEMS: 50 (${before} with a result already)`)
    expect(second.lines.slice(-2)).toEqual(["BATCH: completed", "DONE: 50/50, 50 completed"])
    const results = resultLines(cwd)
    expect(results).toHaveLength(50)
    expect(new Set(results.map((x) => x.id)).size).toBe(50)
    expect(results.every((x) => x.finish_reason === "completed")).toBe(true)
    for (const dir of itemRuns(cwd)) expect({ dir, ...answersAskedOnce(dir) }).toEqual({ dir, asked: 1, answered: 1 })
    // Each cut run was resumed, in its own directory, once.
    for (const dir of cut)
      expect({ dir, resumed: readEvents(dir).filter((e) => e.type === "run_resumed").length }).toEqual({ dir, resumed: 1 })
  }, 240_000)

  test("a signal stops the running items cleanly (exit 4); the same command again finishes them", async () => {
    const cwd = sandbox()
    writeConfig(cwd, team(0.05), "team.yaml")
    writeItems(cwd, 12)
    const first = await startCli("source", batch(cwd, ["--concurrency", "3"]), { cwd, env: ENV, timeoutMs: 60_000 })
    await waitForLines(first, "ITEM: ", 2)
    first.proc.kill("SIGINT")
    const stopped = await first.done
    expect(stopped.exitCode).toBe(4)
    expect(stopped.lines.at(-2)).toBe("BATCH: interrupted")
    const got = resultLines(cwd).length
    expect(got).toBeLessThan(12)
    const again = await runCli("source", batch(cwd), { cwd, env: ENV, timeoutMs: 60_000 })
    expect(again.exitCode).toBe(0)
    expect(resultLines(cwd)).toHaveLength(12)
    for (const dir of itemRuns(cwd)) expect(answersAskedOnce(dir)).toEqual({ asked: 1, answered: 1 })
  }, 120_000)

  test("batch.budget_usd: no item starts once the items spent it; exit 3", async () => {
    const cwd = sandbox()
    // About $0.001 a run (a thousand input tokens at $1 per million): the budget allows two or three.
    writeConfig(cwd, team(0, { pricing: { m: { input: 1, cached_input: 1, output: 1 } }, batch: { budget_usd: 0.002 } }), "team.yaml")
    writeItems(cwd, 10)
    const r = await runCli("source", batch(cwd, ["--concurrency", "1"]), { cwd, env: ENV, timeoutMs: 60_000 })
    expect(r.exitCode).toBe(3)
    expect(r.lines.at(-2)).toBe("BATCH: budget")
    const results = resultLines(cwd)
    expect(results.length).toBeGreaterThanOrEqual(2)
    expect(results.length).toBeLessThan(10)
    expect(results.slice(0, -1).reduce((a, x) => a + x.cost_usd, 0)).toBeLessThan(0.002)
    expect(results.reduce((a, x) => a + x.cost_usd, 0)).toBeGreaterThanOrEqual(0.002)
    expect(r.stderr).toContain(`massgen: batch budget: ${results.length}/10 items have a result`)
  }, 60_000)

  test("malformed items: every bad line named before anything runs; exit 1, no batch folder", async () => {
    const cwd = sandbox()
    writeConfig(cwd, team(0), "team.yaml")
    fs.writeFileSync(
      nodePath.join(cwd, "items.jsonl"),
      [
        '{"id": "a", "question": "q1"}',
        "{not json",
        "",
        '{"id": "a", "question": "q2"}',
        '{"id": "b"}',
        '{"id": "a/x", "question": "q"}',
        '{"id": "c", "question": "q", "colour": "red"}',
        "[1, 2]",
        '{"id": "d", "question": "q", "session_id": "../s"}',
      ].join("\n"),
    )
    const r = await runCli("source", batch(cwd), { cwd, env: ENV })
    const path = nodePath.join(cwd, "items.jsonl")
    expect({ code: r.exitCode, stdout: r.stdout }).toEqual({ code: 1, stdout: "" })
    expect(r.stderr.split("\n").filter((l) => l !== "")).toEqual([
      `massgen: ${path}: line 2: not JSON: {not json`,
      `massgen: ${path}: line 4: duplicate id "a" (first on line 1)`,
      `massgen: ${path}: line 5: "question" must be a non-empty string, found null`,
      `massgen: ${path}: line 6: "id": Expected an id without '/' or '\\', found "a/x"`,
      `massgen: ${path}: line 7: unknown key "colour" (known: id, question, config, session_id, metadata)`,
      `massgen: ${path}: line 8: expected a JSON object {"id", "question"}, found a list`,
      `massgen: ${path}: line 9: "session_id": Expected an id that does not start with '.', found "../s"`,
    ])
    expect(fs.existsSync(nodePath.join(cwd, ".massgen"))).toBe(false)

    fs.writeFileSync(nodePath.join(cwd, "empty.jsonl"), "\n\n")
    const empty = await runCli("source", ["batch", "empty.jsonl", "--config", "team.yaml"], { cwd, env: ENV })
    expect({ code: empty.exitCode, stderr: empty.stderr }).toEqual({
      code: 1,
      stderr: `massgen: ${nodePath.join(cwd, "empty.jsonl")}: no items: every line is blank\n`,
    })
    const missing = await runCli("source", ["batch", "nope.jsonl", "--config", "team.yaml"], { cwd, env: ENV })
    expect({ code: missing.exitCode, stderr: missing.stderr }).toEqual({
      code: 1,
      stderr: `massgen: cannot read ${nodePath.join(cwd, "nope.jsonl")}: no such file\n`,
    })
    const usage = await runCli("source", ["batch", "items.jsonl", "--config", "team.yaml", "--concurrency", "0"], { cwd, env: ENV })
    expect({ code: usage.exitCode, stderr: usage.stderr }).toEqual({
      code: 1,
      stderr: 'massgen: --concurrency: expected a whole number of 1 or more, found "0"\n',
    })
  }, 60_000)

  test("an item's own config (relative to the items file) and its session_id and metadata reach its result", async () => {
    const cwd = sandbox()
    writeConfig(cwd, team(0), "team.yaml")
    fs.mkdirSync(nodePath.join(cwd, "sets"))
    const other = team(0)
    other.agents[0]!.backend.final = "Other team: 4."
    writeConfig(nodePath.join(cwd, "sets"), other, "other.yaml")
    fs.writeFileSync(
      nodePath.join(cwd, "sets", "items.jsonl"),
      `${JSON.stringify({ id: "plain", question: "2+2?" })}\n${JSON.stringify({ id: "own", question: "2+2?", config: "other.yaml", session_id: "s-1", metadata: { set: "x" } })}\n`,
    )
    const r = await runCli("source", ["batch", "sets/items.jsonl", "--config", "team.yaml", "--automation"], {
      cwd,
      env: ENV,
      timeoutMs: 60_000,
    })
    expect(r.exitCode).toBe(0)
    const results = Object.fromEntries(resultLines(cwd).map((x) => [x.id, x]))
    expect(results.plain).toMatchObject({ answer: "The answer is 4.", session_id: null, metadata: null })
    expect(results.own).toMatchObject({ answer: "Other team: 4.", session_id: "s-1", metadata: { set: "x" } })
  }, 60_000)

  test("items of one session run one after another, in file order, as its turns: each continues the conversation, and --session-id goes on from there", async () => {
    const cwd = sandbox()
    writeConfig(cwd, team(0.05), "team.yaml")
    const items = [
      { id: "t1", question: "First question?", session_id: "s1" },
      { id: "alone", question: "Unrelated?" },
      { id: "t2", question: "Second question?", session_id: "s1" },
      { id: "u1", question: "Other session?", session_id: "s2" },
      { id: "t3", question: "Third question?", session_id: "s1" },
    ]
    fs.writeFileSync(nodePath.join(cwd, "items.jsonl"), items.map((i) => JSON.stringify(i)).join("\n") + "\n")
    const r = await runCli("source", batch(cwd, ["--concurrency", "4"]), { cwd, env: ENV, timeoutMs: 60_000 })
    expect(r.exitCode).toBe(0)
    const runOf = (id: string) => nodePath.join(batchDir(cwd), "items", id)
    const started = (id: string) => readEvents(runOf(id)).find((e) => e.type === "run_started")
    const finished = (id: string) => readEvents(runOf(id)).find((e) => e.type === "run_finished")
    const turn = (question: string) => [
      { role: "user", content: question },
      { role: "assistant", content: "The answer is 4." },
    ]
    expect(started("t1").conversation ?? []).toEqual([])
    expect(started("t2").conversation).toEqual(turn("First question?"))
    expect(started("t3").conversation).toEqual([...turn("First question?"), ...turn("Second question?")])
    expect(started("u1").conversation ?? []).toEqual([])
    expect(started("alone").conversation ?? []).toEqual([])
    // One after another: each turn starts after the one before it finished.
    expect(Date.parse(started("t2").time)).toBeGreaterThanOrEqual(Date.parse(finished("t1").time))
    expect(Date.parse(started("t3").time)).toBeGreaterThanOrEqual(Date.parse(finished("t2").time))
    const turns = fs
      .readFileSync(nodePath.join(cwd, ".massgen", "sessions", "s1", "turns.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l))
    expect(turns.map((t) => [t.turn, t.log_dir])).toEqual([
      [1, runOf("t1")],
      [2, runOf("t2")],
      [3, runOf("t3")],
    ])
    const next = await runCli("source", ["--config", "team.yaml", "--session-id", "s1", "--automation", "Fourth question?"], {
      cwd,
      env: ENV,
      timeoutMs: 60_000,
    })
    expect(next.exitCode).toBe(0)
    const logDir = next.stdout
      .split("\n")
      .find((l) => l.startsWith("LOG_DIR: "))!
      .slice("LOG_DIR: ".length)
    expect(readEvents(logDir).find((e) => e.type === "run_started").conversation).toEqual([
      ...turn("First question?"),
      ...turn("Second question?"),
      ...turn("Third question?"),
    ])
  }, 60_000)

  test("the items file changed since the batch began: refused, nothing run", async () => {
    const cwd = sandbox()
    writeConfig(cwd, team(0), "team.yaml")
    writeItems(cwd, 2)
    expect((await runCli("source", batch(cwd), { cwd, env: ENV, timeoutMs: 60_000 })).exitCode).toBe(0)
    writeItems(cwd, 3)
    const r = await runCli("source", batch(cwd), { cwd, env: ENV })
    expect(r.exitCode).toBe(1)
    expect(r.stderr).toContain(`massgen: ${batchDir(cwd)} holds a batch of other items`)
    expect(resultLines(cwd)).toHaveLength(2)
  }, 60_000)
})
