/**
 * `domain/text.ts`: `count` words a number as `toLocaleString("en-US")` does, without its cost.
 */
import { expect, test } from "bun:test"
import fc from "fast-check"
import { count } from "../src/domain/text.ts"

const reference = (n: number, word: string) => `${n.toLocaleString("en-US")} ${n === 1 ? word : `${word}s`}`

test("count groups thousands as toLocaleString(\"en-US\") does, for any number", () => {
  expect([0, 1, 999, 1000, 1234567, -1234567].map((n) => count(n, "answer"))).toEqual(["0 answers", "1 answer", "999 answers", "1,000 answers", "1,234,567 answers", "-1,234,567 answers"])
  fc.assert(fc.property(fc.oneof(fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), fc.double()), (n) => count(n, "token") === reference(n, "token")))
})
