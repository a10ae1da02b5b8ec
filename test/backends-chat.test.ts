import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { makeChatCompletionsBackend } from "../src/services/backends/chat-completions.ts"
import type { SdkBackendOptions } from "../src/services/backends/sdk-stream.ts"
import { backendSuite, collect, failureOf, parallelToolStep, replyOf, TEST_KEY } from "./support/backend-suite.ts"
import { type FakeLlm, raw, reply, startFakeLlm, status, toolCall } from "./support/fake-llm.ts"
import { echoTool, followUpMessages, presentationRequest, roundRequest, sumTool } from "./support/llm-requests.ts"

backendSuite("chat", makeChatCompletionsBackend)

const sse = (...chunks: ReadonlyArray<object | string>) =>
  chunks.map((c) => `data: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`).join("")
const chunk = (delta: object, finish_reason: string | null = null) => ({
  id: "c1",
  object: "chat.completion.chunk",
  created: 0,
  model: "m",
  choices: [{ index: 0, delta, finish_reason }],
})

describe("chat: wire format", () => {
  let fake: FakeLlm
  beforeEach(async () => {
    fake = await startFakeLlm()
  })
  afterEach(() => fake.stop())
  const backend = (over: Partial<SdkBackendOptions> = {}) =>
    makeChatCompletionsBackend({ type: "groq", model: "llama-x", baseURL: fake.openAiBaseUrl, apiKey: TEST_KEY, ...over })

  test("the request has the system message, function tools with the vote enum, tool_choice required and usage on", async () => {
    fake.enqueue("chat", reply({ text: "ok" }))
    await collect(backend({ temperature: 0.3, maxTokens: 500 }))
    const req = fake.requests[0]
    expect(req?.path).toBe("/v1/chat/completions")
    expect(req?.body).toMatchObject({
      model: "llama-x",
      stream: true,
      stream_options: { include_usage: true },
      tool_choice: "required",
      temperature: 0.3,
      max_tokens: 500,
      messages: [
        { role: "system", content: "You are agent_a." },
        { role: "user", content: "What is 2+2?" },
      ],
    })
    expect(req?.body.tools.map((t: { type: string; function: { name: string } }) => [t.type, t.function.name])).toEqual([
      ["function", "new_answer"],
      ["function", "vote"],
    ])
    expect(req?.body.tools[1].function.parameters.properties.agent_id.enum).toEqual(["agent1", "agent2", "agent3"])
    expect(req?.body.tools[1].function.description).toBe("Vote for the best agent to present final answer")
  })

  test("a presentation request with no tools sends neither tools nor tool_choice, nor unset options", async () => {
    fake.enqueue("chat", reply({ text: "final" }))
    expect(replyOf(await collect(backend(), presentationRequest())).text).toBe("final")
    const body = fake.requests[0]?.body
    expect(body.tools).toBeUndefined()
    expect(body.tool_choice).toBeUndefined()
    expect(body.temperature).toBeUndefined()
    expect(body.max_tokens).toBeUndefined()
  })

  test("earlier tool calls and their results are sent as tool_calls and tool messages", async () => {
    fake.enqueue("chat", reply({ text: "ok" }))
    await collect(backend(), roundRequest(followUpMessages))
    expect(fake.requests[0]?.body.messages.slice(1)).toEqual([
      { role: "user", content: "What is 2+2?" },
      {
        role: "assistant",
        content: "Let me answer.",
        tool_calls: [{ id: "call_9", type: "function", function: { name: "new_answer", arguments: '{"content":"4"}' } }],
      },
      { role: "tool", tool_call_id: "call_9", content: "recorded" },
      { role: "user", content: "Now vote." },
    ])
  })

  test("two parallel agent tool calls: one assistant message with both tool_calls and its reasoning_content, then a role tool message per result", async () => {
    const step = await parallelToolStep(backend(), fake, "chat")
    const [echo, sum] = step.first.toolCalls
    expect(step.sent.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      "new_answer",
      "vote",
      echoTool.name,
      sumTool.name,
    ])
    expect(step.sent.tool_choice).toBe("required")
    expect(step.sent.messages).toEqual([
      { role: "system", content: "You are agent_a." },
      { role: "user", content: "What is 2+2?" },
      {
        role: "assistant",
        content: null,
        // DeepSeek refuses a tool-call message without the reasoning that came with it.
        reasoning_content: "Two lookups at once.",
        tool_calls: [
          { id: echo?.id, type: "function", function: { name: echoTool.name, arguments: '{"message":"hi"}' } },
          { id: sum?.id, type: "function", function: { name: sumTool.name, arguments: '{"a":2,"b":2}' } },
        ],
      },
      { role: "tool", tool_call_id: echo?.id, content: "Echo: hi" },
      { role: "tool", tool_call_id: sum?.id, content: "4" },
    ])
  })

  test("reasoning effort, verbosity, top_p and extra_body are sent as Chat Completions names them, also after the tool-choice fallback", async () => {
    const refusal = { error: { message: "tool_choice 'required' is not supported with this model", type: "invalid_request_error" } }
    fake.enqueue("chat", status(400, { body: refusal }), reply({ text: "ok" }))
    const provider = {
      reasoningEffort: "low",
      reasoningSummary: "auto",
      verbosity: "high",
      topP: 0.5,
      extraBody: { chat_template_kwargs: { enable_thinking: false }, stream: false },
    }
    await collect(backend({ provider }))
    for (const request of fake.requests) {
      expect(request.body).toMatchObject({
        reasoning_effort: "low",
        verbosity: "high",
        top_p: 0.5,
        chat_template_kwargs: { enable_thinking: false },
        stream: true,
      })
      // A reasoning summary is a Responses setting: Chat Completions has no such field.
      expect(request.body.reasoning).toBeUndefined()
    }
    expect(fake.requests.map((r) => r.body.tool_choice)).toEqual(["required", "auto"])
  })

  test("`reasoning` deltas (OpenRouter/Groq style) and tool calls without an index (Gemini style) are read", async () => {
    fake.enqueue(
      "chat",
      raw(
        sse(
          chunk({ reasoning: "hmm" }),
          chunk({ tool_calls: [{ id: "g1", type: "function", function: { name: "vote", arguments: '{"agent_id":"agent3",' } }] }),
          chunk({ tool_calls: [{ function: { arguments: '"reason":"r"}' } }] }),
          chunk({}, "tool_calls"),
          "[DONE]",
        ),
      ),
    )
    const r = replyOf(await collect(backend()))
    expect(r.reasoning).toBe("hmm")
    expect(r.toolCalls).toEqual([{ id: "g1", name: "vote", arguments: '{"agent_id":"agent3","reason":"r"}' }])
    expect(r.usage).toEqual({ inputTokens: null, cachedInputTokens: null, outputTokens: null, reasoningTokens: null })
    // Reasoning sent as `reasoning` is not sent back: not every server takes that field in a message.
    expect(r.parts).toBeUndefined()
  })

  test("Gemini 3's signed tool calls (extra_content) go back signed, each on its own entry", async () => {
    const signed = (id: string, name: string, args: string, signature: string) =>
      chunk({
        tool_calls: [
          { id, type: "function", function: { name, arguments: args }, extra_content: { google: { thought_signature: signature } } },
        ],
      })
    fake.enqueue(
      "chat",
      raw(
        sse(
          signed("g1", echoTool.name, '{"message":"hi"}', "sig-1"),
          signed("g2", sumTool.name, '{"a":2,"b":2}', "sig-2"),
          chunk({}, "tool_calls"),
          "[DONE]",
        ),
      ),
      reply({ text: "ok" }),
    )
    const b = backend()
    const first = replyOf(await collect(b))
    expect(first.toolCalls.map((c) => c.id)).toEqual(["g1", "g2"])
    const results = first.toolCalls.map((c) => ({ role: "tool" as const, toolCallId: c.id, name: c.name, content: "done" }))
    await collect(
      b,
      roundRequest([
        { role: "user", content: "Q" },
        { role: "assistant", content: "", toolCalls: first.toolCalls, parts: first.parts ?? [] },
        ...results,
      ]),
    )
    expect(fake.requests[1]?.body.messages[2].tool_calls).toEqual([
      {
        id: "g1",
        type: "function",
        function: { name: echoTool.name, arguments: '{"message":"hi"}' },
        extra_content: { google: { thought_signature: "sig-1" } },
      },
      {
        id: "g2",
        type: "function",
        function: { name: sumTool.name, arguments: '{"a":2,"b":2}' },
        extra_content: { google: { thought_signature: "sig-2" } },
      },
    ])
  })

  test("tool-call fragments that never get a name give bad_reply", async () => {
    fake.enqueue("chat", raw(sse(chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }), chunk({}, "tool_calls"), "[DONE]")))
    expect(await failureOf(backend())).toMatchObject({ reason: "bad_reply", retryable: true })
  })

  test("a 400 refusing the forced tool choice: asked again at once with auto, and auto from then on", async () => {
    const refusal = { error: { message: "tool_choice 'required' is not supported with this model", type: "invalid_request_error" } }
    fake.enqueue("chat", status(400, { body: refusal }))
    fake.enqueue("chat", toolCall("new_answer", { content: "4" }))
    fake.enqueue("chat", toolCall("vote", { agent_id: "agent1", reason: "r" }))
    const b = backend()
    expect(replyOf(await collect(b)).toolCalls[0]?.name).toBe("new_answer")
    expect(replyOf(await collect(b)).toolCalls[0]?.name).toBe("vote")
    expect(fake.requests.map((r) => (r.body as { tool_choice?: unknown }).tool_choice)).toEqual(["required", "auto", "auto"])
  })

  test("any other 400 is not retried, and the tool choice stays forced", async () => {
    fake.enqueue("chat", status(400, { body: { error: { message: "max_tokens is too large", type: "invalid_request_error" } } }))
    fake.enqueue("chat", toolCall("new_answer", { content: "4" }))
    const b = backend()
    expect(await failureOf(b)).toMatchObject({ reason: "bad_request", retryable: false })
    await collect(b)
    expect(fake.requests.map((r) => (r.body as { tool_choice?: unknown }).tool_choice)).toEqual(["required", "required"])
  })

  test("an error object inside the stream fails the call instead of being skipped", async () => {
    fake.enqueue("chat", raw(sse(chunk({ content: "a" }), { error: { message: "overloaded", type: "server_error" } })))
    expect(await failureOf(backend())).toMatchObject({ reason: "server_error", retryable: true })
  })
})
