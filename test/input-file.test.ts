/**
 * The pieces behind the input limits: `readInputFile` (what it refuses, and
 * that it reads a file that says it is empty only to its limit),
 * `utf8Bytes` (the count every question limit uses, equal to Node's) and a
 * batch item's question limit (`parseItems`).
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import fc from "fast-check"
import { parseItems } from "../src/domain/batch.ts"
import { utf8Bytes } from "../src/lib/utf8-bytes.ts"
import { readInputFile } from "../src/services/input-file.ts"
import { cleanupSandboxes, sandbox } from "./support/cli.ts"

afterAll(cleanupSandboxes)

describe("readInputFile", () => {
  test("a regular file is read; over the limit, missing or a directory is refused in words", () => {
    const dir = sandbox()
    const path = nodePath.join(dir, "q.txt")
    fs.writeFileSync(path, "héllo")
    expect(readInputFile(path, 6, "file", "for a question")).toEqual({ _tag: "read", text: "héllo" })
    expect(readInputFile(path, 5, "file", "for a question")).toEqual({
      _tag: "refused",
      reason: "too_large",
      problem: "is over the limit of 5 bytes for a question",
    })
    expect(readInputFile(nodePath.join(dir, "none"), 5, "file", "")).toMatchObject({ reason: "missing", problem: "no such file" })
    expect(readInputFile(dir, 5, "config file", "")).toMatchObject({ reason: "not_regular", problem: "is a directory, not a config file" })
  })

  test("a file whose size says 0 (/proc) is read only to the limit", () => {
    const read = readInputFile("/proc/self/maps", 16, "file", "for a test")
    expect(read).toEqual({ _tag: "refused", reason: "too_large", problem: "is over the limit of 16 bytes for a test" })
  })
})

test("utf8Bytes counts as Buffer.byteLength does, lone surrogates included", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary" }), (s) => utf8Bytes(s) === Buffer.byteLength(s, "utf8")),
    { numRuns: 500 },
  )
  expect(utf8Bytes("\ud800x")).toBe(Buffer.byteLength("\ud800x", "utf8"))
})

test("a batch item's question over the limit is a problem naming its line", () => {
  const text = `${JSON.stringify({ id: "a", question: "short" })}\n${JSON.stringify({ id: "b", question: "é".repeat(6) })}\n`
  expect(parseItems(text, 11)).toEqual({ _tag: "problems", problems: ['line 2: "question" is over the question limit of 11 bytes'] })
  expect(parseItems(text, 12)._tag).toBe("items")
})
