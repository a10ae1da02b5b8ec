/**
 * `azure_openai` (issue 13): the official SDK's AzureOpenAI client against a loopback fake server.
 * The endpoint comes from `endpoint`, `base_url` or AZURE_OPENAI_ENDPOINT; the model names the
 * deployment; `api_version` (or AZURE_OPENAI_API_VERSION) is every request's `api-version`; the key
 * goes in Azure's `api-key` header.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { missingKeys } from "../src/cli/run/setup.ts"
import { decodeConfig } from "../src/domain/config/index.ts"
import { makeChatCompletionsBackend } from "../src/services/backends/chat-completions.ts"
import { makeBackend } from "../src/services/backends/factory.ts"
import { collect, replyOf } from "./support/backend-suite.ts"
import { type FakeLlm, startFakeLlm, toolCall } from "./support/fake-llm.ts"
import { roundRequest } from "./support/llm-requests.ts"

const KEY = "azure-test-key-0123456789"

const azureConfig = (backend: Record<string, unknown>) => {
  const decoded = decodeConfig(
    { agents: [{ id: "azure_gpt", backend: { type: "azure_openai", model: "gpt-4-1-deployment", ...backend } }] },
    {},
  )
  if (Either.isLeft(decoded)) throw new Error(JSON.stringify(decoded.left))
  return decoded.right
}

describe("azure_openai through the official AzureOpenAI client", () => {
  let fake: FakeLlm
  beforeEach(async () => {
    fake = await startFakeLlm()
  })
  afterEach(() => fake.stop())

  test("endpoint + deployment + api_version: the deployment's chat/completions path, api-version and the api-key header", async () => {
    fake.enqueue("chat", toolCall("new_answer", { content: "Four." }))
    const backend = makeChatCompletionsBackend({
      type: "azure_openai",
      model: "gpt-4-1-deployment",
      baseURL: `${fake.url}/`,
      apiKey: KEY,
      apiVersion: "2024-10-21",
    })
    const got = replyOf(await collect(backend, roundRequest()))
    expect(got.toolCalls.map((c) => c.name)).toEqual(["new_answer"])
    const req = fake.requests[0]!
    expect(req.path).toBe("/openai/deployments/gpt-4-1-deployment/chat/completions")
    expect(req.query).toBe("?api-version=2024-10-21")
    expect(req.headers["api-key"]).toBe(KEY)
    expect(req.body).toMatchObject({ stream: true, tool_choice: "required" })
  })

  test("from the config: base_url as the endpoint, the key from AZURE_OPENAI_API_KEY, the version from AZURE_OPENAI_API_VERSION", async () => {
    fake.enqueue("chat", toolCall("new_answer", { content: "Four." }))
    const config = azureConfig({ base_url: fake.url })
    const env = { AZURE_OPENAI_API_KEY: KEY, AZURE_OPENAI_API_VERSION: "2025-01-01-preview" }
    const backend = await Effect.runPromise(makeBackend(config.agents[0]!, env))
    await collect(backend, roundRequest())
    const req = fake.requests[0]!
    expect(`${req.path}${req.query}`).toBe("/openai/deployments/gpt-4-1-deployment/chat/completions?api-version=2025-01-01-preview")
  })

  test("AZURE_OPENAI_ENDPOINT when the config gives none; with none at all, the run is told which variable to set", async () => {
    fake.enqueue("chat", toolCall("new_answer", { content: "Four." }))
    const config = azureConfig({})
    const env = { AZURE_OPENAI_API_KEY: KEY, AZURE_OPENAI_ENDPOINT: fake.url }
    expect(missingKeys(config, env)).toEqual([])
    await collect(await Effect.runPromise(makeBackend(config.agents[0]!, env)), roundRequest())
    expect(fake.requests[0]!.path).toBe("/openai/deployments/gpt-4-1-deployment/chat/completions")
    expect(missingKeys(config, {}).map((p) => [p.path, p.message])).toEqual([
      [
        "agents[0].backend.endpoint",
        "missing Azure endpoint: set AZURE_OPENAI_ENDPOINT, or endpoint or base_url in the config (agent azure_gpt)",
      ],
      ["agents[0].backend.api_key", "missing API key: set AZURE_OPENAI_API_KEY (agent azure_gpt, backend azure_openai)"],
    ])
  })
})
