/**
 * Issue 4 end to end, with the compiled binary (`dist/massgen`): `resume` and `status`.
 *
 * A run of three `openai` agents pointed at the loopback fake server is killed
 * with SIGKILL (or stopped with SIGINT) while the fake holds some replies back,
 * then `dist/massgen resume --automation LOG_DIR` finishes it: exit 0, the
 * automation lines, status.json complete, one run_started and one run_resumed,
 * and no answer recorded before the kill asked of the model again (the fake
 * counts the requests). Then the refusals: a completed run is not run again
 * (events.jsonl byte-identical), a directory that is not a run or whose config
 * is broken is exit 1 with nothing changed, a second resume while one holds the
 * lock is exit 1, and a lock left by a dead process is taken over. `status`
 * summarises a finished run and rewrites status.json, and only reads a run whose
 * lock a live process holds.
 *
 * No fixed sleeps: the tests wait for events in events.jsonl (a bounded poll),
 * for stdout lines, for requests at the fake server, and for exits.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, ensureBinary, type RunningCli, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeLlm, type FakeRequest, hang, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import {
  crashedRun as crashedRunBy,
  deadPid,
  ENV,
  eventsPath,
  expectExit,
  QUESTION,
  readEvents,
  SCRIPTED_DOC,
  scriptedRun as scriptedRunBy,
  snapshot,
} from "./support/run-dirs.ts"

beforeAll(() => ensureBinary().then(() => undefined), 180_000)
afterAll(() => cleanupSandboxes())

const FINAL = "Final: 2+2 is 4."

// ---------------------------------------------------------------------------
// The fake model

/** The CURRENT ANSWERS block of a round's prompt ("" for a presentation). */
const currentAnswers = (req: FakeRequest): string => {
  const text = promptText(req)
  const start = text.indexOf("<CURRENT ANSWERS")
  return start < 0 ? "" : text.slice(start, text.indexOf("<END OF CURRENT ANSWERS>", start))
}
const selfOf = (req: FakeRequest): string => /You are (agent\d+)\./.exec(promptText(req))?.[1] ?? "?"
const isPresentation = (req: FakeRequest) => offeredTools(req).length === 0
/** A round that would write this agent's first answer: new_answer offered, its own answer not shown. */
const asksFirstAnswer = (req: FakeRequest) => offeredTools(req).includes("new_answer") && !currentAnswers(req).includes(`<${selfOf(req)}.`)

/** Answers once, then votes for the first agent shown; presents when offered no tools. */
const council = (req: FakeRequest): Behaviour => {
  if (isPresentation(req)) return reply({ text: ["Final: ", "2+2 is 4."] })
  const self = selfOf(req)
  if (asksFirstAnswer(req))
    return reply({ text: "Drafting.", toolCalls: [{ name: "new_answer", args: { content: `${self}: it is 4 ✓` }, chunks: 3 }] })
  const target = /<(agent\d+)\.\d+>/.exec(currentAnswers(req))?.[1] ?? self
  return reply({ text: "Reviewing.", toolCalls: [{ name: "vote", args: { agent_id: target, reason: "right" }, chunks: 2 }] })
}

/** A fake whose behaviour the test switches: `phase.respond` decides each request. */
const switchableFake = async () => {
  const phase: { respond: (req: FakeRequest) => Behaviour } = { respond: council }
  const fake = await startFakeLlm({ respond: (req) => phase.respond(req) })
  return { fake, phase }
}

const councilDoc = (fake: FakeLlm) => ({
  agents: [1, 2, 3].map((n) => ({
    id: `agent_${"abc"[n - 1]}`,
    system_message: `You are agent${n}.`,
    backend: { type: "openai", model: "fake-model", base_url: fake.openAiBaseUrl },
  })),
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
})

// ---------------------------------------------------------------------------
// Files

const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)
const statusOf = (dir: string) => JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))

/** Polls events.jsonl until an event matches (a bounded loop of tiny awaits, not a timing assumption). */
const waitForEvent = async (dir: string, match: (e: any) => boolean, timeoutMs = 15_000): Promise<any> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = fs.existsSync(eventsPath(dir)) ? readEvents(dir).find(match) : undefined
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`no matching event in ${eventsPath(dir)} within ${timeoutMs} ms`)
    await Bun.sleep(5)
  }
}

const logDirOf = async (cli: RunningCli) => (await cli.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)

const resume = (dir: string, cwd: string, extra: ReadonlyArray<string> = []) =>
  runCli("binary", ["resume", "--automation", ...extra, dir], { cwd, env: ENV })

const scriptedRun = () => scriptedRunBy("binary")
const crashedRun = (keep?: number) => crashedRunBy("binary", keep)

// ---------------------------------------------------------------------------

describe("resume after SIGKILL, with the fake OpenAI server", () => {
  test("the killed run is finished by resume; no recorded answer is asked again", async () => {
    const { fake, phase } = await switchableFake()
    try {
      // First process: agent1 answers; every other reply is held back (no headers until the client goes).
      phase.respond = (req) => (selfOf(req) === "agent1" && asksFirstAnswer(req) ? council(req) : hang())
      const cwd = sandbox()
      const config = writeConfig(cwd, councilDoc(fake))
      const first = await startCli("binary", ["--automation", "--config", config, QUESTION], { cwd, env: ENV })
      const dir = await logDirOf(first)
      await waitForEvent(dir, (e) => e.type === "answer_submitted")
      // agent1's second round has gone out too: four requests in all.
      await fake.waitForRequest(4)
      await waitForEvent(dir, (e) => e.type === "call_start" && e.agent === "agent_a" && e.round === 2)
      first.proc.kill("SIGKILL")
      const killed = await first.done
      expect(killed.signal).toBe("SIGKILL")
      const before = fs.readFileSync(eventsPath(dir), "utf8")
      expect(ofType(readEvents(dir), "run_finished")).toEqual([])
      const recordedAnswers = ofType(readEvents(dir), "answer_submitted")
      expect(recordedAnswers.map((e) => [e.agent, e.label])).toEqual([["agent_a", "agent1.1"]])
      const requestsBefore = fake.requests.length

      phase.respond = council
      const r = await resume(dir, cwd)
      expectExit(r, 0)
      expect(r.lines[0]).toBe(`LOG_DIR: ${dir}`)
      expect(r.lines).toContain(`STATUS: ${nodePath.join(dir, "status.json")}`)
      expect(r.lines).toContain(`QUESTION: ${QUESTION}`)
      expect(r.lines).toContain("WINNER: agent_a")
      expect(r.lines).toContain(`ANSWER_FILE: ${nodePath.join(dir, "final", "agent_a", "answer.txt")}`)
      expect(r.lines.at(-1)).toMatch(/^COMPLETED: 3 agents, /)
      expect(r.stderr).toBe("")

      const after = fs.readFileSync(eventsPath(dir), "utf8")
      expect(after.startsWith(before)).toBe(true)
      const events = readEvents(dir)
      expect(ofType(events, "run_started")).toHaveLength(1)
      expect(ofType(events, "run_resumed")).toEqual([
        expect.objectContaining({
          dropped_lines: 0,
          torn_tail: false,
          restarted_rounds: [],
          presentation_restarted: false,
          // The rounds in flight go on where they were.
          continued_rounds: [
            { agent: "agent_a", round: 2, shown: ["agent1.1"], vote_only: false },
            { agent: "agent_b", round: 1, shown: [], vote_only: false },
            { agent: "agent_c", round: 1, shown: [], vote_only: false },
          ],
          presentation_continued: false,
        }),
      ])
      expect(ofType(events, "run_finished")).toEqual([expect.objectContaining({ reason: "completed", winner: "agent_a" })])
      const labels = ofType(events, "answer_submitted").map((e) => e.label)
      expect(labels.sort()).toEqual(["agent1.1", "agent2.1", "agent3.1"])

      const status = statusOf(dir)
      expect(status.is_complete).toBe(true)
      expect(status.finish_reason).toBe("completed")
      expect(status.results.winner).toBe("agent_a")
      expect(fs.readFileSync(nodePath.join(dir, "final", "agent_a", "answer.txt"), "utf8")).toBe(FINAL)
      expect(fs.existsSync(nodePath.join(dir, "run.lock"))).toBe(false)

      // agent1's answer was recorded: it was asked for it once, before the kill, never after.
      const firstAnswerAsks = (agent: string) => fake.requests.filter((q) => selfOf(q) === agent && asksFirstAnswer(q))
      expect(firstAnswerAsks("agent1").map((q) => q.n <= requestsBefore)).toEqual([true])
      // agent2 and agent3 were asked once before (held back, never answered) and once after.
      for (const agent of ["agent2", "agent3"]) expect(firstAnswerAsks(agent).map((q) => q.n > requestsBefore)).toEqual([false, true])
      // Every round after the resume shows agent1's recorded answer to agent1.
      for (const q of fake.requests.filter((q) => q.n > requestsBefore && selfOf(q) === "agent1" && !isPresentation(q))) {
        expect(currentAnswers(q)).toContain("<agent1.1>")
      }
      // Replay of the killed-and-resumed run gives the same decisions.
      const check = await runCli("binary", ["replay", dir, "--check"], { cwd, env: ENV })
      expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
    } finally {
      fake.stop()
    }
  }, 60_000)

  test("a line torn by the kill is dropped and counted; the run completes", async () => {
    const { fake, phase } = await switchableFake()
    try {
      phase.respond = (req) => (selfOf(req) === "agent2" && asksFirstAnswer(req) ? council(req) : hang())
      const cwd = sandbox()
      const config = writeConfig(cwd, councilDoc(fake))
      const first = await startCli("binary", ["--automation", "--config", config, QUESTION], { cwd, env: ENV })
      const dir = await logDirOf(first)
      await waitForEvent(dir, (e) => e.type === "call_start" && e.agent === "agent_b" && e.round === 2)
      first.proc.kill("SIGKILL")
      await first.done
      // The write the kill cut short.
      fs.appendFileSync(eventsPath(dir), '{"schema":1,"type":"call_end","time":"2026-')
      phase.respond = council
      const r = await resume(dir, cwd)
      expectExit(r, 0)
      const text = fs.readFileSync(eventsPath(dir), "utf8")
      expect(text).toContain('{"schema":1,"type":"call_end","time":"2026-\n')
      const events = readEvents(dir)
      expect(ofType(events, "run_resumed")).toEqual([expect.objectContaining({ dropped_lines: 1, torn_tail: true })])
      expect(r.stderr).toBe(`massgen: ${eventsPath(dir)}: skipped 1 line (1 torn tail)\n`)
      expect(
        ofType(events, "answer_submitted")
          .filter((e) => e.agent === "agent_b")
          .map((e) => e.label),
      ).toEqual(["agent2.1"])
      expect(statusOf(dir)).toMatchObject({ is_complete: true, finish_reason: "completed" })
      expect(fake.requests.filter((q) => selfOf(q) === "agent2" && asksFirstAnswer(q))).toHaveLength(1)
      // Replay reads past the torn line and gives the same decisions.
      const check = await runCli("binary", ["replay", dir, "--check"], { cwd, env: ENV })
      expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
      // Ended by resume's newline, the cut line is a whole line that is not JSON.
      expect(check.stderr).toBe(`massgen: ${eventsPath(dir)}: skipped 1 line (1 unreadable)\n`)
    } finally {
      fake.stop()
    }
  }, 60_000)
})

describe("resume after SIGINT", () => {
  test("a run stopped with Ctrl+C (exit 4) is continued to completion", async () => {
    const { fake, phase } = await switchableFake()
    try {
      phase.respond = (req) => (selfOf(req) === "agent3" ? hang() : council(req))
      const cwd = sandbox()
      const config = writeConfig(cwd, councilDoc(fake))
      const first = await startCli("binary", ["--automation", "--config", config, QUESTION], { cwd, env: ENV })
      const dir = await logDirOf(first)
      // agent1 and agent2 have answered and voted; agent3 is held back.
      await waitForEvent(dir, (e) => e.type === "vote_cast" && e.agent === "agent_b")
      await waitForEvent(dir, (e) => e.type === "vote_cast" && e.agent === "agent_a")
      first.proc.kill("SIGINT")
      const stopped = await first.done
      expectExit(stopped, 4)
      expect(ofType(readEvents(dir), "run_finished")).toEqual([expect.objectContaining({ reason: "interrupted" })])
      expect(statusOf(dir).finish_reason).toBe("interrupted")
      const votesBefore = ofType(readEvents(dir), "vote_cast").length

      phase.respond = council
      const r = await resume(dir, cwd)
      expectExit(r, 0)
      const events = readEvents(dir)
      expect(ofType(events, "run_resumed")).toEqual([
        expect.objectContaining({ dropped_lines: 0, torn_tail: false, presentation_restarted: false }),
      ])
      expect(ofType(events, "run_finished").map((e) => e.reason)).toEqual(["interrupted", "completed"])
      expect(
        ofType(events, "answer_submitted")
          .map((e) => e.label)
          .sort(),
      ).toEqual(["agent1.1", "agent2.1", "agent3.1"])
      expect(ofType(events, "vote_cast").length).toBeGreaterThanOrEqual(votesBefore)
      expect(statusOf(dir)).toMatchObject({ is_complete: true, finish_reason: "completed" })
      expect(fs.readFileSync(nodePath.join(dir, "final", "agent_a", "answer.txt"), "utf8")).toBe(FINAL)
      for (const agent of ["agent1", "agent2"])
        expect(fake.requests.filter((q) => selfOf(q) === agent && asksFirstAnswer(q))).toHaveLength(1)
      const check = await runCli("binary", ["replay", dir, "--check"], { cwd, env: ENV })
      expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
    } finally {
      fake.stop()
    }
  }, 60_000)
})

describe("what resume refuses, and what it leaves alone", () => {
  test("a completed run: exit 0, reported as complete, events.jsonl byte-identical", async () => {
    const { cwd, dir } = await scriptedRun()
    const before = snapshot(dir)
    const r = await resume(dir, cwd)
    expectExit(r, 0)
    expect(r.lines).toContain("WINNER: agent_a")
    expect(snapshot(dir)).toEqual(before)
    const plain = await runCli("binary", ["resume", dir], { cwd, env: ENV })
    expectExit(plain, 0)
    expect(plain.stdout).toContain("already finished (completed)")
    expect(snapshot(dir)).toEqual(before)
  })

  test("a completed run whose process died before its last files: they are written again from the events", async () => {
    const { cwd, dir } = await scriptedRun()
    const before = snapshot(dir)
    for (const name of ["coordination_events.json", "snapshot_mappings.json", "snapshots"])
      fs.rmSync(nodePath.join(dir, name), { recursive: true, force: true })
    fs.writeFileSync(nodePath.join(dir, "status.json"), JSON.stringify({ is_complete: false }))
    const r = await resume(dir, cwd)
    expectExit(r, 0)
    expect(r.lines).toContain("WINNER: agent_a")
    expect(snapshot(dir)).toEqual(before)
  })

  test("a run started with a relative config path holding a literal key resumes from another directory", async () => {
    const cwd = sandbox()
    fs.mkdirSync(nodePath.join(cwd, "cfgdir"))
    const doc = {
      ...SCRIPTED_DOC,
      agents: SCRIPTED_DOC.agents.map((a: any) => ({ ...a, backend: { ...a.backend, api_key: "sk-literal-SECRET" } })),
    }
    writeConfig(nodePath.join(cwd, "cfgdir"), doc, "cfg.yaml")
    const first = await runCli("binary", ["--automation", "--config", "cfgdir/cfg.yaml", QUESTION], { cwd, env: ENV })
    expectExit(first, 0)
    const dir = first.lines.find((l) => l.startsWith("LOG_DIR: "))!.slice("LOG_DIR: ".length)
    // Cut it as a crash would, then resume from elsewhere: the masked key is read from the config file.
    const lines = fs.readFileSync(eventsPath(dir), "utf8").split("\n")
    fs.writeFileSync(
      eventsPath(dir),
      lines
        .slice(0, 12)
        .map((l) => `${l}\n`)
        .join(""),
    )
    const r = await runCli("binary", ["resume", "--automation", dir], { cwd: sandbox(), env: ENV })
    expectExit(r, 0)
    expect(statusOf(dir).finish_reason).toBe("completed")
    expect(fs.readFileSync(nodePath.join(dir, "execution_metadata.yaml"), "utf8")).not.toContain("SECRET")
  })

  test("an empty directory, a missing one and a file: exit 1, a clear message, nothing created", async () => {
    const cwd = sandbox()
    const empty = nodePath.join(cwd, "empty")
    fs.mkdirSync(empty)
    const r = await resume(empty, cwd)
    expectExit(r, 1)
    expect(r.stderr).toContain(`massgen: not a massgen run: ${empty} (it has no events.jsonl)`)
    expect(fs.readdirSync(empty)).toEqual([])
    const missing = nodePath.join(cwd, "missing")
    const m = await resume(missing, cwd)
    expectExit(m, 1)
    expect(m.stderr).toContain(`massgen: no such log directory: ${missing}`)
    expect(fs.existsSync(missing)).toBe(false)
    const file = nodePath.join(cwd, "team.yaml")
    fs.writeFileSync(file, "agents: []\n")
    const f = await resume(file, cwd)
    expectExit(f, 1)
    expect(f.stderr).toContain(`massgen: not a massgen run: ${file} (a file, not a directory)`)
    expect(fs.readFileSync(file, "utf8")).toBe("agents: []\n")
    expect(fs.readdirSync(cwd).sort()).toEqual(["empty", "team.yaml"])
  })

  test("a directory whose events.jsonl is not a run's: exit 1, unchanged", async () => {
    const cwd = sandbox()
    fs.writeFileSync(nodePath.join(cwd, "events.jsonl"), "hello\n")
    const before = snapshot(cwd)
    const r = await resume(cwd, cwd)
    expectExit(r, 1)
    expect(r.stderr).toContain("not a massgen run")
    expect(snapshot(cwd)).toEqual(before)
  })

  test("a run whose execution_metadata.yaml is corrupted: exit 1, nothing changes", async () => {
    const { cwd, dir } = await crashedRun()
    fs.writeFileSync(nodePath.join(dir, "execution_metadata.yaml"), "config: [unclosed\n  : : :\n")
    const before = snapshot(dir)
    const r = await resume(dir, cwd)
    expectExit(r, 1)
    expect(r.stderr).toContain("cannot read the run's config")
    expect(snapshot(dir)).toEqual(before)
  })

  test("a run whose recorded config no longer decodes: exit 1, nothing changes", async () => {
    const { cwd, dir } = await crashedRun()
    const meta = nodePath.join(dir, "execution_metadata.yaml")
    fs.writeFileSync(meta, fs.readFileSync(meta, "utf8").replaceAll("type: scripted", "type: nonsense"))
    const before = snapshot(dir)
    const r = await resume(dir, cwd)
    expectExit(r, 1)
    expect(r.stderr).toContain("cannot read the run's config")
    expect(snapshot(dir)).toEqual(before)
  })

  test("a run whose recorded config names other agents than the run: exit 1, nothing changes", async () => {
    const { cwd, dir } = await crashedRun()
    const meta = nodePath.join(dir, "execution_metadata.yaml")
    fs.writeFileSync(meta, fs.readFileSync(meta, "utf8").replace("id: agent_c", "id: agent_z"))
    const before = snapshot(dir)
    const r = await resume(dir, cwd)
    expectExit(r, 1)
    expect(r.stderr).toContain("cannot read the run's config")
    expect(r.stderr).toContain("agent_z")
    expect(snapshot(dir)).toEqual(before)
  })

  test("a run cut by a crash is resumed from the binary; a stale lock of a dead process is taken over", async () => {
    const { cwd, dir } = await crashedRun()
    const lock = nodePath.join(dir, "run.lock")
    fs.writeFileSync(lock, `${await deadPid()}\n`)
    const r = await resume(dir, cwd)
    expectExit(r, 0)
    expect(ofType(readEvents(dir), "run_resumed")).toHaveLength(1)
    expect(statusOf(dir)).toMatchObject({ is_complete: true, finish_reason: "completed" })
    expect(fs.existsSync(lock)).toBe(false)
  })

  test("a resume while the run or another resume is running is refused (exit 1) and changes nothing", async () => {
    const { fake, phase } = await switchableFake()
    let holder: RunningCli | null = null
    try {
      phase.respond = () => hang()
      const cwd = sandbox()
      const config = writeConfig(cwd, councilDoc(fake))
      const first = await startCli("binary", ["--automation", "--config", config, QUESTION], { cwd, env: ENV })
      const dir = await logDirOf(first)
      await waitForEvent(dir, (e) => e.type === "call_start" && e.agent === "agent_c")
      // The run itself holds the lock: no resume while it lives.
      const early = await resume(dir, cwd)
      expectExit(early, 1)
      expect(early.stderr).toContain(`process ${first.proc.pid}`)
      first.proc.kill("SIGKILL")
      await first.done
      const lastCall = Math.max(...ofType(readEvents(dir), "call_start").map((e) => e.call))

      holder = await startCli("binary", ["resume", "--automation", dir], { cwd, env: ENV })
      await holder.waitForLine("LOG_DIR: ")
      await waitForEvent(dir, (e) => e.type === "run_resumed")
      // agent_c's round goes on: its call is made again.
      await waitForEvent(dir, (e) => e.type === "call_start" && e.agent === "agent_c" && e.round === 1 && e.call > lastCall)
      expect(fs.readFileSync(nodePath.join(dir, "run.lock"), "utf8").trim().split(" ")[0]).toBe(String(holder.proc.pid))
      const events = fs.readFileSync(eventsPath(dir), "utf8")

      const second = await resume(dir, cwd)
      expectExit(second, 1)
      expect(second.stderr).toContain(`process ${holder.proc.pid}`)
      expect(fs.readFileSync(eventsPath(dir), "utf8")).toBe(events)

      // status on the live run reads, and does not write status.json.
      const statusFile = nodePath.join(dir, "status.json")
      const st = await runCli("binary", ["status", dir], { cwd, env: ENV })
      expectExit(st, 0)
      expect(st.lines[0]).toMatch(/: running \(initial_answer, 0%\)$/)

      holder.proc.kill("SIGINT")
      expectExit(await holder.done, 4)
      expect(fs.existsSync(nodePath.join(dir, "run.lock"))).toBe(false)
      expect(JSON.parse(fs.readFileSync(statusFile, "utf8")).finish_reason).toBe("interrupted")
    } finally {
      if (holder !== null && holder.proc.exitCode === null) holder.proc.kill("SIGKILL")
      fake.stop()
    }
  }, 60_000)
})

describe("massgen status", () => {
  test("on a finished run: the summary, and status.json rebuilt from events.jsonl", async () => {
    const { cwd, dir } = await scriptedRun()
    const statusFile = nodePath.join(dir, "status.json")
    const original = JSON.parse(fs.readFileSync(statusFile, "utf8"))
    fs.writeFileSync(statusFile, "{}")
    const r = await runCli("binary", ["status", dir], { cwd, env: ENV })
    expectExit(r, 0)
    const id = nodePath.basename(dir)
    expect(r.lines).toEqual([
      `Run ${id}: completed (presentation, 100%)`,
      `Question: ${QUESTION}`,
      "  agent_a: completed, 1 answer, votes for agent_a (agent1.1)",
      "  agent_b: voted, 1 answer, votes for agent_a (agent1.1)",
      "  agent_c: voted, 1 answer, votes for agent_a (agent1.1)",
      "Votes: agent1.1: 3, agent2.1: 0, agent3.1: 0",
      "Winner: agent_a",
      // Scripted models have no price: the cost is unknown, not $0.
      expect.stringMatching(/^Tokens: \d+ in, \d+ out; cost \$—$/),
    ])
    const rebuilt = JSON.parse(fs.readFileSync(statusFile, "utf8"))
    expect(rebuilt).toEqual(original)
    const json = await runCli("binary", ["status", "--json", dir], { cwd, env: ENV })
    expectExit(json, 0)
    const { log, stopped, ...status } = JSON.parse(json.stdout)
    expect(status).toEqual(original)
    expect({ log, stopped }).toEqual({
      log: {
        events: eventsPath(dir),
        skipped: { torn_tail: 0, unreadable: 0, newer_schema: 0, duplicate: 0, out_of_order: 0, does_not_fit: 0 },
      },
      stopped: null,
    })
    expect(json.stderr).toBe("")
  })

  test("on a run whose lock a live process holds: read only, status.json not written", async () => {
    const { cwd, dir } = await crashedRun()
    const statusFile = nodePath.join(dir, "status.json")
    fs.rmSync(statusFile)
    // This test process is alive: the run looks like it is still going.
    fs.writeFileSync(nodePath.join(dir, "run.lock"), `${process.pid}\n`)
    const before = snapshot(dir)
    const r = await runCli("binary", ["status", dir], { cwd, env: ENV })
    expectExit(r, 0)
    expect(r.lines[0]).toMatch(/: running \(/)
    expect(snapshot(dir)).toEqual(before)
    expect(fs.existsSync(statusFile)).toBe(false)
  })

  test("on a run that crashed (no live lock): status.json rebuilt, still in progress; the summary says it stopped", async () => {
    const { cwd, dir } = await crashedRun()
    const statusFile = nodePath.join(dir, "status.json")
    fs.rmSync(statusFile)
    fs.writeFileSync(nodePath.join(dir, "run.lock"), `${await deadPid()}\n`)
    const r = await runCli("binary", ["status", dir], { cwd, env: ENV })
    expectExit(r, 0)
    expect(statusOf(dir)).toMatchObject({ is_complete: false, finish_reason: "in_progress" })
    expect(r.lines[0]).toMatch(/: stopped \(/)
    expect(r.lines.at(-1)).toBe(`Stopped: its process is gone and the run did not finish; continue it with: massgen resume ${dir}`)
  })

  test("a directory that is not a run: exit 1", async () => {
    const cwd = sandbox()
    const r = await runCli("binary", ["status", cwd], { cwd, env: ENV })
    expectExit(r, 1)
    expect(r.stderr).toContain("not a massgen run")
    expect(fs.readdirSync(cwd)).toEqual([])
  })
})
