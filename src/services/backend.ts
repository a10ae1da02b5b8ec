/**
 * The LLM backend service: one streaming call at a time, for one agent.
 *
 * A `Backend` is made per agent from its config (`backend-factory.ts`). `stream`
 * emits text and reasoning deltas as they arrive and ends with one `done` chunk
 * holding the whole reply; interrupting the stream aborts the request. A call
 * that fails fails with a `BackendError` whose `retryable` says whether trying
 * again may help and `retryAfterSeconds` what the provider asked for (429).
 * Retries, timeouts and accounting are the caller's (`agent-round.ts`).
 *
 * The `Backends` tag gives the orchestrator a backend by agent id, so tests can
 * swap the whole set.
 */
import { Context, Schema, type Stream } from "effect"
import type { LlmChunk, LlmRequest } from "../domain/llm.ts"

export const BackendErrorReason = Schema.Literal(
  "rate_limited",
  "server_error",
  "network",
  "timeout",
  "bad_request",
  "auth",
  "bad_reply",
  "stream_cut",
  "scripted_failure",
)
export type BackendErrorReason = typeof BackendErrorReason.Type

export class BackendError extends Schema.TaggedError<BackendError>()("BackendError", {
  reason: BackendErrorReason,
  detail: Schema.String,
  retryable: Schema.Boolean,
  retryAfterSeconds: Schema.NullOr(Schema.Number),
}) {
  override get message(): string {
    return `${this.reason.replace("_", " ")}: ${this.detail}`
  }
}

export interface Backend {
  /** Backend type as configured (`scripted`, `openai`, `claude`, ...). */
  readonly type: string
  readonly model: string | null
  /** How many times a retryable failure is tried again. */
  readonly maxRetries: number
  /** Seconds one call may take before it fails with reason `timeout`; null for none. */
  readonly callTimeoutSeconds: number | null
  readonly stream: (request: LlmRequest) => Stream.Stream<LlmChunk, BackendError>
}

export class Backends extends Context.Tag("massgen/Backends")<
  Backends,
  { readonly forAgent: (agentId: string) => Backend }
>() {}
