/**
 * Issue 28 end to end: `type: gemini` agents on Gemini's own API, as a user runs them.
 *
 * `massgen --automation` (from source) runs against the loopback fake speaking
 * `streamGenerateContent?alt=sse`. The fake model thinks (signed thoughts), lists its
 * workspace with a file tool before it answers, and, with `enable_web_search`, grounds
 * its reply on a Google search. The run completes; the signed turn goes back whole
 * with the round's next call; the search's sources are on its `hosted_tool_used`
 * event; the key is in no file. Then a run killed with SIGKILL while that next call
 * is in flight is resumed, and the resumed call still sends the signed turn back
 * (rebuilt from `events.jsonl`), and `replay --check` is SAME.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import {
  type Behaviour,
  type FakeLlm,
  type FakeRequest,
  hang,
  NO_PROXY_ENV,
  offeredTools,
  promptText,
  reply,
  startFakeLlm,
} from "./support/fake-llm.ts"
import { GEMINI_SIGNATURE } from "./support/fake-llm-events.ts"
import { eventsPath, expectExit, QUESTION, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const KEY = "AIzaSyTest-SECRET-gemini-0123456789"
const ENV = { ...NO_PROXY_ENV, GOOGLE_API_KEY: KEY, GEMINI_API_KEY: undefined, MASSGEN_LOG_BASE_DIR: undefined }

const contentsOf = (req: FakeRequest): ReadonlyArray<{ role: string; parts: ReadonlyArray<Record<string, any>> }> =>
  req.body?.contents ?? []
const listed = (req: FakeRequest) => contentsOf(req).some((c) => c.parts.some((p) => p.functionResponse?.name === "list_directory"))
const answersShown = (req: FakeRequest) => promptText(req).includes("<agent1.1>")
/** The model turn of a request that holds the signed function call, if any. */
const signedTurn = (req: FakeRequest) =>
  contentsOf(req).find(
    (c) => c.role === "model" && c.parts.some((p) => p.functionCall !== undefined && p.thoughtSignature === GEMINI_SIGNATURE),
  )

/** Thinks and lists its workspace, then answers (grounded on a search), then votes; presents when offered no workflow tool. */
const model = (req: FakeRequest): Behaviour => {
  // The presentation offers the file tools but no workflow tool.
  if (!offeredTools(req).some((t) => t === "new_answer" || t === "vote")) return reply({ text: ["Final: ", "2+2 is 4."] })
  if (answersShown(req)) return reply({ toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: "right" } }] })
  if (!listed(req))
    return reply({ reasoning: ["Let me look ", "at the workspace."], toolCalls: [{ name: "list_directory", args: { path: "." } }] })
  return reply({
    hosted: [{ tool: "web_search", query: "2+2" }],
    text: "Checked.",
    toolCalls: [{ name: "new_answer", args: { content: "It is 4." } }],
    usage: { input: 400, cached: 100, output: 60, reasoning: 20 },
  })
}

const docOf = (fake: FakeLlm) => ({
  agents: [
    {
      id: "gem",
      system_message: "You are agent1.",
      backend: { type: "gemini", model: "gemini-2.5-flash", base_url: fake.url, cwd: "workspace", enable_web_search: true },
    },
  ],
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
})

const logDir = (lines: ReadonlyArray<string>) => lines.find((l) => l.startsWith("LOG_DIR: "))!.slice("LOG_DIR: ".length)

const filesOf = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = nodePath.join(dir, e.name)
    return e.isDirectory() ? filesOf(path) : e.isFile() ? [path] : []
  })

/** Polls events.jsonl until an event matches (a bounded loop of tiny awaits, not a timing assumption). */
const waitForEvent = async (dir: string, match: (e: any) => boolean, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(fs.existsSync(eventsPath(dir)) && readEvents(dir).some(match))) {
    if (Date.now() > deadline) throw new Error(`no matching event in ${eventsPath(dir)} within ${timeoutMs} ms`)
    await Bun.sleep(5)
  }
}

describe("gemini end to end", () => {
  test("a run completes: the signed turn goes back within the round, the search's sources are recorded, no key in any file", async () => {
    const fake = await startFakeLlm({ respond: model })
    try {
      const cwd = sandbox()
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, docOf(fake)), QUESTION], { cwd, env: ENV })
      expectExit(r, 0)
      expect(r.lines).toContain("WINNER: gem")
      const dir = logDir(r.lines)
      const events = readEvents(dir)
      expect(events.filter((e) => e.type === "hosted_tool_used")).toEqual([
        expect.objectContaining({
          agent: "gem",
          tool: "google_search",
          detail: "2+2",
          sources: [{ url: "https://example.com/", title: "Example" }],
        }),
      ])
      const listCall = events.find((e) => e.type === "call_end" && e.reply?.tool_calls?.[0]?.name === "list_directory")
      expect(JSON.stringify(listCall.reply.parts)).toContain(GEMINI_SIGNATURE)
      const answered = events.find((e) => e.type === "call_end" && e.reply?.tool_calls?.[0]?.name === "new_answer")
      expect(answered).toMatchObject({ input_tokens: 400, cached_input_tokens: 100, output_tokens: 60, reasoning_tokens: 20 })
      // gemini-2.5-flash's built-in price: $0.30 input, $0.03 cached, $2.50 output per million tokens.
      expect(answered.cost).toBeCloseTo((300 * 0.3 + 100 * 0.03 + 60 * 2.5) / 1_000_000, 12)
      // The call after the tool ran carried the signed turn back, with the tool's result.
      const after = fake.requests.find(listed)!
      expect(signedTurn(after)?.parts[0]).toEqual({ text: "Let me look at the workspace.", thought: true })
      expect(fake.requests.every((q) => q.path === "/v1beta/models/gemini-2.5-flash:streamGenerateContent")).toBe(true)
      expect(fake.requests.every((q) => q.headers["x-goog-api-key"] === KEY)).toBe(true)
      for (const file of filesOf(dir)) expect(fs.readFileSync(file, "utf8")).not.toContain("SECRET")
      expect(r.stdout + r.stderr).not.toContain("SECRET")
    } finally {
      fake.stop()
    }
  }, 60_000)

  test("killed with SIGKILL while the round's second call is out, resumed: the signed turn goes back from the log", async () => {
    const phase: { respond: (req: FakeRequest) => Behaviour } = { respond: (req) => (listed(req) ? hang() : model(req)) }
    const fake = await startFakeLlm({ respond: (req) => phase.respond(req) })
    try {
      const cwd = sandbox()
      const config = writeConfig(cwd, docOf(fake))
      const first = await startCli("source", ["--automation", "--config", config, QUESTION], { cwd, env: ENV })
      const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      await fake.waitForRequest(2)
      await waitForEvent(dir, (e) => e.type === "call_start" && e.call === 2)
      first.proc.kill("SIGKILL")
      expect((await first.done).signal).toBe("SIGKILL")
      const before = fake.requests.length
      phase.respond = model

      const resumed = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV })
      expectExit(resumed, 0)
      expect(resumed.lines).toContain("WINNER: gem")
      const again = fake.requests.slice(before)
      // The round went on from its recorded call: the directory was not listed again, and the signed turn went back.
      expect(again.filter((q) => !listed(q) && offeredTools(q).includes("new_answer") && !answersShown(q))).toEqual([])
      expect(signedTurn(again[0]!)?.parts).toEqual([
        { text: "Let me look at the workspace.", thought: true },
        { functionCall: { name: "list_directory", args: { path: "." } }, thoughtSignature: GEMINI_SIGNATURE },
      ])
      const check = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV })
      expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
    } finally {
      fake.stop()
    }
  }, 90_000)
})
