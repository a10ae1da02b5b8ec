/**
 * Grok's provider tools: a `type: grok` agent that turns on web search (or code execution)
 * speaks xAI's Responses endpoint at its base URL, with the `web_search` tool, and the
 * pages its reply cites are the search's sources on its `hosted_tool_used`; without a
 * provider tool it stays on Chat Completions.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { decodeConfig, presetOf } from "../src/domain/config/index.ts"
import { makeBackend } from "../src/services/backends/factory.ts"
import { collect, replyOf } from "./support/backend-suite.ts"
import { reply, startFakeLlm } from "./support/fake-llm.ts"

const ENV = { XAI_API_KEY: "xai-test-key-0123456789" }
const agentOf = (backend: Record<string, unknown>) => Either.getOrThrow(decodeConfig({ agents: [{ id: "grok", backend }] }, ENV)).agents[0]!

describe("grok search", () => {
  test("enable_web_search validates on type grok and puts it on Responses; code execution too; neither: Chat", () => {
    expect(Either.isRight(decodeConfig({ agents: [{ id: "g", backend: { type: "grok", enable_web_search: true } }] }, ENV))).toBe(true)
    expect(presetOf({ type: "grok", enable_web_search: true }).family).toBe("responses")
    expect(presetOf({ type: "grok", enable_code_execution: true })).toMatchObject({ family: "responses", baseURL: "https://api.x.ai/v1" })
    expect(presetOf({ type: "grok", enable_web_search: false }).family).toBe("chat")
  })

  test("a search goes to {base_url}/responses with the web_search tool; its citations are recorded as sources", async () => {
    const fake = await startFakeLlm()
    try {
      fake.enqueue(
        "responses",
        reply({
          hosted: [{ tool: "web_search", query: "xAI news" }],
          text: "Done.",
          toolCalls: [{ name: "new_answer", args: { content: "x" } }],
        }),
      )
      const agent = agentOf({ type: "grok", model: "grok-4-1-fast-reasoning", base_url: fake.openAiBaseUrl, enable_web_search: true })
      const r = replyOf(await collect(await Effect.runPromise(makeBackend(agent, ENV))))
      const req = fake.requests[0]!
      expect(req.path).toBe("/v1/responses")
      expect(req.headers.authorization).toBe(`Bearer ${ENV.XAI_API_KEY}`)
      expect(req.body.tools[0]).toEqual({ type: "web_search" })
      expect(r.hostedToolUses).toEqual([
        { tool: "web_search", detail: "xAI news", sources: [{ url: "https://example.com/", title: "Example" }] },
      ])
    } finally {
      fake.stop()
    }
  })

  test("grok without a provider tool still speaks Chat Completions", async () => {
    const fake = await startFakeLlm()
    try {
      fake.enqueue("chat", reply({ text: "hi" }))
      await collect(await Effect.runPromise(makeBackend(agentOf({ type: "grok", base_url: fake.openAiBaseUrl }), ENV)))
      expect(fake.requests[0]?.path).toBe("/v1/chat/completions")
    } finally {
      fake.stop()
    }
  })
})
