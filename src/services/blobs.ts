/**
 * The blob store of a run: long texts kept once, by content hash, under `blobs/`.
 *
 * Call logs (`llm_log/<n>.json`) repeat the same long texts call after call:
 * the system prompt, the answers every round shows, the tools a round offers
 * (with every agent a vote may name), the reply again inside the provider's
 * raw reply. `compactJsonText` writes a JSON value as one line of compact JSON
 * in which every string of at least `BLOB_MIN_CHARS` characters is a reference
 * `{"$blob": "<sha256 hex>"}` to that text, and every array or object (but the
 * value itself) that holds no reference and whose compact JSON has at least
 * `BLOB_MIN_JSON_CHARS` characters is a reference `{"$json": "<sha256 hex>"}`
 * to that JSON text: a block that repeats whole (the tools, the answers a
 * round shows), while the values around references are mostly one call's own. Each text goes to `put`, which stores it as
 * `blobs/<hash>.txt` when the run does not have it yet. `expandJson` puts the
 * texts and values back; a
 * reference whose blob is missing or is not JSON reads as `null`, so a damaged
 * store makes a call log incomplete (replay then says what is missing), never
 * a crash. Texts are UTF-8; the hash is of those bytes. Logs written before
 * JSON blobs (pretty-printed, long strings only) read the same way.
 *
 * Words: a *blob* is one stored text; its *reference* names it by hash.
 */
import { createHash } from "node:crypto"

export const BLOB_MIN_CHARS = 256
/** Smaller arrays and objects stay in the call log: most are one call's own. */
export const BLOB_MIN_JSON_CHARS = 1024
export const BLOBS_DIR = "blobs"

export const blobPath = (hash: string): string => `${BLOBS_DIR}/${hash}.txt`

export const hashText = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

const HASH = /^[0-9a-f]{64}$/

/** The one key of a reference (`$blob` or `$json`) and its hash, or null for any other value. */
const refOf = (value: unknown): { readonly kind: "$blob" | "$json"; readonly hash: string } | null => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null
  const keys = Object.keys(value)
  if (keys.length !== 1) return null
  const kind = keys[0]
  const hash = (value as Record<string, unknown>)[kind!]
  return (kind === "$blob" || kind === "$json") && typeof hash === "string" ? { kind, hash } : null
}

/**
 * Stores texts by hash through `put`, hashing each distinct text once: a run
 * logs the same system prompt, answers and tools call after call.
 */
export const blobWriter = (put: (hash: string, text: string) => void) => {
  const hashes = new Map<string, string>()
  return (text: string): string => {
    let hash = hashes.get(text)
    if (hash === undefined) {
      hash = hashText(text)
      hashes.set(text, hash)
      put(hash, text)
    }
    return hash
  }
}

/** What JSON.stringify leaves out of an object and writes as null in an array. */
const absent = (v: unknown): boolean => v === undefined || typeof v === "function" || typeof v === "symbol"

/**
 * `value` as one line of compact JSON, its long strings and large arrays and
 * objects stored through `store` (text to hash, see `blobWriter`) and referenced.
 */
export const compactJsonText = (value: unknown, store: (text: string) => string): string => {
  /** Whether the last value written holds a reference. */
  let referenced = false
  const write = (v: unknown, top: boolean): string => {
    referenced = false
    if (typeof v === "string") {
      if (v.length < BLOB_MIN_CHARS) return JSON.stringify(v)
      referenced = true
      return `{"$blob":"${store(v)}"}`
    }
    if (typeof v !== "object" || v === null) return JSON.stringify(v) ?? "null"
    const json = (v as { toJSON?: unknown }).toJSON
    if (typeof json === "function") return write(json.call(v), top)
    let text: string
    let inner = false
    if (Array.isArray(v)) {
      const parts: Array<string> = []
      for (const x of v) {
        parts.push(absent(x) ? "null" : write(x, false))
        inner ||= referenced
      }
      text = `[${parts.join(",")}]`
    } else {
      const parts: Array<string> = []
      for (const [k, x] of Object.entries(v)) {
        if (absent(x)) continue
        parts.push(`${JSON.stringify(k)}:${write(x, false)}`)
        inner ||= referenced
      }
      text = `{${parts.join(",")}}`
    }
    referenced = inner
    if (top || inner || text.length < BLOB_MIN_JSON_CHARS) return text
    referenced = true
    return `{"$json":"${store(text)}"}`
  }
  return write(value, true)
}

/** `value` with every reference replaced by what it names (`get` by hash), or by null when the blob is missing or not JSON. */
export const expandJson = (value: unknown, get: (hash: string) => string | undefined): unknown => {
  // The JSON blobs being expanded: a damaged store could make them name each other.
  const open = new Set<string>()
  const expand = (v: unknown): unknown => {
    const ref = refOf(v)
    if (ref !== null) {
      const text = HASH.test(ref.hash) && !open.has(ref.hash) ? get(ref.hash) : undefined
      if (text === undefined) return null
      if (ref.kind === "$blob") return text
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
      for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k, { value: expand(x), enumerable: true, writable: true, configurable: true })
      return out
    }
    return v
  }
  return expand(value)
}
