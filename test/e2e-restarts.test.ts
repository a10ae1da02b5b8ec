/**
 * Orchestration restarts end to end (MassGen's `max_orchestration_restarts`, issue 27): a lone agent on a
 * loopback fake chat server answers, votes and presents; its post-evaluation calls `restart_orchestration`
 * once, so coordination starts again as attempt 2 with the presenter's instructions in the round's prompt,
 * and the second evaluation calls `submit`. The automation lines, the exit code, events.jsonl, status.json,
 * `status --json` and `replay --check` are read.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeRequest, NO_PROXY_ENV, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
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
      } finally {
        fake.stop()
      }
    },
    TIMEOUT_MS,
  )
})
