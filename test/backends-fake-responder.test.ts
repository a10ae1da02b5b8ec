/**
 * The fake server as an end-to-end test will use it: one responder deciding per
 * request, from the prompt, whether to answer or vote, for several agents at once.
 */
import { afterEach, beforeEach, expect, test } from "bun:test"
import { Effect } from "effect"
import { makeAnthropicMessagesBackend } from "../src/services/backends/anthropic-messages.ts"
import { makeChatCompletionsBackend } from "../src/services/backends/chat-completions.ts"
import type { Backend } from "../src/services/backends/index.ts"
import { makeOpenAiResponsesBackend } from "../src/services/backends/openai-responses.ts"
import { collect, replyOf } from "./support/backend-suite.ts"
import { type FakeLlm, offeredTools, promptText, reply, startFakeLlm, toolCall } from "./support/fake-llm.ts"
import { roundRequest } from "./support/llm-requests.ts"

let fake: FakeLlm
beforeEach(async () => {
  fake = await startFakeLlm({
    respond: (req) =>
      promptText(req).includes("agent1.1")
        ? toolCall("vote", { agent_id: "agent1", reason: `seen via ${req.protocol}` }, 5)
        : offeredTools(req).includes("new_answer")
          ? toolCall("new_answer", { content: `answer from ${req.protocol}` }, 5)
          : reply({ text: "final" }),
  })
})
afterEach(() => fake.stop())

test("a responder answers or votes by the prompt, for three protocols running concurrently", async () => {
  const backends: ReadonlyArray<Backend> = [
    makeOpenAiResponsesBackend({ type: "openai", model: "m", baseURL: fake.openAiBaseUrl, apiKey: null }),
    makeChatCompletionsBackend({ type: "vllm", model: "m", baseURL: fake.openAiBaseUrl, apiKey: null }),
    makeAnthropicMessagesBackend({ type: "claude", model: "m", baseURL: fake.url, apiKey: "k" }),
  ]
  const first = await Effect.runPromise(Effect.forEach(backends, (b) => Effect.promise(() => collect(b)), { concurrency: "unbounded" }))
  expect(first.map((chunks) => replyOf(chunks).toolCalls.map((c) => [c.name, JSON.parse(c.arguments).content]))).toEqual([
    [["new_answer", "answer from responses"]],
    [["new_answer", "answer from chat"]],
    [["new_answer", "answer from anthropic"]],
  ])
  const seen = roundRequest([{ role: "user", content: "<agent1.1> answer from responses </agent1.1>" }])
  const second = await Promise.all(backends.map((b) => collect(b, seen)))
  expect(second.map((chunks) => replyOf(chunks).toolCalls[0]?.name)).toEqual(["vote", "vote", "vote"])
  expect(fake.requests.map((r) => r.protocol).sort()).toEqual(["anthropic", "anthropic", "chat", "chat", "responses", "responses"])
})
