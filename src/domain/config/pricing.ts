/**
 * Token prices and what a call cost.
 *
 * `BUILTIN_PRICES` holds list prices in USD per million tokens for the preset
 * models and their siblings (checked against the providers' pages on 2026-11-29;
 * cached input is the input rate where a provider lists none; a model priced by
 * prompt length has its short-prompt rate; retired models keep their last price).
 * `priceFor(model, overrides)` looks in the config's `pricing:` entries merged
 * over the built-in table: the exact name, then the longest key followed only by
 * a date or version (so `gpt-4o-2024-08-06` finds `gpt-4o`, but `o1-mini` never
 * finds `o1`), then the same for the name without a `vendor/` prefix (OpenRouter
 * names). Unknown models have no price (null), never a price of 0.
 * `costOf(usage, price)` bills cached input at the cached rate, the rest of the
 * input at the input rate, and all output (reasoning included) at the output
 * rate. Pure.
 */

import type { TokenUsage } from "../llm.ts"
import type { Price } from "./file.ts"

const p = (input: number, cached_input: number, output: number): Price => ({ input, cached_input, output })

export const BUILTIN_PRICES: Readonly<Record<string, Price>> = {
  // OpenAI (developers.openai.com). GPT-6 rates are for prompts up to 272K input tokens.
  "gpt-6.2-astra": p(8, 0.4, 40),
  "gpt-6.2-sol": p(2, 0.1, 10),
  "gpt-6.1-sol": p(2, 0.1, 10),
  "gpt-6.1-terra": p(1, 0.05, 5),
  "gpt-6-astra": p(10, 1, 50),
  "gpt-6-sol": p(2, 0.2, 10),
  "gpt-6-luna": p(0.1, 0.01, 0.5),
  // GPT-5.x point releases, so that `gpt-5.5` does not find `gpt-5` as a version of it.
  "gpt-5.5": p(5, 0.5, 30),
  "gpt-5.4": p(2.5, 0.25, 15),
  "gpt-5.2": p(1.75, 0.175, 14),
  "gpt-5.1": p(1.25, 0.125, 10),
  // Shut down on 2026-12-11 (gpt-5, -mini, -nano, -pro, o3, o3-pro), on 2027-01-14 (gpt-4o, gpt-4o-mini, gpt-4.1, gpt-4.1-mini)
  // or already (o1, o3-mini, o4-mini, gpt-4.1-nano).
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
  // Anthropic (platform.claude.com; cached = cache read)
  "claude-fable-5-2": p(8, 0.2, 40),
  "claude-fable-5-1": p(10, 0.25, 50),
  "claude-fable-5": p(10, 1, 50),
  "claude-opus-5-5": p(4, 0.2, 20),
  "claude-opus-5": p(5, 0.5, 25),
  "claude-opus-4-8": p(5, 0.5, 25),
  "claude-opus-4-7": p(5, 0.5, 25),
  "claude-opus-4-6": p(5, 0.5, 25),
  "claude-opus-4-5": p(5, 0.5, 25),
  "claude-opus-4-1": p(15, 1.5, 75),
  "claude-opus-4": p(15, 1.5, 75),
  // Cache read cut from $0.20 to $0.10 on 2026-10-07.
  "claude-sonnet-5-5": p(2, 0.1, 10),
  "claude-sonnet-5": p(2, 0.2, 10),
  "claude-sonnet-4-6": p(3, 0.3, 15),
  "claude-sonnet-4-5": p(3, 0.3, 15),
  "claude-sonnet-4": p(3, 0.3, 15),
  "claude-3-7-sonnet": p(3, 0.3, 15),
  // Prompts up to 100k tokens; longer prompts bill $0.50 / $0.05 / $2.50 on every token of the request.
  "claude-haiku-5-5": p(0.1, 0.01, 0.5),
  "claude-haiku-4-5": p(1, 0.1, 5),
  "claude-3-5-haiku": p(0.8, 0.08, 4),
  // xAI (docs.x.ai). Grok 4.5+ rates are for prompts under 200K tokens; grok-4.3 lists no cached rate.
  "grok-4.7": p(2, 0.5, 6),
  "grok-4.6": p(2, 0.5, 6),
  "grok-4.5": p(2, 0.5, 6),
  "grok-4.3": p(1.25, 1.25, 2.5),
  "grok-3-mini": p(0.3, 0.075, 0.5),
  // Retired on 2026-05-15.
  "grok-4": p(3, 0.75, 15),
  "grok-4-fast": p(0.2, 0.05, 0.5),
  "grok-3": p(3, 0.75, 15),
  "grok-code-fast-1": p(0.2, 0.02, 1.5),
  // Google (ai.google.dev; Pro prompts up to 200k tokens). Gemini 3.8 Flash: the rate through 2026-12-31;
  // Google lists $1.50 input / $7.50 output from 2027-01-01.
  "gemini-4-hydrogen": p(1.5, 0.075, 7.5),
  "gemini-3.8-flash": p(0.75, 0.075, 3.75),
  "gemini-3.5-flash-lite": p(0.3, 0.03, 2.5),
  "gemini-2.5-pro": p(1.25, 0.125, 10),
  "gemini-2.5-flash": p(0.3, 0.03, 2.5),
  "gemini-2.5-flash-lite": p(0.1, 0.01, 0.4),
  "gemini-2.0-flash": p(0.1, 0.025, 0.4),
  // Groq (also Together's and OpenRouter's name for GPT OSS 120B). Llama models shut down on Groq on 2026-08-16.
  "openai/gpt-oss-120b": p(0.15, 0.075, 0.6),
  "openai/gpt-oss-20b": p(0.1, 0.1, 0.5),
  "qwen/qwen3.6-27b": p(0.6, 0.6, 3),
  "llama-3.3-70b-versatile": p(0.59, 0.59, 0.79),
  "llama-3.1-8b-instant": p(0.05, 0.05, 0.08),
  "qwen/qwen3-32b": p(0.29, 0.29, 0.59),
  "moonshotai/kimi-k2-instruct": p(1, 1, 3),
  // Together
  "meta-llama/Llama-3.3-70B-Instruct-Turbo": p(0.88, 0.88, 0.88),
  "deepseek-ai/DeepSeek-V3": p(1.25, 1.25, 1.25),
  "Qwen/Qwen2.5-72B-Instruct-Turbo": p(1.2, 1.2, 1.2),
  // Cerebras (llama-3.3-70b, qwen-3-32b and llama3.1-8b are retired there)
  "gpt-oss-120b": p(0.35, 0.35, 0.75),
  "llama-3.3-70b": p(0.85, 0.85, 1.2),
  "llama3.1-8b": p(0.1, 0.1, 0.1),
  "qwen-3-32b": p(0.4, 0.4, 0.8),
  // Fireworks (docs.fireworks.ai serverless pricing)
  "accounts/fireworks/models/gpt-oss-120b": p(0.15, 0.015, 0.6),
  "accounts/fireworks/models/gpt-oss-20b": p(0.07, 0.035, 0.3),
  "accounts/fireworks/models/deepseek-v3": p(0.56, 0.28, 1.68),
  "accounts/fireworks/models/deepseek-v3p1": p(0.56, 0.28, 1.68),
  "accounts/fireworks/models/deepseek-v3p2": p(0.56, 0.28, 1.68),
  "accounts/fireworks/models/llama-v3p3-70b-instruct": p(0.9, 0.9, 0.9),
  // OpenRouter names other than `vendor/<a model above>` (a dotted version would find the older model's price)
  "anthropic/claude-fable-5.2": p(8, 0.2, 40),
  "anthropic/claude-opus-5.5": p(4, 0.2, 20),
  "anthropic/claude-sonnet-5.5": p(2, 0.1, 10),
  "anthropic/claude-haiku-5.5": p(0.1, 0.01, 0.5),
  "anthropic/claude-sonnet-4.5": p(3, 0.3, 15),
  "anthropic/claude-opus-4.1": p(15, 1.5, 75),
  "anthropic/claude-haiku-4.5": p(1, 0.1, 5),
}

/**
 * What may follow a priced name and still be that model: a date or version
 * (`-2024-08-06`, `-20250929`, `@001`, `-0613`, `:latest`, `-v2`, `-preview-05-20`),
 * never another word (`o1-mini` is not `o1`) nor a bare minor version, which
 * names a newer model (`claude-opus-5-6` is not `claude-opus-5`, `grok-4.8` not
 * `grok-4`): an unknown model costs null, not a guess.
 */
const VERSION_SUFFIX = /^[-@:.](\d{4}-?\d{2}-?\d{2}|\d{3,4}|latest|v\d+(\.\d+)*|(preview|exp)(-\d{2}-\d{2}|-\d{4})?)$/

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
