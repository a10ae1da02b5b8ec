/**
 * The blob store of a run: long texts kept once, by content hash, under `blobs/`.
 *
 * Call logs (`llm_log/calls.jsonl`, `call-logs.ts`) repeat the same long texts call after call:
 * the system prompt, the answers every round shows, the tools a round offers
 * (with every agent a vote may name), the reply again inside the provider's
 * raw reply. `compactJsonText` writes a JSON value as one line of compact JSON
 * in which every string of at least `BLOB_MIN_CHARS` characters is a reference
 * `{"$blob": "<sha256 hex>"}` to that text, and every array (but the value
 * itself) that holds no such string and whose compact JSON has at least
 * `BLOB_MIN_JSON_CHARS` characters is a reference `{"$json": "<sha256 hex>"}`
 * to that JSON text: the blocks that repeat whole (the tools, the answers a
 * round shows), while the objects around them are mostly one call's own. Each text goes to `put`, which stores it as
 * `blobs/<hash>.txt` when the run does not have it yet. `expandJson` puts the
 * texts and values back; a
 * reference whose blob is missing or is not JSON reads as `null`, so a damaged
 * store makes a call log incomplete (replay then says what is missing), never
 * a crash. Texts are UTF-8; the hash is of those bytes. Logs written before
 * JSON blobs (pretty-printed, long strings only) read the same way.
 *
 * The run's long texts (its question and long answers: `domain/log/long-texts.ts`),
 * which the events keep in the same store, are not written again inside the
 * prompts that quote them: a string holding one is `{"$cat": [...]}`, its
 * pieces in order, the long text itself `{"$blob": ...}`, or `{"$esc": ...}`
 * where the string holds it as written inside a JSON string (the presentation
 * shows answers so, and `new_answer`'s arguments hold one so). `blobs/` is
 * the one blob store of the log directory: these, the call logs' and the
 * events' (`services/event-store/storage.ts`) share it, a text stored once
 * whoever stores it first.
 *
 * Words: a *blob* is one stored text; its *reference* names it by hash.
 */
import { hashText } from "../../lib/sha256.ts"
import { jsonStringBody } from "../../lib/text.ts"

export const BLOB_MIN_CHARS = 256
/** Smaller arrays and objects stay in the call log: most are one call's own. */
export const BLOB_MIN_JSON_CHARS = 1024

const HASH = /^[0-9a-f]{64}$/

/** The one key of a reference (`$blob`, `$esc` or `$json`) and its hash, or null for any other value. */
const refOf = (value: unknown): { readonly kind: "$blob" | "$esc" | "$json"; readonly hash: string } | null => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null
  const keys = Object.keys(value)
  if (keys.length !== 1) return null
  const kind = keys[0]
  const hash = (value as Record<string, unknown>)[kind!]
  return (kind === "$blob" || kind === "$esc" || kind === "$json") && typeof hash === "string" ? { kind, hash } : null
}

/** The pieces of a `{"$cat": [...]}`, or null for any other value. */
const catOf = (value: unknown): ReadonlyArray<unknown> | null => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null
  const pieces = (value as Record<string, unknown>).$cat
  return Array.isArray(pieces) && Object.keys(value).length === 1 ? pieces : null
}

/** Where `compactJsonText` stores texts: by hash, each distinct text hashed once. */
export interface BlobSink {
  /** Stores `text` (when new) and returns its hash. */
  readonly store: (text: string) => string
  /** What each large array already written was written as: rounds share their tools and shown answers. */
  readonly arrays: WeakMap<object, string>
}

/** A sink handing each new text to `put` with its hash: a run logs the same system prompt, answers and tools call after call. */
export const blobWriter = (put: (hash: string, text: string) => void): BlobSink => {
  const hashes = new Map<string, string>()
  return {
    store: (text) => {
      let hash = hashes.get(text)
      if (hash === undefined) {
        hash = hashText(text)
        hashes.set(text, hash)
        put(hash, text)
      }
      return hash
    },
    arrays: new WeakMap(),
  }
}

/** What JSON.stringify leaves out of an object and writes as null in an array. */
const absent = (v: unknown): boolean => v === undefined || typeof v === "function" || typeof v === "symbol"

/**
 * Whether compact JSON `text` may hold a string of `BLOB_MIN_CHARS` or more
 * characters: a run that long between two quotes (a string's text is never
 * shorter than the string). It may say yes for a value that has none.
 */
const LONG_RUN = new RegExp(`"(?:[^"\\\\]|\\\\.){${BLOB_MIN_CHARS},}"`)

/** Arrays this long are written by JSON.stringify when they can hold no long string; shorter ones item by item. */
const LONG_ARRAY = 16

/** A long text's occurrence in a longer one: as it is, or `escaped` as inside a JSON string (the arguments of `new_answer`). */
export interface LongTextPiece {
  readonly long: string
  readonly escaped: boolean
}

/** The JSON-escaped forms of the last long texts looked for: a run looks for the same few in every string of every call log. */
const escapedForms = new Map<string, string>()
const ESCAPED_FORMS_KEPT = 16

const escapedForm = (long: string): string => {
  let escaped = escapedForms.get(long)
  if (escaped === undefined) {
    escaped = jsonStringBody(long)
    if (escapedForms.size >= ESCAPED_FORMS_KEPT) escapedForms.delete(escapedForms.keys().next().value!)
    escapedForms.set(long, escaped)
  }
  return escaped
}

/**
 * What `splitAtLongTexts` looks for in `s`: each long text, and its JSON-escaped form where that differs
 * (which holds a backslash: a string with none cannot hold it, and it is not made).
 */
const needlesOf = (s: string, longs: ReadonlyArray<string>): ReadonlyArray<readonly [string, LongTextPiece]> => {
  const escapes = s.includes("\\")
  return longs.flatMap((long) => {
    if (!escapes) return [[long, { long, escaped: false }] as const]
    const escaped = escapedForm(long)
    const raw = [long, { long, escaped: false }] as const
    return escaped === long ? [raw] : [raw, [escaped, { long, escaped: true }] as const]
  })
}

/**
 * `s` cut around each occurrence of the texts `longs` (long texts, `domain/log/long-texts.ts`), as they are
 * or JSON-escaped, in order: the pieces between them, and each occurrence; null when `s` holds none.
 */
export const splitAtLongTexts = (s: string, longs: ReadonlyArray<string>): Array<string | LongTextPiece> | null => {
  const needles = needlesOf(s, longs)
  const parts: Array<string | LongTextPiece> = []
  let at = 0
  for (;;) {
    let found = -1
    let which: readonly [string, LongTextPiece] | null = null
    for (const needle of needles) {
      if (needle[0].length > s.length - at) continue
      const i = s.indexOf(needle[0], at)
      if (i !== -1 && (found === -1 || i < found)) {
        found = i
        which = needle
      }
    }
    if (which === null) break
    if (found > at) parts.push(s.slice(at, found))
    parts.push(which[1])
    at = found + which[0].length
  }
  if (parts.length === 0) return null
  if (at < s.length) parts.push(s.slice(at))
  return parts
}

/**
 * `value` as one line of compact JSON, its long strings and large arrays
 * stored in `sink` and referenced. A large array met again (the same object,
 * never changed: requests are immutable) is its reference again. A long
 * string that holds one of the texts `longs` (the run's question and long
 * answers, which the events keep in the blob store) is `{"$cat": [...]}`, its
 * pieces in order, each of them a text or a reference: a prompt that quotes
 * the question references its blob rather than holding it again.
 */
export const compactJsonText = (value: unknown, sink: BlobSink, longs: ReadonlyArray<string> = []): string => {
  /** References written so far: an array that added none may be a blob itself. */
  let refs = 0
  const ref = (kind: "$blob" | "$esc" | "$json", text: string): string => {
    refs += 1
    return `{"${kind}":"${sink.store(text)}"}`
  }
  const write = (v: unknown, top: boolean): string => {
    if (typeof v === "string") {
      if (v.length < BLOB_MIN_CHARS) return JSON.stringify(v)
      const parts = longs.length === 0 ? null : splitAtLongTexts(v, longs)
      if (parts === null) return ref("$blob", v)
      return `{"$cat":[${parts.map((p) => (typeof p === "string" ? write(p, false) : ref(p.escaped ? "$esc" : "$blob", p.long))).join(",")}]}`
    }
    if (typeof v !== "object" || v === null) return JSON.stringify(v) ?? "null"
    const json = (v as { toJSON?: unknown }).toJSON
    if (typeof json === "function") return write(json.call(v), top)
    if (!Array.isArray(v)) {
      const parts: Array<string> = []
      for (const [k, x] of Object.entries(v)) if (!absent(x)) parts.push(`${JSON.stringify(k)}:${write(x, false)}`)
      return `{${parts.join(",")}}`
    }
    const known = top ? undefined : sink.arrays.get(v)
    if (known !== undefined) {
      refs += 1
      return known
    }
    const before = refs
    let text = v.length >= LONG_ARRAY ? JSON.stringify(v) : ""
    if (text === "" || (text.length >= BLOB_MIN_CHARS && LONG_RUN.test(text))) {
      text = `[${v.map((x) => (absent(x) ? "null" : write(x, false))).join(",")}]`
    }
    if (top || refs !== before || text.length < BLOB_MIN_JSON_CHARS) return text
    const reference = ref("$json", text)
    sink.arrays.set(v, reference)
    return reference
  }
  return write(value, true)
}

/**
 * `value` with every reference replaced by what it names (`get` by hash), or by null when the blob is missing or not JSON,
 * and every `$cat` by its pieces joined (null when one is not a text).
 */
export const expandJson = (value: unknown, get: (hash: string) => string | undefined): unknown => {
  // The JSON blobs being expanded: a damaged store could make them name each other.
  const open = new Set<string>()
  const expand = (v: unknown): unknown => {
    const pieces = catOf(v)
    if (pieces !== null) {
      const texts = pieces.map(expand)
      return texts.every((t) => typeof t === "string") ? texts.join("") : null
    }
    const ref = refOf(v)
    if (ref !== null) {
      const text = HASH.test(ref.hash) && !open.has(ref.hash) ? get(ref.hash) : undefined
      if (text === undefined) return null
      if (ref.kind === "$blob") return text
      if (ref.kind === "$esc") return jsonStringBody(text)
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        return null
      }
      open.add(ref.hash)
      const out = expand(parsed)
      open.delete(ref.hash)
      return out
    }
    if (Array.isArray(v)) return v.map(expand)
    if (typeof v === "object" && v !== null) {
      const out: Record<string, unknown> = {}
      // defineProperty: a key "__proto__" (JSON.parse makes it an own key) stays a key.
      for (const [k, x] of Object.entries(v))
        Object.defineProperty(out, k, { value: expand(x), enumerable: true, writable: true, configurable: true })
      return out
    }
    return v
  }
  return expand(value)
}
