/**
 * Issue 9, damaged logs, end to end from source: what `status`, `resume`,
 * `replay` and `viewer` do with a log that has lines they cannot read, lines
 * of a newer schema, an empty log, or a run whose process died.
 *
 * - Each command reports what it skipped as one stderr line (and `status
 *   --json` as `log.skipped`), counted by kind: torn tail, unreadable, from a
 *   newer massgen, duplicate, out of order, and events that do not fit.
 * - `resume` refuses a log with lines of a newer schema and leaves it as it is.
 * - `viewer` exits at once on a run with no events, and `--pick` tells a
 *   stopped run from a live one, with the command that resumes it.
 * - `status` on a run whose process died says it stopped and how to resume it.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox } from "./support/cli.ts"
import { crashedRun, deadPid, ENV, eventsPath, expectExit, readEvents, scriptedRun, snapshot, viewerPick } from "./support/run-dirs.ts"

afterAll(cleanupSandboxes)

const lineOf = (wire: Record<string, unknown>) => `${JSON.stringify(wire)}\n`

/**
 * Damages a run's log: after its run_started come an event that does not fit
 * (a vote of an agent the run does not have), an unreadable line, a line of a
 * newer schema (unless `newer` is false), a duplicate of run_started and an
 * event earlier than the one before it; the log ends with a torn line.
 */
const damage = (dir: string, options: { readonly newer?: boolean } = {}) => {
  const lines = fs
    .readFileSync(eventsPath(dir), "utf8")
    .split("\n")
    .filter((l) => l !== "")
  const [first, second, ...rest] = lines
  const start = JSON.parse(first!).time
  const inserted = [
    lineOf({
      schema: 2,
      type: "vote_cast",
      time: start,
      agent: "ghost",
      round: 1,
      target: "agent_a",
      target_label: "agent1.1",
      reason: "?",
    }),
    "{garbage\n",
    ...(options.newer === false ? [] : [lineOf({ schema: 3, type: "hologram_projected", time: start })]),
    `${first}\n`,
    lineOf({ ...JSON.parse(second!), time: "2000-01-01T00:00:00.000Z" }),
  ]
  const last = rest.pop()!
  fs.writeFileSync(
    eventsPath(dir),
    [`${first}\n`, ...inserted, `${second}\n`, ...rest.map((l) => `${l}\n`), `${last}\n`, last.slice(0, 20)].join(""),
  )
}

/** Runs a command from source that exits 0 and says `line` on stderr, alone; its result. */
const saying = async (args: ReadonlyArray<string>, cwd: string, line: string) => {
  const r = await runCli("source", args, { cwd, env: ENV })
  expectExit(r, 0)
  expect(r.stderr).toBe(`${line}\n`)
  return r
}

const report = (dir: string, lines: number, kinds: string) =>
  `massgen: ${eventsPath(dir)}: skipped ${lines} lines (${kinds}) and 1 event that does not fit`
const ALL_KINDS = "1 torn tail, 1 unreadable, 1 from a newer massgen, 1 duplicate, 1 out of order"
const AUTOMATION_KEYS = [
  "LOG_DIR",
  "STATUS",
  "QUESTION",
  "[Coordination in progress",
  "WINNER",
  "ANSWER_FILE",
  "DURATION",
  "ANSWER_PREVIEW",
  "COMPLETED",
]
const onlyAutomationLines = (lines: ReadonlyArray<string>) =>
  expect(lines.filter((l) => !AUTOMATION_KEYS.some((k) => l.startsWith(k)))).toEqual([])

describe("each command reports what it skipped: one stderr line, counted by kind", () => {
  test("status, status --json, replay and viewer on a finished run's damaged log", async () => {
    const { cwd, dir } = await scriptedRun("source")
    const clean = await runCli("source", ["status", dir], { cwd, env: ENV })
    expect(clean.stderr).toBe("")
    damage(dir)
    const expected = report(dir, 5, ALL_KINDS)

    const status = await saying(["status", dir], cwd, expected)
    expect(status.lines[0]).toMatch(/: completed \(presentation, 100%\)$/)

    const json = await runCli("source", ["status", "--json", dir], { cwd, env: ENV })
    expectExit(json, 0)
    expect(JSON.parse(json.stdout).log).toEqual({
      events: eventsPath(dir),
      skipped: { torn_tail: 1, unreadable: 1, newer_schema: 1, duplicate: 1, out_of_order: 1, does_not_fit: 1 },
    })
    // status.json stays the file MassGen's tools read: the report is not in it.
    expect(JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8")).log).toBeUndefined()

    await saying(["replay", dir], cwd, expected)
    const viewer = await saying(["viewer", dir], cwd, expected)
    expect(viewer.lines.at(-1)).toStartWith("Run completed")
  }, 60_000)

  test("resume --automation of a finished run and of a crashed one: stdout holds only the automation lines", async () => {
    const finished = await scriptedRun("source")
    damage(finished.dir, { newer: false })
    const done = await runCli("source", ["resume", "--automation", finished.dir], { cwd: finished.cwd, env: ENV })
    expectExit(done, 0)
    onlyAutomationLines(done.lines)
    expect(done.stderr).toBe(`${report(finished.dir, 4, "1 torn tail, 1 unreadable, 1 duplicate, 1 out of order")}\n`)

    const crashed = await crashedRun("source")
    damage(crashed.dir, { newer: false })
    const resumed = await runCli("source", ["resume", "--automation", crashed.dir], { cwd: crashed.cwd, env: ENV })
    expectExit(resumed, 0)
    onlyAutomationLines(resumed.lines)
    expect(resumed.lines.at(-1)).toMatch(/^COMPLETED: 3 agents/)
    expect(resumed.stderr).toBe(`${report(crashed.dir, 4, "1 torn tail, 1 unreadable, 1 duplicate, 1 out of order")}\n`)
    expect(readEvents(crashed.dir).find((e) => e.type === "run_resumed")).toMatchObject({ dropped_lines: 4, torn_tail: true })
  }, 60_000)
})

describe("a log with lines of a newer schema", () => {
  const newerLine = lineOf({
    schema: 3,
    type: "round_started",
    time: "2099-01-01T00:00:00.000Z",
    agent: "agent_a",
    round: 9,
    shown: [],
    vote_only: false,
    restart: false,
    lane: 2,
  })

  test("resume refuses it (exit 1, naming the log) and changes nothing; status, replay and viewer read what they can", async () => {
    const { cwd, dir } = await crashedRun("source")
    fs.appendFileSync(eventsPath(dir), newerLine)
    const before = snapshot(dir)
    const resume = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV })
    expectExit(resume, 1)
    expect(resume.stdout).toBe("")
    const errors = resume.stderr.trimEnd().split("\n")
    expect(errors).toHaveLength(1)
    expect(errors[0]).toContain("written by a newer massgen")
    expect(errors[0]).toContain(eventsPath(dir))
    expect(snapshot(dir)).toEqual(before)

    const newer = `massgen: ${eventsPath(dir)}: skipped 1 line (1 from a newer massgen)`
    await saying(["status", dir], cwd, newer)
    await saying(["replay", dir], cwd, newer)
    // The run's process is gone: the viewer shows what there is, and says so.
    const viewer = await runCli("source", ["viewer", dir], { cwd, env: ENV })
    expectExit(viewer, 0)
    expect(viewer.stderr.trimEnd().split("\n")).toContain(newer)
    expect(fs.readFileSync(eventsPath(dir), "utf8").endsWith(newerLine)).toBe(true)
  }, 60_000)
})

describe("a run with no events, and runs whose process died", () => {
  test("viewer on a run whose events.jsonl is empty exits 1 at once, saying so", async () => {
    const dir = nodePath.join(sandbox(), "log_20260101_000000_000000")
    fs.mkdirSync(dir)
    fs.writeFileSync(eventsPath(dir), "")
    const r = await runCli("source", ["viewer", dir], { timeoutMs: 10_000 })
    expectExit(r, 1)
    expect(r.stdout).toBe("")
    expect(r.stderr.trimEnd().split("\n")).toEqual([
      expect.stringMatching(/^massgen: no events to view: .*log_20260101_000000_000000.*stopped before its first event/),
    ])
  }, 15_000)

  test("viewer --pick labels runs stopped unfinished, with the command that resumes them", async () => {
    const root = sandbox()
    const logs = nodePath.join(root, "logs")
    fs.mkdirSync(logs)
    const runs = await Promise.all([scriptedRun("source"), crashedRun("source"), crashedRun("source")])
    const [done, live, dead] = runs.map((run, i) => {
      const to = nodePath.join(logs, `log_2026010${4 - i}_000000_000000`)
      fs.renameSync(run.dir, to)
      return to
    })
    fs.writeFileSync(nodePath.join(live!, "run.lock"), `${process.pid}\n`)
    fs.writeFileSync(nodePath.join(dead!, "run.lock"), `${await deadPid()}\n`)
    const empty = nodePath.join(logs, "log_20260101_000000_000000")
    fs.mkdirSync(empty)
    fs.writeFileSync(eventsPath(empty), "")
    fs.mkdirSync(nodePath.join(logs, "log_20260100_000000_000000"))
    fs.writeFileSync(eventsPath(nodePath.join(logs, "log_20260100_000000_000000")), lineOf({ schema: 2 }).slice(0, 5))

    const { code, stdout } = await viewerPick(root, logs, "\n")
    expect(code).toBe(0)
    const lines = stdout.split("\n")
    expect(lines.slice(1, 6)).toEqual([
      ` 1. [DONE] ${nodePath.basename(done!)}  3 agents  What is 2+2?`,
      ` 2. [LIVE] ${nodePath.basename(live!)}  3 agents  What is 2+2?`,
      ` 3. [STOPPED] ${nodePath.basename(dead!)}  3 agents  What is 2+2?  (resume: massgen resume ${dead})`,
      ` 4. [STOPPED] ${nodePath.basename(empty)}  no events: stopped before its first event`,
      ` 5. [STOPPED] ${nodePath.basename(nodePath.join(logs, "log_20260100_000000_000000"))}  no events: stopped before its first event`,
    ])
  }, 60_000)

  test("status on a run whose process died unfinished says it stopped and how to resume it", async () => {
    const { cwd, dir } = await crashedRun("source")
    fs.writeFileSync(nodePath.join(dir, "run.lock"), `${await deadPid()}\n`)
    const text = await runCli("source", ["status", dir], { cwd, env: ENV })
    expectExit(text, 0)
    expect(text.lines[0]).toMatch(/: stopped \(initial_answer, \d+%\)$/)
    expect(text.lines.at(-1)).toBe(`Stopped: its process is gone and the run did not finish; continue it with: massgen resume ${dir}`)
    const json = await runCli("source", ["status", "--json", dir], { cwd, env: ENV })
    expect(JSON.parse(json.stdout).stopped).toEqual({ cause: "process_gone", resume: `massgen resume ${dir}` })
    // No lock at all (killed before it took one): stopped too.
    fs.rmSync(nodePath.join(dir, "run.lock"))
    expect((await runCli("source", ["status", "--json", dir], { cwd, env: ENV })).stdout).toContain('"cause": "process_gone"')
    // A live holder: running, not stopped.
    fs.writeFileSync(nodePath.join(dir, "run.lock"), `${process.pid}\n`)
    const running = await runCli("source", ["status", "--json", dir], { cwd, env: ENV })
    expect(JSON.parse(running.stdout).stopped).toBeNull()
  }, 60_000)

  test("status on a finished run: not stopped; on a run stopped by a signal: the command that resumes it", async () => {
    const { cwd, dir } = await scriptedRun("source")
    const finished = await runCli("source", ["status", "--json", dir], { cwd, env: ENV })
    expect(JSON.parse(finished.stdout).stopped).toBeNull()
    const text = fs.readFileSync(eventsPath(dir), "utf8")
    fs.writeFileSync(eventsPath(dir), text.replace('"reason":"completed"', '"reason":"interrupted"'))
    const interrupted = await runCli("source", ["status", dir], { cwd, env: ENV })
    expect(interrupted.lines[0]).toMatch(/: interrupted \(/)
    expect(interrupted.lines.at(-1)).toBe(`Stopped: interrupted by a signal; continue it with: massgen resume ${dir}`)
  }, 60_000)
})
