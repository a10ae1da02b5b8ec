/**
 * Long texts on the wire of `events.jsonl`: a question, an answer or a reply of
 * `LONG_TEXT_CHARS` characters or more is kept once in the run's blob store
 * (`blobs/<sha256>.txt`) and its line holds the reference `{"$blob": "<sha256>"}`.
 *
 * Contract: only the fields `LONG_TEXT_FIELDS` names are long-text fields
 * (`run_started.question` and each `conversation[].content`, each `media[].data`
 * (a file's base64, referenced however short: a file is never inline in the log),
 * `answer_submitted.content`, `final_answer.content`, `call_end.reply.text`).
 * `referenceLongTexts(wire, store)` puts a reference in each that holds a long
 * text (`store` keeps the text and gives its hash), in place, and says
 * whether it did; `readLongTexts(wire, textOf)` puts the texts back, in place,
 * and is false when a blob is missing (the line does not decode). Events in
 * memory always hold their texts: the references are the line's, not the
 * event's. Tool-call arguments are referenced by the events themselves
 * (`ArgumentsText`, `events/calls.ts`), not here. Pure: the blob store is the
 * caller's.
 *
 * The files that show a text in place (`status.json`'s question,
 * `execution_metadata.yaml`, the derived files, `final/<agent>/context.txt`)
 * show a long text as its *shown form* (`shownLongText`): its first
 * `LONG_TEXT_SHOWN_CHARS` characters, then `…` and a note of its length and
 * its blob, `[1048576 characters in all: blobs/<sha256>.txt]`.
 *
 * Words: a *long text* is a text of `LONG_TEXT_CHARS` characters or more.
 */
import { hashText } from "../../lib/sha256.ts"
import { jsonStringBody } from "../../lib/text.ts"
import { blobPath } from "../run-paths.ts"

/** Texts this long or longer are long texts: kept once in the blob store, referenced from the events and derived files. */
export const LONG_TEXT_CHARS = 64 * 1024

const HASH = /^[0-9a-f]{64}$/

/** Whether `text` is a long text. */
export const isLongText = (text: string): boolean => text.length >= LONG_TEXT_CHARS

/** What a long-text field holds on the wire, mapped: a text, or a reference. `always`: the field is referenced however short (a file's data). */
type MapText = (value: unknown, always?: boolean) => unknown

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** The long-text fields of each event type, as a map over their values in a wire object. */
const LONG_TEXT_FIELDS: Readonly<Record<string, (wire: Record<string, unknown>, f: MapText) => void>> = {
  run_started: (wire, f) => {
    wire.question = f(wire.question)
    const conversation = wire.conversation
    if (Array.isArray(conversation)) wire.conversation = conversation.map((m) => (isRecord(m) ? { ...m, content: f(m.content) } : m))
    const media = wire.media
    if (Array.isArray(media)) wire.media = media.map((m) => (isRecord(m) && "data" in m ? { ...m, data: f(m.data, true) } : m))
  },
  answer_submitted: (wire, f) => {
    wire.content = f(wire.content)
  },
  final_answer: (wire, f) => {
    wire.content = f(wire.content)
  },
  call_end: (wire, f) => {
    if (isRecord(wire.reply)) wire.reply = { ...wire.reply, text: f(wire.reply.text) }
  },
}

/** Whether events of `type` may hold long texts. */
export const mayHoldLongTexts = (type: string): boolean => Object.hasOwn(LONG_TEXT_FIELDS, type)

/** The hash a reference names, or null for any other value. */
export const referencedHash = (value: unknown): string | null => {
  if (!isRecord(value)) return null
  const keys = Object.keys(value)
  const hash = value.$blob
  return keys.length === 1 && typeof hash === "string" && HASH.test(hash) ? hash : null
}

/** `wire` (an event's wire object, `type` its event type) with a reference in each long-text field holding a long text; true when it made one. */
export const referenceLongTexts = (type: string, wire: Record<string, unknown>, store: (text: string) => string): boolean => {
  const fields = LONG_TEXT_FIELDS[type]
  if (fields === undefined) return false
  let made = false
  fields(wire, (v, always) => {
    if (typeof v !== "string" || (always !== true && !isLongText(v))) return v
    made = true
    return { $blob: store(v) }
  })
  return made
}

/** `wire` with the text of each reference in its long-text fields (from `textOf`); false when one is missing. */
export const readLongTexts = (type: string, wire: Record<string, unknown>, textOf: (hash: string) => string | undefined): boolean => {
  const fields = LONG_TEXT_FIELDS[type]
  if (fields === undefined) return true
  let whole = true
  fields(wire, (v) => {
    const hash = referencedHash(v)
    if (hash === null) return v
    const text = textOf(hash)
    if (text === undefined) whole = false
    return text
  })
  return whole
}

/** How much of a long text its shown form holds. */
export const LONG_TEXT_SHOWN_CHARS = 1000

/** `text`, or for a long text its shown form: its beginning and where the whole is (the blob the events reference). */
export const shownLongText = (text: string): string =>
  isLongText(text) ? `${text.slice(0, LONG_TEXT_SHOWN_CHARS)}… [${text.length} characters in all: ${blobPath(hashText(text))}]` : text

/**
 * `text` with every occurrence of each long text of `longs` in its shown form, as it is or written inside a JSON
 * string (the presentation shows answers so): a request as `context.txt` shows it.
 */
export const withLongTextsShown = (text: string, longs: ReadonlyArray<string>): string => {
  let out = text
  const replace = (from: string, to: string) => {
    if (out.length >= from.length && out.includes(from)) out = out.split(from).join(to)
  }
  for (const long of longs) {
    if (!isLongText(long)) continue
    replace(long, shownLongText(long))
    const escaped = jsonStringBody(long)
    if (escaped !== long) replace(escaped, jsonStringBody(shownLongText(long)))
  }
  return out
}
