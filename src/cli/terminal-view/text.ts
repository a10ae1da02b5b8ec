/**
 * Text cells for the terminal view: measuring, cutting, padding and wrapping by display width.
 *
 * Contract: widths are terminal columns (`Bun.stringWidth`: wide characters
 * count 2, ANSI codes 0). Text from models is cleaned first (`clean`:
 * `plainText` of `lib/plain-text.ts`, and tabs as two spaces), so nothing a
 * model writes can move the cursor or reach the terminal as a command. A
 * *segment* is a piece of text and an optional SGR style (`"1;36"`);
 * `cell(segments, width, color)` cleans the segments' text (line breaks as
 * spaces), cuts and pads it to exactly `width` columns and adds the styles
 * only when `color` is on: the styles are the only escapes a cell holds.
 */
import { plainText } from "../../lib/plain-text.ts"

export type Segment = readonly [text: string, style?: string]

export const width = (text: string): number => Bun.stringWidth(text)

/** Model text made safe to print: no escapes, no control characters but newlines, tabs as two spaces. */
export const clean = (text: string): string => plainText(text).replace(/\t/g, "  ")

/** A cell's text: cleaned, on one line. */
const cellText = (text: string): string => clean(text).replace(/\n/g, " ")

/** The longest start of `text` that fits in `max` columns. */
export const cut = (text: string, max: number): string => {
  if (max <= 0) return ""
  if (width(text) <= max) return text
  let out = ""
  let used = 0
  for (const ch of text) {
    const w = width(ch)
    if (used + w > max) break
    out += ch
    used += w
  }
  return out
}

/** `text` cut to `max` columns, ending with `…` when it was cut. */
export const ellipsis = (text: string, max: number): string =>
  width(text) <= max ? text : max <= 1 ? cut(text, max) : `${cut(text, max - 1)}…`

export const style = (text: string, sgr: string | undefined, color: boolean): string =>
  color && sgr !== undefined && text !== "" ? `\x1b[${sgr}m${text}\x1b[0m` : text

/** Segments cut and padded to exactly `columns` columns. */
export const cell = (segments: ReadonlyArray<Segment>, columns: number, color: boolean): string => {
  let out = ""
  let left = columns
  for (const [text, sgr] of segments) {
    if (left <= 0) break
    const piece = cut(cellText(text), left)
    left -= width(piece)
    out += style(piece, sgr, color)
  }
  return out + " ".repeat(Math.max(0, left))
}

/** Wraps text to `columns`, at spaces where it can, keeping its own line breaks. */
export const wrap = (text: string, columns: number): Array<string> => {
  const out: Array<string> = []
  if (columns <= 0) return out
  for (const para of clean(text).split("\n")) {
    let line = ""
    for (const word of para.split(/(\s+)/)) {
      if (word === "") continue
      if (width(line) + width(word) <= columns) {
        line += word
        continue
      }
      if (/^\s+$/.test(word)) {
        out.push(line)
        line = ""
        continue
      }
      if (line !== "") out.push(line.trimEnd())
      line = ""
      let rest = word
      while (width(rest) > columns) {
        const head = cut(rest, columns)
        out.push(head)
        rest = rest.slice(head.length)
      }
      line = rest
    }
    out.push(line.trimEnd())
  }
  return out
}

export const formatTokens = (n: number): string =>
  n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 10_000 ? `${Math.round(n / 1000)}k` : n.toLocaleString("en-US")

export const formatSeconds = (s: number): string =>
  s < 60 ? `${s.toFixed(1)}s` : `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, "0")}s`

const BLOCK_START = /^\s*([-*+]|\d+[.)]|#{1,6}|>|\|)\s/

/** Markdown-ish text with its soft line breaks joined, so that `wrap` can fill lines; code blocks, lists and headings keep their lines. */
export const reflow = (text: string): string => {
  const out: Array<string> = []
  let inFence = false
  let joinable = false
  for (const raw of clean(text).split("\n")) {
    const line = raw.trimEnd()
    if (/^\s*(```|~~~)/.test(line)) {
      inFence = !inFence
      out.push(line)
      joinable = false
    } else if (inFence || line.trim() === "" || /^\s{4,}\S/.test(line) || /^\s*([-*_])(\s*\1){2,}$/.test(line)) {
      out.push(line)
      joinable = false
    } else if (joinable && !BLOCK_START.test(line)) {
      out[out.length - 1] += ` ${line.trim()}`
    } else {
      out.push(line)
      joinable = !/^\s*#{1,6}\s/.test(line)
    }
  }
  return out.join("\n")
}
