/**
 * The bridge from an SDK's async-iterable SSE stream to an interruptible Effect Stream.
 *
 * `sdkStream({ open, assemble, secrets })` opens the request with an AbortSignal
 * (aborted if the fiber is interrupted before the headers), then feeds each SDK
 * event to a fresh `Assembly`, emitting the text/reasoning chunks it returns, and
 * ends with the single `done` chunk from `assembly.finish()`. Interrupting the
 * stream at any point aborts the HTTP request. All failures become `BackendError`s
 * (`errors.ts`). Also holds the options every SDK backend takes.
 *
 * Words: an *assembly* is the per-call accumulator of one provider's events.
 */
import { Effect, Stream } from "effect"
import type { LlmChunk, LlmReply } from "../../domain/llm.ts"
import { type Backend, BackendError, type BackendErrorReason } from "../backend.ts"
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
export const backendFields = (opts: SdkBackendOptions): Omit<Backend, "stream"> => ({
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
 * SDK streams are async generators whose `return()` waits behind a pending `next()`;
 * aborting the controller first lets an interrupt end a stream whose server is silent.
 */
const abortOnReturn = <A>(source: AsyncIterable<A>, controller: AbortController): AsyncIterable<A> => ({
  [Symbol.asyncIterator]: () => {
    const it = source[Symbol.asyncIterator]()
    return {
      next: () => it.next(),
      return: async () => {
        controller.abort()
        return { done: true as const, value: undefined }
      },
    }
  },
})

export const sdkStream = <E>(args: {
  readonly open: (signal: AbortSignal) => Promise<SdkEventStream<E>>
  readonly assemble: () => Assembly<E>
  readonly secrets: ReadonlyArray<string>
}): Stream.Stream<LlmChunk, BackendError> =>
  Effect.tryPromise({
    try: (signal) => args.open(signal),
    catch: (e) => toBackendError(e, "open", args.secrets),
  }).pipe(
    Effect.map((events) => {
      const assembly = args.assemble()
      const onError = (e: unknown) => toBackendError(e, "read", args.secrets)
      const finish = Effect.try({
        try: (): LlmChunk => ({ _tag: "done", reply: assembly.finish() }),
        catch: onError,
      })
      return Stream.fromAsyncIterable(abortOnReturn(events, events.controller), onError).pipe(
        Stream.mapConcatEffect((event) => Effect.try({ try: () => assembly.push(event), catch: onError })),
        Stream.concat(Stream.fromEffect(finish)),
      )
    }),
    Stream.unwrap,
  )

/** Fails an assembly with a `BackendError` (thrown, caught by `sdkStream`). */
export const fail = (reason: BackendErrorReason, detail: string, retryable = true): never => {
  throw new BackendError({ reason, detail, retryable, retryAfterSeconds: null })
}
