/**
 * What each backend type talks to: API family, default base URL, key variables, default model.
 *
 * `presetFor(type)` gives the preset of every non-scripted type in `BACKEND_TYPES`;
 * `base_url` in the config overrides `baseURL`. `keyEnvForBaseUrl(url)` names the
 * key variable a `chatcompletion` endpoint needs, judged by its host as MassGen
 * does; an unknown or local host needs none (set `api_key` to send one).
 * `inferBackendType(model)` picks a type from a model name for the quick start.
 * Pure data and functions.
 *
 * `presetOf(backend)` is the preset an agent's backend uses: `type: gemini` speaks
 * Gemini's own API unless `api: chat_completions` asks for its OpenAI-compatible endpoint;
 * `type: grok` speaks xAI's Responses endpoint when it turns on a provider tool.
 *
 * Words: the *family* is the wire protocol (`responses`, `chat`, `anthropic`, `gemini`);
 * a *keyless* preset sends no real key (local servers).
 */

export type ApiFamily =
  | "responses"
  | "chat"
  | "anthropic"
  | "gemini"
  /** A CLI agent (`cli-agents.ts`): a program of its own, run as a child process. */
  | "claude_code"

export interface Preset {
  readonly family: ApiFamily
  /** Null for `chatcompletion`, whose config must give `base_url`, and `azure_openai` (its endpoint). */
  readonly baseURL: string | null
  /** Variables tried in order; empty when keyless (or judged from the host, for `chatcompletion`). */
  readonly keyEnv: ReadonlyArray<string>
  readonly keyless: boolean
  /** Used when the config names no model. */
  readonly defaultModel: string
}

/** Backend types the config accepts; each is built by `services/backends/factory.ts`. */
export const BACKEND_TYPES = [
  "scripted",
  "openai",
  "chatcompletion",
  "claude",
  "grok",
  "groq",
  "together",
  "openrouter",
  "cerebras",
  "fireworks",
  "gemini",
  "ollama",
  "lmstudio",
  "vllm",
  "sglang",
  "azure_openai",
  "zai",
  "claude_code",
] as const
export type BackendType = (typeof BACKEND_TYPES)[number]

export type SdkBackendType = Exclude<BackendType, "scripted">

const cloud = (family: ApiFamily, baseURL: string, keyEnv: ReadonlyArray<string>, defaultModel: string): Preset => ({
  family,
  baseURL,
  keyEnv,
  keyless: false,
  defaultModel,
})
const local = (baseURL: string, defaultModel: string): Preset => ({ family: "chat", baseURL, keyEnv: [], keyless: true, defaultModel })

export const PRESETS: Readonly<Record<SdkBackendType, Preset>> = {
  openai: cloud("responses", "https://api.openai.com/v1", ["OPENAI_API_KEY"], "gpt-6-luna"),
  chatcompletion: { family: "chat", baseURL: null, keyEnv: [], keyless: false, defaultModel: "default" },
  claude: cloud("anthropic", "https://api.anthropic.com", ["ANTHROPIC_API_KEY"], "claude-sonnet-5-5"),
  grok: cloud("chat", "https://api.x.ai/v1", ["XAI_API_KEY"], "grok-4.7"),
  groq: cloud("chat", "https://api.groq.com/openai/v1", ["GROQ_API_KEY"], "openai/gpt-oss-120b"),
  together: cloud("chat", "https://api.together.xyz/v1", ["TOGETHER_API_KEY"], "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
  openrouter: cloud("chat", "https://openrouter.ai/api/v1", ["OPENROUTER_API_KEY"], "google/gemini-3.8-flash"),
  cerebras: cloud("chat", "https://api.cerebras.ai/v1", ["CEREBRAS_API_KEY"], "gpt-oss-120b"),
  fireworks: cloud(
    "chat",
    "https://api.fireworks.ai/inference/v1",
    ["FIREWORKS_API_KEY"],
    "accounts/fireworks/models/llama-v3p3-70b-instruct",
  ),
  // MassGen reads GOOGLE_API_KEY first, as Google's SDKs do.
  gemini: cloud("gemini", "https://generativelanguage.googleapis.com", ["GOOGLE_API_KEY", "GEMINI_API_KEY"], "gemini-3.8-flash"),
  ollama: local("http://localhost:11434/v1", "llama3.2"),
  lmstudio: local("http://localhost:1234/v1", "default"),
  vllm: local("http://localhost:8000/v1", "default"),
  sglang: local("http://localhost:30000/v1", "default"),
  // Azure's URL is the resource's endpoint (`endpoint`, `base_url` or AZURE_OPENAI_ENDPOINT); the model names the deployment.
  azure_openai: { family: "chat", baseURL: null, keyEnv: ["AZURE_OPENAI_API_KEY"], keyless: false, defaultModel: "gpt-4.1" },
  zai: cloud("chat", "https://api.z.ai/api/paas/v4", ["ZAI_API_KEY"], "glm-4.5"),
  // Keyless: without a key the CLI uses its own login. Its key (`api_key`, else ANTHROPIC_API_KEY) is the factory's to find.
  claude_code: {
    family: "claude_code",
    baseURL: "https://api.anthropic.com",
    keyEnv: [],
    keyless: true,
    defaultModel: "claude-sonnet-5-5",
  },
}

/** The API version an `azure_openai` agent asks for when neither `api_version` nor AZURE_OPENAI_API_VERSION says. */
export const AZURE_API_VERSION = "2024-10-21"

export const presetFor = (type: SdkBackendType): Preset => PRESETS[type]

/** Gemini's OpenAI-compatible endpoint, for `type: gemini` with `api: chat_completions`. */
export const GEMINI_OPENAI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"

/** The values of `api`: which of its provider's wire protocols a backend speaks (only `type: gemini` has a choice). */
export const GEMINI_APIS = ["native", "chat_completions"] as const

/** What of an agent's backend chooses its wire protocol beside its type. */
export interface ProtocolKeys {
  readonly type: SdkBackendType
  readonly api?: string | undefined
  readonly enable_web_search?: boolean | undefined
  readonly enable_code_execution?: boolean | undefined
  readonly enable_code_interpreter?: boolean | undefined
}

/**
 * The preset an agent's backend uses: its type's, but Chat for a gemini agent that asks for the
 * OpenAI-compatible endpoint, and Responses (at the same URL) for a grok agent that turns on a
 * provider tool: xAI serves web search and code execution on its Responses endpoint only.
 */
export const presetOf = (backend: ProtocolKeys): Preset => {
  if (backend.type === "gemini" && backend.api === "chat_completions")
    return { ...PRESETS.gemini, family: "chat", baseURL: GEMINI_OPENAI_BASE_URL }
  const tools = backend.enable_web_search === true || backend.enable_code_execution === true || backend.enable_code_interpreter === true
  if (backend.type === "grok" && tools) return { ...PRESETS.grok, family: "responses" }
  return PRESETS[backend.type]
}

/** Host suffix → key variables, for `chatcompletion` endpoints (MassGen's list, for the providers we know). */
const HOST_KEYS: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
  ["api.openai.com", ["OPENAI_API_KEY"]],
  ["api.x.ai", ["XAI_API_KEY"]],
  ["groq.com", ["GROQ_API_KEY"]],
  ["together.xyz", ["TOGETHER_API_KEY"]],
  ["together.ai", ["TOGETHER_API_KEY"]],
  ["openrouter.ai", ["OPENROUTER_API_KEY"]],
  ["cerebras.ai", ["CEREBRAS_API_KEY"]],
  ["fireworks.ai", ["FIREWORKS_API_KEY"]],
  ["generativelanguage.googleapis.com", ["GOOGLE_API_KEY", "GEMINI_API_KEY"]],
  ["nebius.com", ["NEBIUS_API_KEY"]],
  ["moonshot.ai", ["MOONSHOT_API_KEY", "KIMI_API_KEY"]],
  ["moonshot.cn", ["MOONSHOT_API_KEY", "KIMI_API_KEY"]],
  ["bigmodel.cn", ["ZAI_API_KEY"]],
  ["z.ai", ["ZAI_API_KEY"]],
  ["nvidia.com", ["NGC_API_KEY"]],
  ["poe.com", ["POE_API_KEY"]],
  ["aliyuncs.com", ["QWEN_API_KEY"]],
]

/** Key variables a `chatcompletion` base URL needs; empty for an unknown or unparsable host. */
export const keyEnvForBaseUrl = (baseURL: string): ReadonlyArray<string> => {
  let host: string
  try {
    host = new URL(baseURL).hostname.toLowerCase()
  } catch {
    return []
  }
  const found = HOST_KEYS.find(([suffix]) => host === suffix || host.endsWith(`.${suffix}`))
  return found === undefined ? [] : found[1]
}

/**
 * The backend type for a bare model name: `gpt-*`, `o1`/`o3`/`o4*`, `chatgpt-*` → openai,
 * `claude-*` → claude, `grok-*` → grok, `gemini-*` → gemini, a `vendor/model` name → openrouter;
 * null when nothing fits (the user must then name the backend).
 */
export const inferBackendType = (model: string): SdkBackendType | null => {
  const m = model.trim().toLowerCase()
  if (/^(gpt-|chatgpt-|o[134](-|$))/.test(m)) return "openai"
  if (m.startsWith("claude-")) return "claude"
  if (m.startsWith("grok-")) return "grok"
  if (m.startsWith("gemini-")) return "gemini"
  if (/^[a-z0-9._-]+\/[a-z0-9._:-]+$/.test(m)) return "openrouter"
  return null
}
