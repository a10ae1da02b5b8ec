/**
 * surelyNoExcessKeys, the walk that spares a config the strict decode: whenever
 * it says a document has no key the schema does not know, the strict decode
 * (excess properties refused) finds none. Every config of the repository,
 * mutated at random (keys added, values replaced by mappings, lists and
 * scalars), against the config schema, and random values against schemas with
 * the parts it gives up on (unions, transformations, records, recursion).
 */
import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Either, ParseResult, Schema } from "effect"
import fc from "fast-check"
import { parse } from "yaml"
import { surelyNoExcessKeys } from "../src/domain/config/document.ts"
import { ConfigFile } from "../src/domain/config/file.ts"
import { unknownKeys } from "../src/domain/config/index.ts"

/** Whether the strict decode of `value` as `schema` reports an unexpected key. */
const strictFindsExcess = (schema: Schema.Schema.AnyNoContext, value: unknown): boolean => {
  const decoded = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(value)
  return Either.isLeft(decoded) && ParseResult.ArrayFormatter.formatErrorSync(decoded.left).some((issue) => issue._tag === "Unexpected")
}

const configs = (dir: string): Array<unknown> =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => parse(readFileSync(join(dir, f), "utf8")) as unknown)
const root = join(import.meta.dir, "..")
const DOCS = [
  ...configs(join(root, "examples")),
  ...configs(join(root, "test/fixtures/massgen")),
  ...configs(join(root, "test/fixtures/v1/configs")),
]

const KEYS = [
  "type",
  "model",
  "answer",
  "vote",
  "id",
  "backend",
  "agents",
  "orchestrator",
  "script",
  "custom_tools",
  "mcp_servers",
  "pricing",
  "memory",
  "zzz",
  "args",
  "tool",
  "command",
]
const replacement: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(1, "x", true, null, [], {}),
  fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(1, "x", [], {}, { tool: "t" }, [{ zzz: 1 }]), {
    maxKeys: 3,
    noNullPrototype: true,
  }),
  fc.array(fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(1, "x", {}), { maxKeys: 2, noNullPrototype: true }), { maxLength: 2 }),
)

/** `doc` with the value at a random place (picked by `choices`) replaced, or a key added to a random mapping. */
const mutate = (doc: unknown, choices: ReadonlyArray<number>, key: string, value: unknown): unknown => {
  const [choice = 0, ...rest] = choices
  if (doc === null || typeof doc !== "object") return value
  if (Array.isArray(doc)) {
    if (doc.length === 0) return [value]
    const i = choice % doc.length
    return doc.map((item, j) => (j === i ? mutate(item, rest, key, value) : item))
  }
  const entries = Object.entries(doc)
  if (rest.length === 0 || entries.length === 0) return { ...doc, [key]: value }
  const i = choice % entries.length
  return Object.fromEntries(entries.map(([k, v], j) => [k, j === i ? mutate(v, rest, key, value) : v]))
}

describe("surelyNoExcessKeys", () => {
  test("clears the plain configs of the repository, and only where the strict decode finds no unknown key", () => {
    for (const doc of DOCS) expect(surelyNoExcessKeys(ConfigFile.ast, doc) && strictFindsExcess(ConfigFile, doc)).toBe(false)
    expect(DOCS.filter((doc) => surelyNoExcessKeys(ConfigFile.ast, doc)).length).toBeGreaterThan(DOCS.length / 2)
  })

  test("is never sure of a config with an unknown key, however mutated", () => {
    let sure = 0
    fc.assert(
      fc.property(
        fc.constantFrom(...DOCS),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.constantFrom(...KEYS),
        replacement,
        (doc, choices, key, value) => {
          const mutated = mutate(doc, choices, key, value)
          if (!surelyNoExcessKeys(ConfigFile.ast, mutated)) return
          sure++
          expect({ mutated, excess: strictFindsExcess(ConfigFile, mutated) }).toEqual({ mutated, excess: false })
          expect(unknownKeys(mutated)).toEqual([])
        },
      ),
      { numRuns: 3000 },
    )
    expect(sure).toBeGreaterThan(100)
  })

  test("gives up where the schema has unions, transformations, records and recursion", () => {
    interface Tree {
      readonly a?: string | undefined
      readonly kids?: ReadonlyArray<Tree> | undefined
    }
    const Tree: Schema.Schema<Tree> = Schema.Struct({
      a: Schema.optional(Schema.String),
      kids: Schema.optional(Schema.Array(Schema.suspend(() => Tree))),
    })
    const schemas: ReadonlyArray<Schema.Schema.AnyNoContext> = [
      Schema.Struct({ a: Schema.optional(Schema.Union(Schema.Struct({ x: Schema.String }), Schema.Struct({ y: Schema.Number }))) }),
      Schema.Struct({ r: Schema.Record({ key: Schema.String, value: Schema.Struct({ x: Schema.optional(Schema.Number) }) }) }),
      Schema.Struct({ t: Schema.optionalWith(Schema.Struct({ x: Schema.String }), { default: () => ({ x: "d" }) }) }),
      Schema.Struct({ p: Schema.parseJson(Schema.Struct({ x: Schema.Number })) }),
      Schema.Struct({ s: Schema.Tuple(Schema.Struct({ x: Schema.String }), Schema.Number) }),
      Tree,
    ]
    const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
      v: fc.oneof(
        { depthSize: "small" },
        fc.constantFrom(1, "x", null, true, '{"x":1}', '{"x":1,"z":2}'),
        fc.dictionary(fc.constantFrom("a", "x", "y", "r", "t", "p", "s", "kids", "z"), tie("v"), { maxKeys: 3, noNullPrototype: true }),
        fc.array(tie("v"), { maxLength: 3 }),
      ),
    })).v
    fc.assert(
      fc.property(fc.constantFrom(...schemas), value, (schema, v) => {
        if (surelyNoExcessKeys(schema.ast, v)) expect(strictFindsExcess(schema, v)).toBe(false)
      }),
      { numRuns: 5000 },
    )
  })
})
