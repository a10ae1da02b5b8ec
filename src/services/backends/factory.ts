/**
 * Builds the `Backend` of one agent from its config.
 *
 * `makeBackend(agent, env)` makes the scripted backend for `scripted`, and for every
 * other type an SDK backend of its preset's family (`responses`, `chat`,
 * `anthropic`, `gemini`: `presetOf`, where `api: chat_completions` puts a gemini agent on
 * Chat Completions and a provider tool a grok agent on Responses) with the config's `base_url` over the preset's, the config's `model`
 * over the preset's default, and the key from `resolveApiKey`; a key that is
 * needed and missing is a `MissingKeyError`. The provider tools and pass-through
 * settings (`enable_web_search`, `reasoning`, `extra_body`, ...) go to the backend as
 * `provider`, each protocol sending them its own way. Nothing is sent until `call` runs.
 * A family's module, and with it its provider's SDK, is imported only when an
 * agent of that family is made: a run of scripted agents loads no SDK.
 * A `claude_code` agent is a CLI agent (`claude-code.ts`), made from its whole config.
 */
import { Effect } from "effect"
import type { Agent } from "../../domain/config/index.ts"
import { type ApiFamily, presetFor, presetOf, thinkingOf } from "../../domain/config/index.ts"
import type { Event } from "../../domain/events/index.ts"
import type { Backend } from "./backend.ts"
import type { GeminiOptions } from "./gemini-request.ts"
import { type Env, type MissingKeyError, resolveApiKey } from "./keys.ts"
import { makeScriptedBackend } from "./scripted.ts"

type Builder = (opts: GeminiOptions) => Backend

/** An `azure_openai` agent's endpoint: `endpoint`, else `base_url`, else AZURE_OPENAI_ENDPOINT; null when none says. */
export const azureEndpoint = (agent: Agent, env: Env): string | null => {
  const fromEnv = env.AZURE_OPENAI_ENDPOINT
  return agent.backend.endpoint ?? agent.backend.base_url ?? (fromEnv !== undefined && fromEnv !== "" ? fromEnv : null)
}

/** The families made from `SdkBackendOptions`; a CLI agent's is made apart (`claudeCodeBackend`). */
type SdkFamily = Exclude<ApiFamily, "claude_code">

const BUILDERS: { readonly [F in SdkFamily]: () => Promise<Builder> } = {
  responses: () => import("./openai-responses.ts").then((m) => m.makeOpenAiResponsesBackend),
  chat: () => import("./chat-completions.ts").then((m) => m.makeChatCompletionsBackend),
  anthropic: () => import("./anthropic-messages.ts").then((m) => m.makeAnthropicMessagesBackend),
  gemini: () => import("./gemini.ts").then((m) => m.makeGeminiBackend),
}

/** A `claude_code` agent's backend (`claude-code.ts`); its key, when it has one, from `api_key` or the environment. */
const claudeCodeBackend = async (agent: Agent, env: Env): Promise<Backend> => {
  const [{ makeClaudeCodeBackend }, { findClaudeExecutable }] = await Promise.all([
    import("./claude-code.ts"),
    import("./claude-code-env.ts"),
  ])
  const b = agent.backend
  const apiKey = b.api_key ?? env.ANTHROPIC_API_KEY
  return makeClaudeCodeBackend({
    agentId: agent.id,
    anonId: agent.anonId,
    model: b.model ?? presetFor("claude_code").defaultModel,
    config: b,
    env,
    // None: the CLI uses its own login (CLAUDE_CODE_OAUTH_TOKEN reaches it as itself, `cliEnv`).
    apiKey: apiKey === undefined || apiKey === "" ? null : apiKey,
    executable: findClaudeExecutable(b.path_to_claude_code_executable, env),
    cwd: null,
    sdk: () => import("@anthropic-ai/claude-agent-sdk"),
  })
}

/** `history`: a resumed run's events, where a scripted backend takes up its script. */
export const makeBackend = (agent: Agent, env: Env, history: ReadonlyArray<Event> = []): Effect.Effect<Backend, MissingKeyError> => {
  const b = agent.backend
  if (b.type === "scripted") return Effect.succeed(makeScriptedBackend(agent, history))
  if (b.type === "claude_code") return Effect.promise(() => claudeCodeBackend(agent, env))
  const preset = presetOf({ ...b, type: b.type })
  return Effect.flatMap(resolveApiKey(agent, env), (apiKey) => {
    const opts: GeminiOptions = {
      type: b.type,
      model: b.model ?? preset.defaultModel,
      // `decodeConfig` rejects a chatcompletion agent without base_url; `missingKeys` an azure_openai agent without an endpoint.
      baseURL: b.type === "azure_openai" ? (azureEndpoint(agent, env) ?? "") : (b.base_url ?? preset.baseURL ?? ""),
      ...(b.type === "azure_openai" ? { apiVersion: b.api_version ?? env.AZURE_OPENAI_API_VERSION } : {}),
      apiKey,
      temperature: b.temperature,
      maxTokens: b.max_tokens,
      maxRetries: b.max_retries,
      callTimeoutSeconds: b.call_timeout_seconds,
      maxReplyBytes: b.max_reply_bytes,
      provider: {
        webSearch: b.enable_web_search,
        codeExecution: b.enable_code_interpreter === true || b.enable_code_execution === true,
        reasoningEffort: b.reasoning?.effort,
        reasoningSummary: b.reasoning?.summary,
        verbosity: b.text?.verbosity,
        topP: b.top_p,
        extraBody: b.extra_body,
      },
      ...(preset.family === "gemini"
        ? {
            thinking: thinkingOf({ ...b, model: b.model ?? preset.defaultModel }),
            functionCallingMode: b.function_calling_mode?.toUpperCase() as "AUTO" | undefined,
          }
        : {}),
    }
    return Effect.map(Effect.promise(BUILDERS[preset.family as SdkFamily]), (build) => build(opts))
  })
}
