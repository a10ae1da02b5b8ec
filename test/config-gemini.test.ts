/**
 * A `type: gemini` agent's keys: its own API by default (provider tools allowed), the
 * OpenAI-compatible path on `api: chat_completions`, MassGen's thinking keys, and what
 * the factory makes of them (a backend that speaks Gemini's wire to the configured URL).
 */
import { describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { decodeConfig, thinkingOf, unknownKeys } from "../src/domain/config/index.ts"
import { makeBackend } from "../src/services/backends/factory.ts"
import { collect } from "./support/backend-suite.ts"
import { reply, startFakeLlm } from "./support/fake-llm.ts"

const ENV = { GEMINI_API_KEY: "gem-test-key" }
const doc = (backend: Record<string, unknown>) => ({ agents: [{ id: "g", backend }] })
const problemsOf = (raw: unknown) => {
  const decoded = decodeConfig(raw, ENV)
  return Either.isLeft(decoded) ? decoded.left.map((p) => `${p.path}: ${p.message}`) : []
}

describe("gemini keys in the config", () => {
  test("web search, code execution and MassGen's thinking keys are accepted on type gemini", () => {
    const backend = {
      type: "gemini",
      model: "gemini-2.5-flash",
      enable_web_search: true,
      enable_code_execution: true,
      thinking_config: { include_thoughts: true, thinking_budget: 1024 },
      function_calling_mode: "any",
    }
    expect(problemsOf(doc(backend))).toEqual([])
    expect(unknownKeys(doc(backend))).toEqual([])
  })

  test("api: chat_completions is the OpenAI-compatible path: no provider tools, no thinking keys there", () => {
    expect(problemsOf(doc({ type: "gemini", api: "chat_completions", enable_web_search: true, include_thoughts: true }))).toEqual([
      "agents[0].backend.include_thoughts: agent g: include_thoughts needs Gemini's own API, and api: chat_completions speaks its OpenAI-compatible one: remove one of them",
      "agents[0].backend.enable_web_search: agent g: type gemini speaks Chat Completions, which has no provider-side web search: remove enable_web_search, or use type openai or claude",
    ])
    expect(problemsOf(doc({ type: "gemini", api: "chat_completions" }))).toEqual([])
  })

  test("the gemini keys on another type, and bad values, are refused with one line each", () => {
    expect(problemsOf({ agents: [{ id: "c", backend: { type: "claude", api: "native", thinking: true } }] })).toEqual([
      "agents[0].backend.api: agent c: api applies to type gemini only, found type claude",
      "agents[0].backend.thinking: agent c: thinking applies to type gemini only, found type claude",
    ])
    expect(problemsOf(doc({ type: "gemini", function_calling_mode: "sometimes" }))).toEqual([
      'agents[0].backend.function_calling_mode: Expected one of AUTO, ANY, NONE, found "sometimes"',
    ])
    expect(problemsOf(doc({ type: "gemini", api: "grpc" }))[0]).toContain("Expected one of native, chat_completions")
  })

  test("thinking: MassGen's keys in its order, thoughts included by default for the models that think", () => {
    expect(thinkingOf({ type: "gemini", model: "gemini-2.5-pro" })).toEqual({ include_thoughts: true })
    expect(thinkingOf({ type: "gemini", model: "gemini-2.0-flash" })).toBeNull()
    expect(thinkingOf({ type: "gemini", model: "gemini-3-pro", include_thoughts: false })).toBeNull()
    expect(thinkingOf({ type: "gemini", thinking: { thinking_budget: 0 } })).toEqual({ thinking_budget: 0 })
    expect(thinkingOf({ type: "gemini", thinking: true })).toEqual({ include_thoughts: true })
    expect(thinkingOf({ type: "gemini", thinking_config: { thinking_level: "low" }, thinking: true })).toEqual({ thinking_level: "low" })
  })
})

describe("the factory", () => {
  const agentOf = (backend: Record<string, unknown>) => {
    const config = Either.getOrThrow(decodeConfig(doc(backend), ENV))
    return config.agents[0]!
  }

  test("type gemini speaks Gemini's own API at base_url, with its key in x-goog-api-key, and the thinking of its model", async () => {
    const fake = await startFakeLlm()
    try {
      fake.enqueue("gemini", reply({ text: "hi" }))
      const backend = await Effect.runPromise(makeBackend(agentOf({ type: "gemini", model: "gemini-3-flash", base_url: fake.url }), ENV))
      await collect(backend)
      const req = fake.requests[0]!
      expect(req.path).toBe("/v1beta/models/gemini-3-flash:streamGenerateContent")
      expect(req.headers["x-goog-api-key"]).toBe("gem-test-key")
      expect(req.body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true })
    } finally {
      fake.stop()
    }
  })

  test("api: chat_completions speaks Chat Completions at base_url", async () => {
    const fake = await startFakeLlm()
    try {
      fake.enqueue("chat", reply({ text: "hi" }))
      const agent = agentOf({ type: "gemini", api: "chat_completions", base_url: fake.openAiBaseUrl })
      await collect(await Effect.runPromise(makeBackend(agent, ENV)))
      expect(fake.requests[0]?.path).toBe("/v1/chat/completions")
      expect(fake.requests[0]?.headers.authorization).toBe("Bearer gem-test-key")
    } finally {
      fake.stop()
    }
  })
})
