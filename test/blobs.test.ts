/**
 * The blob store's call-log form: what `compactJsonText` writes, `expandJson`
 * reads back as the same JSON, with every repeated long text or large block stored once.
 * A blob's name is the SHA-256 of its UTF-8, as `node:crypto` computes it
 * (lone surrogates written as U+FFFD).
 */
import { describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import fc from "fast-check"
import { hashText } from "../src/lib/sha256.ts"
import { BLOB_MIN_CHARS, BLOB_MIN_JSON_CHARS, blobWriter, compactJsonText, expandJson } from "../src/services/run-files/blobs.ts"

const store = () => {
  const blobs = new Map<string, string>()
  const puts: Array<string> = []
  const sink = blobWriter((hash, text) => {
    puts.push(hash)
    blobs.set(hash, text)
  })
  return { blobs, puts, sink }
}

const long = (c: string) => c.repeat(BLOB_MIN_CHARS)

describe("blobs", () => {
  test("any JSON value comes back the same, whatever its long texts and large blocks", () => {
    const text = fc.oneof(fc.string(), fc.constantFrom(long("a"), long("ü"), `${long("x")}"\n`))
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        text,
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.boolean(),
        fc.constant(null),
        tie("array"),
        tie("object"),
      ),
      array: fc.array(tie("value"), { maxLength: 40 }),
      object: fc.dictionary(fc.oneof(fc.string(), fc.constant("__proto__")), tie("value"), { maxKeys: 40 }),
    })).value
    fc.assert(
      fc.property(json, (value) => {
        const s = store()
        const written = compactJsonText(value, s.sink)
        expect(written).not.toContain("\n")
        expect(expandJson(JSON.parse(written), (h) => s.blobs.get(h))).toEqual(JSON.parse(JSON.stringify(value)))
        for (const [hash, blob] of s.blobs) expect(hashText(blob)).toBe(hash)
      }),
      { numRuns: 300 },
    )
  })

  test("a string that quotes a run's long text, as it is or JSON-escaped, is $cat of its pieces: the long text stored once, read back whole", () => {
    const s = store()
    const question = `${'a "quoted" line\n'.repeat(5000)}end`
    const prompt = `<ORIGINAL MESSAGE>\n${question}\n<END>\nagain: ${question}`
    const shown = `answers: ${JSON.stringify(question)}`
    const value = { request: { messages: [{ content: prompt }, { content: shown }] }, other: long("o") }
    const written = compactJsonText(value, s.sink, [question])
    expect(written.includes("quoted")).toBe(false)
    const parsed = JSON.parse(written)
    const hash = hashText(question)
    expect(parsed.request.messages[0].content).toEqual({
      $cat: ["<ORIGINAL MESSAGE>\n", { $blob: hash }, "\n<END>\nagain: ", { $blob: hash }],
    })
    expect(parsed.request.messages[1].content).toEqual({ $cat: ['answers: "', { $esc: hash }, '"'] })
    expect(s.blobs.get(hash)).toBe(question)
    expect(expandJson(parsed, (h) => s.blobs.get(h))).toEqual(value)
    // Without the run's long texts, each string is a blob of its own, the question inside each.
    const plain = store()
    compactJsonText(value, plain.sink)
    expect([...plain.blobs.values()].filter((b) => b.includes("quoted")).length).toBe(2)
  })

  test("a large block and a long text that repeat across calls are stored once; a call's own small values stay in its log", () => {
    const s = store()
    const tools = Array.from({ length: 200 }, (_, i) => `agent${i + 1}`)
    const system = long("s")
    const call = (n: number) => ({ call: n, request: { agentId: `agent_${n}`, system, tools: { enum: tools } } })
    const logs = [1, 2, 3].map((n) => compactJsonText(call(n), s.sink))
    expect(s.puts).toHaveLength(2)
    expect(JSON.stringify({ enum: tools }).length).toBeGreaterThanOrEqual(BLOB_MIN_JSON_CHARS)
    for (const log of logs) {
      expect(log).not.toContain(system)
      expect(log).not.toContain("agent200")
      expect(log.length).toBeLessThan(300)
    }
    expect(expandJson(JSON.parse(logs[1]!), (h) => s.blobs.get(h))).toEqual(call(2))
  })

  test("a missing blob, one that is not JSON, or blobs that name each other read as null, not a crash", () => {
    const a = "a".repeat(64)
    const b = "b".repeat(64)
    const blobs = new Map([
      [a, `{"x":{"$json":"${b}"}}`],
      [b, `[{"$json":"${a}"}]`],
      ["c".repeat(64), "{ not json"],
    ])
    const get = (h: string) => blobs.get(h)
    expect(expandJson({ t: { $blob: "d".repeat(64) } }, get)).toEqual({ t: null })
    expect(expandJson({ t: { $json: "c".repeat(64) } }, get)).toEqual({ t: null })
    expect(expandJson({ $json: a }, get)).toEqual({ x: [null] })
    expect(expandJson({ $blob: "../etc/passwd" }, get)).toBeNull()
  })
})

describe("hashText", () => {
  test("is node:crypto's SHA-256 of the text's UTF-8, lone surrogates included", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary", maxLength: 300 }),
          fc.string({ unit: "grapheme", maxLength: 50 }),
          fc.constantFrom("", "\ud800", "a\udfffb"),
        ),
        (text) => {
          expect(hashText(text)).toBe(createHash("sha256").update(text, "utf8").digest("hex"))
        },
      ),
      { numRuns: 2000 },
    )
  })
})
