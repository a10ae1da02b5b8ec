/**
 * The bridge from an SDK's async-iterable SSE stream to an interruptible backend call.
 *
 * `sdkCall({ open, assemble, site, sdk })(onChunk)` opens the request with an
 * AbortSignal (aborted if the fiber is interrupted before the headers), then
 * feeds each SDK event to a fresh `Assembly`, handing the text/reasoning chunks
 * it returns to `onChunk`, and succeeds with the reply from `assembly.finish()`.
 * Interrupting the call at any point aborts the HTTP request. All failures
 * become `BackendError`s (`errors.ts`), naming the backend's endpoint. Also
 * holds the options every SDK backend takes, and what each derives from them:
 * the client's URL (`clientUrl`: a query in `base_url` goes with every request)
 * and the call site (`callSite`: the endpoint, and the secrets no message may
 * show: the key and the credentials of `base_url`), and the provider settings
 * (`ProviderSettings`: the config's provider tools and pass-through settings,
 * `withExtraBody` merging `extra_body` into a body).
 *
 * A call's reply is capped (`max_reply_bytes`, `DEFAULT_MAX_REPLY_BYTES`):
 * each assembly counts what it keeps of the reply (text, reasoning, tool-call
 * ids, names and arguments, thinking signatures, the parts it keeps whole to
 * send back, and `ENTRY_BYTES` for each tool call and content block) on the call's `ReplyMeter`,
 * which throws `reply_too_large` (not retryable) at the first piece that
 * passes the cap, before that piece is handed on; `sdkCall` then aborts the
 * request, so a server that streams without end costs at most the cap in
 * memory and in the agent's output file. The SDKs hold a line of the stream
 * whole before they parse it, so the clients fetch through `lineCappedFetch`:
 * a line longer than any event within the cap could be (`maxLineBytes`) fails
 * the call the same way, before it fills memory.
 *
 * Words: an *assembly* is the per-call accumulator of one provider's events; a
 * *hosted tool use* is one use of a tool the provider runs itself (web search,
 * code execution); a *meter* counts the bytes (UTF-8) of one call's reply.
 */
import { Effect } from "effect"
import type { LlmChunk, LlmReply } from "../../domain/llm.ts"
import { endpointOf, urlSecrets } from "../../lib/safe-url.ts"
import { truncate } from "../../lib/text.ts"
import { type Backend, BackendError, type BackendErrorReason, type OnChunk } from "./backend.ts"
import { type SdkErrors, toBackendError } from "./errors.ts"

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
  /** `max_reply_bytes`: the most one call's reply may hold (`DEFAULT_MAX_REPLY_BYTES` when absent). */
  readonly maxReplyBytes?: number | undefined
  /** `azure_openai`: the API version (`api-version` of every request); its deployment is `model`. */
  readonly apiVersion?: string | undefined
  /** The provider-side tools and pass-through settings of the config (`enable_web_search`, `reasoning`, ...). */
  readonly provider?: ProviderSettings | undefined
}

/**
 * What the config asks of the provider beyond the workflow: its own tools and
 * settings each protocol sends in its own way. `decodeConfig` has already
 * refused the ones a protocol cannot honour (provider tools on Chat Completions).
 */
export interface ProviderSettings {
  readonly webSearch?: boolean | undefined
  /** `enable_code_interpreter` or `enable_code_execution`: either turns on the provider's code tool. */
  readonly codeExecution?: boolean | undefined
  readonly reasoningEffort?: string | undefined
  readonly reasoningSummary?: string | undefined
  readonly verbosity?: string | undefined
  readonly topP?: number | undefined
  /** Merged into the request body last: its keys win over massgen's, but for `stream`. */
  readonly extraBody?: Readonly<Record<string, unknown>> | undefined
}

/** Longer details of a hosted tool use are cut to this many characters. */
const MAX_DETAIL_CHARS = 200

/** The first line of `text`, cut at `MAX_DETAIL_CHARS`: what a hosted tool use shows of its query or code. */
export const firstLine = (text: string): string => {
  const line = text.trim().split("\n", 1)[0] ?? ""
  return line.length > MAX_DETAIL_CHARS ? `${truncate(line, MAX_DETAIL_CHARS - 1)}…` : line
}

/** `params` with the config's `extra_body` merged in (the stream stays on: the reply is read as one). */
export const withExtraBody = <P extends { readonly stream: true }>(params: P, opts: SdkBackendOptions): P =>
  opts.provider?.extraBody === undefined ? params : { ...params, ...opts.provider.extraBody, stream: true }

export const DEFAULT_MAX_RETRIES = 3
export const DEFAULT_CALL_TIMEOUT_SECONDS = 300
/** 4 MiB: far above any reply a model writes within its output limit, far below what fills a process. */
export const DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024

/** Counts the bytes one call's reply keeps; `add` throws `reply_too_large` once they pass the cap. */
export interface ReplyMeter {
  /** Counts `text`, a piece the reply keeps (a delta, a tool call's id, name or arguments). */
  readonly add: (text: string) => void
  /** Counts what `next`, which takes the place of `previous` in the reply, adds to it. */
  readonly replace: (previous: string, next: string) => void
  /** Counts one more entry the reply keeps (a tool call, a content block) as `ENTRY_BYTES`, whatever it holds. */
  readonly entry: () => void
}

/** What keeping one more tool call or content block counts for: a stream of empty ones is capped too. */
export const ENTRY_BYTES = 64

/** A meter that lets no reply pass `maxBytes`; a piece that would is not counted, and the call fails. */
export const replyMeter = (maxBytes: number): ReplyMeter => {
  let used = 0
  const grow = (bytes: number) => {
    if (bytes <= 0) return
    if (used + bytes > maxBytes) {
      fail(
        "reply_too_large",
        `the reply passed max_reply_bytes (${maxBytes} bytes of text, reasoning and tool calls); the rest was not read`,
        false,
      )
    }
    used += bytes
  }
  return {
    add: (text) => grow(Buffer.byteLength(text, "utf8")),
    replace: (previous, next) => grow(Buffer.byteLength(next, "utf8") - Buffer.byteLength(previous, "utf8")),
    entry: () => grow(ENTRY_BYTES),
  }
}

/** A meter with no cap: for assemblies fed outside a call (tests of the wire formats). */
export const unmetered: ReplyMeter = { add: () => {}, replace: () => {}, entry: () => {} }

/** A fresh meter for one call of a backend made with `opts`. */
export const meterFor = (opts: SdkBackendOptions): ReplyMeter => replyMeter(opts.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES)

/**
 * The longest line of a stream a backend made with `opts` reads: one event holding the whole
 * capped reply, every character of it escaped in JSON (`\u0000`, 6 bytes), and its frame.
 */
export const maxLineBytes = (opts: SdkBackendOptions): number => 6 * (opts.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES) + 64 * 1024

/** `fetch`, whose response bodies fail with `reply_too_large` once a line (the bytes between two newlines) passes `maxBytes`. */
export const lineCappedFetch =
  (maxBytes: number) =>
  async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init)
    if (response.body === null) return response
    /** Bytes of the line not ended yet. */
    let open = 0
    const guard = new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => {
        const first = chunk.indexOf(10)
        const longest = first < 0 ? open + chunk.length : open + first
        open = first < 0 ? open + chunk.length : chunk.length - chunk.lastIndexOf(10) - 1
        // A line inside the chunk is no longer than the chunk, which the transport keeps small.
        if (longest > maxBytes || open > maxBytes) {
          controller.error(
            new BackendError({
              reason: "reply_too_large",
              detail: `a line of the reply's stream passed ${maxBytes} bytes (6 × max_reply_bytes + 64 KiB) before it ended; the rest was not read`,
              retryable: false,
              retryAfterSeconds: null,
            }),
          )
          return
        }
        controller.enqueue(chunk)
      },
    })
    return new Response(response.body.pipeThrough(guard), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    })
  }

/** The `Backend` fields that do not depend on the protocol. */
export const backendFields = (opts: SdkBackendOptions): Omit<Backend, "call"> => ({
  type: opts.type,
  model: opts.model,
  endpoint: endpointOf(opts.baseURL),
  maxRetries: opts.maxRetries ?? DEFAULT_MAX_RETRIES,
  callTimeoutSeconds: opts.callTimeoutSeconds === undefined ? DEFAULT_CALL_TIMEOUT_SECONDS : opts.callTimeoutSeconds,
})

/** Where a backend's calls go, as messages name it, and the texts they must never show. */
export interface CallSite {
  readonly endpoint: string
  readonly secrets: ReadonlyArray<string>
}

/** Credentials of a URL shorter than this are masked inside URLs only: alone, they are too likely to be ordinary words. */
const MIN_SCRUBBED_CHARS = 6

export const callSite = (opts: SdkBackendOptions): CallSite => ({
  endpoint: endpointOf(opts.baseURL),
  secrets: [...(opts.apiKey === null ? [] : [opts.apiKey]), ...urlSecrets(opts.baseURL).filter((s) => s.length >= MIN_SCRUBBED_CHARS)],
})

/**
 * The SDK client's `baseURL` and `defaultQuery`: the SDKs append their paths to
 * `baseURL` as text, so a query in `base_url` (`?api-version=...`, `?key=...`)
 * is taken off it and sent with every request instead.
 */
export const clientUrl = (baseURL: string): { readonly baseURL: string; readonly defaultQuery?: Record<string, string> } => {
  const at = baseURL.indexOf("?")
  if (at < 0) return { baseURL }
  const query = baseURL.slice(at + 1).replace(/#.*$/, "")
  return { baseURL: baseURL.slice(0, at), defaultQuery: Object.fromEntries(new URLSearchParams(query)) }
}

export interface Assembly<E> {
  /** Takes one SDK event; returns the chunks to emit now. May throw a `BackendError`. */
  readonly push: (event: E) => ReadonlyArray<LlmChunk>
  /** The whole reply once the SDK stream has ended. Throws `stream_cut` when no terminal event came. */
  readonly finish: () => LlmReply
}

export type SdkEventStream<E> = AsyncIterable<E> & { readonly controller: AbortController }

/**
 * One call: opens the SDK stream (an interrupt while waiting for the headers
 * aborts the request), feeds each event to a fresh assembly counting on
 * `meter` (a call of several requests shares one), hands the chunks
 * it returns to `onChunk`, and succeeds with `assembly.finish()`. The request's
 * controller is aborted whenever the call ends: an interrupt does not wait for
 * a silent server's next event (an SDK generator's `return()` would wait
 * behind it), and a failed assembly stops the download.
 */
export const sdkCall =
  <E>(args: {
    readonly open: (signal: AbortSignal) => Promise<SdkEventStream<E>>
    readonly assemble: (meter: ReplyMeter) => Assembly<E>
    /** The call's reply meter (`meterFor`). */
    readonly meter: ReplyMeter
    readonly site: CallSite
    /** The SDK whose errors the call may fail with: its client class. */
    readonly sdk: SdkErrors
  }) =>
  (onChunk: OnChunk): Effect.Effect<LlmReply, BackendError> => {
    const onError = (e: unknown) => toBackendError(e, "read", args.site.secrets, args.site.endpoint, args.sdk)
    const read = (events: SdkEventStream<E>) =>
      Effect.gen(function* () {
        const assembly = args.assemble(args.meter)
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
          catch: (e) => toBackendError(e, "open", args.site.secrets, args.site.endpoint, args.sdk),
        }),
      ).pipe(Effect.flatMap((events) => restore(read(events)).pipe(Effect.ensuring(Effect.sync(() => events.controller.abort()))))),
    )
  }

/** Fails an assembly with a `BackendError` (thrown, caught by `sdkCall`). */
export const fail = (reason: BackendErrorReason, detail: string, retryable = true): never => {
  throw new BackendError({ reason, detail, retryable, retryAfterSeconds: null })
}
