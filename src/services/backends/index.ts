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
export * from "./backend.ts"
export { cliNotFoundProblems } from "./claude-code-env.ts"
export * from "./factory.ts"
export * from "./keys.ts"
