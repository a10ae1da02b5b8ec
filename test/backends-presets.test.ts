import { describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { type Agent, BACKEND_TYPES, type BackendConfig } from "../src/domain/config/index.ts"
import { GEMINI_OPENAI_BASE_URL, inferBackendType, keyEnvForBaseUrl, PRESETS, presetFor, presetOf } from "../src/domain/config/presets.ts"
import { makeBackend } from "../src/services/backends/factory.ts"
import { resolveApiKey } from "../src/services/backends/keys.ts"

const agent = (backend: BackendConfig, id = "agent_a"): Agent => ({ id, anonId: "agent1", systemMessage: null, backend })

describe("presets", () => {
  test("every backend type but scripted has a preset", () => {
    expect(Object.keys(PRESETS).sort()).toEqual(BACKEND_TYPES.filter((t) => t !== "scripted").sort())
  })

  test("families, base URLs and key variables", () => {
    expect(presetFor("openai")).toMatchObject({ family: "responses", baseURL: "https://api.openai.com/v1", keyEnv: ["OPENAI_API_KEY"] })
    expect(presetFor("claude")).toMatchObject({ family: "anthropic", baseURL: "https://api.anthropic.com", keyEnv: ["ANTHROPIC_API_KEY"] })
    expect(presetFor("grok")).toMatchObject({ family: "chat", baseURL: "https://api.x.ai/v1", keyEnv: ["XAI_API_KEY"] })
    expect(presetFor("gemini")).toMatchObject({
      family: "gemini",
      baseURL: "https://generativelanguage.googleapis.com",
      keyEnv: ["GOOGLE_API_KEY", "GEMINI_API_KEY"],
    })
    expect(presetOf({ type: "gemini", api: "chat_completions" })).toMatchObject({ family: "chat", baseURL: GEMINI_OPENAI_BASE_URL })
    expect(presetOf({ type: "gemini", api: "native" })).toEqual(presetFor("gemini"))
    expect(presetFor("fireworks").baseURL).toBe("https://api.fireworks.ai/inference/v1")
    expect(presetFor("chatcompletion")).toMatchObject({ family: "chat", baseURL: null, keyless: false })
    for (const t of ["ollama", "lmstudio", "vllm", "sglang"] as const)
      expect(presetFor(t)).toMatchObject({ family: "chat", keyless: true, keyEnv: [] })
    expect(presetFor("sglang").baseURL).toBe("http://localhost:30000/v1")
  })

  test("default models (checked on 2026-11-29)", () => {
    expect(Object.fromEntries(Object.entries(PRESETS).map(([type, preset]) => [type, preset.defaultModel]))).toEqual({
      openai: "gpt-6-luna",
      chatcompletion: "default",
      claude: "claude-sonnet-5-5",
      claude_code: "claude-sonnet-5-5",
      grok: "grok-4.7",
      groq: "openai/gpt-oss-120b",
      together: "meta-llama/Llama-3.3-70B-Instruct-Turbo",
      openrouter: "google/gemini-3.8-flash",
      cerebras: "gpt-oss-120b",
      fireworks: "accounts/fireworks/models/llama-v3p3-70b-instruct",
      gemini: "gemini-3.8-flash",
      ollama: "llama3.2",
      lmstudio: "default",
      vllm: "default",
      sglang: "default",
      // MassGen's own examples' models (issue 13), not checked against the providers.
      azure_openai: "gpt-4.1",
      zai: "glm-4.5",
    })
  })

  test("a chatcompletion host names its key variable; unknown and local hosts need none", () => {
    expect(keyEnvForBaseUrl("https://api.cerebras.ai/v1")).toEqual(["CEREBRAS_API_KEY"])
    expect(keyEnvForBaseUrl("https://api.together.xyz/v1")).toEqual(["TOGETHER_API_KEY"])
    expect(keyEnvForBaseUrl("https://openrouter.ai/api/v1")).toEqual(["OPENROUTER_API_KEY"])
    expect(keyEnvForBaseUrl("https://example.com/v1")).toEqual([])
    expect(keyEnvForBaseUrl("http://localhost:9999/v1")).toEqual([])
    expect(keyEnvForBaseUrl("not a url")).toEqual([])
  })

  test("inferBackendType", () => {
    expect(inferBackendType("gpt-5-mini")).toBe("openai")
    expect(inferBackendType("o3")).toBe("openai")
    expect(inferBackendType("o4-mini")).toBe("openai")
    expect(inferBackendType("claude-sonnet-4-5")).toBe("claude")
    expect(inferBackendType("grok-4")).toBe("grok")
    expect(inferBackendType("gemini-2.5-pro")).toBe("gemini")
    // The preset defaults infer their own backend (groq's vendor/ name reads as OpenRouter, as before).
    expect(inferBackendType(presetFor("openai").defaultModel)).toBe("openai")
    expect(inferBackendType(presetFor("claude").defaultModel)).toBe("claude")
    expect(inferBackendType(presetFor("grok").defaultModel)).toBe("grok")
    expect(inferBackendType(presetFor("gemini").defaultModel)).toBe("gemini")
    expect(inferBackendType(presetFor("openrouter").defaultModel)).toBe("openrouter")
    expect(inferBackendType("meta-llama/llama-3.3-70b-instruct")).toBe("openrouter")
    expect(inferBackendType("llama3.2")).toBeNull()
    expect(inferBackendType("o3x")).toBeNull()
  })
})

describe("API keys", () => {
  const key = (backend: BackendConfig, env: Record<string, string> = {}) => resolveApiKey(agent(backend), env)

  test("config api_key wins over the environment", () => {
    expect(key({ type: "openai", api_key: "from-config" }, { OPENAI_API_KEY: "from-env" })).toEqual(Either.right("from-config"))
  })

  test("the preset's variables are tried in order", () => {
    expect(key({ type: "openai" }, { OPENAI_API_KEY: "k1" })).toEqual(Either.right("k1"))
    expect(key({ type: "gemini" }, { GOOGLE_API_KEY: "g" })).toEqual(Either.right("g"))
    // MassGen's order, and the SDK's: GOOGLE_API_KEY first.
    expect(key({ type: "gemini" }, { GEMINI_API_KEY: "second", GOOGLE_API_KEY: "first" })).toEqual(Either.right("first"))
    expect(key({ type: "gemini" }, { GEMINI_API_KEY: "gem" })).toEqual(Either.right("gem"))
  })

  test("a missing key names the variable, the agent and the backend", () => {
    const result = key({ type: "openai" }, { OPENAI_API_KEY: "" })
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left._tag).toBe("MissingKeyError")
      expect(result.left.message).toBe("missing API key: set OPENAI_API_KEY (agent agent_a, backend openai)")
    }
    const gemini = key({ type: "gemini" })
    expect(Either.isLeft(gemini) && gemini.left.message).toBe(
      "missing API key: set GOOGLE_API_KEY or GEMINI_API_KEY (agent agent_a, backend gemini)",
    )
  })

  test("keyless: scripted, local servers, unknown chatcompletion hosts, loopback overrides", () => {
    expect(key({ type: "scripted" })).toEqual(Either.right(null))
    expect(key({ type: "ollama" })).toEqual(Either.right(null))
    expect(key({ type: "chatcompletion", base_url: "https://llm.internal.example/v1" })).toEqual(Either.right(null))
    expect(key({ type: "openai", base_url: "http://127.0.0.1:4000/v1" })).toEqual(Either.right(null))
    expect(key({ type: "openai", base_url: "http://127.0.0.1:4000/v1" }, { OPENAI_API_KEY: "k" })).toEqual(Either.right("k"))
  })

  test("a chatcompletion endpoint on a known host needs that host's key", () => {
    expect(key({ type: "chatcompletion", base_url: "https://api.groq.com/openai/v1" }, { GROQ_API_KEY: "gk" })).toEqual(Either.right("gk"))
    const missing = key({ type: "chatcompletion", base_url: "https://api.groq.com/openai/v1" })
    expect(Either.isLeft(missing) && missing.left.envVars).toEqual(["GROQ_API_KEY"])
  })
})

describe("backend factory", () => {
  test("each family gets its backend, with config over preset defaults", async () => {
    const env = { OPENAI_API_KEY: "a", ANTHROPIC_API_KEY: "b", XAI_API_KEY: "c" }
    const made = (b: BackendConfig) => Effect.runPromise(makeBackend(agent(b), env))
    expect(await made({ type: "openai" })).toMatchObject({ type: "openai", model: "gpt-6-luna", maxRetries: 3, callTimeoutSeconds: 300 })
    expect(await made({ type: "claude", model: "claude-haiku-4-5", max_retries: 1, call_timeout_seconds: 20 })).toMatchObject({
      type: "claude",
      model: "claude-haiku-4-5",
      maxRetries: 1,
      callTimeoutSeconds: 20,
    })
    expect(await made({ type: "grok", model: "grok-3-mini" })).toMatchObject({ type: "grok", model: "grok-3-mini" })
    expect(await made({ type: "claude" })).toMatchObject({ type: "claude", model: "claude-sonnet-5-5" })
    expect(await made({ type: "grok" })).toMatchObject({ type: "grok", model: "grok-4.7" })
    expect(await made({ type: "vllm" })).toMatchObject({ type: "vllm" })
    expect((await made({ type: "scripted", answer: "4" })).type).toBe("scripted")
  })

  test("a missing key is a MissingKeyError, not a backend", async () => {
    const result = await Effect.runPromise(Effect.either(makeBackend(agent({ type: "claude" }, "critic"), {})))
    expect(Either.isLeft(result) && result.left.message).toBe("missing API key: set ANTHROPIC_API_KEY (agent critic, backend claude)")
  })
})
