/**
 * The config keys of a `type: gemini` backend, MassGen's names, and their checks.
 *
 * `GeminiFields` (in `file.ts`'s backend schema): `api` (`native`, the default, speaks
 * Gemini's own `generateContent` API; `chat_completions` its OpenAI-compatible
 * endpoint), the thinking settings (`thinking_config: {include_thoughts,
 * thinking_budget, thinking_level}`, `thinking` as MassGen's alias of it or `true`,
 * `include_thoughts` alone) and `function_calling_mode` (`AUTO`, `ANY`, `NONE`, any case).
 * `geminiProblems(agent, i)` refuses them on another type, and the thinking keys on the
 * OpenAI-compatible path, which has no place for them. `thinkingOf(backend)` is the
 * thinking a native call asks for: MassGen's, with thoughts included by default for
 * the models that think (Gemini 2.5 and later). Pure.
 */
import { Schema } from "effect"
import { GEMINI_APIS } from "./presets.ts"
import type { ConfigProblem } from "./schema.ts"
import { found, oneOf, opt } from "./schema.ts"

const ThinkingConfig = Schema.Struct({
  include_thoughts: opt(Schema.Boolean),
  /** Tokens the model may think with: -1 lets it choose, 0 turns thinking off (on the models that allow it). */
  thinking_budget: opt(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(-1, { message: (issue) => `Expected a whole number of -1 or more${found(issue)}` })),
  ),
  thinking_level: opt(oneOf("minimal", "low", "medium", "high")),
}).annotations({ identifier: "a thinking_config mapping {include_thoughts, thinking_budget, thinking_level}" })
export type ThinkingConfig = typeof ThinkingConfig.Type

const FUNCTION_CALLING_MODES = ["AUTO", "ANY", "NONE"] as const

export const GeminiFields = {
  api: opt(oneOf(...GEMINI_APIS)),
  thinking_config: opt(ThinkingConfig),
  thinking: opt(Schema.Union(Schema.Boolean, ThinkingConfig)),
  include_thoughts: opt(Schema.Boolean),
  function_calling_mode: opt(
    Schema.String.pipe(
      Schema.filter((mode) =>
        (FUNCTION_CALLING_MODES as ReadonlyArray<string>).includes(mode.toUpperCase())
          ? true
          : `Expected one of ${FUNCTION_CALLING_MODES.join(", ")}, found ${JSON.stringify(mode)}`,
      ),
    ),
  ),
}

interface GeminiKeys {
  readonly type: string
  readonly model?: string | undefined
  readonly api?: string | undefined
  readonly thinking_config?: ThinkingConfig | undefined
  readonly thinking?: boolean | ThinkingConfig | undefined
  readonly include_thoughts?: boolean | undefined
  readonly function_calling_mode?: string | undefined
}

const THINKING_KEYS = ["thinking_config", "thinking", "include_thoughts"] as const

/** The gemini keys of an agent its type or protocol cannot honour. */
export const geminiProblems = (b: GeminiKeys, agentId: string, i: number): ReadonlyArray<ConfigProblem> => {
  const at = (key: string) => `agents[${i}].backend.${key}`
  const set = (["api", ...THINKING_KEYS, "function_calling_mode"] as const).filter((k) => b[k] !== undefined)
  if (b.type !== "gemini" && b.type !== "scripted") {
    return set.map((key) => ({ path: at(key), message: `agent ${agentId}: ${key} applies to type gemini only, found type ${b.type}` }))
  }
  if (b.api !== "chat_completions") return []
  return set
    .filter((k) => k !== "api")
    .map((key) => ({
      path: at(key),
      message: `agent ${agentId}: ${key} needs Gemini's own API, and api: chat_completions speaks its OpenAI-compatible one: remove one of them`,
    }))
}

/** The models that think, for which MassGen asks for their thoughts unless the config says otherwise. */
const THINKING_MODEL = /gemini-(2\.5|[3-9]|exp|2\.0-flash-thinking)/i

/** What a native call's `thinkingConfig` holds; null to send none. */
export const thinkingOf = (b: GeminiKeys): ThinkingConfig | null => {
  const given = b.thinking_config ?? (typeof b.thinking === "object" ? b.thinking : undefined)
  if (given !== undefined) return given
  if (b.include_thoughts !== undefined) return b.include_thoughts ? { include_thoughts: true } : null
  if (b.thinking === true) return { include_thoughts: true }
  if (b.thinking === false) return null
  return THINKING_MODEL.test(b.model ?? "") ? { include_thoughts: true } : null
}
