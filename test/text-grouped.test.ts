/** `grouped` (and so `count`) writes a number as `toLocaleString("en-US")` does, without loading the locale data for a safe integer. */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { count, grouped } from "../src/lib/text.ts"

describe("grouped", () => {
  test("is toLocaleString('en-US') for every number", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer(),
          fc.maxSafeInteger(),
          fc.double(),
          fc.constantFrom(0, -0, 999, 1000, -1000, 999_999, 1_000_000, Number.MAX_SAFE_INTEGER, 2 ** 53, 1e21),
        ),
        (n) => {
          expect(grouped(n)).toBe(n.toLocaleString("en-US"))
        },
      ),
      { numRuns: 5000 },
    )
  })

  test("count names the word in the singular for one only", () => {
    expect([count(1, "answer"), count(0, "answer"), count(1200, "token"), count(2, "reply", "replies")]).toEqual([
      "1 answer",
      "0 answers",
      "1,200 tokens",
      "2 replies",
    ])
  })
})
