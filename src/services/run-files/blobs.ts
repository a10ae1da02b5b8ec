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
 * Words: a *blob* is one stored text; its *reference* names it by hash.
 */
export const BLOB_MIN_CHARS = 256
/** Smaller arrays and objects stay in the call log: most are one call's own. */
export const BLOB_MIN_JSON_CHARS = 1024
export const BLOBS_DIR = "blobs"

export const blobPath = (hash: string): string => `${BLOBS_DIR}/${hash}.txt`

/** The SHA-256 of `text` (a string as its UTF-8), in hex: Bun's hasher, as `node:crypto` would give it without loading Bun's node streams (~2 ms of a run's start). */
export const hashText = (text: string | Uint8Array): string => Bun.CryptoHasher.hash("sha256", text, "hex")

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

/**
 * `value` as one line of compact JSON, its long strings and large arrays
 * stored in `sink` and referenced. A large array met again (the same object,
 * never changed: requests are immutable) is its reference again.
 */
export const compactJsonText = (value: unknown, sink: BlobSink): string => {
  /** References written so far: an array that added none may be a blob itself. */
  let refs = 0
  const ref = (kind: "$blob" | "$json", text: string): string => {
    refs += 1
    return `{"${kind}":"${sink.store(text)}"}`
  }
  const write = (v: unknown, top: boolean): string => {
    if (typeof v === "string") return v.length < BLOB_MIN_CHARS ? JSON.stringify(v) : ref("$blob", v)
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
      for (const [k, x] of Object.entries(v))
        Object.defineProperty(out, k, { value: expand(x), enumerable: true, writable: true, configurable: true })
      return out
    }
    return v
  }
  return expand(value)
}
