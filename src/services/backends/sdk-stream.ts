/**
 * The bridge from an SDK's async-iterable SSE stream to an interruptible backend call.
 *
 * `sdkCall({ open, assemble, secrets })(onChunk)` opens the request with an
 * AbortSignal (aborted if the fiber is interrupted before the headers), then
 * feeds each SDK event to a fresh `Assembly`, handing the text/reasoning chunks
 * it returns to `onChunk`, and succeeds with the reply from `assembly.finish()`.
 * Interrupting the call at any point aborts the HTTP request. All failures
 * become `BackendError`s (`errors.ts`). Also holds the options every SDK
 * backend takes.
 *
 * Words: an *assembly* is the per-call accumulator of one provider's events.
 */
import { Effect } from "effect"
import type { LlmChunk, LlmReply } from "../../domain/llm.ts"
import { type Backend, BackendError, type BackendErrorReason, type OnChunk } from "../backend.ts"
import { toBackendError } from "./errors.ts"

/** What every SDK backend constructor takes; `apiKey` null means keyless. */
export interface SdkBackendOptions {
  readonly type: string
  readonly model: string
  readonly baseURL: string
  readonly apiKey: string | null
  readonly temperature?: number | undefined
  readonly maxTokens?: number | undefined
  readonly maxRetries?: number | undefined
  readonly callTimeoutSeconds?: number | null | undefined
}

export const DEFAULT_MAX_RETRIES = 3
export const DEFAULT_CALL_TIMEOUT_SECONDS = 300

/** The `Backend` fields that do not depend on the protocol. */
export const backendFields = (opts: SdkBackendOptions): Omit<Backend, "call"> => ({
  type: opts.type,
  model: opts.model,
  maxRetries: opts.maxRetries ?? DEFAULT_MAX_RETRIES,
  callTimeoutSeconds: opts.callTimeoutSeconds === undefined ? DEFAULT_CALL_TIMEOUT_SECONDS : opts.callTimeoutSeconds,
})

export interface Assembly<E> {
  /** Takes one SDK event; returns the chunks to emit now. May throw a `BackendError`. */
  readonly push: (event: E) => ReadonlyArray<LlmChunk>
  /** The whole reply once the SDK stream has ended. Throws `stream_cut` when no terminal event came. */
  readonly finish: () => LlmReply
}

export type SdkEventStream<E> = AsyncIterable<E> & { readonly controller: AbortController }

/**
 * One call: opens the SDK stream (an interrupt while waiting for the headers
 * aborts the request), feeds each event to a fresh assembly, hands the chunks
 * it returns to `onChunk`, and succeeds with `assembly.finish()`. The request's
 * controller is aborted whenever the call ends: an interrupt does not wait for
 * a silent server's next event (an SDK generator's `return()` would wait
 * behind it), and a failed assembly stops the download.
 */
export const sdkCall =
  <E>(args: {
    readonly open: (signal: AbortSignal) => Promise<SdkEventStream<E>>
    readonly assemble: () => Assembly<E>
    readonly secrets: ReadonlyArray<string>
  }) =>
  (onChunk: OnChunk): Effect.Effect<LlmReply, BackendError> => {
    const onError = (e: unknown) => toBackendError(e, "read", args.secrets)
    const read = (events: SdkEventStream<E>) =>
      Effect.gen(function* () {
        const assembly = args.assemble()
        const it = events[Symbol.asyncIterator]()
        for (;;) {
          const next = yield* Effect.tryPromise({ try: () => it.next(), catch: onError })
          if (next.done === true) return yield* Effect.try({ try: () => assembly.finish(), catch: onError })
          const chunks = yield* Effect.try({ try: () => assembly.push(next.value), catch: onError })
          for (const chunk of chunks) yield* onChunk(chunk)
        }
      })
    return Effect.uninterruptibleMask((restore) =>
      restore(
        Effect.tryPromise({
          try: (signal) => args.open(signal),
          catch: (e) => toBackendError(e, "open", args.secrets),
        }),
      ).pipe(Effect.flatMap((events) => restore(read(events)).pipe(Effect.ensuring(Effect.sync(() => events.controller.abort()))))),
    )
  }

/** Fails an assembly with a `BackendError` (thrown, caught by `sdkCall`). */
export const fail = (reason: BackendErrorReason, detail: string, retryable = true): never => {
  throw new BackendError({ reason, detail, retryable, retryAfterSeconds: null })
}
