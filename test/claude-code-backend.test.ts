/**
 * Issue 28: one call of the `claude_code` backend, the real CLI against the fake Messages API.
 *
 * A vote the round would refuse (an agent not shown) is an error result the
 * CLI's model reads, and it mends it in the same session: the call's reply
 * carries only the valid vote. The CLI's text streams as it comes, its own
 * tool calls come back as hosted tool uses with their outcome, and a session
 * the CLI ends in an API error is a call failure whose message does not hold
 * the key.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import { voteTool } from "../src/domain/coordination/prompts.ts"
import type { LlmRequest } from "../src/domain/llm.ts"
import { makeClaudeCodeBackend } from "../src/services/backends/claude-code.ts"
import { findClaudeExecutable } from "../src/services/backends/claude-code-env.ts"
import { cleanupSandboxes, sandbox } from "./support/cli.ts"
import { type FakeRequest, reply, startFakeLlm, status } from "./support/fake-llm.ts"

afterAll(() => cleanupSandboxes())

const KEY = "sk-ant-SECRET-backend"

const toolResults = (req: FakeRequest): Array<any> =>
  ((req.body?.messages ?? []).at(-1)?.content ?? []).filter((c: any) => typeof c === "object" && c.type === "tool_result")

const backendAt = (url: string) => {
  const cwd = sandbox()
  fs.mkdirSync(nodePath.join(cwd, "home"))
  return makeClaudeCodeBackend({
    agentId: "coder",
    anonId: "agent2",
    model: "claude-sonnet-4-5",
    config: { type: "claude_code", cwd: "ws", max_retries: 0 },
    env: {
      PATH: process.env.PATH,
      HOME: nodePath.join(cwd, "home"),
      ANTHROPIC_BASE_URL: url,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
    apiKey: KEY,
    executable: findClaudeExecutable(undefined, {}),
    cwd,
    sdk: () => import("@anthropic-ai/claude-agent-sdk"),
  })
}

const voteRequest: LlmRequest = {
  agentId: "coder",
  system: "You are agent2.",
  messages: [{ role: "user", content: "Vote for the best answer.\n<agent1.1> It is 4." }],
  tools: [voteTool(["agent1"])],
  context: { kind: "round", selfAnonId: "agent2", shown: [{ label: "agent1.1", anonId: "agent1", content: "It is 4." }], voteOnly: true },
}

describe("claude_code backend: one call", () => {
  test("a vote the round would refuse is mended in the session; text streams; the CLI's tool use is reported", async () => {
    const fake = await startFakeLlm({
      respond: (req) => {
        const m = { messageId: `msg_${req.n}` }
        const results = toolResults(req)
        if (results.length === 0) return reply({ ...m, toolCalls: [{ id: "t1", name: "Glob", args: { pattern: "*.md" } }] })
        if (results.some((r) => r.tool_use_id === "t1"))
          return reply({
            ...m,
            text: "Voting.",
            toolCalls: [{ id: "t2", name: "mcp__massgen__vote", args: { agent_id: "agent9", reason: "x" } }],
          })
        if (results.some((r) => r.tool_use_id === "t2"))
          return reply({ ...m, toolCalls: [{ id: "t3", name: "mcp__massgen__vote", args: { agent_id: "agent1", reason: "right" } }] })
        return reply({ ...m, text: "Voted." })
      },
    })
    try {
      const chunks: Array<string> = []
      const got = await Effect.runPromise(
        backendAt(fake.url).call(voteRequest, (c) => Effect.sync(() => void chunks.push(`${c._tag}:${c.text}`))),
      )
      // The refused vote went back to the CLI's model as an error result, with the round's own message.
      const refused = toolResults(fake.requests[2]!).find((r) => r.tool_use_id === "t2")
      expect(refused.is_error).toBe(true)
      expect(JSON.stringify(refused.content)).toContain('Invalid agent_id \\"agent9\\". Valid agents: agent1.')
      expect(got.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["vote", { agent_id: "agent1", reason: "right" }]])
      expect(got.text).toBe("Voted.")
      expect(chunks).toEqual(["text:Voting.", "text:Voted."])
      expect(got.hostedToolUses).toEqual([{ tool: "Glob", detail: "*.md → ok" }])
      expect(got.usage.inputTokens).toBeGreaterThan(0)
    } finally {
      fake.stop()
    }
  }, 60_000)

  test("a session the CLI ends in an API error fails the call, with no key in its message", async () => {
    const fake = await startFakeLlm({
      respond: () => status(400, { body: { type: "error", error: { type: "invalid_request_error", message: "bad" } } }),
    })
    try {
      const failed = await Effect.runPromise(Effect.flip(backendAt(fake.url).call(voteRequest, () => Effect.void)))
      expect(failed.message).toContain("the Claude Code CLI's session failed")
      expect(failed.message).not.toContain(KEY)
    } finally {
      fake.stop()
    }
  }, 60_000)
})
