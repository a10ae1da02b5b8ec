/**
 * The LLM backend service: one streaming call at a time, for one agent.
 *
 * A `Backend` is made per agent from its config (`factory.ts`). `call`
 * hands text and reasoning deltas to `onChunk` as they arrive and succeeds with
 * the whole reply; interrupting it aborts the request. (A callback, not an
 * Effect `Stream`: a call through a Stream cost about 0.9 ms of CPU, this way
 * 0.05 ms, and every reply of a layer waits on the ones before it.) A call
 * that fails fails with a `BackendError` whose `retryable` says whether trying
 * again may help and `retryAfterSeconds` what the provider asked for (429).
 * A reply that passes the backend's cap (`max_reply_bytes`) fails its call with
 * `reply_too_large`, not retryable: the same request would stream as much again.
 * Retries, timeouts and accounting are the caller's (`agent-round.ts`).
 *
 * The `Backends` tag gives the orchestrator a backend by agent id, so tests can
 * swap the whole set.
 */
import { Context, type Effect, Schema } from "effect"
import type { LlmChunk, LlmReply, LlmRequest } from "../../domain/llm.ts"

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
  /** The reply passed the backend's `max_reply_bytes`: the request was aborted, and the call is not tried again. */
  "reply_too_large",
)
export type BackendErrorReason = typeof BackendErrorReason.Type

export class BackendError extends Schema.TaggedError<BackendError>()("BackendError", {
  reason: BackendErrorReason,
  detail: Schema.String,
  retryable: Schema.Boolean,
  retryAfterSeconds: Schema.NullOr(Schema.Number),
}) {
  override get message(): string {
    return `${this.reason.replaceAll("_", " ")}: ${this.detail}`
  }
}

/** Takes one streamed delta of a call, as it arrives. */
export type OnChunk = (chunk: LlmChunk) => Effect.Effect<void>

export interface Backend {
  /** Backend type as configured (`scripted`, `openai`, `claude`, ...). */
  readonly type: string
  readonly model: string | null
  /** Where its calls go, `scheme://host:port` (no credentials), as messages name it; none for the scripted backend. */
  readonly endpoint?: string
  /** How many times a retryable failure is tried again. */
  readonly maxRetries: number
  /** Seconds one call may take before it fails with reason `timeout`; null for none. */
  readonly callTimeoutSeconds: number | null
  readonly call: (request: LlmRequest, onChunk: OnChunk) => Effect.Effect<LlmReply, BackendError>
  /** Makes one image from `prompt` with the provider's images API (`openai` only): the PNG's bytes in base64, and the model that made it. */
  readonly generateImage?: (
    prompt: string,
    size: string | null,
  ) => Effect.Effect<{ readonly data: string; readonly model: string }, BackendError>
  /** The backend as it runs in the run whose log directory is `logDir` (a CLI agent works in its workspace there); absent: as it is. */
  readonly inRun?: (logDir: string) => Backend
}

export class Backends extends Context.Tag("massgen/Backends")<Backends, { readonly forAgent: (agentId: string) => Backend }>() {}
