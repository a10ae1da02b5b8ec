/**
 * Our stream parsers against SSE streams recorded by the providers' official SDKs.
 *
 * Each file in `fixtures/sse/` (sources in `fixtures/sse/SOURCES.md`) is served
 * byte for byte from a loopback `Bun.serve` at the path the real SDK client asks
 * for; the backend makes one call and the test checks the reply it assembled.
 * Unlike `fake-llm.ts`, whose frames are written by the same hands as the
 * parsers, these frames come from the providers' APIs, so every expected value
 * below was read off the fixture, not off our parser's output.
 */
import { afterEach, describe, expect, test } from "bun:test"
import nodePath from "node:path"
import type { LlmReply } from "../src/domain/llm.ts"
import { makeAnthropicMessagesBackend } from "../src/services/backends/anthropic-messages.ts"
import { makeChatCompletionsBackend } from "../src/services/backends/chat-completions.ts"
import type { Backend } from "../src/services/backends/index.ts"
import { makeOpenAiResponsesBackend } from "../src/services/backends/openai-responses.ts"
import type { SdkBackendOptions } from "../src/services/backends/sdk-stream.ts"
import { collect, replyOf, TEST_KEY } from "./support/backend-suite.ts"
import { PATHS, type Protocol } from "./support/fake-llm.ts"

const FIXTURES = nodePath.join(import.meta.dir, "fixtures", "sse")

/** The protocols with streams recorded by their SDKs' repositories (none found for Gemini: its fake's frames are in `fake-llm-events.ts`). */
type Recorded = Exclude<Protocol, "gemini">

const MAKE: Readonly<Record<Recorded, (opts: SdkBackendOptions) => Backend>> = {
  chat: makeChatCompletionsBackend,
  responses: makeOpenAiResponsesBackend,
  anthropic: makeAnthropicMessagesBackend,
}

const servers: Array<{ stop: (force: boolean) => unknown }> = []
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true)
})

interface Replayed {
  readonly reply: LlmReply
  /** The non-empty streamed chunks, in order, as `text:` / `reasoning:` strings. */
  readonly streamed: ReadonlyArray<string>
  /** `METHOD path` of every request the server saw. */
  readonly requests: ReadonlyArray<string>
}

/** One call of `protocol`'s backend against a server that answers with the fixture's bytes. */
const replay = async (protocol: Recorded, fixture: string): Promise<Replayed> => {
  const requests: Array<string> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => {
      const path = new URL(req.url).pathname
      requests.push(`${req.method} ${path}`)
      if (req.method !== "POST" || path !== PATHS[protocol]) return new Response("not found", { status: 404 })
      return new Response(Bun.file(nodePath.join(FIXTURES, fixture)), { headers: { "content-type": "text/event-stream" } })
    },
  })
  servers.push(server)
  const url = `http://127.0.0.1:${server.port}`
  const backend = MAKE[protocol]({
    type: "test",
    model: "recorded",
    baseURL: protocol === "anthropic" ? url : `${url}/v1`,
    apiKey: TEST_KEY,
  })
  const chunks = await collect(backend)
  const streamed = chunks.flatMap((c) => (c._tag !== "done" && c.text !== "" ? [`${c._tag}:${c.text}`] : []))
  return { reply: replyOf(chunks), streamed, requests }
}

const texts = (...parts: ReadonlyArray<string>) => parts.map((p) => `text:${p}`)

describe("chat completions: streams recorded in openai/openai-python", () => {
  test("text only (gpt-4o): the content deltas, finish_reason stop, and the usage chunk", async () => {
    const r = await replay("chat", "openai-chat-text.sse")
    expect(r.requests).toEqual(["POST /v1/chat/completions"])
    const words = [
      "I'm",
      " unable",
      " to",
      " provide",
      " real",
      "-time",
      " weather",
      " updates",
      ".",
      " To",
      " get",
      " the",
      " current",
      " weather",
      " in",
    ]
    const rest = [
      " San",
      " Francisco",
      ",",
      " I",
      " recommend",
      " checking",
      " a",
      " reliable",
      " weather",
      " website",
      " or",
      " a",
      " weather",
      " app",
      ".",
    ]
    expect(r.streamed).toEqual(texts(...words, ...rest))
    expect(r.reply.text).toBe(
      "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
    )
    expect(r.reply.toolCalls).toEqual([])
    expect(r.reply.usage).toEqual({ inputTokens: 14, cachedInputTokens: null, outputTokens: 30, reasoningTokens: 0 })
    expect(r.reply.truncated).toBe(false)
  })

  test("one tool call whose arguments come in ten fragments", async () => {
    const r = await replay("chat", "openai-chat-tool-call.sse")
    expect(r.reply.text).toBe("")
    expect(r.streamed).toEqual([])
    expect(r.reply.toolCalls).toEqual([
      { id: "call_CTf1nWJLqSeRgDqaCG27xZ74", name: "get_weather", arguments: '{"city":"San Francisco","state":"CA"}' },
    ])
    expect(r.reply.usage).toEqual({ inputTokens: 48, cachedInputTokens: null, outputTokens: 19, reasoningTokens: 0 })
    expect(r.reply.truncated).toBe(false)
  })

  test("two parallel tool calls, by index, after a role-only first chunk", async () => {
    const r = await replay("chat", "openai-chat-parallel-tool-calls.sse")
    expect(r.reply.toolCalls.map((c) => [c.id, c.name])).toEqual([
      ["call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs"],
      ["call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price"],
    ])
    expect(r.reply.toolCalls.map((c) => JSON.parse(c.arguments))).toEqual([
      { city: "Edinburgh", country: "GB", units: "c" },
      { ticker: "AAPL", exchange: "NASDAQ" },
    ])
    expect(r.reply.toolCalls[0]?.arguments).toBe('{"city": "Edinburgh", "country": "GB", "units": "c"}')
    expect(r.reply.usage).toEqual({ inputTokens: 149, cachedInputTokens: null, outputTokens: 60, reasoningTokens: 0 })
    expect(r.reply.truncated).toBe(false)
  })

  test("finish_reason length (max_tokens 1) is a truncated reply", async () => {
    const r = await replay("chat", "openai-chat-length.sse")
    expect(r.reply.text).toBe('{"')
    expect(r.reply.toolCalls).toEqual([])
    expect(r.reply.usage).toEqual({ inputTokens: 79, cachedInputTokens: null, outputTokens: 1, reasoningTokens: 0 })
    expect(r.reply.truncated).toBe(true)
  })
})

describe("responses: streams recorded in openai/openai-dotnet", () => {
  test("text only (gpt-4o-mini): output_text deltas and the usage of response.completed", async () => {
    const r = await replay("responses", "openai-responses-text.sse")
    expect(r.requests).toEqual(["POST /v1/responses"])
    expect(r.streamed).toEqual(texts("Hello", "!", " How", " can", " I", " assist", " you", " today", "?"))
    expect(r.reply.text).toBe("Hello! How can I assist you today?")
    expect(r.reply.toolCalls).toEqual([])
    expect(r.reply.usage).toEqual({ inputTokens: 11, cachedInputTokens: 0, outputTokens: 10, reasoningTokens: 0 })
    expect(r.reply.truncated).toBe(false)
  })

  test("a function call: call_id and name from output_item.added, arguments from eight deltas", async () => {
    const r = await replay("responses", "openai-responses-function-call.sse")
    expect(r.reply.text).toBe("")
    expect(r.reply.toolCalls).toEqual([
      { id: "call_0UFGPwrziw5rbinYp7rthrTb", name: "get_weather_at_location", arguments: '{"location":"San Francisco, CA"}' },
    ])
    expect(JSON.parse(r.reply.toolCalls[0]?.arguments ?? "")).toEqual({ location: "San Francisco, CA" })
    expect(r.reply.usage).toEqual({ inputTokens: 74, cachedInputTokens: 0, outputTokens: 20, reasoningTokens: 0 })
    expect(r.reply.truncated).toBe(false)
  })
})

describe("anthropic messages: streams recorded in anthropics/anthropic-sdk-typescript", () => {
  test("text only, with a ping between the events", async () => {
    const r = await replay("anthropic", "anthropic-text.sse")
    expect(r.requests).toEqual(["POST /v1/messages"])
    expect(r.streamed).toEqual(texts("Hello", " there", "!"))
    expect(r.reply.text).toBe("Hello there!")
    expect(r.reply.reasoning).toBe("")
    expect(r.reply.toolCalls).toEqual([])
    expect(r.reply.usage).toEqual({ inputTokens: 11, cachedInputTokens: null, outputTokens: 6, reasoningTokens: null })
    expect(r.reply.truncated).toBe(false)
  })

  test("text then a tool_use whose input comes as input_json_delta fragments", async () => {
    const r = await replay("anthropic", "anthropic-tool-use.sse")
    expect(r.streamed).toEqual(texts("I", "'ll check the current weather in Paris for you."))
    expect(r.reply.text).toBe("I'll check the current weather in Paris for you.")
    expect(r.reply.toolCalls).toEqual([{ id: "toolu_01NRLabsLyVHZPKxbKvkfSMn", name: "get_weather", arguments: '{"location": "Paris"}' }])
    expect(JSON.parse(r.reply.toolCalls[0]?.arguments ?? "")).toEqual({ location: "Paris" })
    expect(r.reply.usage).toEqual({ inputTokens: 377, cachedInputTokens: 0, outputTokens: 65, reasoningTokens: null })
    expect(r.reply.truncated).toBe(false)
  })

  test("stop_reason max_tokens mid tool input: truncated, with the partial input as it came", async () => {
    const r = await replay("anthropic", "anthropic-max-tokens.sse")
    expect(r.reply.text).toBe(
      "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now.",
    )
    expect(r.reply.toolCalls).toEqual([
      {
        id: "toolu_01EKqbqmZrGRXy18eN7m9kvY",
        name: "make_file",
        arguments:
          '{"filename": "taxes.txt", "lines_of_text": [\n"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s",\n"",\n"## INTRODUCTION",\n"",\n"Filing taxes',
      },
    ])
    expect(r.reply.usage).toEqual({ inputTokens: 450, cachedInputTokens: 0, outputTokens: 124, reasoningTokens: null })
    expect(r.reply.truncated).toBe(true)
  })

  test("a thinking block with a signature_delta, then text; thinking tokens from message_delta", async () => {
    const r = await replay("anthropic", "anthropic-thinking.sse")
    const thoughts = [
      "Simple educ",
      "ational question about what a solar eclipse is. This is benign general knowledge — definitions are fine. Also the user called",
      ' me "claudius" — I\'m Claude. Minor correction or just roll with it politely.',
    ]
    expect(r.streamed).toEqual([...thoughts.map((t) => `reasoning:${t}`), "text:Hi"])
    expect(r.reply.reasoning).toBe(thoughts.join(""))
    expect(r.reply.text).toBe("Hi")
    expect(r.reply.toolCalls).toEqual([])
    expect(r.reply.usage).toEqual({ inputTokens: 28, cachedInputTokens: 0, outputTokens: 106, reasoningTokens: 67 })
    // stop_reason "refusal" is not a cut at the output limit.
    expect(r.reply.truncated).toBe(false)
    // The signed thinking block is kept whole, to be sent back unchanged.
    expect(r.reply.parts).toEqual([
      { type: "thinking", thinking: thoughts.join(""), signature: "c3ludGhldGljLXNpZ25hdHVyZS1maXh0dXJlLWEtbm90LWEtcmVhbC1zaWduYXR1cmU=" },
    ])
  })
})
