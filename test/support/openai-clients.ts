/**
 * The OpenAI-compatible clients people point at `massgen serve`, each as one
 * call of a question with its usual retries: the `openai` SDK (maxRetries 2),
 * the AI SDK's `generateText` through `@ai-sdk/openai-compatible` and
 * LangChain's `ChatOpenAI.invoke` (their default retries). For the tests and
 * the bench of issue 26: how many runs one call starts.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { ChatOpenAI } from "@langchain/openai"
import { generateText } from "ai"
import OpenAI from "openai"

export const RETRYING_CLIENTS: ReadonlyArray<readonly [string, (url: string, question: string) => Promise<unknown>]> = [
  [
    "openai SDK (maxRetries 2)",
    (url, question) =>
      new OpenAI({ baseURL: url, apiKey: "none", maxRetries: 2 }).chat.completions.create({
        model: "team",
        messages: [{ role: "user", content: question }],
      }),
  ],
  [
    "AI SDK generateText",
    (url, question) =>
      generateText({ model: createOpenAICompatible({ name: "massgen", baseURL: url, apiKey: "none" })("team"), prompt: question }),
  ],
  [
    "LangChain ChatOpenAI.invoke",
    (url, question) => new ChatOpenAI({ model: "team", apiKey: "none", configuration: { baseURL: url } }).invoke(question),
  ],
]

/** The HTTP status of what a client threw, as each names it. */
export const statusOf = (e: any): number | undefined => e?.status ?? e?.statusCode ?? e?.lastError?.statusCode ?? e?.response?.status
