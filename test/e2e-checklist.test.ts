/**
 * Checklist-gated voting end to end (issue 27): two `openai` agents on the loopback fake server, with
 * `voting_sensitivity: checklist_gated`. Each answers once, then calls `submit_checklist` with scores
 * of every shown answer, then votes; a vote before the checklist is refused (`checklist_required`).
 * The run completes; the scores are `checklist_submitted` events and in status.json; killed with
 * SIGKILL after a checklist was recorded, `resume` finishes the run without asking for that checklist
 * again; `replay --check` says SAME.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeLlm, type FakeRequest, hang, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { ENV, eventsPath, expectExit, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const QUESTION = "What is 2 + 2?"
const selfOf = (req: FakeRequest): string => /You are (agent\d+)\./.exec(promptText(req))?.[1] ?? "?"
const shownLabels = (req: FakeRequest): ReadonlyArray<string> => {
  const text = promptText(req)
  const start = text.indexOf("<CURRENT ANSWERS")
  const block = start < 0 ? "" : text.slice(start, text.indexOf("<END OF CURRENT ANSWERS>", start))
  return [...new Set([...block.matchAll(/<(agent\d+\.\d+)>/g)].map((m) => m[1]!))]
}
const submitted = (req: FakeRequest) => promptText(req).includes('\\"status\\":\\"accepted\\"')
const refusedVote = (req: FakeRequest) => promptText(req).includes("Call submit_checklist first")

/** Answers once; then votes at once (refused: no checklist yet), scores every shown answer, and votes for the first. */
const council = (req: FakeRequest): Behaviour => {
  const tools = offeredTools(req)
  if (tools.length === 0) return reply({ text: "Final: 4." })
  const self = selfOf(req)
  const shown = shownLabels(req)
  if (tools.includes("new_answer") && !shown.some((l) => l.startsWith(`${self}.`)))
    return reply({ toolCalls: [{ name: "new_answer", args: { content: `${self}: it is 4` } }] })
  const target = shown[0]?.split(".")[0] ?? self
  const vote = reply({ toolCalls: [{ name: "vote", args: { agent_id: target, reason: "right" } }] })
  if (!tools.includes("submit_checklist") || submitted(req)) return vote
  if (!refusedVote(req)) return vote
  const scores = Object.fromEntries(shown.map((l) => [l, { E1: { score: 9, reasoning: "asked" }, E2: 9, E3: 8, E4: { score: 9 } }]))
  return reply({ toolCalls: [{ name: "submit_checklist", args: { scores } }] })
}

const doc = (fake: FakeLlm) => ({
  agents: [1, 2].map((n) => ({
    id: `agent_${"ab"[n - 1]}`,
    system_message: `You are agent${n}.`,
    backend: { type: "openai", model: "fake-model", base_url: fake.openAiBaseUrl },
  })),
  orchestrator: { voting_sensitivity: "checklist_gated", voting_threshold: 3, max_new_answers_per_agent: 2 },
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
})

const ofType = (dir: string, type: string) => readEvents(dir).filter((e) => e.type === type)

const waitForEvent = async (dir: string, match: (e: any) => boolean, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(fs.existsSync(eventsPath(dir)) && readEvents(dir).some(match))) {
    if (Date.now() > deadline) throw new Error(`no matching event in ${eventsPath(dir)} within ${timeoutMs} ms`)
    await Bun.sleep(5)
  }
}

/** `replay --check` rebuilds the run from its events and says SAME. */
const expectReplaySame = async (dir: string, cwd: string) => {
  const replay = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV })
  expectExit(replay, 0)
  expect(replay.stdout).toContain("SAME")
}

describe("voting_sensitivity: checklist_gated", () => {
  test("--eval-criteria FILE gives the criteria (MassGen's list or {criteria: [...]}); a file without text is one line, exit 1", async () => {
    const fake = await startFakeLlm({ respond: council })
    try {
      const cwd = sandbox()
      const config = writeConfig(cwd, doc(fake))
      fs.writeFileSync(
        nodePath.join(cwd, "criteria.json"),
        JSON.stringify({ criteria: [{ text: "Says 4." }, { description: "Shows why." }] }),
      )
      const r = await runCli("source", ["--automation", "--config", config, "--eval-criteria", "criteria.json", QUESTION], {
        cwd,
        env: ENV,
      })
      expectExit(r, 0)
      const dir = r.lines[0]!.slice("LOG_DIR: ".length)
      expect(ofType(dir, "run_started")[0].settings.checklist.criteria).toEqual([
        { id: "E1", text: "Says 4." },
        { id: "E2", text: "Shows why." },
      ])
      expect(Object.keys(ofType(dir, "checklist_submitted")[0].scores["agent1.1"])).toEqual(["E1", "E2"])
      fs.writeFileSync(nodePath.join(cwd, "bad.json"), JSON.stringify([{ category: "primary" }]))
      const bad = await runCli("source", ["--automation", "--config", config, "--eval-criteria", "bad.json", QUESTION], { cwd, env: ENV })
      expect(bad.exitCode).toBe(1)
      expect(bad.stderr).toContain("--eval-criteria bad.json: criterion 1 has no text")
    } finally {
      fake.stop()
    }
  }, 120_000)

  test("a vote counts after submit_checklist; the scores are events and in status.json; replay --check says SAME", async () => {
    const fake = await startFakeLlm({ respond: council })
    try {
      const cwd = sandbox()
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc(fake)), QUESTION], { cwd, env: ENV })
      expectExit(r, 0)
      const dir = r.lines[0]!.slice("LOG_DIR: ".length)
      const rejected = ofType(dir, "reply_rejected")
      expect(rejected.length).toBeGreaterThan(0)
      expect(rejected.every((e) => e.reason === "checklist_required")).toBe(true)
      const checklists = ofType(dir, "checklist_submitted")
      expect(checklists.length).toBeGreaterThanOrEqual(2)
      expect(checklists[0]).toMatchObject({ accepted: true, verdict: "vote", scores: { "agent1.1": { E1: 9, E2: 9, E3: 8, E4: 9 } } })
      // Every counted vote came after its agent's accepted checklist in the same round.
      for (const v of ofType(dir, "vote_cast")) {
        expect(checklists.some((c) => c.agent === v.agent && c.round === v.round && c.accepted)).toBe(true)
      }
      expect(ofType(dir, "run_started")[0].settings.checklist.voting_threshold).toBe(3)
      const status = JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))
      expect(status.agents.agent_a.checklist).toMatchObject({ accepted: true, verdict: "vote" })
      await expectReplaySame(dir, cwd)
    } finally {
      fake.stop()
    }
  }, 120_000)

  test("killed with SIGKILL after a checklist was recorded, resume finishes without asking for it again", async () => {
    const phase: { respond: (req: FakeRequest) => Behaviour } = { respond: (req) => (submitted(req) ? hang() : council(req)) }
    const fake = await startFakeLlm({ respond: (req) => phase.respond(req) })
    try {
      const cwd = sandbox()
      // The criteria come from --eval-criteria: the resume takes them from run_started, not from a flag.
      fs.writeFileSync(
        nodePath.join(cwd, "criteria.json"),
        JSON.stringify([{ text: "Says 4." }, { text: "Shows why." }, { name: "Is short." }]),
      )
      const args = ["--automation", "--config", writeConfig(cwd, doc(fake)), "--eval-criteria", "criteria.json", QUESTION]
      const first = await startCli("source", args, { cwd, env: ENV })
      const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      await waitForEvent(dir, (e) => e.type === "checklist_submitted")
      // The call after the checklist has gone out (and hangs): the reply that made the checklist is recorded.
      await waitForEvent(dir, () => {
        const events = readEvents(dir)
        const at = events.findIndex((e) => e.type === "checklist_submitted")
        return events.slice(at).some((e) => e.type === "call_start" && e.agent === events[at].agent)
      })
      first.proc.kill("SIGKILL")
      expect((await first.done).signal).toBe("SIGKILL")
      const before = ofType(dir, "checklist_submitted").map((e) => `${e.agent}/${e.round}`)
      const asked = fake.requests.length
      phase.respond = council
      const r = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV })
      expectExit(r, 0)
      const after = ofType(dir, "checklist_submitted").map((e) => `${e.agent}/${e.round}`)
      // Nothing recorded before the kill is recorded again, nor asked of the model again.
      for (const key of new Set(before)) expect(after.filter((k) => k === key)).toHaveLength(before.filter((k) => k === key).length)
      const agents = new Set(before.map((k) => k.split("/")[0]!))
      const checklistAsks = fake.requests
        .slice(asked)
        .filter((q) => agents.has(`agent_${"ab"[Number(selfOf(q).slice(-1)) - 1]}`) && refusedVote(q) && !submitted(q))
      expect(checklistAsks).toEqual([])
      expect(
        ofType(dir, "checklist_submitted").every((e) => Object.keys(e.scores["agent1.1"] ?? { E1: 0, E2: 0, E3: 0 }).join() === "E1,E2,E3"),
      ).toBe(true)
      expect(ofType(dir, "run_finished")).toEqual([expect.objectContaining({ reason: "completed" })])
      await expectReplaySame(dir, cwd)
    } finally {
      fake.stop()
    }
  }, 120_000)
})
