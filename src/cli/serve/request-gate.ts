/**
 * What `massgen serve` checks of a request before it reads it as a completion:
 * who it is addressed to, what its body is, and how big.
 *
 * Contract: `foreignRequest(request, hosts)` is a 403 `WireError` when the
 * `Host` is not one of `hosts` or the `Origin`, when present, is not the
 * server's own (`lib/loopback.ts`), else null. `unsupportedBody(request)`
 * is a 415 unless the `Content-Type` is `application/json`, alone or with
 * `charset=utf-8`: a browser sends a `text/plain` POST to another origin
 * without asking first, so no other type may start a run. `readJsonBody(request,
 * maxBytes)` reads the body, refusing one over `maxBytes` with a 413 (a declared
 * `Content-Length` at once, without reading it; a chunked body once it passes
 * the limit), and parses it as JSON (400 when it is not).
 */
import { hostJudgement } from "../../lib/loopback.ts"
import { badRequest, type WireError } from "./openai-wire.ts"

export const foreignRequest = (request: Request, hosts: ReadonlySet<string>): WireError | null => {
  const why = hostJudgement(request.headers.get("host"), request.headers.get("origin"), hosts)
  return why === null
    ? null
    : {
        status: 403,
        message: `forbidden: ${why}; without --api-key-env this server answers only requests addressed to it on loopback`,
        type: "invalid_request_error",
        code: "forbidden_host",
      }
}

export const unsupportedBody = (request: Request): WireError | null => {
  const given = request.headers.get("content-type")
  const parts = (given ?? "").split(";").map((p) => p.trim().toLowerCase())
  const json = parts[0] === "application/json" && parts.slice(1).every((p) => p === "" || p === "charset=utf-8")
  if (json) return null
  const named = given === null ? "no Content-Type" : `the Content-Type ${JSON.stringify(given)}`
  return {
    status: 415,
    message: `${named} is not supported: send the body as application/json`,
    type: "invalid_request_error",
    code: "unsupported_media_type",
  }
}

const tooLarge = (maxBytes: number): WireError => ({
  status: 413,
  message: `the request body is over this server's limit of ${maxBytes} bytes (--max-body-bytes)`,
  type: "invalid_request_error",
  code: "body_too_large",
})

export const readJsonBody = async (request: Request, maxBytes: number): Promise<{ readonly json: unknown } | WireError> => {
  const declared = request.headers.get("content-length")
  if (declared !== null && Number(declared) > maxBytes) return tooLarge(maxBytes)
  const chunks: Array<Uint8Array> = []
  let size = 0
  if (request.body !== null) {
    const reader = request.body.getReader()
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.byteLength
      if (size > maxBytes) {
        void reader.cancel()
        return tooLarge(maxBytes)
      }
      chunks.push(read.value)
    }
  }
  try {
    return { json: JSON.parse(Buffer.concat(chunks).toString("utf8")) }
  } catch {
    return badRequest("the request body is not valid JSON")
  }
}
