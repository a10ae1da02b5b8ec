/**
 * stringifyYamlSubset against the `yaml` package: whenever it gives a text, it
 * is `stringify`'s, byte for byte. Random plain data (strings near the
 * folding width, strings `yaml` must quote, unusual characters, every kind of
 * number), and the `execution_metadata.yaml` of a run of 200 scripted agents,
 * which it must write.
 */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { stringify } from "yaml"
import { stringifyYamlSubset } from "../src/lib/yaml-emit.ts"

/** Fails with the value when the text is not `yaml`'s; whether the subset writer wrote it. */
const agrees = (value: unknown): boolean => {
  const fast = stringifyYamlSubset(value)
  if (fast === undefined) return false
  const reference = stringify(value)
  if (fast !== reference) throw new Error(`differs from yaml on ${JSON.stringify(value)}:\n${fast}\nvs\n${reference}`)
  return true
}

const STRINGS = [
  "",
  "x",
  "What is 2+2?",
  "Answer 1: four.",
  "a: b",
  "a:b",
  "a:",
  "a #b",
  "a#b",
  "#a",
  "-",
  "- a",
  "-a",
  "--automation",
  "?",
  "? a",
  "?a",
  ":a",
  "a ",
  " a",
  "null",
  "Null",
  "~",
  "true",
  "False",
  "yes",
  "1",
  "-1",
  "+1",
  "0o7",
  "0x1F",
  "1.5",
  "1.",
  ".5",
  "1e3",
  ".inf",
  ".NaN",
  "2026-12-01T16:22:03.814Z",
  "0.1.0",
  "bun 1.4.4",
  "/tmp/x/log_20261201_162057_852939",
  "it's",
  'say "hi"',
  "a\\b",
  "***",
  "&a",
  "*a",
  "!a",
  "|",
  ">",
  "%a",
  "@a",
  "`a",
  "{a}",
  "[a]",
  "a, b",
  "---",
  "--- a",
  "...",
  "a\n---",
  "a\nb",
  "a\tb",
  "\u00e9t\u00e9",
  "\u2028",
  "\ufeff",
  "\u00a0",
  "caf\u00e9 \u4e2d\u6587",
  "${OPENAI_API_KEY}",
  "a\u0085b",
]
const KEYS = ["a", "b", "id", "agents", "null", "true", "1", "a-b", "a b", "_x", "__proto__", "x".repeat(45), "\u00e9"]

const stringArb = fc.oneof(
  fc.constantFrom(...STRINGS),
  fc.string({ maxLength: 80 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.integer({ min: 40, max: 90 }).map((n) => "w ".repeat(n).slice(0, n)),
  fc.integer({ min: 40, max: 90 }).map((n) => `${"w: ".repeat(n).slice(0, n)}x`),
)
const scalarArb = fc.oneof(
  stringArb,
  fc.constantFrom(null, true, false, undefined, 0, -0, 1, -1, 0.2, 1e21, 1e-7, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60),
  fc.double(),
  fc.integer(),
)
const valueArb: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalarArb,
    fc.dictionary(fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 6 })), tie("v"), { maxKeys: 4 }),
    fc.array(tie("v"), { maxLength: 4 }),
  ),
})).v
const documentArb = fc.dictionary(fc.constantFrom(...KEYS), valueArb, { minKeys: 1, maxKeys: 5 })

describe("stringifyYamlSubset gives yaml's text or nothing", () => {
  test("on random plain data", () => {
    let written = 0
    fc.assert(
      fc.property(documentArb, (doc) => {
        if (agrees(doc)) written++
      }),
      { numRuns: 20_000 },
    )
    expect(written).toBeGreaterThan(500)
  })

  test("on every string and number alone, at several depths", () => {
    fc.assert(
      fc.property(scalarArb, fc.integer({ min: 0, max: 6 }), (value, depth) => {
        let doc: unknown = { value }
        for (let i = 0; i < depth; i++) doc = i % 2 === 0 ? { key: [doc] } : { key: doc }
        agrees(doc)
      }),
      { numRuns: 20_000 },
    )
  })

  test("writes the execution metadata of a run of 200 scripted agents", () => {
    const agents = Array.from({ length: 200 }, (_, i) => ({
      id: `agent_${i + 1}`,
      backend: { type: "scripted", answer: `Answer ${i + 1}: four.`, vote: "agent1", delay_seconds: 0.2 },
    }))
    const metadata = {
      question: "What is 2+2?",
      timestamp: "2026-12-01T16:24:42.537Z",
      config_path: "/tmp/su/t200.yaml",
      config: { agents },
      cli_args: { argv: ["--automation", "--config", "t200.yaml", "What is 2+2?"] },
      massgen_version: "0.1.0",
      runtime: "bun 1.4.4",
      build: { version: "0.1.0", commit: "d2766ff4ee95", built: "2026-12-01T16:20:54Z", bun: "1.4.4", target: "bun-linux-x64" },
      working_directory: "/tmp/su",
      log_dir: "/tmp/su/logs/log_20261201_162442_536801",
      nothing: null,
      empty: {},
      none: [],
    }
    expect(agrees(metadata)).toBe(true)
  })
})
