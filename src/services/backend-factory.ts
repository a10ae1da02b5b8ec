/**
 * Builds the `Backend` of one agent from its config.
 *
 * `makeBackend(agent, env)` gives the scripted backend for `scripted`, and for every
 * other type an SDK backend of its preset's family (`responses`, `chat`,
 * `anthropic`) with the config's `base_url` over the preset's, the config's `model`
 * over the preset's default, and the key from `resolveApiKey`; a key that is
 * needed and missing is a `MissingKeyError`. Nothing is sent until `stream` runs.
 */
import { Either } from "effect"
import type { Agent } from "../domain/config.ts"
import { presetFor } from "../domain/presets.ts"
import type { Backend } from "./backend.ts"
import { makeAnthropicMessagesBackend } from "./backends/anthropic-messages.ts"
import { makeChatCompletionsBackend } from "./backends/chat-completions.ts"
import { type Env, type MissingKeyError, resolveApiKey } from "./backends/keys.ts"
import { makeOpenAiResponsesBackend } from "./backends/openai-responses.ts"
import type { SdkBackendOptions } from "./backends/sdk-stream.ts"
import { makeScriptedBackend } from "./scripted-backend.ts"

const BUILDERS = {
  responses: makeOpenAiResponsesBackend,
  chat: makeChatCompletionsBackend,
  anthropic: makeAnthropicMessagesBackend,
} as const

export const makeBackend = (agent: Agent, env: Env): Either.Either<Backend, MissingKeyError> => {
  const b = agent.backend
  if (b.type === "scripted") return Either.right(makeScriptedBackend(agent))
  const preset = presetFor(b.type)
  return resolveApiKey(agent, env).pipe(
    Either.map((apiKey) => {
      const opts: SdkBackendOptions = {
        type: b.type,
        model: b.model ?? preset.defaultModel,
        // `decodeConfig` rejects a chatcompletion agent without base_url.
        baseURL: b.base_url ?? preset.baseURL ?? "",
        apiKey,
        temperature: b.temperature,
        maxTokens: b.max_tokens,
        maxRetries: b.max_retries,
        callTimeoutSeconds: b.call_timeout_seconds,
      }
      return BUILDERS[preset.family](opts)
    }),
  )
}
