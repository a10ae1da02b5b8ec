/**
 * Web search on Grok and OpenRouter. A `type: grok` agent that turns on web search (or code
 * execution) speaks xAI's Responses endpoint at its base URL, with the `web_search` tool, and
 * the pages its reply cites are the search's sources; without a provider tool it stays on Chat
 * Completions. A `type: openrouter` agent searches with OpenRouter's web plugin
 * (`plugins: [{id: "web"}]` on Chat Completions), its `url_citation` annotations the sources.
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

describe("openrouter search", () => {
  const KEYS = { OPENROUTER_API_KEY: "sk-or-test-0123456789" }
  const openrouter = (backend: Record<string, unknown>) =>
    Either.getOrThrow(decodeConfig({ agents: [{ id: "or", backend: { type: "openrouter", ...backend } }] }, KEYS)).agents[0]!

  test("enable_web_search validates on type openrouter; code execution is still refused", () => {
    expect(Either.isRight(decodeConfig({ agents: [{ id: "o", backend: { type: "openrouter", enable_web_search: true } }] }, KEYS))).toBe(
      true,
    )
    const refused = decodeConfig({ agents: [{ id: "o", backend: { type: "openrouter", enable_code_execution: true } }] }, KEYS)
    expect(Either.isLeft(refused) && refused.left.map((p) => p.message)).toEqual([
      "agent o: type openrouter speaks Chat Completions, which has no provider-side code execution: remove enable_code_execution, or use type openai or claude",
    ])
  })

  test("the web plugin goes with the request; the annotations are one web_search use with its sources", async () => {
    const fake = await startFakeLlm()
    try {
      fake.enqueue(
        "chat",
        reply({
          hosted: [{ tool: "web_search", query: "q" }],
          text: "Found.",
          toolCalls: [{ name: "new_answer", args: { content: "x" } }],
        }),
      )
      fake.enqueue("chat", reply({ text: "plain" }))
      const backend = await Effect.runPromise(makeBackend(openrouter({ base_url: fake.openAiBaseUrl, enable_web_search: true }), KEYS))
      const r = replyOf(await collect(backend))
      expect(fake.requests[0]?.body.plugins).toEqual([{ id: "web" }])
      expect(r.hostedToolUses).toEqual([{ tool: "web_search", detail: "", sources: [{ url: "https://example.com/", title: "Example" }] }])
      expect(replyOf(await collect(backend)).hostedToolUses).toBeUndefined()
      const quiet = await Effect.runPromise(makeBackend(openrouter({ base_url: fake.openAiBaseUrl }), KEYS))
      fake.enqueue("chat", reply({ text: "no search" }))
      await collect(quiet)
      expect(fake.requests[2]?.body.plugins).toBeUndefined()
    } finally {
      fake.stop()
    }
  })
})
