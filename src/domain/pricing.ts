/**
 * Token prices and what a call cost.
 *
 * `BUILTIN_PRICES` holds list prices in USD per million tokens for the preset
 * models (as published by the providers in late 2025; cached input defaults to the
 * input rate where a provider lists none). `priceFor(model, overrides)` looks in the
 * config's `pricing:` entries merged over the built-in table: the exact name, then
 * the longest key followed only by a date or version (so `gpt-4o-2024-08-06`
 * finds `gpt-4o`, but `o1-mini` never finds `o1`), then the same for the name
 * without a `vendor/` prefix (OpenRouter names). Unknown models have no price
 * (null), never a price of 0. `costOf(usage, price)` bills cached input at the
 * cached rate, the rest of the input at the input rate, and all output (reasoning
 * included) at the output rate. Pure.
 */
import type { Price } from "./config.ts"
import type { TokenUsage } from "./llm.ts"

const p = (input: number, cached_input: number, output: number): Price => ({ input, cached_input, output })

export const BUILTIN_PRICES: Readonly<Record<string, Price>> = {
  // OpenAI
  "gpt-5": p(1.25, 0.125, 10),
  "gpt-5-mini": p(0.25, 0.025, 2),
  "gpt-5-nano": p(0.05, 0.005, 0.4),
  "gpt-5-pro": p(15, 15, 120),
  "gpt-4.1": p(2, 0.5, 8),
  "gpt-4.1-mini": p(0.4, 0.1, 1.6),
  "gpt-4.1-nano": p(0.1, 0.025, 0.4),
  "gpt-4o": p(2.5, 1.25, 10),
  "gpt-4o-mini": p(0.15, 0.075, 0.6),
  o1: p(15, 7.5, 60),
  o3: p(2, 0.5, 8),
  "o3-pro": p(20, 20, 80),
  "o3-mini": p(1.1, 0.55, 4.4),
  "o4-mini": p(1.1, 0.275, 4.4),
  // Anthropic (cached = cache read)
  "claude-opus-4-1": p(15, 1.5, 75),
  "claude-opus-4": p(15, 1.5, 75),
  "claude-opus-4-5": p(5, 0.5, 25),
  "claude-sonnet-4-5": p(3, 0.3, 15),
  // Every Sonnet so far has had this list price; the SDK marks claude-sonnet-4-5 deprecated.
  "claude-sonnet-4-6": p(3, 0.3, 15),
  "claude-sonnet-4": p(3, 0.3, 15),
  "claude-3-7-sonnet": p(3, 0.3, 15),
  "claude-haiku-4-5": p(1, 0.1, 5),
  "claude-3-5-haiku": p(0.8, 0.08, 4),
  // xAI
  "grok-4": p(3, 0.75, 15),
  "grok-4-fast": p(0.2, 0.05, 0.5),
  "grok-3": p(3, 0.75, 15),
  "grok-3-mini": p(0.3, 0.075, 0.5),
  "grok-code-fast-1": p(0.2, 0.02, 1.5),
  // Google (prompts up to 200k tokens)
  "gemini-2.5-pro": p(1.25, 0.125, 10),
  "gemini-2.5-flash": p(0.3, 0.03, 2.5),
  "gemini-2.5-flash-lite": p(0.1, 0.01, 0.4),
  "gemini-2.0-flash": p(0.1, 0.025, 0.4),
  // Groq
  "llama-3.3-70b-versatile": p(0.59, 0.59, 0.79),
  "llama-3.1-8b-instant": p(0.05, 0.05, 0.08),
  "openai/gpt-oss-120b": p(0.15, 0.15, 0.75),
  "openai/gpt-oss-20b": p(0.1, 0.1, 0.5),
  "qwen/qwen3-32b": p(0.29, 0.29, 0.59),
  "moonshotai/kimi-k2-instruct": p(1, 1, 3),
  // Together
  "meta-llama/Llama-3.3-70B-Instruct-Turbo": p(0.88, 0.88, 0.88),
  "deepseek-ai/DeepSeek-V3": p(1.25, 1.25, 1.25),
  "Qwen/Qwen2.5-72B-Instruct-Turbo": p(1.2, 1.2, 1.2),
  // Cerebras
  "llama-3.3-70b": p(0.85, 0.85, 1.2),
  "llama3.1-8b": p(0.1, 0.1, 0.1),
  "gpt-oss-120b": p(0.35, 0.35, 0.75),
  "qwen-3-32b": p(0.4, 0.4, 0.8),
  // Fireworks
  "accounts/fireworks/models/llama-v3p3-70b-instruct": p(0.9, 0.9, 0.9),
  "accounts/fireworks/models/deepseek-v3": p(0.9, 0.9, 0.9),
  "accounts/fireworks/models/gpt-oss-120b": p(0.15, 0.15, 0.6),
  // OpenRouter names other than `vendor/<a model above>`
  "anthropic/claude-sonnet-4.5": p(3, 0.3, 15),
  "anthropic/claude-opus-4.1": p(15, 1.5, 75),
  "anthropic/claude-haiku-4.5": p(1, 0.1, 5),
}

/**
 * What may follow a priced name and still be that model: a date or version
 * (`-2024-08-06`, `-20250929`, `@001`, `:latest`, `-preview-05-20`), never
 * another word (`o1-mini` is not `o1`: an unknown model costs null, not a guess).
 */
const VERSION_SUFFIX = /^[-@:.](\d{4}-?\d{2}-?\d{2}|\d{2,4}|\d{3}|latest|v?\d+(\.\d+)*|(preview|exp)(-\d{2}-\d{2}|-\d{4})?)$/

const lookup = (model: string, table: Readonly<Record<string, Price>>): Price | null => {
  const exact = table[model]
  if (exact !== undefined) return exact
  let best: string | null = null
  for (const key of Object.keys(table)) {
    if (model.startsWith(key) && VERSION_SUFFIX.test(model.slice(key.length)) && (best === null || key.length > best.length)) best = key
  }
  return best === null ? null : (table[best] ?? null)
}

/** The price of `model`, config `pricing:` entries first; null when unknown. */
export const priceFor = (model: string, overrides: Readonly<Record<string, Price>> = {}): Price | null => {
  const table = { ...BUILTIN_PRICES, ...overrides }
  const direct = lookup(model, table)
  if (direct !== null) return direct
  const slash = model.indexOf("/")
  return slash === -1 ? null : lookup(model.slice(slash + 1), table)
}

/** USD for one call's usage at `price`; missing counts are taken as 0. */
export const costOf = (usage: TokenUsage, price: Price): number => {
  const input = usage.inputTokens ?? 0
  const cached = Math.min(usage.cachedInputTokens ?? 0, input)
  const output = usage.outputTokens ?? 0
  return ((input - cached) * price.input + cached * (price.cached_input ?? price.input) + output * price.output) / 1_000_000
}
