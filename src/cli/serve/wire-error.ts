/**
 * An error of `massgen serve` as OpenAI gives it (`WireError`, with its HTTP status), and a 400 of one (`badRequest`).
 *
 * Contract: `openai-wire.ts` writes it back as `{"error": {message, type, param, code}}`;
 * `isObject` says whether a parsed JSON value is an object (not an array). Pure.
 */

/** An error as OpenAI gives it, with the HTTP status it goes with. */
export interface WireError {
  readonly status: number
  readonly message: string
  readonly type:
    | "invalid_request_error"
    | "authentication_error"
    | "not_found_error"
    | "rate_limit_error"
    | "server_error"
    | "timeout_error"
    | "service_unavailable"
  readonly code: string | null
  readonly param?: string
}

export const badRequest = (message: string, param?: string, code: string | null = null): WireError => ({
  status: 400,
  message,
  type: "invalid_request_error",
  code,
  ...(param !== undefined ? { param } : {}),
})

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
