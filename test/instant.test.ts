/**
 * Issue 10: `instantMs` (src/lib/instant.ts) is `Date.parse`, quicker: the
 * same number, or NaN, on random instants as `toISOString` writes them (with
 * and without milliseconds), on strings of their shape with any digits (days
 * a month lacks, hour 24, second 60), on those cut or edited, and on any text;
 * and on runs of instants that share their second (which it remembers), mixed
 * with strings of that second whose milliseconds are not digits.
 */
import { expect, test } from "bun:test"
import fc from "fast-check"
import { instantMs } from "../src/lib/instant.ts"

const same = (text: string) =>
  expect(Object.is(instantMs(text), Date.parse(text)) || (Number.isNaN(instantMs(text)) && Number.isNaN(Date.parse(text)))).toBe(true)

const dates = fc.date({ min: new Date("0000-01-01T00:00:00.000Z"), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true })
const digit = fc.integer({ min: 0, max: 9 }).map(String)
const two = fc.tuple(digit, digit).map(([a, b]) => a + b)
/** The shape of an instant with any digits: months past 12, days past the month, hour 24, second 60. */
const shaped = fc
  .tuple(fc.tuple(digit, digit, digit, digit), two, two, two, two, two, fc.option(fc.tuple(digit, digit, digit), { nil: null }))
  .map(([y, mo, d, h, mi, s, ms]) => `${y.join("")}-${mo}-${d}T${h}:${mi}:${s}${ms === null ? "" : `.${ms.join("")}`}Z`)

test("instantMs is Date.parse on instants, on their shape with any digits, and on any text", () => {
  fc.assert(
    fc.property(dates, fc.boolean(), (date, whole) => {
      const text = date.toISOString()
      same(text)
      same(whole ? text.replace(/\.\d{3}Z$/, "Z") : text)
    }),
    { numRuns: 5000 },
  )
  fc.assert(fc.property(shaped, same), { numRuns: 5000 })
  fc.assert(
    fc.property(shaped, fc.nat(24), fc.string({ maxLength: 2 }), (text, at, put) =>
      same(text.slice(0, at) + put + text.slice(at + put.length)),
    ),
    { numRuns: 5000 },
  )
  fc.assert(fc.property(fc.string({ maxLength: 30 }), same), { numRuns: 2000 })
  for (const text of [
    "2026-02-29T00:00:00.000Z",
    "2024-02-29T00:00:00.000Z",
    "1900-02-29T00:00:00Z",
    "2026-11-29T24:00:00Z",
    "2026-11-29T23:59:60Z",
    "0000-01-01T00:00:00.000Z",
    "+002026-11-29T11:05:49.531Z",
    "2026-11-29T11:05:49.5Z",
  ])
    same(text)
})

test("instantMs is Date.parse on runs of instants of one second, and on texts that only look like one of them", () => {
  const variant = fc.oneof(
    fc.tuple(digit, digit, digit).map((ms) => `.${ms.join("")}Z`),
    fc.constantFrom(".0aZ", ".-01Z", ". 12Z", "..12Z", ".123z", ".1234", ",123Z", "Z", ".1Z"),
  )
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(
          fc.oneof(
            dates.map((d) => d.toISOString().slice(0, 19)),
            shaped.map((t) => t.slice(0, 19)),
          ),
          fc.array(variant, { minLength: 1, maxLength: 6 }),
        ),
        { minLength: 1, maxLength: 6 },
      ),
      (runs) => {
        for (const [second, ends] of runs) for (const end of ends) same(second + end)
      },
    ),
    { numRuns: 3000 },
  )
})
