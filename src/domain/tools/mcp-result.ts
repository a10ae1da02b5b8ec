/**
 * What an MCP tool's result says to massgen: a check of the part of its shape massgen uses, and its text.
 *
 * `toolResult(value)` reads a `tools/call` result as the server sent it
 * (untrusted JSON): `{ text, isError }`, or a one-line `problem` naming what
 * is malformed. The text is the result's text parts, one after another, with
 * other parts described in brackets (`[image image/png, 3 bytes]`,
 * `[resource file:///a (binary)]`, `[resource link ...]`, an unknown part as
 * `[its type]`); a result with no parts and `structuredContent` is that
 * content as JSON. Only what the text is made of is checked: `content` a list
 * (missing counts as empty) of objects with a string `type`, each known part
 * with the string fields its text uses, `isError` a boolean when present.
 */

export type ToolResult = { readonly text: string; readonly isError: boolean } | { readonly problem: string }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** A part's text, or null when a field its text uses is missing or not a string. */
const partText = (part: Record<string, unknown>): string | null => {
  switch (part.type) {
    case "text":
      return typeof part.text === "string" ? part.text : null
    case "image":
    case "audio":
      return typeof part.data === "string" && typeof part.mimeType === "string"
        ? `[${part.type} ${part.mimeType}, ${Math.floor((part.data.length * 3) / 4)} bytes]`
        : null
    case "resource": {
      const resource = part.resource
      if (!isObject(resource) || typeof resource.uri !== "string") return null
      if ("text" in resource) return typeof resource.text === "string" ? resource.text : null
      return `[resource ${resource.uri} (${typeof resource.mimeType === "string" ? resource.mimeType : "binary"})]`
    }
    case "resource_link":
      return typeof part.uri === "string" ? `[resource link ${part.uri}]` : null
    default:
      return `[${part.type as string}]`
  }
}

export const toolResult = (value: unknown): ToolResult => {
  if (!isObject(value)) return { problem: "the result is not an object" }
  const content = value.content ?? []
  if (!Array.isArray(content)) return { problem: "its content is not a list" }
  const isError = value.isError ?? false
  if (typeof isError !== "boolean") return { problem: "its isError is not true or false" }
  const texts: Array<string> = []
  for (let i = 0; i < content.length; i++) {
    const part: unknown = content[i]
    if (!isObject(part) || typeof part.type !== "string") return { problem: `its content part ${i + 1} has no type` }
    const text = partText(part)
    if (text === null) return { problem: `its content part ${i + 1} (${part.type}) lacks a field its text needs` }
    texts.push(text)
  }
  if (texts.length === 0 && value.structuredContent !== undefined) return { text: JSON.stringify(value.structuredContent), isError }
  return { text: texts.join("\n"), isError }
}
