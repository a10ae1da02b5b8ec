/**
 * The blob store of a run: long texts kept once, by content hash, under `blobs/`.
 *
 * Call logs (`llm_log/<n>.json`) repeat the same long texts call after call:
 * the system prompt, the answers every round shows, the reply again inside the
 * provider's raw reply. `compactJson` replaces every string of at least
 * `BLOB_MIN_CHARS` characters in a JSON value by a reference,
 * `{"$blob": "<sha256 hex>"}`, and hands the text to `put`, which stores it as
 * `blobs/<hash>.txt` when the run does not have it yet. `expandJson` puts the
 * texts back; a reference whose blob is missing reads as `null`, so a damaged
 * store makes a call log incomplete (replay then says what is missing), never
 * a crash. Texts are UTF-8; the hash is of those bytes.
 *
 * Words: a *blob* is one stored text; its *reference* names it by hash.
 */
import { createHash } from "node:crypto"

export const BLOB_MIN_CHARS = 256
export const BLOBS_DIR = "blobs"

export const blobPath = (hash: string): string => `${BLOBS_DIR}/${hash}.txt`

export const hashText = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

const isRef = (value: unknown): value is { readonly $blob: string } =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 1 && typeof (value as { $blob?: unknown }).$blob === "string"

/** `value` with every long string stored through `put` (text to hash) and referenced. */
export const compactJson = (value: unknown, put: (hash: string, text: string) => void): unknown => {
  if (typeof value === "string") {
    if (value.length < BLOB_MIN_CHARS) return value
    const hash = hashText(value)
    put(hash, value)
    return { $blob: hash }
  }
  if (Array.isArray(value)) return value.map((v) => compactJson(v, put))
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = compactJson(v, put)
    return out
  }
  return value
}

/** `value` with every reference replaced by its text (`get` by hash), or by null when the blob is missing. */
export const expandJson = (value: unknown, get: (hash: string) => string | undefined): unknown => {
  if (isRef(value)) return /^[0-9a-f]{64}$/.test(value.$blob) ? (get(value.$blob) ?? null) : null
  if (Array.isArray(value)) return value.map((v) => expandJson(v, get))
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = expandJson(v, get)
    return out
  }
  return value
}
