/**
 * Orchestration restarts end to end (MassGen's `max_orchestration_restarts`, issue 27): a lone agent on a
 * loopback fake chat server answers, votes and presents; its post-evaluation calls `restart_orchestration`
 * once, so coordination starts again as attempt 2 with the presenter's instructions in the round's prompt,
 * and the second evaluation calls `submit`. The automation lines, the exit code, events.jsonl, status.json,
 * `status --json` and `replay --check` are read. A run killed (SIGKILL) in attempt 2's first round, and a log cut
 * right after `orchestration_restarted` (what a kill before attempt 2's first round leaves), resume without asking
 * for an evaluation or an answer twice.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeRequest, hang, NO_PROXY_ENV, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { eventsOf, logDirOf, shown, statusOf } from "./support/run-output.ts"

afterAll(() => cleanupSandboxes())

const TIMEOUT_MS = 120_000
const ENV = { ...NO_PROXY_ENV, OPENAI_API_KEY: "sk-fake", MASSGEN_LOG_BASE_DIR: undefined }
const INSTRUCTIONS = "Name the unit: metres."

/** A lone agent: answers (with "metres" once told), votes for itself, presents its answer; evaluates by restarting once, then submits. */
const council = (req: FakeRequest): Behaviour => {
  const tools = offeredTools(req)
  const prompt = promptText(req)
  const told = prompt.includes(INSTRUCTIONS)
  if (tools.includes("restart_orchestration")) {
    return prompt.includes("metres")
      ? reply({ toolCalls: [{ name: "submit", args: { confirmed: true } }] })
      : reply({ toolCalls: [{ name: "restart_orchestration", args: { reason: "No unit given.", instructions: INSTRUCTIONS } }] })
  }
  if (tools.length === 0) return reply({ text: prompt.includes("8848 metres") ? "It is 8848 metres high." : "It is 8848 high." })
  if (tools.includes("new_answer") && !/<agent1\.\d+>/.test(prompt)) {
    return reply({ toolCalls: [{ name: "new_answer", args: { content: told ? "8848 metres" : "8848" } }] })
  }
  const label = prompt.match(/<(agent1\.\d+)>/)?.[1]
  return reply({ toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: `good ${label}` } }] })
}

const configFor = (cwd: string, baseUrl: string) =>
  writeConfig(cwd, {
    agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: baseUrl } }],
    orchestrator: { coordination: { max_orchestration_restarts: 2 } },
  })

/** The calls of each role the log records as sent, in order. */
const rolesOf = (dir: string) =>
  eventsOf(dir)
    .filter((e) => e.type === "call_start")
    .map((e) => e.role)

/** What a resumed run must hold: both attempts' answers once each, two evaluations, the second answer final, replay SAME. */
const expectCompletedOnce = async (dir: string, cwd: string) => {
  const events = eventsOf(dir)
  expect(events.filter((e) => e.type === "answer_submitted").map((e) => e.label)).toEqual(["agent1.1", "agent1.2"])
  expect(events.filter((e) => e.type === "orchestration_restarted")).toHaveLength(1)
  expect(events.filter((e) => e.type === "evaluation_started").map((e) => e.attempt)).toEqual([1, 2])
  expect(events.at(-1)).toMatchObject({ type: "run_finished", reason: "completed" })
  expect(fs.readFileSync(nodePath.join(dir, "final", "agent_a", "answer.txt"), "utf8")).toBe("It is 8848 metres high.")
  const check = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
  expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
}

describe("orchestration restarts", () => {
  test(
    "the presenter restarts once (MassGen's restart_orchestration): attempt 2 is told why, its evaluation submits, the run completes",
    async () => {
      const fake = await startFakeLlm({ respond: council })
      try {
        const cwd = sandbox()
        const config = writeConfig(cwd, {
          agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl } }],
          orchestrator: { coordination: { max_orchestration_restarts: 2 } },
        })
        const r = await runCli("source", ["--automation", "--config", config, "How high is Everest?"], {
          cwd,
          env: ENV,
          timeoutMs: TIMEOUT_MS,
        })
        expect({ code: r.exitCode, out: shown(r) }).toEqual({ code: 0, out: expect.any(String) })
        expect(r.lines).toContain("WINNER: agent_a")
        expect(r.lines).toContain("ANSWER_PREVIEW: It is 8848 metres high.")
        expect(r.lines.at(-1)).toMatch(/^COMPLETED: 1 agent/)
        const dir = logDirOf(r)
        const events = eventsOf(dir)
        const types = events.map((e) => e.type)
        expect(types.filter((t) => t === "evaluation_started")).toHaveLength(2)
        expect(events.find((e) => e.type === "orchestration_restarted")).toMatchObject({
          agent: "agent_a",
          attempt: 2,
          reason: "No unit given.",
          instructions: INSTRUCTIONS,
        })
        expect(events.find((e) => e.type === "answer_confirmed")).toMatchObject({ attempt: 2, how: "submitted" })
        // Labels go on across attempts: attempt 2's answer is agent1.2.
        expect(events.filter((e) => e.type === "answer_submitted").map((e) => e.label)).toEqual(["agent1.1", "agent1.2"])
        const finals = events.filter((e) => e.type === "final_answer")
        expect(finals.map((e) => e.content)).toEqual(["It is 8848 high.", "It is 8848 metres high."])
        expect(types.at(-1)).toBe("run_finished")
        // Attempt 2's round was told why the first was restarted, and given its answer.
        const round2 = fake.requests.filter((q) => offeredTools(q).includes("new_answer")).map(promptText)
        expect(
          round2.some((p) => p.includes("PREVIOUS ATTEMPT FEEDBACK") && p.includes(INSTRUCTIONS) && p.includes("It is 8848 high.")),
        ).toBe(true)
        const status = statusOf(dir)
        expect(status.attempts).toMatchObject({ current: 2, max: 3, restarts: [{ attempt: 2, reason: "No unit given." }] })
        expect(status.results.winner).toBe("agent_a")

        const check = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
        const st = await runCli("source", ["status", dir, "--json"], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect(JSON.parse(st.stdout).attempts.current).toBe(2)
        const summary = await runCli("source", ["status", dir], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect(summary.lines).toContain("Attempt: 2 of 3")
        expect(summary.lines).toContain("  restarted by agent_a for attempt 2: No unit given.")
      } finally {
        fake.stop()
      }
    },
    TIMEOUT_MS,
  )

  test(
    "killed (SIGKILL) in attempt 2's first round: resume goes on in attempt 2, attempt 1 and its evaluation are not asked again",
    async () => {
      const phase: { respond: (req: FakeRequest) => Behaviour } = {
        respond: (req) => (promptText(req).includes("PREVIOUS ATTEMPT FEEDBACK") ? hang() : council(req)),
      }
      const fake = await startFakeLlm({ respond: (req) => phase.respond(req) })
      try {
        const cwd = sandbox()
        const config = configFor(cwd, fake.openAiBaseUrl)
        const first = await startCli("source", ["--automation", "--config", config, "How high is Everest?"], {
          cwd,
          env: ENV,
          timeoutMs: TIMEOUT_MS,
        })
        const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
        // Requests: round, vote, presentation, evaluation, then attempt 2's first round (held).
        await fake.waitForRequest(5)
        first.proc.kill("SIGKILL")
        expect((await first.done).signal).toBe("SIGKILL")
        expect(rolesOf(dir)).toEqual(["round", "round", "presentation", "evaluation", "round"])

        phase.respond = council
        const resumed = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect({ code: resumed.exitCode, out: shown(resumed) }).toEqual({ code: 0, out: expect.any(String) })
        expect(resumed.lines).toContain("ANSWER_PREVIEW: It is 8848 metres high.")
        // After the resume: attempt 2's round again (cut off), its vote, presentation and evaluation; nothing of attempt 1.
        expect(fake.requests.slice(5).map((q) => offeredTools(q).includes("restart_orchestration"))).toEqual([false, false, false, true])
        await expectCompletedOnce(dir, cwd)
      } finally {
        fake.stop()
      }
    },
    TIMEOUT_MS,
  )

  test(
    "a log cut right after orchestration_restarted resumes into attempt 2's first round, the restart not asked again",
    async () => {
      const fake = await startFakeLlm({ respond: council })
      try {
        const cwd = sandbox()
        const config = configFor(cwd, fake.openAiBaseUrl)
        const done = await runCli("source", ["--automation", "--config", config, "How high is Everest?"], {
          cwd,
          env: ENV,
          timeoutMs: TIMEOUT_MS,
        })
        expect(done.exitCode).toBe(0)
        const dir = logDirOf(done)
        const path = nodePath.join(dir, "events.jsonl")
        const lines = fs.readFileSync(path, "utf8").trimEnd().split("\n")
        const cut = lines.findIndex((l) => JSON.parse(l).type === "orchestration_restarted")
        fs.writeFileSync(path, `${lines.slice(0, cut + 1).join("\n")}\n`)
        const before = fake.requests.length

        const resumed = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect({ code: resumed.exitCode, out: shown(resumed) }).toEqual({ code: 0, out: expect.any(String) })
        const after = fake.requests.slice(before)
        expect(after.map((q) => promptText(q).includes("PREVIOUS ATTEMPT FEEDBACK"))[0]).toBe(true)
        expect(after.filter((q) => offeredTools(q).includes("restart_orchestration"))).toHaveLength(1)
        await expectCompletedOnce(dir, cwd)
      } finally {
        fake.stop()
      }
    },
    TIMEOUT_MS,
  )

  test(
    "with a workspace: each attempt's winner is copied to final/, the last copy stands, replay --check says SAME",
    async () => {
      const fake = await startFakeLlm({ respond: council })
      try {
        const cwd = sandbox()
        const config = writeConfig(cwd, {
          agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl, cwd: "workspace" } }],
          orchestrator: { coordination: { max_orchestration_restarts: 1 } },
        })
        const r = await runCli("source", ["--automation", "--config", config, "How high is Everest?"], {
          cwd,
          env: ENV,
          timeoutMs: TIMEOUT_MS,
        })
        expect({ code: r.exitCode, out: shown(r) }).toEqual({ code: 0, out: expect.any(String) })
        const dir = logDirOf(r)
        expect(eventsOf(dir).filter((e) => e.type === "workspace_finalized")).toHaveLength(2)
        expect(statusOf(dir).workspaces).toBeDefined()
        const check = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
      } finally {
        fake.stop()
      }
    },
    TIMEOUT_MS,
  )
})
