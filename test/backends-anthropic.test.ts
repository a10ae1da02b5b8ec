import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { DEFAULT_ANTHROPIC_MAX_TOKENS, makeAnthropicMessagesBackend, toAnthropicMessages } from "../src/services/backends/anthropic-messages.ts"
import type { SdkBackendOptions } from "../src/services/backends/sdk-stream.ts"
import { backendSuite, collect, failureOf, replyOf, TEST_KEY } from "./support/backend-suite.ts"
import { type FakeLlm, raw, reply, startFakeLlm } from "./support/fake-llm.ts"
import { followUpMessages, presentationRequest, roundRequest } from "./support/llm-requests.ts"

backendSuite("anthropic", makeAnthropicMessagesBackend)

const event = (type: string, body: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`

describe("anthropic: wire format", () => {
  let fake: FakeLlm
  beforeEach(async () => {
    fake = await startFakeLlm()
  })
  afterEach(() => fake.stop())
  const backend = (over: Partial<SdkBackendOptions> = {}) =>
    makeAnthropicMessagesBackend({ type: "claude", model: "claude-x", baseURL: fake.url, apiKey: TEST_KEY, ...over })

  test("the request has a top-level system, input_schema tools with the vote enum and tool_choice auto", async () => {
    fake.enqueue("anthropic", reply({ text: "ok" }))
    await collect(backend({ temperature: 1.5 }))
    const req = fake.requests[0]
    expect(req?.path).toBe("/v1/messages")
    expect(req?.headers["anthropic-version"]).toBeDefined()
    expect(req?.body).toMatchObject({
      model: "claude-x",
      stream: true,
      system: "You are agent_a.",
      max_tokens: DEFAULT_ANTHROPIC_MAX_TOKENS,
      temperature: 1,
      tool_choice: { type: "auto" },
      messages: [{ role: "user", content: [{ type: "text", text: "What is 2+2?" }] }],
    })
    const [answer, vote] = req?.body.tools
    expect(Object.keys(answer).sort()).toEqual(["description", "input_schema", "name"])
    expect(vote).toMatchObject({ name: "vote", description: "Vote for the best agent to present final answer" })
    expect(vote.input_schema.properties.agent_id.enum).toEqual(["agent1", "agent2", "agent3"])
  })

  test("a presentation request with no tools sends neither tools nor tool_choice; max_tokens follows the config", async () => {
    fake.enqueue("anthropic", reply({ text: "final" }))
    expect(replyOf(await collect(backend({ maxTokens: 321 }), presentationRequest())).text).toBe("final")
    const body = fake.requests[0]?.body
    expect(body.tools).toBeUndefined()
    expect(body.tool_choice).toBeUndefined()
    expect(body.max_tokens).toBe(321)
  })

  test("earlier tool calls become tool_use blocks, and their results a tool_result merged with the next user turn", async () => {
    fake.enqueue("anthropic", reply({ text: "ok" }))
    await collect(backend(), roundRequest(followUpMessages))
    expect(fake.requests[0]?.body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "What is 2+2?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me answer." },
          { type: "tool_use", id: "call_9", name: "new_answer", input: { content: "4" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "call_9", content: "recorded" },
          { type: "text", text: "Now vote." },
        ],
      },
    ])
  })

  test("cache reads count as input and are reported as cached input", async () => {
    fake.enqueue("anthropic", reply({ text: "x", usage: { input: 1000, cached: 800, output: 12 } }))
    expect(replyOf(await collect(backend())).usage).toEqual({ inputTokens: 1000, cachedInputTokens: 800, outputTokens: 12, reasoningTokens: null })
  })

  test("an error event in the stream (overloaded) gives server_error, retryable", async () => {
    fake.enqueue("anthropic", raw(event("error", { error: { type: "overloaded_error", message: "Overloaded" } })))
    expect(await failureOf(backend())).toMatchObject({ reason: "server_error", retryable: true })
  })

  test("input_json_delta for a block that is not a tool_use gives bad_reply", async () => {
    fake.enqueue(
      "anthropic",
      raw(
        event("message_start", { message: { id: "m", type: "message", role: "assistant", model: "x", content: [], usage: { input_tokens: 1, output_tokens: 1 } } }) +
          event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
          event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: "{" } }),
      ),
    )
    expect(await failureOf(backend())).toMatchObject({ reason: "bad_reply", retryable: true })
  })
})

test("an assistant message's opaque parts (signed thinking) go back first, unchanged, before its text and tool calls", () => {
  const thinking = { type: "thinking" as const, thinking: "weigh both", signature: "sig==" }
  const messages = toAnthropicMessages([
    { role: "user", content: "Q" },
    { role: "assistant", content: "Looking.", toolCalls: [{ id: "t1", name: "search", arguments: '{"q":"x"}' }], parts: [thinking] },
    { role: "tool", toolCallId: "t1", name: "search", content: "found" },
  ])
  expect(messages[1]).toEqual({
    role: "assistant",
    content: [thinking, { type: "text", text: "Looking." }, { type: "tool_use", id: "t1", name: "search", input: { q: "x" } }],
  })
})
