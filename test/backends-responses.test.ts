import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { makeOpenAiResponsesBackend, responsesParams } from "../src/services/backends/openai-responses.ts"
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

backendSuite("responses", makeOpenAiResponsesBackend)

const event = (type: string, body: object) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: 0, ...body })}\n\n`

describe("responses: wire format", () => {
  let fake: FakeLlm
  beforeEach(async () => {
    fake = await startFakeLlm()
  })
  afterEach(() => fake.stop())
  const backend = (over: Partial<SdkBackendOptions> = {}) =>
    makeOpenAiResponsesBackend({ type: "openai", model: "gpt-x", baseURL: fake.openAiBaseUrl, apiKey: TEST_KEY, ...over })

  test("the request has instructions, input items, non-strict function tools with the vote enum and tool_choice required", async () => {
    fake.enqueue("responses", reply({ text: "ok" }))
    await collect(backend({ temperature: 1, maxTokens: 900 }))
    const req = fake.requests[0]
    expect(req?.path).toBe("/v1/responses")
    expect(req?.body).toMatchObject({
      model: "gpt-x",
      stream: true,
      instructions: "You are agent_a.",
      input: [{ role: "user", content: "What is 2+2?" }],
      tool_choice: "required",
      temperature: 1,
      max_output_tokens: 900,
    })
    const [answer, vote] = req?.body.tools
    expect(answer).toMatchObject({ type: "function", name: "new_answer", strict: false })
    expect(vote).toMatchObject({
      type: "function",
      name: "vote",
      strict: false,
      description: "Vote for the best agent to present final answer",
    })
    expect(vote.parameters.properties.agent_id.enum).toEqual(["agent1", "agent2", "agent3"])
  })

  test("a presentation request with no tools sends neither tools nor tool_choice", async () => {
    fake.enqueue("responses", reply({ text: "final" }))
    expect(replyOf(await collect(backend(), presentationRequest())).text).toBe("final")
    expect(fake.requests[0]?.body.tools).toBeUndefined()
    expect(fake.requests[0]?.body.tool_choice).toBeUndefined()
    expect(fake.requests[0]?.body.max_output_tokens).toBeUndefined()
  })

  test("earlier tool calls and their results become function_call and function_call_output items", async () => {
    fake.enqueue("responses", reply({ text: "ok" }))
    await collect(backend(), roundRequest(followUpMessages))
    expect(fake.requests[0]?.body.input).toEqual([
      { role: "user", content: "What is 2+2?" },
      { role: "assistant", content: "Let me answer." },
      { type: "function_call", call_id: "call_9", name: "new_answer", arguments: '{"content":"4"}' },
      { type: "function_call_output", call_id: "call_9", output: "recorded" },
      { role: "user", content: "Now vote." },
    ])
  })

  test("arguments sent only as deltas (no *.done events) are reassembled", async () => {
    fake.enqueue(
      "responses",
      reply({ toolCalls: [{ name: "new_answer", args: { content: "x".repeat(300) }, chunks: 50 }], deltasOnly: true }),
    )
    const r = replyOf(await collect(backend()))
    expect(r.toolCalls).toEqual([{ id: "call_1", name: "new_answer", arguments: JSON.stringify({ content: "x".repeat(300) }) }])
  })

  test("two parallel agent tool calls: their results go back as function_call_output items after the reasoning and function_call items", async () => {
    const step = await parallelToolStep(backend(), fake, "responses")
    const [echo, sum] = step.first.toolCalls
    expect(step.sent.tools.map((t: { name: string }) => t.name)).toEqual(["new_answer", "vote", echoTool.name, sumTool.name])
    expect(step.sent.tool_choice).toBe("required")
    expect(step.sent.input).toEqual([
      { role: "user", content: "What is 2+2?" },
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Two lookups at once." }] },
      { type: "function_call", call_id: echo?.id, name: echoTool.name, arguments: '{"message":"hi"}' },
      { type: "function_call", call_id: sum?.id, name: sumTool.name, arguments: '{"a":2,"b":2}' },
      { type: "function_call_output", call_id: echo?.id, output: "Echo: hi" },
      { type: "function_call_output", call_id: sum?.id, output: "4" },
    ])
  })

  test("enable_web_search and code execution offer the web_search and code_interpreter tools, before the functions", async () => {
    const sent = await hostedToolRequests((provider) => backend({ provider }), fake, "responses")
    const [round, presentation] = [sent.round.body, sent.presentation.body]
    expect(round.tools.slice(0, 3)).toEqual([
      { type: "web_search" },
      { type: "code_interpreter", container: { type: "auto" } },
      expect.objectContaining({ type: "function", name: "new_answer" }),
    ])
    expect(round.tool_choice).toBe("required")
    // A presentation offers no function, but the provider's tools stay, with the default tool choice.
    expect(presentation.tools).toEqual([{ type: "web_search" }, { type: "code_interpreter", container: { type: "auto" } }])
    expect(presentation.tool_choice).toBeUndefined()
  })

  test("web searches and code runs in the stream are the reply's hosted tool uses, the text's citations the search's sources", async () => {
    const b = backend({ provider: { webSearch: true, codeExecution: true } })
    const { first, sent } = await hostedToolStep(b, fake, "responses")
    expect(first.hostedToolUses).toEqual([
      { tool: "web_search", detail: "capital of France", sources: [{ url: "https://example.com/", title: "Example" }] },
      { tool: "code_interpreter", detail: "python3 -c 'print(2+2)'" },
    ])
    expect(first.text).toBe("Paris")
    expect(sent.input.map((item: { type?: string; role?: string }) => item.type ?? item.role)).toEqual([
      "user",
      "web_search_call",
      "code_interpreter_call",
      "assistant",
      "function_call",
    ])
    // A reply without them has none.
    fake.enqueue("responses", reply({ text: "plain" }))
    expect(replyOf(await collect(b)).hostedToolUses).toBeUndefined()
  })

  test("reasoning, text verbosity, top_p and extra_body are sent as the Responses API names them", async () => {
    fake.enqueue("responses", reply({ text: "ok" }))
    const provider = {
      reasoningEffort: "high",
      reasoningSummary: "auto",
      verbosity: "low",
      topP: 0.9,
      extraBody: { service_tier: "flex", stream: false },
    }
    await collect(backend({ provider }))
    expect(fake.requests[0]?.body).toMatchObject({
      reasoning: { effort: "high", summary: "auto" },
      text: { verbosity: "low" },
      top_p: 0.9,
      service_tier: "flex",
      stream: true,
    })
  })

  test("response.failed fails with the provider's code", async () => {
    const failed = (code: string) =>
      raw(
        event("response.failed", {
          response: { id: "r", object: "response", status: "failed", output: [], error: { code, message: "nope" } },
        }),
      )
    fake.enqueue("responses", failed("server_error"), failed("rate_limit_exceeded"), failed("invalid_prompt"))
    expect(await failureOf(backend())).toMatchObject({ reason: "server_error", retryable: true })
    expect(await failureOf(backend())).toMatchObject({ reason: "rate_limited", retryable: true })
    expect(await failureOf(backend())).toMatchObject({ reason: "bad_request", retryable: false })
  })
})

test("an assistant message's reasoning items go back first, unchanged, before its function calls", () => {
  const reasoning = { type: "reasoning" as const, id: "rs_1", summary: [], encrypted_content: "enc" }
  const request = {
    agentId: "a",
    system: "",
    messages: [
      { role: "user" as const, content: "Q" },
      { role: "assistant" as const, content: "", toolCalls: [{ id: "c1", name: "search", arguments: "{}" }], parts: [reasoning] },
    ],
    tools: [],
    context: { kind: "round" as const, selfAnonId: "agent1", shown: [], voteOnly: false },
  }
  expect(responsesParams(request, { model: "m" } as never).input).toEqual([
    { role: "user", content: "Q" },
    reasoning,
    { type: "function_call", call_id: "c1", name: "search", arguments: "{}" },
  ])
})
