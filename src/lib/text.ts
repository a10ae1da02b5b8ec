/**
 * Small pieces of text for people: previews, counts, costs.
 *
 * JavaScript strings count UTF-16 units: cutting between the two halves of a
 * surrogate pair (an emoji, say) leaves a lone half, which JSON readers such as
 * jq refuse. `truncate` cuts at most `max` units and never inside a pair.
 * `count(n, "agent")` is "1 agent" or "2 agents". `formatCost` is how every
 * text output writes a cost: `$—` when no call was priced (never `$0.0000`,
 * which would say the calls were free), else dollars to 4 places under a cent
 * and 2 above. `jsonStringBody` is a text as a JSON string writes it, without the quotes.
 */
import { foldedText } from "./plain-text.ts"

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff

export const truncate = (text: string, max: number): string => {
  if (text.length <= max) return text
  return isHighSurrogate(text.charCodeAt(max - 1)) ? text.slice(0, max - 1) : text.slice(0, max)
}

/** `text` on one line (runs of white space as one space, escapes and controls gone: `foldedText`), cut to `max` units with an ellipsis when longer. */
export const oneLine = (text: string, max: number): string => {
  const flat = foldedText(text)
  return flat.length > max ? `${truncate(flat, max - 1)}…` : flat
}

/** `n` and the word, singular for one: "1 answer", "0 answers", "1,200 tokens". */
export const count = (n: number, word: string, plural = `${word}s`): string => `${grouped(n)} ${n === 1 ? word : plural}`

/**
 * `n.toLocaleString("en-US")`: a safe integer's digits grouped by threes
 * here, the rest by `toLocaleString`, whose first call loads the locale data
 * (about 2 ms of a short run).
 */
export const grouped = (n: number): string =>
  Number.isSafeInteger(n) && !Object.is(n, -0)
    ? `${n < 0 ? "-" : ""}${String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ",")}`
    : n.toLocaleString("en-US")

/** A cost in dollars, or `$—` when nothing was priced (null). */
export const formatCost = (cost: number | null): string =>
  cost === null ? "$—" : cost < 0.01 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`

/** `text` as it is written inside a JSON string: `JSON.stringify(text)` without its quotes. */
export const jsonStringBody = (text: string): string => JSON.stringify(text).slice(1, -1)
