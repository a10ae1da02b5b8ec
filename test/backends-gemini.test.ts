import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { makeGeminiBackend } from "../src/services/backends/gemini.ts"
import type { GeminiOptions } from "../src/services/backends/gemini-request.ts"
import { backendSuite, collect, hostedToolRequests, hostedToolStep, parallelToolStep, replyOf, TEST_KEY } from "./support/backend-suite.ts"
import { type FakeLlm, reply, startFakeLlm } from "./support/fake-llm.ts"
import { GEMINI_SIGNATURE } from "./support/fake-llm-events.ts"
import { echoTool, followUpMessages, presentationRequest, roundRequest, sumTool } from "./support/llm-requests.ts"

backendSuite("gemini", makeGeminiBackend)

describe("gemini: wire format", () => {
  let fake: FakeLlm
  beforeEach(async () => {
    fake = await startFakeLlm()
  })
  afterEach(() => fake.stop())
  const backend = (over: Partial<GeminiOptions> = {}) =>
    makeGeminiBackend({ type: "gemini", model: "gemini-x", baseURL: fake.url, apiKey: TEST_KEY, ...over })

  test("the request: streamGenerateContent?alt=sse, a system instruction, function declarations with their JSON schema, mode AUTO", async () => {
    fake.enqueue("gemini", reply({ text: "ok" }))
    await collect(backend({ temperature: 0.5, maxTokens: 99, provider: { topP: 0.9 } }))
    const req = fake.requests[0]
    expect(req?.path).toBe("/v1beta/models/gemini-x:streamGenerateContent")
    expect(req?.query).toBe("?alt=sse")
    expect(req?.body).toMatchObject({
      contents: [{ role: "user", parts: [{ text: "What is 2+2?" }] }],
      systemInstruction: { parts: [{ text: "You are agent_a." }] },
      toolConfig: { functionCallingConfig: { mode: "AUTO" } },
      generationConfig: { temperature: 0.5, maxOutputTokens: 99, topP: 0.9 },
    })
    const [declarations] = req?.body.tools
    const vote = declarations.functionDeclarations.find((d: { name: string }) => d.name === "vote")
    expect(vote.parametersJsonSchema.properties.agent_id.enum).toEqual(["agent1", "agent2", "agent3"])
    expect(req?.body.generationConfig.thinkingConfig).toBeUndefined()
  })

  test("thinking settings and the function-calling mode go as thinkingConfig and functionCallingConfig; extra_body is merged in", async () => {
    fake.enqueue("gemini", reply({ text: "ok" }))
    const thinking = { include_thoughts: true, thinking_budget: 2048, thinking_level: "high" as const }
    await collect(backend({ thinking, functionCallingMode: "ANY", provider: { extraBody: { safetySettings: [] } } }))
    const body = fake.requests[0]?.body
    expect(body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true, thinkingBudget: 2048, thinkingLevel: "HIGH" })
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: "ANY" } })
    expect(body.safetySettings).toEqual([])
  })

  test("earlier tool calls become functionCall parts and their results functionResponse parts; a presentation sends no tools", async () => {
    fake.enqueue("gemini", reply({ text: "ok" }), reply({ text: "final" }))
    await collect(
      backend(),
      roundRequest([...followUpMessages, { role: "tool", toolCallId: "call_8", name: "vote", content: "no", isError: true }]),
    )
    expect(fake.requests[0]?.body.contents).toEqual([
      { role: "user", parts: [{ text: "What is 2+2?" }] },
      {
        role: "model",
        parts: [{ text: "Let me answer." }, { functionCall: { id: "call_9", name: "new_answer", args: { content: "4" } } }],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { id: "call_9", name: "new_answer", response: { output: "recorded" } } },
          { text: "Now vote." },
          { functionResponse: { id: "call_8", name: "vote", response: { error: "no" } } },
        ],
      },
    ])
    expect(replyOf(await collect(backend(), presentationRequest())).text).toBe("final")
    expect(fake.requests[1]?.body.tools).toBeUndefined()
    expect(fake.requests[1]?.body.toolConfig).toBeUndefined()
  })

  test("thought parts are reasoning; the signed turn goes back whole with its signature, ids the API did not give are not sent", async () => {
    const step = await parallelToolStep(backend(), fake, "gemini")
    expect(step.first.toolCalls.map((c) => c.id)).toEqual(["gemini-fc-1", "gemini-fc-2"])
    expect(step.first.parts).toEqual([
      { text: "Two lookups at once.", thought: true },
      { functionCall: { name: echoTool.name, args: { message: "hi" } }, thoughtSignature: GEMINI_SIGNATURE },
      { functionCall: { name: sumTool.name, args: { a: 2, b: 2 } } },
    ])
    const [, model, results] = step.sent.contents
    expect(model).toEqual({ role: "model", parts: step.first.parts })
    expect(results.parts).toEqual([
      { functionResponse: { name: echoTool.name, response: { output: "Echo: hi" } } },
      { functionResponse: { name: sumTool.name, response: { output: "4" } } },
    ])
  })

  test("a signed text reply keeps its signature on the text part; text without anything opaque keeps no parts", async () => {
    fake.enqueue("gemini", reply({ reasoning: ["Hmm."], text: ["Fo", "ur."] }), reply({ text: ["plain ", "text"] }))
    const signed = replyOf(await collect(backend()))
    expect(signed.parts).toEqual([{ text: "Hmm.", thought: true }, { text: "Fo" }, { text: "ur.", thoughtSignature: GEMINI_SIGNATURE }])
    expect(signed.text).toBe("Four.")
    expect(replyOf(await collect(backend())).parts).toEqual([])
  })

  test("enable_web_search is the google_search tool and enable_code_execution code execution, in rounds and presentations", async () => {
    const { round, presentation } = await hostedToolRequests((provider) => backend({ provider }), fake, "gemini")
    expect(round.body.tools.slice(0, 2)).toEqual([{ googleSearch: {} }, { codeExecution: {} }])
    expect(round.body.tools[2].functionDeclarations.map((d: { name: string }) => d.name)).toContain("new_answer")
    expect(presentation.body.tools).toEqual([{ googleSearch: {} }, { codeExecution: {} }])
  })

  test("grounding is a google_search use with its queries and sources; code run is a code_execution use; both go back", async () => {
    const { first, sent } = await hostedToolStep(backend({ provider: { webSearch: true, codeExecution: true } }), fake, "gemini")
    expect(first.hostedToolUses).toEqual([
      { tool: "google_search", detail: "capital of France", sources: [{ url: "https://example.com/", title: "Example" }] },
      { tool: "code_execution", detail: "python3 -c 'print(2+2)'" },
    ])
    expect(first.text).toBe("Paris")
    expect(sent.contents[1].parts.map((p: object) => Object.keys(p)[0])).toEqual([
      "executableCode",
      "codeExecutionResult",
      "text",
      "functionCall",
    ])
  })

  test("usage: prompt, cached content, candidates plus thoughts; a thoughts count is the reasoning", async () => {
    fake.enqueue("gemini", reply({ text: "ok", usage: { input: 300, cached: 100, output: 50, reasoning: 20 } }))
    expect(replyOf(await collect(backend())).usage).toEqual({
      inputTokens: 300,
      cachedInputTokens: 100,
      outputTokens: 50,
      reasoningTokens: 20,
    })
  })
})

test("a function name the model prefixed with default_api: is read without the prefix", async () => {
  const fake = await startFakeLlm()
  try {
    fake.enqueue("gemini", reply({ toolCalls: [{ name: "default_api:new_answer", args: { content: "4" } }] }))
    const r = replyOf(await collect(makeGeminiBackend({ type: "gemini", model: "m", baseURL: fake.url, apiKey: TEST_KEY })))
    expect(r.toolCalls.map((c) => c.name)).toEqual(["new_answer"])
  } finally {
    fake.stop()
  }
})
