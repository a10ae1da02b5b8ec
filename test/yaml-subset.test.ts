/**
 * parseYamlSubset against the `yaml` package: whenever it gives a value, it is
 * `yaml`'s (same keys in the same order, same scalars, `Object.is`), and `yaml`
 * neither refused nor warned about the text. Random texts built from pieces in
 * and out of the subset, every YAML file of the repository, and the bench's
 * 200-agent config (which the subset must read).
 */
import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import fc from "fast-check"
import { parseDocument } from "yaml"
import { parseYamlSubset } from "../src/lib/yaml-subset.ts"

/** Equal as values: `Object.is` for scalars, key order, and plain objects against plain objects. */
const same = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]))
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  return (
    ka.length === kb.length && ka.every((k, i) => k === kb[i] && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  )
}

/** What `yaml` makes of the text: its value, or that it refused or warned. */
const reference = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    const doc = parseDocument(text)
    if (doc.errors.length > 0 || doc.warnings.length > 0) return { ok: false }
    return { ok: true, value: doc.toJS() }
  } catch {
    return { ok: false }
  }
}

/** Fails with the text when the subset reader's value is not `yaml`'s; whether it read the text. */
const agrees = (text: string): boolean => {
  const fast = parseYamlSubset(text)
  if (fast === undefined) return false
  const ref = reference(text)
  if (!ref.ok || !same(fast, ref.value))
    throw new Error(
      `differs from yaml on ${JSON.stringify(text)}: ${JSON.stringify(fast)} vs ${ref.ok ? JSON.stringify(ref.value) : "an error"}`,
    )
  return true
}

const KEYS = [
  "a",
  "$k",
  "b",
  "agents",
  "id",
  "backend",
  "x-y",
  "_k",
  "null",
  "True",
  "false",
  "__proto__",
  "<<",
  "1",
  '"q"',
  "a b",
  "Infinity",
  "e1",
  "on",
]
const SEPARATORS = [": ", ":", ":  ", " : ", ":\t"]
const SCALARS = [
  "",
  "x",
  "${VAR}",
  "$x y",
  "hello world",
  "a  b",
  "1",
  "-1",
  "-0",
  "007",
  "12345678901234567890123",
  "1e3",
  "1.",
  "1.50",
  "-2.5e-3",
  "0x1F",
  "0o7",
  ".5",
  ".inf",
  "~",
  "null",
  "Null",
  "NULL",
  "True",
  "TRUE",
  "false",
  "yes",
  "no",
  "2001-12-14",
  "1_000",
  "4o-mini",
  "gpt-4o",
  "http://x:1/y",
  "a:b",
  "a: b",
  "a:",
  "a #c",
  "a#c",
  "it's",
  'say "hi"',
  "a, b",
  "a[0]",
  "(x)",
  "/p/q",
  "\\d",
  "-x",
  "- x",
  "-",
  "?x",
  "? x",
  "|",
  ">-",
  "&x 1",
  "*x",
  "!!str 1",
  "!t x",
  "%x",
  "@x",
  "`x",
  '"q"',
  '"a\\nb"',
  '"a\\x41"',
  '"\\u00e9"',
  '"\\/"',
  '"a # b"',
  '"unterminated',
  "'it''s'",
  "'x' y",
  "'a # b' # c",
  '"x"#c',
  "é",
  "\u00a0x\u00a0",
  "x\u3000",
  "{}",
  "[]",
  "{a: 1}",
  "{a: 1, b: [x, y]}",
  "{ a: 1 , b: 2 }",
  "[1, 2,]",
  "{a: 1, a: 2}",
  "[a, {b: c}]",
  "{a:1}",
  "{a: }",
  "[a b, c]",
  "[a: b]",
  "{a: [1, 2]} # c",
  "[x, 'y', \"z\"]",
  "[[1], []]",
  "{a: b: c}",
  "[,]",
  "{a: x#y}",
  "[a #b]",
  "Answer 1: four.",
  '"Answer 1: four."',
]
const INDENTS = [0, 0, 0, 1, 2, 2, 4, 6]

const line = fc.oneof(
  fc
    .tuple(fc.constantFrom(...INDENTS), fc.constantFrom(...KEYS), fc.constantFrom(...SEPARATORS), fc.constantFrom(...SCALARS))
    .map(([i, k, sep, v]) => `${" ".repeat(i)}${k}${sep}${v}`),
  fc.tuple(fc.constantFrom(...INDENTS), fc.constantFrom(...KEYS)).map(([i, k]) => `${" ".repeat(i)}${k}:`),
  fc
    .tuple(fc.constantFrom(...INDENTS), fc.constantFrom("- ", "-  ", "-", "- - "), fc.constantFrom(...SCALARS))
    .map(([i, d, v]) => `${" ".repeat(i)}${d}${v}`),
  fc
    .tuple(fc.constantFrom(...INDENTS), fc.constantFrom("- ", "-   "), fc.constantFrom(...KEYS), fc.constantFrom(...SCALARS))
    .map(([i, d, k, v]) => `${" ".repeat(i)}${d}${k}: ${v}`),
  fc.constantFrom(
    "",
    "# comment",
    "   # indented comment",
    "---",
    "...",
    "%YAML 1.2",
    "  ",
    "\t- x",
    "a: 1\r",
    "a: |\n  text\n  more",
    "a: &x {p: 1}\nb: *x",
    "b:\n  <<: {p: 1}",
  ),
)
/** Random texts: mostly well-formed block structure, with pieces out of the subset mixed in. */
const texts = fc.array(line, { minLength: 1, maxLength: 10 }).map((lines) => lines.join("\n"))

/** A structured document in the subset, written in block style, so that the reader is exercised on deep nesting. */
const tree: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom("x", "two words", 3, -1.5, true, null, "gpt-4o", "say: hi"),
    fc.dictionary(fc.constantFrom("a", "b", "c", "id", "type"), tie("node"), { minKeys: 1, maxKeys: 3 }),
    fc.array(tie("node"), { minLength: 1, maxLength: 3 }),
  ),
})).node

const scalarText = (v: unknown): string => (typeof v === "string" ? (v.includes(":") ? JSON.stringify(v) : v) : String(v))
const block = (v: unknown, indent: number): Array<string> => {
  const pad = " ".repeat(indent)
  if (Array.isArray(v)) {
    return v.flatMap((item) => {
      if (Array.isArray(item)) return [`${pad}-`, ...block(item, indent + 2)]
      if (item !== null && typeof item === "object") {
        const inner = block(item, indent + 2)
        return [`${pad}- ${inner[0]!.trimStart()}`, ...inner.slice(1)]
      }
      return [`${pad}- ${scalarText(item)}`]
    })
  }
  if (v !== null && typeof v === "object") {
    return Object.entries(v).flatMap(([k, item]) =>
      item !== null && typeof item === "object"
        ? [`${pad}${k}:`, ...block(item, Array.isArray(item) ? indent : indent + 2)]
        : [`${pad}${k}: ${scalarText(item)}`],
    )
  }
  return [`${pad}${scalarText(v)}`]
}

const yamlFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    if (d.name === "node_modules" || d.name.startsWith(".")) return []
    const path = join(d.parentPath, d.name)
    return d.isDirectory() ? yamlFiles(path) : /\.ya?ml$/.test(d.name) ? [path] : []
  })

describe("parseYamlSubset gives yaml's value or nothing", () => {
  test("on random texts in and out of the subset", () => {
    let read = 0
    fc.assert(
      fc.property(texts, (text) => {
        if (agrees(text)) read++
      }),
      { numRuns: 20_000 },
    )
    // The comparison means something only if many texts were read.
    expect(read).toBeGreaterThan(500)
  })

  test("on block documents of nested mappings and sequences", () => {
    fc.assert(
      fc.property(tree, fc.constantFrom(0, 2), (doc, indent) => {
        if (doc === null || typeof doc !== "object") return
        const text = block(doc, indent).join("\n")
        expect(agrees(text)).toBe(true)
      }),
      { numRuns: 3000 },
    )
  })

  test("on every YAML file of the repository", () => {
    const root = join(import.meta.dir, "..")
    const files = yamlFiles(root)
    expect(files.length).toBeGreaterThan(10)
    const read = files.filter((file) => agrees(readFileSync(file, "utf8")))
    expect(read.length).toBeGreaterThan(files.length / 2)
  })

  test("reads the bench's team of 200 scripted agents", () => {
    const agent = (i: number) =>
      `  - id: agent_${i}\n    backend: { type: scripted, answer: "Answer ${i}: four.", vote: agent1, delay_seconds: 0.2 }\n`
    expect(agrees(`agents:\n${Array.from({ length: 200 }, (_, i) => agent(i + 1)).join("")}`)).toBe(true)
  })

  test("leaves to yaml what it refuses or reads otherwise than a naive reader", () => {
    for (const text of [
      "a: 1\na: 2",
      "a: {x: 1, x: 2}",
      "b: &x {p: 1}\nc:\n  <<: *x",
      "a: 1\n---\nb: 2",
      "? [a, b]\n: x",
      "null: c",
      "a: b: c",
      "a: 'x",
      "\ta: 1",
      "",
      "# only",
    ]) {
      expect(parseYamlSubset(text)).toBeUndefined()
    }
  })
})
