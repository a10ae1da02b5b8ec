import { describe, expect, test } from "bun:test"
import OpenAI from "openai"
import { parseRetryAfter, scrubSecrets, toBackendError } from "../src/services/backends/errors.ts"

describe("retry-after", () => {
  const now = Date.parse("2026-01-01T00:00:00Z")
  const h = (entries: Record<string, string>) => new Headers(entries)

  test("seconds, milliseconds and HTTP dates are read; absent or unreadable gives null", () => {
    expect(parseRetryAfter(h({ "retry-after": "12" }), now)).toBe(12)
    expect(parseRetryAfter(h({ "retry-after": "1.5" }), now)).toBe(1.5)
    expect(parseRetryAfter(h({ "retry-after-ms": "2500", "retry-after": "9" }), now)).toBe(2.5)
    expect(parseRetryAfter(h({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }), now)).toBe(30)
    expect(parseRetryAfter(h({ "retry-after": "Wed, 31 Dec 2025 23:00:00 GMT" }), now)).toBe(0)
    expect(parseRetryAfter(h({ "retry-after": "soon" }), now)).toBeNull()
    expect(parseRetryAfter(h({}), now)).toBeNull()
    expect(parseRetryAfter(undefined, now)).toBeNull()
  })
})

describe("scrubbing", () => {
  test("the key itself, sk-/gsk_/xai-/AIza keys, bearer tokens and key headers are removed", () => {
    const key = "my-very-own-secret-key"
    const text = [
      `key ${key} echoed`,
      "Authorization: Bearer abc.def-123",
      "sk-proj-ABCDEF123456 and sk-ant-api03-XYZXYZXYZ",
      "gsk_abcdefghijk xai-abcdefghij AIzaSyA1234567890abcdef",
      '{"x-api-key":"zzz-plain-zzz"}',
    ].join("\n")
    const out = scrubSecrets(text, [key])
    for (const secret of [
      key,
      "abc.def-123",
      "sk-proj-ABCDEF123456",
      "sk-ant-api03-XYZXYZXYZ",
      "gsk_abcdefghijk",
      "xai-abcdefghij",
      "AIzaSyA1234567890abcdef",
      "zzz-plain-zzz",
    ]) {
      expect(out).not.toContain(secret)
    }
    expect(out).toContain("echoed")
  })

  test("a BackendError built from an SDK error never carries the key", () => {
    const key = "sk-live-0000111122223333"
    const error = new OpenAI.AuthenticationError(401, { message: `bad key ${key}` }, undefined, new Headers())
    const mapped = toBackendError(error, "open", [key], null, OpenAI)
    expect(mapped).toMatchObject({ reason: "auth", retryable: false })
    expect(mapped.message).not.toContain(key)
  })

  test("timeouts, 408 and 409 are retryable; other 4xx are not", () => {
    expect(toBackendError(new OpenAI.APIConnectionTimeoutError(), "open", [], null, OpenAI)).toMatchObject({
      reason: "timeout",
      retryable: true,
    })
    const status = (s: number) =>
      toBackendError(OpenAI.APIError.generate(s, { message: "x" }, undefined, new Headers()), "open", [], null, OpenAI)
    expect(status(408)).toMatchObject({ reason: "timeout", retryable: true })
    expect(status(409)).toMatchObject({ reason: "server_error", retryable: true })
    expect(status(529)).toMatchObject({ reason: "server_error", retryable: true })
    expect(status(404)).toMatchObject({ reason: "bad_request", retryable: false })
    expect(status(422)).toMatchObject({ reason: "bad_request", retryable: false })
  })

  test("the credentials of a URL are masked wherever a URL appears", () => {
    expect(scrubSecrets("GET https://me:pw@h.example/v1?key=k1&v=2 failed", [])).toBe("GET https://***@h.example/v1?key=***&v=2 failed")
  })
})

describe("a connection error names the endpoint and the cause", () => {
  const failed = (code: string, message: string) =>
    new OpenAI.APIConnectionError({
      message: "Connection error.",
      cause: Object.assign(new TypeError(message), { code, path: "http://u:p@h/v1?key=k" }),
    })
  const endpoint = "https://llm.example:443"

  test("refused, DNS, TLS, reset, timed out; before the reply a network error, during it a stream cut", () => {
    const open = (code: string, message: string) => toBackendError(failed(code, message), "open", [], endpoint, OpenAI).message
    expect(open("ECONNREFUSED", "ECONNREFUSED: Unable to connect.")).toBe(
      `network: cannot connect to ${endpoint}: connection refused (ECONNREFUSED)`,
    )
    expect(open("ENOTFOUND", "getaddrinfo ENOTFOUND llm.example")).toBe(
      `network: cannot connect to ${endpoint}: DNS lookup failed (ENOTFOUND)`,
    )
    expect(open("DEPTH_ZERO_SELF_SIGNED_CERT", "self signed certificate")).toBe(
      `network: cannot connect to ${endpoint}: TLS error: self signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)`,
    )
    expect(open("ETIMEDOUT", "connect ETIMEDOUT")).toBe(`network: cannot connect to ${endpoint}: timed out (ETIMEDOUT)`)
    expect(toBackendError(failed("ECONNRESET", "socket closed"), "read", [], endpoint, OpenAI)).toMatchObject({
      reason: "stream_cut",
      detail: `stream from ${endpoint} broke: connection reset (ECONNRESET)`,
      retryable: true,
    })
    expect(toBackendError(new OpenAI.APIConnectionTimeoutError(), "open", [], endpoint, OpenAI).message).toBe(
      `timeout: no reply from ${endpoint}: request timed out`,
    )
  })
})
