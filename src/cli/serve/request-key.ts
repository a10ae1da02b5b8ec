/**
 * What makes two requests to `massgen serve` one run: the request's key.
 *
 * Contract: `requestKey(endpoint, body, model, idempotencyKey)` gives the
 * *content key*, the SHA-256 of the request's canonical JSON (keys sorted at
 * every depth, the served model filled in, without the fields that only say
 * how the answer is carried: `stream`, `stream_options`), so the same model,
 * messages and options are the same key however the client spaces or orders
 * them and whether it streams; and, when the client sends an
 * `Idempotency-Key` header, the *idempotency key*, the SHA-256 of that value
 * with the model (the header's text itself is never written anywhere). Pure.
 *
 * `REQUEST_FILE` is the file of a served run's log directory that records its
 * keys (`requestRecord`/`readRequestRecord`), written before the run's first
 * event: a restarted server finds its runs by it (`run-registry.ts`).
 */
import { createHash } from "node:crypto"

export interface RequestKey {
  /** The SHA-256 (hex) of the request's canonical content. */
  readonly content: string
  /** The SHA-256 (hex) of the client's `Idempotency-Key` header with the model; null without the header. */
  readonly idempotency: string | null
}

/** Fields that say how the answer travels, not what is asked. */
const TRANSPORT = new Set(["stream", "stream_options"])

const canonical = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== "object" || value === null) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) out[key] = canonical((value as Record<string, unknown>)[key])
  return out
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex")

export const requestKey = (
  endpoint: string,
  body: Readonly<Record<string, unknown>>,
  model: string,
  idempotencyKey: string | null,
): RequestKey => {
  const asked: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(body)) if (!TRANSPORT.has(k) && v !== undefined) asked[k] = v
  asked.model = model
  return {
    content: sha256(JSON.stringify(canonical({ endpoint, request: asked }))),
    idempotency: idempotencyKey === null || idempotencyKey === "" ? null : sha256(JSON.stringify([model, idempotencyKey])),
  }
}

/** The file of a served run's log directory that holds its request's keys. */
export const REQUEST_FILE = "serve_request.json"

/** The text of `REQUEST_FILE` for a run of `model`. */
export const requestRecord = (key: RequestKey, model: string): string =>
  `${JSON.stringify({ content_key: key.content, idempotency_key: key.idempotency, model })}\n`

/** The keys `REQUEST_FILE`'s text records; null for a text that is not such a record. */
export const readRequestRecord = (text: string): RequestKey | null => {
  try {
    const r = JSON.parse(text) as Record<string, unknown>
    if (typeof r.content_key !== "string") return null
    return { content: r.content_key, idempotency: typeof r.idempotency_key === "string" ? r.idempotency_key : null }
  } catch {
    return null
  }
}
