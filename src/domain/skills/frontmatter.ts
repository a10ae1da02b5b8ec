/**
 * The YAML frontmatter of a SKILL.md or a memory file: the `---` block that opens it, and the text after it.
 *
 * `skillFrontmatter(text, parse)` reads a SKILL.md as MassGen's skill scan
 * does (a mapping between a first `---` line and the next one; `name` and
 * `description` strings) and gives its name (null: the folder's name stands)
 * and description, or why it is refused, in one line. `parse` reads the
 * block as YAML (undefined when it cannot: then, as MassGen, its `key: value`
 * lines are read); by default the plain subset (`lib/yaml-subset.ts`). `memoryFrontmatter`
 * reads a memory file as MassGen's memory section does, leniently: `key:
 * value` lines when the file opens with `---`, else none, and its body. Pure.
 *
 * Words: the *frontmatter* is the block between the two `---` lines; the *body* is what follows it.
 */
import { parseYamlSubset } from "../../lib/yaml-subset.ts"

export interface SkillMeta {
  readonly name: string | null
  readonly description: string
}

const OPEN = /^---[ \t]*\r?\n/
const CLOSE = /^---[ \t]*$/m

/** The frontmatter's text and the body after it, or null when the text does not open with a closed `---` block. */
const split = (text: string): { readonly block: string; readonly body: string } | "no_open" | "no_close" => {
  const open = OPEN.exec(text)
  if (open === null) return "no_open"
  const rest = text.slice(open[0].length)
  const close = CLOSE.exec(rest)
  if (close === null) return "no_close"
  return { block: rest.slice(0, close.index), body: rest.slice(close.index + close[0].length).replace(/^\r?\n/, "") }
}

const oneLineText = (value: string): string => value.replace(/\s+/g, " ").trim()

/** A SKILL.md's name and description, or why it is not a skill (one line). */
export const skillFrontmatter = (
  text: string,
  parse: (block: string) => unknown = parseYamlSubset,
): SkillMeta | { readonly problem: string } => {
  const parts = split(text)
  if (parts === "no_open") return { problem: "it does not open with a --- line (YAML frontmatter with name and description)" }
  if (parts === "no_close") return { problem: "its frontmatter is not closed by a --- line" }
  const meta = parse(parts.block) ?? keyValues(parts.block)
  if (meta === null || typeof meta !== "object" || Array.isArray(meta)) {
    return { problem: "its frontmatter is not a YAML mapping (name: ..., description: ...)" }
  }
  const { name, description } = meta as Record<string, unknown>
  if (name !== undefined && name !== null && typeof name !== "string") return { problem: "its name is not a string" }
  if (description !== undefined && description !== null && typeof description !== "string") {
    return { problem: "its description is not a string" }
  }
  const trimmed = typeof name === "string" ? oneLineText(name) : ""
  return { name: trimmed === "" ? null : trimmed, description: typeof description === "string" ? oneLineText(description) : "" }
}

/** The `key: value` lines of a block (a key before the first colon, the value after it, trimmed). */
const keyValues = (block: string): Readonly<Record<string, string>> => {
  const meta: Record<string, string> = {}
  for (const line of block.split(/\r?\n/)) {
    const at = line.indexOf(":")
    if (at > 0) meta[line.slice(0, at).trim()] = line.slice(at + 1).trim()
  }
  return meta
}

/** A memory file's `key: value` frontmatter (none when it does not open with a closed `---` block) and its body. */
export const memoryFrontmatter = (text: string): { readonly meta: Readonly<Record<string, string>>; readonly body: string } => {
  const parts = split(text)
  if (typeof parts === "string") return { meta: {}, body: text.trim() }
  return { meta: keyValues(parts.block), body: parts.body.trim() }
}
