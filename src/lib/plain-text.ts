/**
 * Plain text: what text from a model or a tool may hold once it reaches a terminal or a contract line. Pure.
 *
 * Text a model or a tool wrote is untrusted: it may hold escape sequences
 * that set the window title, write the clipboard (OSC 52), clear the screen,
 * query the terminal (DCS) or hide a link (OSC 8), and line breaks that add
 * lines of their own to the `--automation` output.
 *
 * - `plainText(s)`: `s` fit for a terminal. Escape sequences go whole: CSI
 *   (`ESC [` and the 8-bit U+009B), the strings OSC, DCS, SOS, PM and APC
 *   (7-bit and 8-bit) ended by BEL or ST, and every other ESC sequence
 *   (intermediates and a final byte: `ESC 7`, `ESC ( B`, `ESC c`); `\r\n` and
 *   a lone `\r` become `\n`; then every C0 control but `\n` and `\t`, DEL,
 *   every C1 control (NEL U+0085 among them), and the bidirectional controls
 *   (embeddings, overrides and isolates U+202A-U+202E, U+2066-U+2069, the marks
 *   U+200E, U+200F, U+061C) go. An introducer left without its end (an OSC
 *   with no BEL or ST) goes alone, and the text after it stays. Idempotent;
 *   text with none of these is returned unchanged.
 * - `foldedText(s)`: `plainText(s)` on one line, every run of white space
 *   (line breaks of every kind included) as one space, trimmed: for previews.
 * - `oneLine(s)`: `s` as one line that keeps every character readable back:
 *   `\` is `\\`, `\n` `\r` `\t` are written so, and every other character
 *   `plainText` would drop, or that JavaScript or Python reads as a line break
 *   (VT, FF, U+001C-U+001E, U+0085, U+2028, U+2029), is `\uXXXX`. Its result
 *   holds no control character and no line break of any kind; text without
 *   `\` or such characters is returned unchanged. For the values of contract
 *   lines (paths, names). (`text.ts`'s `oneLine(text, max)` is another
 *   thing: a short preview, `foldedText` cut.)
 * - `plainJson(value, indent)`: `JSON.stringify`, with the characters it
 *   leaves raw that `plainText` would drop written `\uXXXX`: the same value.
 */

/** The strings OSC, DCS, SOS, PM, APC (7-bit `ESC ] P X ^ _`, 8-bit U+009D U+0090 U+0098 U+009E U+009F), ended by BEL or ST (`ESC \`, U+009C). */
const STRINGS = /(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)/g
/** CSI: `ESC [` or U+009B, parameter bytes, intermediate bytes, a final byte. */
const CSI = /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]/g
/** Every other ESC sequence: intermediate bytes, then a final byte (two-character ones have none of the first). */
const OTHER_ESCAPES = /\x1b[ -/]*[0-~]/g
/** The bidirectional controls: the Arabic letter mark, the marks, the embeddings and overrides, the isolates. */
const BIDI = "\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"
/** What is left of control: C0 but `\t` and `\n` (`\r` is one too), DEL, C1, and the bidirectional controls. */
const CONTROLS = new RegExp(`[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f${BIDI}]`, "g")
/** A quick test for text that needs none of the work: without the g flag, so it keeps no state. */
const ANY_CONTROL = new RegExp(CONTROLS.source)

export const plainText = (text: string): string =>
  ANY_CONTROL.test(text)
    ? text
        .replace(STRINGS, "")
        .replace(CSI, "")
        .replace(OTHER_ESCAPES, "")
        .replace(/\r\n?|\x85/g, "\n")
        .replace(CONTROLS, "")
    : text

/** `plainText` on one line: runs of white space (`\n`, `\t`, U+2028, U+2029, ...) as one space, trimmed. */
export const foldedText = (text: string): string => plainText(text).replace(/\s+/g, " ").trim()

/** What `oneLine` writes otherwise: `\`, controls, bidirectional controls, and every line break JavaScript or Python knows. */
const UNSAFE_IN_LINE = new RegExp(`[\\\\\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029${BIDI}]`, "g")
const NAMED: Readonly<Record<string, string>> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" }
const unicodeEscape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

export const oneLine = (text: string): string => text.replace(UNSAFE_IN_LINE, (c) => NAMED[c] ?? unicodeEscape(c))

/** What JSON.stringify leaves raw that a terminal or a line reader acts on: DEL, C1, the bidirectional controls, U+2028, U+2029. */
const RAW_IN_JSON = new RegExp(`[\\x7f-\\x9f\\u2028\\u2029${BIDI}]`, "g")

/** `JSON.stringify(value, null, indent)` with those characters as `\uXXXX` too: the same value, and plain text (they can only stand in strings). */
export const plainJson = (value: unknown, indent?: number): string =>
  JSON.stringify(value, null, indent).replace(RAW_IN_JSON, unicodeEscape)
