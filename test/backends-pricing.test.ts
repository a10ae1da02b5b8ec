import { describe, expect, test } from "bun:test"
import { PRESETS } from "../src/domain/config/presets.ts"
import { BUILTIN_PRICES, costOf, priceFor } from "../src/domain/config/pricing.ts"

describe("pricing", () => {
  test("exact names, then the longest prefix ending at a separator", () => {
    expect(priceFor("gpt-4o")).toEqual({ input: 2.5, cached_input: 1.25, output: 10 })
    expect(priceFor("gpt-4o-mini-2024-07-18")).toEqual(BUILTIN_PRICES["gpt-4o-mini"] ?? null)
    expect(priceFor("claude-sonnet-4-5-20250929")).toEqual(BUILTIN_PRICES["claude-sonnet-4-5"] ?? null)
    expect(priceFor("o3-mini-2025-01-31")).toEqual(BUILTIN_PRICES["o3-mini"] ?? null)
    expect(priceFor("o3-pro")).toEqual(BUILTIN_PRICES["o3-pro"] ?? null)
    expect(priceFor("gpt-4")).toBeNull()
    expect(priceFor("gpt-4o2")).toBeNull()
    // A bare minor version is a newer model, not a snapshot of the priced one.
    expect(priceFor("claude-opus-5-6")).toBeNull()
    expect(priceFor("grok-4.8")).toBeNull()
    expect(priceFor("gemini-2.0-flash-001")).toEqual(BUILTIN_PRICES["gemini-2.0-flash"] ?? null)
  })

  test("OpenRouter-style vendor/ names fall back to the bare model", () => {
    expect(priceFor("openai/gpt-5-mini")).toEqual(BUILTIN_PRICES["gpt-5-mini"] ?? null)
    expect(priceFor("anthropic/claude-sonnet-4.5")).toEqual({ input: 3, cached_input: 0.3, output: 15 })
  })

  test("unknown models have no price, not a zero price", () => {
    expect(priceFor("my-local-model")).toBeNull()
    expect(priceFor("default")).toBeNull()
  })

  test("config pricing overrides and extends the table", () => {
    const overrides = { "gpt-4o": { input: 1, output: 2 }, "my-local-model": { input: 0, output: 0 } }
    expect(priceFor("gpt-4o", overrides)).toEqual({ input: 1, output: 2 })
    expect(priceFor("my-local-model", overrides)).toEqual({ input: 0, output: 0 })
    expect(priceFor("gpt-4o-mini", overrides)).toEqual(BUILTIN_PRICES["gpt-4o-mini"] ?? null)
  })

  test("the default model of every cloud preset has a price", () => {
    for (const [type, preset] of Object.entries(PRESETS)) {
      // zai (issue 13): its price was not checked against Z.ai's pages; give glm models a pricing: entry.
      if (preset.keyless || type === "chatcompletion" || type === "zai") continue
      expect({ type, price: priceFor(preset.defaultModel) !== null }).toEqual({ type, price: true })
    }
    // Only the local servers, chatcompletion (whose model is whatever the server serves) and zai go unpriced.
    const unpriced = Object.entries(PRESETS)
      .filter(([, preset]) => priceFor(preset.defaultModel) === null)
      .map(([type]) => type)
    expect(unpriced.sort()).toEqual(["chatcompletion", "lmstudio", "ollama", "sglang", "vllm", "zai"])
  })

  test("costOf: cached input at the cached rate, the rest at the input rate, all output at the output rate", () => {
    const price = { input: 2, cached_input: 0.5, output: 8 }
    const usage = { inputTokens: 1_000_000, cachedInputTokens: 400_000, outputTokens: 250_000, reasoningTokens: 100_000 }
    expect(costOf(usage, price)).toBeCloseTo(0.6 * 2 + 0.4 * 0.5 + 0.25 * 8, 10)
    expect(costOf(usage, { input: 2, output: 8 })).toBeCloseTo(2 + 2, 10)
    expect(costOf({ inputTokens: null, cachedInputTokens: null, outputTokens: null, reasoningTokens: null }, price)).toBe(0)
  })
})

describe("the price table as checked on 2026-11-29", () => {
  test("current models have the providers' list prices", () => {
    expect(priceFor("claude-sonnet-5-5")).toEqual({ input: 2, cached_input: 0.1, output: 10 })
    expect(priceFor("claude-opus-5-5")).toEqual({ input: 4, cached_input: 0.2, output: 20 })
    expect(priceFor("claude-fable-5-1")).toEqual({ input: 10, cached_input: 0.25, output: 50 })
    expect(priceFor("claude-fable-5-2")).toEqual({ input: 8, cached_input: 0.2, output: 40 })
    // Haiku 5.5 is priced by prompt length; the table holds the band up to 100k tokens.
    expect(priceFor("claude-haiku-5-5")).toEqual({ input: 0.1, cached_input: 0.01, output: 0.5 })
    expect(priceFor("gpt-6-luna")).toEqual({ input: 0.1, cached_input: 0.01, output: 0.5 })
    expect(priceFor("gpt-6.2-sol")).toEqual({ input: 2, cached_input: 0.1, output: 10 })
    expect(priceFor("gpt-6-sol")).toEqual({ input: 2, cached_input: 0.2, output: 10 })
    expect(priceFor("grok-4.7")).toEqual({ input: 2, cached_input: 0.5, output: 6 })
    expect(priceFor("gemini-3.8-flash")).toEqual({ input: 0.75, cached_input: 0.075, output: 3.75 })
    expect(priceFor("openai/gpt-oss-120b")).toEqual({ input: 0.15, cached_input: 0.075, output: 0.6 })
    expect(priceFor("accounts/fireworks/models/gpt-oss-120b")).toEqual({ input: 0.15, cached_input: 0.015, output: 0.6 })
  })

  test("legacy models keep their prices", () => {
    expect(priceFor("claude-sonnet-5")).toEqual({ input: 2, cached_input: 0.2, output: 10 })
    expect(priceFor("claude-opus-5")).toEqual({ input: 5, cached_input: 0.5, output: 25 })
    for (const m of ["claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6"])
      expect(priceFor(m)).toEqual({ input: 5, cached_input: 0.5, output: 25 })
    expect(priceFor("claude-sonnet-4-6")).toEqual({ input: 3, cached_input: 0.3, output: 15 })
    expect(priceFor("claude-haiku-4-5")).toEqual({ input: 1, cached_input: 0.1, output: 5 })
    expect(priceFor("gpt-5-mini")).toEqual({ input: 0.25, cached_input: 0.025, output: 2 })
  })

  test("claude-sonnet-5-5: a known usage costs what Anthropic bills", () => {
    const price = priceFor("claude-sonnet-5-5")
    expect(price).not.toBeNull()
    // 600k uncached input at $2, 400k cache reads at $0.10, 250k output at $10 per million.
    const usage = { inputTokens: 1_000_000, cachedInputTokens: 400_000, outputTokens: 250_000, reasoningTokens: 50_000 }
    if (price !== null) expect(costOf(usage, price)).toBeCloseTo(1.2 + 0.04 + 2.5, 10)
  })

  test("a new model is not priced as an older one that shares its prefix", () => {
    expect(priceFor("claude-opus-4-8")).not.toEqual(priceFor("claude-opus-4"))
    expect(priceFor("claude-sonnet-5-5")).not.toEqual(priceFor("claude-sonnet-5"))
    expect(priceFor("gpt-5.5")).not.toEqual(priceFor("gpt-5"))
    expect(priceFor("grok-4.7")).not.toEqual(priceFor("grok-4"))
    expect(priceFor("anthropic/claude-sonnet-5.5")).toEqual(priceFor("claude-sonnet-5-5"))
    expect(priceFor("anthropic/claude-opus-5.5")).toEqual(priceFor("claude-opus-5-5"))
    expect(priceFor("claude-sonnet-5-5-20261007")).toEqual(priceFor("claude-sonnet-5-5"))
    expect(priceFor("openai/gpt-6-luna")).toEqual(priceFor("gpt-6-luna"))
    expect(priceFor("gpt-6-luna-fast")).toBeNull()
  })
})

describe("priceFor: only a date or a version may follow a priced name", () => {
  test("dated and tagged names find their model; another model's name does not", () => {
    expect(priceFor("gpt-4o-2024-08-06")).toEqual(priceFor("gpt-4o"))
    expect(priceFor("claude-sonnet-4-5-20250929")).toEqual(priceFor("claude-sonnet-4-5"))
    expect(priceFor("claude-3-5-haiku-latest")).toEqual(priceFor("claude-3-5-haiku"))
    expect(priceFor("o1-mini")).toBeNull()
    expect(priceFor("gpt-5-mini-turbo")).toBeNull()
  })
})
