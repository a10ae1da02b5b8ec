import { describe, expect, test } from "bun:test"
import { PRESETS } from "../src/domain/presets.ts"
import { BUILTIN_PRICES, costOf, priceFor } from "../src/domain/pricing.ts"

describe("pricing", () => {
  test("exact names, then the longest prefix ending at a separator", () => {
    expect(priceFor("gpt-4o")).toEqual({ input: 2.5, cached_input: 1.25, output: 10 })
    expect(priceFor("gpt-4o-mini-2024-07-18")).toEqual(BUILTIN_PRICES["gpt-4o-mini"] ?? null)
    expect(priceFor("claude-sonnet-4-5-20250929")).toEqual(BUILTIN_PRICES["claude-sonnet-4-5"] ?? null)
    expect(priceFor("o3-mini-2025-01-31")).toEqual(BUILTIN_PRICES["o3-mini"] ?? null)
    expect(priceFor("o3-pro")).toEqual(BUILTIN_PRICES["o3-pro"] ?? null)
    expect(priceFor("gpt-4")).toBeNull()
    expect(priceFor("gpt-4o2")).toBeNull()
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
      if (preset.keyless || type === "chatcompletion") continue
      expect({ type, price: priceFor(preset.defaultModel) !== null }).toEqual({ type, price: true })
    }
  })

  test("costOf: cached input at the cached rate, the rest at the input rate, all output at the output rate", () => {
    const price = { input: 2, cached_input: 0.5, output: 8 }
    const usage = { inputTokens: 1_000_000, cachedInputTokens: 400_000, outputTokens: 250_000, reasoningTokens: 100_000 }
    expect(costOf(usage, price)).toBeCloseTo(0.6 * 2 + 0.4 * 0.5 + 0.25 * 8, 10)
    expect(costOf(usage, { input: 2, output: 8 })).toBeCloseTo(2 + 2, 10)
    expect(costOf({ inputTokens: null, cachedInputTokens: null, outputTokens: null, reasoningTokens: null }, price)).toBe(0)
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
