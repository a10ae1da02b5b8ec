/**
 * Turns whatever an SDK call throws into a `BackendError`, with secrets scrubbed.
 *
 * `toBackendError(e, phase, secrets, endpoint, sdk)` classifies by HTTP status when there is one
 * (429 rate_limited, 5xx server_error, 401/403 auth, other 4xx bad_request), by
 * the error classes of the backend's SDK otherwise (`sdk`: the SDK's client
 * class, which carries them; passed in, so that this file loads no SDK), and by *phase*: a transport failure while the reply
 * is being read is a `stream_cut`, before the reply started a `network` error.
 * A transport failure names the *endpoint* (`scheme://host:port`, never a
 * credential or a path) and its cause: connection refused, DNS lookup failed,
 * TLS error, connection reset, timed out, or the transport's own words.
 * Every detail passes through `scrubSecrets`, so no key and no credential of
 * a URL reaches a log.
 *
 * Words: *phase* `open` is up to the response headers, `read` is the SSE body.
 */
import type { APIError as AnthropicApiError } from "@anthropic-ai/sdk/core/error"
import type { APIError as OpenAiApiError } from "openai/core/error"
import { maskUrlCredentials } from "../../lib/safe-url.ts"
import { BackendError, type BackendErrorReason } from "./backend.ts"

export type Phase = "open" | "read"

type ErrorClass<E = unknown> = abstract new (...args: never) => E

/** What `toBackendError` reads of an SDK's HTTP error: its status, the response's headers, the error body of a stream. */
type HttpErrorShape = Pick<OpenAiApiError | AnthropicApiError, "message"> & {
  readonly status?: number | undefined
  readonly headers?: Headers | undefined
  readonly error?: unknown
}

/** The error classes of one SDK; its client class (`OpenAI`, `Anthropic`) carries them. */
export interface SdkErrors {
  readonly APIError: ErrorClass<HttpErrorShape>
  readonly APIUserAbortError: ErrorClass
  readonly APIConnectionError: ErrorClass
  readonly APIConnectionTimeoutError: ErrorClass
}

const MAX_DETAIL = 600

const TOKEN_PATTERNS: ReadonlyArray<readonly [RegExp, string]> = [
  [/Bearer\s+[^\s"',;]+/gi, "Bearer ***"],
  [/\bsk-[A-Za-z0-9_-]{6,}/g, "***"],
  [/\bgsk_[A-Za-z0-9]{6,}/g, "***"],
  [/\bxai-[A-Za-z0-9]{6,}/g, "***"],
  [/\bAIza[A-Za-z0-9_-]{10,}/g, "***"],
  [/((?:x-api-key|api[_-]?key|authorization)["']?\s*[:=]\s*["']?)[^\s"',;}]+/gi, "$1***"],
]

/**
 * Removes every occurrence of the given secrets, anything shaped like an API
 * key or bearer token, and the credentials of every URL.
 */
export const scrubSecrets = (text: string, secrets: ReadonlyArray<string>): string => {
  let out = text
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join("***")
  for (const [pattern, replacement] of TOKEN_PATTERNS) out = out.replace(pattern, replacement)
  return maskUrlCredentials(out)
}

/**
 * Seconds to wait from `retry-after-ms`, or `retry-after` as seconds or an HTTP date;
 * null when absent or unreadable. `nowMs` is the current time for the date form.
 */
export const parseRetryAfter = (headers: Headers | undefined, nowMs: number): number | null => {
  if (headers === undefined) return null
  const ms = headers.get("retry-after-ms")
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms))) return Math.max(0, Number(ms) / 1000)
  const value = headers.get("retry-after")?.trim()
  if (value === undefined || value === "") return null
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value)
  const at = Date.parse(value)
  return Number.isNaN(at) ? null : Math.max(0, Math.round((at - nowMs) / 1000))
}

const make = (reason: BackendErrorReason, detail: string, retryable: boolean, retryAfterSeconds: number | null = null) =>
  new BackendError({ reason, detail, retryable, retryAfterSeconds })

const byStatus = (status: number): { reason: BackendErrorReason; retryable: boolean } => {
  if (status === 429) return { reason: "rate_limited", retryable: true }
  if (status === 408) return { reason: "timeout", retryable: true }
  if (status === 409 || status >= 500) return { reason: "server_error", retryable: true }
  if (status === 401 || status === 403) return { reason: "auth", retryable: false }
  return { reason: "bad_request", retryable: false }
}

/** A provider error sent inside the stream (no status): classify by its type or code text. */
const byErrorType = (body: unknown): { reason: BackendErrorReason; retryable: boolean } => {
  const text = JSON.stringify(body ?? "").toLowerCase()
  if (text.includes("rate_limit")) return { reason: "rate_limited", retryable: true }
  if (text.includes("authentication") || text.includes("permission")) return { reason: "auth", retryable: false }
  if (text.includes("invalid_request") || text.includes("invalid_prompt")) return { reason: "bad_request", retryable: false }
  return { reason: "server_error", retryable: true }
}

const messageOf = (e: unknown): string => {
  if (e instanceof Error) {
    const code = codeOf(e)
    return code !== null && !e.message.includes(code) ? `${e.message} (${code})` : e.message
  }
  return String(e)
}

const codeOf = (e: unknown): string | null => {
  const code = (e as { code?: unknown } | null)?.code
  return typeof code === "string" ? code : null
}

/** The innermost error of a `cause` chain that has a code (the transport's), else the innermost one. */
const transportError = (e: unknown): unknown => {
  let found = e
  let inner = e
  for (let depth = 0; depth < 5 && inner instanceof Error && inner.cause !== undefined; depth++) {
    inner = inner.cause
    if (codeOf(inner) !== null || codeOf(found) === null) found = inner
  }
  return found
}

const TLS_CODE = /^(EPROTO|ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH|TLS)/

/** What went wrong on the wire, in words: the cause of a connection error. */
export const transportCause = (e: unknown): string => {
  const inner = transportError(e)
  const code = codeOf(inner)
  if (code === "ECONNREFUSED" || code === "ConnectionRefused") return `connection refused (${code})`
  if (code !== null && /^(ENOTFOUND|EAI_)/.test(code)) return `DNS lookup failed (${code})`
  if (code !== null && TLS_CODE.test(code)) return `TLS error: ${messageOf(inner)}`
  if (code === "ECONNRESET" || code === "ConnectionClosed" || code === "EPIPE") return `connection reset (${code})`
  if (code === "ETIMEDOUT" || code === "Timeout") return `timed out (${code})`
  return messageOf(inner)
}

/** The `BackendError` for anything thrown by an SDK call or a stream assembler. */
export const toBackendError = (
  e: unknown,
  phase: Phase,
  secrets: ReadonlyArray<string>,
  endpoint: string | null = null,
  sdk: SdkErrors | null = null,
): BackendError => {
  if (e instanceof BackendError) return make(e.reason, scrubSecrets(e.detail, secrets), e.retryable, e.retryAfterSeconds)
  const scrub = (text: string) => scrubSecrets(text, secrets).slice(0, MAX_DETAIL)
  const detail = (prefix: string) => scrub(`${prefix}${messageOf(e)}`)
  const where = endpoint ?? "the server"
  const cut = () => make("stream_cut", scrub(`stream from ${where} broke: ${transportCause(e)}`), true)
  const unreachable = () => make("network", scrub(`cannot connect to ${where}: ${transportCause(e)}`), true)
  if (sdk !== null) {
    if (e instanceof sdk.APIUserAbortError) return make("network", detail("request aborted: "), true)
    if (e instanceof sdk.APIConnectionTimeoutError) return make("timeout", scrub(`no reply from ${where}: request timed out`), true)
    if (e instanceof sdk.APIConnectionError) return phase === "read" ? cut() : unreachable()
    if (e instanceof sdk.APIError) {
      if (typeof e.status === "number") {
        const { reason, retryable } = byStatus(e.status)
        const retryAfter = e.status === 429 ? parseRetryAfter(e.headers, Date.now()) : null
        return make(reason, detail(e.message.startsWith(String(e.status)) ? "HTTP " : `HTTP ${e.status}: `), retryable, retryAfter)
      }
      const { reason, retryable } = byErrorType(e.error)
      return make(reason, detail("error event in stream: "), retryable)
    }
  }
  if (e instanceof SyntaxError) return make("bad_reply", detail("unreadable reply: "), true)
  return phase === "read" ? cut() : unreachable()
}
