/**
 * An MCP tool's result as massgen reads it (`domain/tools/mcp-result.ts`): the text of each kind of part, and the malformed shapes named.
 */
import { describe, expect, test } from "bun:test"
import { toolResult } from "../src/domain/tools/mcp-result.ts"

describe("a tool's result", () => {
  test("its text parts one after another; other parts described in brackets; isError kept", () => {
    expect(
      toolResult({
        content: [
          { type: "text", text: "first" },
          { type: "image", data: "AAAA", mimeType: "image/png" },
          { type: "audio", data: "AAAAAAAA", mimeType: "audio/wav" },
          { type: "resource", resource: { uri: "file:///a.txt", text: "inside a" } },
          { type: "resource", resource: { uri: "file:///b.bin", blob: "AAAA" } },
          { type: "resource", resource: { uri: "file:///c.pdf", blob: "AAAA", mimeType: "application/pdf" } },
          { type: "resource_link", uri: "file:///d", name: "d" },
          { type: "hologram", frames: 3 },
        ],
        isError: true,
      }),
    ).toEqual({
      text: [
        "first",
        "[image image/png, 3 bytes]",
        "[audio audio/wav, 6 bytes]",
        "inside a",
        "[resource file:///b.bin (binary)]",
        "[resource file:///c.pdf (application/pdf)]",
        "[resource link file:///d]",
        "[hologram]",
      ].join("\n"),
      isError: true,
    })
  })

  test("no parts: its structured content as JSON, or an empty text; no content at all counts as no parts", () => {
    expect(toolResult({ content: [], structuredContent: { a: 1 } })).toEqual({ text: '{"a":1}', isError: false })
    expect(toolResult({ structuredContent: { a: 1 } })).toEqual({ text: '{"a":1}', isError: false })
    expect(toolResult({})).toEqual({ text: "", isError: false })
  })

  test("a malformed result names what is wrong", () => {
    expect(toolResult(null)).toEqual({ problem: "the result is not an object" })
    expect(toolResult([{ type: "text", text: "x" }])).toEqual({ problem: "the result is not an object" })
    expect(toolResult({ content: "x" })).toEqual({ problem: "its content is not a list" })
    expect(toolResult({ content: [], isError: "yes" })).toEqual({ problem: "its isError is not true or false" })
    expect(toolResult({ content: [{ text: "x" }] })).toEqual({ problem: "its content part 1 has no type" })
    expect(toolResult({ content: [{ type: "text", text: "x" }, "y"] })).toEqual({ problem: "its content part 2 has no type" })
    expect(toolResult({ content: [{ type: "text", text: 42 }] })).toEqual({
      problem: "its content part 1 (text) lacks a field its text needs",
    })
    expect(toolResult({ content: [{ type: "image", data: "AAAA" }] })).toEqual({
      problem: "its content part 1 (image) lacks a field its text needs",
    })
    expect(toolResult({ content: [{ type: "resource", resource: { text: "no uri" } }] })).toEqual({
      problem: "its content part 1 (resource) lacks a field its text needs",
    })
    expect(toolResult({ content: [{ type: "resource_link" }] })).toEqual({
      problem: "its content part 1 (resource_link) lacks a field its text needs",
    })
  })
})
