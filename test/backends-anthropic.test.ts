import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import {
  DEFAULT_ANTHROPIC_MAX_TOKENS,
  makeAnthropicMessagesBackend,
  toAnthropicMessages,
} from "../src/services/backends/anthropic-messages.ts"
import type { SdkBackendOptions } from "../src/services/backends/sdk-stream.ts"
import {
  backendSuite,
  collect,
  failureOf,
  hostedToolRequests,
  hostedToolStep,
  parallelToolStep,
  replyOf,
  TEST_KEY,
} from "./support/backend-suite.ts"
import { type FakeLlm, raw, reply, startFakeLlm } from "./support/fake-llm.ts"
import { echoTool, followUpMessages, presentationRequest, roundRequest, sumTool } from "./support/llm-requests.ts"

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

  test("two parallel agent tool calls: tool_result blocks in one user message, after the signed thinking and both tool_use blocks", async () => {
    const step = await parallelToolStep(backend(), fake, "anthropic")
    const [echo, sum] = step.first.toolCalls
    expect(step.sent.tools.map((t: { name: string }) => t.name)).toEqual(["new_answer", "vote", echoTool.name, sumTool.name])
    expect(step.sent.tool_choice).toEqual({ type: "auto" })
    expect(step.sent.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "What is 2+2?" }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Two lookups at once.", signature: "sig" },
          { type: "tool_use", id: echo?.id, name: echoTool.name, input: { message: "hi" } },
          { type: "tool_use", id: sum?.id, name: sumTool.name, input: { a: 2, b: 2 } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: echo?.id, content: "Echo: hi" },
          { type: "tool_result", tool_use_id: sum?.id, content: "4" },
        ],
      },
    ])
  })

  test("enable_web_search and code execution offer the server tools, before the functions, with no beta header", async () => {
    const { round, presentation } = await hostedToolRequests((provider) => backend({ provider }), fake, "anthropic")
    const hosted = [
      { type: "web_search_20250305", name: "web_search" },
      { type: "code_execution_20250825", name: "code_execution" },
    ]
    expect(round.body.tools.slice(0, 3)).toEqual([...hosted, expect.objectContaining({ name: "new_answer" })])
    expect(round.body.tool_choice).toEqual({ type: "auto" })
    expect(round.headers["anthropic-beta"]).toBeUndefined()
    expect(presentation.body.tools).toEqual(hosted)
    expect(presentation.body.tool_choice).toBeUndefined()
  })

  test("server tool uses in the stream are the reply's hosted tool uses; they and their results go back with the next call", async () => {
    const b = backend({ provider: { webSearch: true, codeExecution: true } })
    const { first, sent } = await hostedToolStep(b, fake, "anthropic", ["Search first."])
    expect(first.hostedToolUses).toEqual([
      { tool: "web_search", detail: "capital of France" },
      { tool: "bash_code_execution", detail: "python3 -c 'print(2+2)'" },
    ])
    expect(first.text).toBe("Paris")
    expect(first.toolCalls.map((c) => c.name)).toEqual(["new_answer"])
    const assistant = sent.messages[1]
    expect(assistant.content.map((block: { type: string }) => block.type)).toEqual([
      "thinking",
      "server_tool_use",
      "web_search_tool_result",
      "server_tool_use",
      "bash_code_execution_tool_result",
      "text",
      "tool_use",
    ])
    expect(assistant.content[1]).toEqual({
      type: "server_tool_use",
      id: "srvtoolu_1",
      name: "web_search",
      input: { query: "capital of France" },
    })
    expect(assistant.content[2].content[0]).toMatchObject({
      type: "web_search_result",
      url: "https://example.com/",
      encrypted_content: "enc",
    })
    fake.enqueue("anthropic", reply({ text: "plain" }))
    expect(replyOf(await collect(b)).hostedToolUses).toBeUndefined()
  })

  test("a paused turn (pause_turn) goes back as it came, and the call goes on to one reply holding both", async () => {
    fake.enqueue(
      "anthropic",
      reply({
        text: "Searching.",
        hosted: [{ tool: "web_search", query: "capital of France" }],
        paused: true,
        usage: { input: 100, output: 10 },
      }),
      reply({
        hosted: [{ tool: "web_search", query: "population of Paris" }],
        text: " Paris.",
        toolCalls: [{ name: "new_answer", args: { content: "Paris" } }],
        usage: { input: 150, output: 20 },
      }),
    )
    const chunks = await collect(backend({ provider: { webSearch: true } }))
    const r = replyOf(chunks)
    expect(chunks.filter((c) => c._tag === "text").map((c) => (c._tag === "text" ? c.text : ""))).toEqual(["Searching.", " Paris."])
    expect(r.text).toBe("Searching. Paris.")
    expect(r.toolCalls.map((c) => c.name)).toEqual(["new_answer"])
    expect(r.hostedToolUses?.map((u) => u.detail)).toEqual(["capital of France", "population of Paris"])
    expect(r.usage).toMatchObject({ inputTokens: 250, outputTokens: 30 })
    expect(r.parts?.map((p) => (p as { type: string }).type)).toEqual([
      "server_tool_use",
      "web_search_tool_result",
      "server_tool_use",
      "web_search_tool_result",
    ])
    expect(fake.requests).toHaveLength(2)
    const messages = fake.requests[1]?.body.messages
    expect(messages).toHaveLength(2)
    expect(messages[1].role).toBe("assistant")
    expect(messages[1].content.map((b: { type: string }) => b.type)).toEqual(["server_tool_use", "web_search_tool_result", "text"])
  })

  test("top_p, reasoning effort (as output_config.effort) and extra_body are sent", async () => {
    fake.enqueue("anthropic", reply({ text: "ok" }))
    const provider = {
      reasoningEffort: "high",
      reasoningSummary: "auto",
      topP: 0.8,
      extraBody: { thinking: { type: "enabled", budget_tokens: 2048 }, stream: false },
    }
    await collect(backend({ provider }))
    const body = fake.requests[0]?.body
    expect(body).toMatchObject({
      top_p: 0.8,
      output_config: { effort: "high" },
      thinking: { type: "enabled", budget_tokens: 2048 },
      stream: true,
    })
    expect(body.reasoning).toBeUndefined()
  })

  test("cache reads count as input and are reported as cached input", async () => {
    fake.enqueue("anthropic", reply({ text: "x", usage: { input: 1000, cached: 800, output: 12 } }))
    expect(replyOf(await collect(backend())).usage).toEqual({
      inputTokens: 1000,
      cachedInputTokens: 800,
      outputTokens: 12,
      reasoningTokens: null,
    })
  })

  test("an error event in the stream (overloaded) gives server_error, retryable", async () => {
    fake.enqueue("anthropic", raw(event("error", { error: { type: "overloaded_error", message: "Overloaded" } })))
    expect(await failureOf(backend())).toMatchObject({ reason: "server_error", retryable: true })
  })

  test("input_json_delta for a block that is not a tool_use gives bad_reply", async () => {
    fake.enqueue(
      "anthropic",
      raw(
        event("message_start", {
          message: { id: "m", type: "message", role: "assistant", model: "x", content: [], usage: { input_tokens: 1, output_tokens: 1 } },
        }) +
          event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
          event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: "{" } }),
      ),
    )
    expect(await failureOf(backend())).toMatchObject({ reason: "bad_reply", retryable: true })
  })
})

test("tool results lead their user message, even when a user text came between the tool calls and their results; an empty one says so", () => {
  const messages = toAnthropicMessages([
    { role: "user", content: "Q" },
    {
      role: "assistant",
      content: "",
      toolCalls: [
        { id: "t1", name: "a", arguments: "{}" },
        { id: "t2", name: "b", arguments: "{}" },
      ],
    },
    { role: "tool", toolCallId: "t1", name: "a", content: "one" },
    { role: "user", content: "New answers arrived." },
    { role: "tool", toolCallId: "t2", name: "b", content: "" },
  ])
  expect(messages[2]).toEqual({
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "t1", content: "one" },
      // The API refuses an empty result.
      { type: "tool_result", tool_use_id: "t2", content: "(no output)" },
      { type: "text", text: "New answers arrived." },
    ],
  })
})

test("a failed call's result is a tool_result with is_error: true; any other has no is_error", () => {
  const messages = toAnthropicMessages([
    { role: "user", content: "Q" },
    {
      role: "assistant",
      content: "",
      toolCalls: [
        { id: "t1", name: "a", arguments: "{}" },
        { id: "t2", name: "b", arguments: "{}" },
      ],
    },
    { role: "tool", toolCallId: "t1", name: "a", content: "one" },
    { role: "tool", toolCallId: "t2", name: "b", content: "error: failed: down", isError: true },
  ])
  expect(messages[2]).toEqual({
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "t1", content: "one" },
      { type: "tool_result", tool_use_id: "t2", content: "error: failed: down", is_error: true },
    ],
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
