/**
 * Issue 28: a `claude_code` agent's `mcp_servers` reach the real Claude Code CLI, which starts and calls them.
 *
 * The CLI (the SDK's native package) runs against the loopback fake of the
 * Messages API, with two stdio servers of its config: the reference server
 * (`everything`, its `get-sum` excluded, its `TOKEN` from `${SERVER_TOKEN}`)
 * and the fault server (`fault`, only `whoami` allowed, counting its starts).
 * The fake model calls `mcp__everything__echo`, then
 * `mcp__everything__get-env`, then `mcp__massgen__new_answer`: each result
 * reaches the next request; the server's environment holds its `TOKEN` and
 * none of the CLI's (its API key). Both calls are `hosted_tool_used` events;
 * every start of the fault server is the CLI's (one per call of the agent):
 * massgen starts none itself. The excluded tool is never offered.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeRequest, lastToolResult, offeredTools, reply, startFakeLlm } from "./support/fake-llm.ts"
import { everythingStdio, faultServer, startsOf } from "./support/mcp.ts"
import { expectExit, QUESTION, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const KEY = "sk-ant-SECRET-cli-mcp"
const TOKEN = "tok-for-everything-only"
const FINAL = "Final: echoed."

const tool = (req: FakeRequest, name: string, args: object): Behaviour =>
  reply({ messageId: `msg_${req.n}`, toolCalls: [{ id: `toolu_${req.n}`, name, args }] })
const text = (req: FakeRequest, t: string): Behaviour => reply({ messageId: `msg_${req.n}`, text: t })

const seen: Array<{ readonly name: string; readonly text: string }> = []

const model = (req: FakeRequest): Behaviour => {
  const last = lastToolResult(req)
  if (last !== null) seen.push(last)
  if (last?.name.startsWith("mcp__massgen__")) return text(req, "Done.")
  if (!offeredTools(req).includes("mcp__massgen__new_answer")) return text(req, FINAL)
  if (!JSON.stringify(req.body?.messages).includes("<agent1.1>")) {
    if (last === null) return tool(req, "mcp__everything__echo", { message: "hello from the CLI" })
    if (last.name === "mcp__everything__echo") return tool(req, "mcp__everything__get-env", {})
    return tool(req, "mcp__massgen__new_answer", { content: "It echoed." })
  }
  return tool(req, "mcp__massgen__vote", { agent_id: "agent1", reason: "it echoed" })
}

describe("claude_code: its mcp_servers reach the real CLI", () => {
  test("the CLI starts the servers, calls their tools with results in its next request; massgen starts none", async () => {
    const fake = await startFakeLlm({ respond: model })
    try {
      const cwd = sandbox()
      fs.mkdirSync(nodePath.join(cwd, "home"))
      const starts = nodePath.join(cwd, "starts.txt")
      const config = writeConfig(cwd, {
        agents: [
          {
            id: "coder",
            backend: {
              type: "claude_code",
              model: "claude-sonnet-4-5",
              cwd: "ws",
              mcp_servers: [
                { name: "everything", ...everythingStdio({ env: { TOKEN: "${SERVER_TOKEN}" }, exclude_tools: ["get-sum"] }) },
                { name: "fault", ...faultServer("serve", { env: { STARTS_FILE: starts }, allowed_tools: ["whoami"] }) },
              ],
            },
          },
          { id: "bot", backend: { type: "scripted", answer: "four", vote: "agent1" } },
        ],
        timeout_settings: { orchestrator_timeout_seconds: 120, agent_timeout_seconds: 90 },
      })
      const env = {
        ANTHROPIC_BASE_URL: fake.url,
        ANTHROPIC_API_KEY: KEY,
        SERVER_TOKEN: TOKEN,
        HOME: nodePath.join(cwd, "home"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_TELEMETRY: "1",
        OPENAI_API_KEY: undefined,
        MASSGEN_LOG_BASE_DIR: undefined,
      }
      const r = await runCli("source", ["--automation", "--config", config, QUESTION], { cwd, env, timeoutMs: 120_000 })
      expectExit(r, 0)
      expect(r.lines).toContain("WINNER: coder")
      const dir = r.lines[0]!.slice("LOG_DIR: ".length)

      // The tools' results reached the model's next requests; the server had its TOKEN and not the CLI's key.
      const echo = seen.find((s) => s.name === "mcp__everything__echo")
      expect(echo?.text).toContain("Echo: hello from the CLI")
      const envText = seen.find((s) => s.name === "mcp__everything__get-env")?.text ?? ""
      expect(envText).toContain(TOKEN)
      expect(envText).not.toContain(KEY)
      expect(envText).not.toContain("ANTHROPIC")
      const offered = fake.requests.flatMap(offeredTools)
      expect(offered).toContain("mcp__fault__whoami")
      expect(offered).not.toContain("mcp__everything__get-sum")

      const events = readEvents(dir)
      expect(events.filter((e) => e.type === "run_finished")).toEqual([expect.objectContaining({ reason: "completed", winner: "coder" })])
      const uses = events.filter((e) => e.type === "hosted_tool_used").map((e) => [e.agent, e.tool, e.detail])
      expect(uses).toEqual([
        ["coder", "mcp__everything__echo", '{"message":"hello from the CLI"} → ok'],
        ["coder", "mcp__everything__get-env", "{} → ok"],
      ])
      // Every start of the fault server is one of the CLI's, one per call of the agent.
      const coderCalls = events.filter((e) => e.type === "call_start" && e.agent === "coder").length
      expect(startsOf(starts).length).toBe(coderCalls)
      expect(fs.readFileSync(nodePath.join(dir, "final", "coder", "answer.txt"), "utf8")).toBe(FINAL)
    } finally {
      fake.stop()
    }
  }, 180_000)
})
