/**
 * The behaviour every SDK backend shares, as one bun:test suite per protocol.
 *
 * `backendSuite(protocol, make)` runs the real SDK client of the backend built by
 * `make` against `fake-llm.ts`: reassembly of tool-call arguments split into many
 * chunks, usage, text and reasoning deltas handed over before the reply, truncation, the error
 * mapping (429 with retry-after, 500, 400, 401, refused connection, cut stream,
 * unparsable SSE), interruption and timeout reaching the server as an abort, and
 * the absence of the key from every error message.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Deferred, Effect, Exit, Fiber } from "effect"
import type { LlmChunk, LlmMessage, LlmReply, LlmRequest } from "../../src/domain/llm.ts"
import type { Backend, BackendError } from "../../src/services/backends/index.ts"
import type { ProviderSettings, SdkBackendOptions } from "../../src/services/backends/sdk-stream.ts"
import { cut, type FakeLlm, hang, type Protocol, rateLimited, raw, reply, stall, startFakeLlm, status, toolCall } from "./fake-llm.ts"
import { echoTool, presentationRequest, roundRequest, sumTool, toolRoundRequest } from "./llm-requests.ts"

export const TEST_KEY = "sk-test-0123456789abcdefSECRET"

/** What a call gave, in order: its chunks, then its reply as a `done` entry. */
export type Collected = LlmChunk | { readonly _tag: "done"; readonly reply: LlmReply }

export const collect = (backend: Backend, request: LlmRequest = roundRequest()): Promise<Array<Collected>> => {
  const out: Array<Collected> = []
  const call = backend.call(request, (chunk) => Effect.sync(() => void out.push(chunk)))
  return Effect.runPromise(call.pipe(Effect.map((reply) => [...out, { _tag: "done" as const, reply }])))
}

export const replyOf = (chunks: ReadonlyArray<Collected>): LlmReply => {
  const last = chunks[chunks.length - 1]
  if (last?._tag !== "done") throw new Error(`expected the reply last, got ${JSON.stringify(last)}`)
  return last.reply
}

export const failureOf = async (backend: Backend, request: LlmRequest = roundRequest()): Promise<BackendError> => {
  const error = await Effect.runPromise(backend.call(request, () => Effect.void).pipe(Effect.flip))
  expect(error._tag).toBe("BackendError")
  expect(error.message).not.toContain(TEST_KEY)
  expect(error.detail).not.toContain(TEST_KEY)
  expect(error.message).not.toMatch(/Bearer\s+sk-/)
  return error
}

/** What `parallelToolStep` saw: both replies, and the body of the second request as the server received it. */
export interface ToolStep {
  readonly first: LlmReply
  readonly second: LlmReply
  readonly sent: any
}

/**
 * A round's tool step, as the tool loop runs it: the first reply (after some
 * reasoning) calls two agent tools at once, their arguments split across chunks;
 * the transcript then holds that reply, with its opaque parts, and both results,
 * and the second call answers with `new_answer`.
 */
export const parallelToolStep = async (backend: Backend, fake: FakeLlm, protocol: Protocol): Promise<ToolStep> => {
  fake.enqueue(
    protocol,
    reply({
      reasoning: ["Two lookups ", "at once."],
      toolCalls: [
        { name: echoTool.name, args: { message: "hi" }, chunks: 3 },
        { name: sumTool.name, args: { a: 2, b: 2 }, chunks: 4 },
      ],
    }),
    toolCall("new_answer", { content: "4" }),
  )
  const question: LlmMessage = { role: "user", content: "What is 2+2?" }
  const first = replyOf(await collect(backend, toolRoundRequest([question])))
  const results: ReadonlyArray<LlmMessage> = first.toolCalls.map((c) => ({
    role: "tool",
    toolCallId: c.id,
    name: c.name,
    content: c.name === echoTool.name ? "Echo: hi" : "4",
  }))
  const transcript: ReadonlyArray<LlmMessage> = [
    question,
    { role: "assistant", content: first.text, toolCalls: first.toolCalls, ...(first.parts === undefined ? {} : { parts: first.parts }) },
    ...results,
  ]
  const second = replyOf(await collect(backend, toolRoundRequest(transcript)))
  return { first, second, sent: fake.requests[1]?.body }
}

/** The requests of a round and of a presentation made by a backend whose config turns both provider tools on. */
export const hostedToolRequests = async (make: (provider: ProviderSettings) => Backend, fake: FakeLlm, protocol: Protocol) => {
  fake.enqueue(protocol, reply({ text: "ok" }), reply({ text: "final" }))
  const backend = make({ webSearch: true, codeExecution: true })
  await collect(backend)
  await collect(backend, presentationRequest())
  const [round, presentation] = fake.requests
  return { round: round!, presentation: presentation! }
}

/**
 * A reply that searched the web and ran code (provider tools) before it answered,
 * and the body of the round's next call, which carries that reply back.
 */
export const hostedToolStep = async (backend: Backend, fake: FakeLlm, protocol: Protocol, reasoning: ReadonlyArray<string> = []) => {
  fake.enqueue(
    protocol,
    reply({
      reasoning,
      hosted: [
        { tool: "web_search", query: "capital of France" },
        { tool: "code", code: "python3 -c 'print(2+2)'\necho done" },
      ],
      text: "Paris",
      toolCalls: [{ name: "new_answer", args: { content: "Paris" } }],
    }),
    reply({ text: "ok" }),
  )
  const first = replyOf(await collect(backend))
  const assistant: LlmMessage = { role: "assistant", content: first.text, toolCalls: first.toolCalls, parts: first.parts ?? [] }
  await collect(backend, roundRequest([{ role: "user", content: "Q" }, assistant]))
  return { first, sent: fake.requests[1]?.body }
}

const BAD_SSE: Readonly<Record<Protocol, string>> = {
  chat: 'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: {not json\n\n',
  responses: 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"hi"\n\n',
  anthropic: 'event: message_start\ndata: {"type":"message_start", nope\n\n',
  gemini: 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"index":0}]}\n\ndata: {"candidates": nope\n\n',
}

/** The base URL a protocol's client takes: the OpenAI SDKs' ends in `/v1`, the others add their own version. */
export const baseUrlOf = (fake: { readonly url: string; readonly openAiBaseUrl: string }, protocol: Protocol): string =>
  protocol === "anthropic" || protocol === "gemini" ? fake.url : fake.openAiBaseUrl

/** The header that carries the key, as the protocol's SDK sends it. */
const keyHeader = (protocol: Protocol, headers: Readonly<Record<string, string>>): string | undefined =>
  protocol === "gemini" ? headers["x-goog-api-key"] : headers.authorization?.replace(/^Bearer /, "")

export const backendSuite = (protocol: Protocol, make: (opts: SdkBackendOptions) => Backend) =>
  describe(`${protocol}: shared backend behaviour`, () => {
    let fake: FakeLlm
    beforeEach(async () => {
      fake = await startFakeLlm()
    })
    afterEach(() => fake.stop())

    const backend = (over: Partial<SdkBackendOptions> = {}) =>
      make({
        type: "test",
        model: "fake-model",
        baseURL: baseUrlOf(fake, protocol),
        apiKey: TEST_KEY,
        ...over,
      })

    test("tool-call arguments split across many chunks are reassembled", async () => {
      const content = 'The answer is 4, because 2+2 is "4" — ünïcödé and all. '.repeat(5)
      fake.enqueue(
        protocol,
        reply({
          toolCalls: [
            { name: "new_answer", args: { content }, chunks: 37 },
            { name: "vote", args: { agent_id: "agent2", reason: "best" }, chunks: 9 },
          ],
        }),
      )
      const r = replyOf(await collect(backend()))
      expect(r.toolCalls.map((c) => c.name)).toEqual(["new_answer", "vote"])
      expect(JSON.parse(r.toolCalls[0]?.arguments ?? "")).toEqual({ content })
      expect(JSON.parse(r.toolCalls[1]?.arguments ?? "")).toEqual({ agent_id: "agent2", reason: "best" })
      expect(r.toolCalls.every((c) => c.id.length > 0)).toBe(true)
      expect(new Set(r.toolCalls.map((c) => c.id)).size).toBe(2)
      expect(r.truncated).toBe(false)
    })

    test("a reply calling two agent tools at once is read whole, and the next call, given both results, answers", async () => {
      const step = await parallelToolStep(backend(), fake, protocol)
      expect(step.first.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
        [echoTool.name, { message: "hi" }],
        [sumTool.name, { a: 2, b: 2 }],
      ])
      expect(new Set(step.first.toolCalls.map((c) => c.id)).size).toBe(2)
      expect(step.first.reasoning).toBe("Two lookups at once.")
      expect(step.second.toolCalls.map((c) => [c.name, c.arguments])).toEqual([["new_answer", '{"content":"4"}']])
      expect(fake.requests).toHaveLength(2)
    })

    test("usage from the end of the stream is reported", async () => {
      fake.enqueue(
        protocol,
        reply({
          toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: "ok" } }],
          usage: { input: 120, cached: 20, output: 40, reasoning: 8 },
        }),
      )
      const r = replyOf(await collect(backend()))
      expect(r.usage).toEqual({ inputTokens: 120, cachedInputTokens: 20, outputTokens: 40, reasoningTokens: 8 })
      expect(r.raw).toBeTruthy()
    })

    test("text deltas arrive as separate text chunks before done; reasoning is kept apart", async () => {
      fake.enqueue(protocol, reply({ reasoning: ["Think ", "hard."], text: ["Hel", "lo ", "world"] }))
      const chunks = await collect(backend())
      expect(chunks.filter((c) => c._tag === "text")).toEqual([
        { _tag: "text", text: "Hel" },
        { _tag: "text", text: "lo " },
        { _tag: "text", text: "world" },
      ])
      expect(chunks.filter((c) => c._tag === "reasoning").map((c) => (c._tag === "reasoning" ? c.text : ""))).toEqual(["Think ", "hard."])
      expect(chunks.filter((c) => c._tag === "done")).toHaveLength(1)
      const r = replyOf(chunks)
      expect(r.text).toBe("Hello world")
      expect(r.reasoning).toBe("Think hard.")
      expect(r.toolCalls).toEqual([])
    })

    test("a reply cut at the output limit is marked truncated", async () => {
      fake.enqueue(protocol, reply({ text: "partial", truncated: true }))
      expect(replyOf(await collect(backend())).truncated).toBe(true)
    })

    test("429 gives rate_limited, retryable, with retry-after in seconds", async () => {
      fake.enqueue(protocol, rateLimited("7"))
      const e = await failureOf(backend())
      expect(e.reason).toBe("rate_limited")
      expect(e.retryable).toBe(true)
      expect(e.retryAfterSeconds).toBe(7)
      expect(fake.requests).toHaveLength(1)
    })

    test("500 gives server_error, retryable, and the SDK does not retry by itself", async () => {
      fake.enqueue(protocol, status(500))
      const e = await failureOf(backend())
      expect(e).toMatchObject({ reason: "server_error", retryable: true, retryAfterSeconds: null })
      expect(fake.requests).toHaveLength(1)
    })

    test("400 gives bad_request and 403 auth, neither retryable", async () => {
      fake.enqueue(protocol, status(400), status(403))
      expect(await failureOf(backend())).toMatchObject({ reason: "bad_request", retryable: false })
      expect(await failureOf(backend())).toMatchObject({ reason: "auth", retryable: false })
    })

    test("a 401 whose body echoes the key gives auth with the key scrubbed", async () => {
      fake.enqueue(
        protocol,
        status(401, {
          body: {
            error: { type: "authentication_error", message: `Incorrect API key provided: ${TEST_KEY}. Header was Bearer ${TEST_KEY}` },
          },
        }),
      )
      const e = await failureOf(backend())
      expect(e).toMatchObject({ reason: "auth", retryable: false })
      expect(e.detail).toContain("Incorrect API key")
    })

    test("the key goes in the request headers and nowhere in the body", async () => {
      fake.enqueue(protocol, reply({ text: "hi" }))
      await collect(backend())
      const sent = fake.requests[0]
      expect(keyHeader(protocol, sent?.headers ?? {})).toBe(TEST_KEY)
      expect(JSON.stringify(sent?.body)).not.toContain(TEST_KEY)
    })

    test("a refused connection gives network, retryable", async () => {
      const gone = await startFakeLlm()
      gone.stop()
      const e = await failureOf(backend({ baseURL: baseUrlOf(gone, protocol) }))
      expect(e).toMatchObject({ reason: "network", retryable: true })
    })

    // Gemini sends each function call whole: its reply is four frames, the last one terminal.
    const before = protocol === "gemini" ? 3 : 4
    test("a stream that ends cleanly before its terminal event gives stream_cut", async () => {
      fake.enqueue(
        protocol,
        cut({ text: ["a", "b"], toolCalls: [{ name: "new_answer", args: { content: "x" }, chunks: 4 }] }, before, "close"),
      )
      expect(await failureOf(backend())).toMatchObject({ reason: "stream_cut", retryable: true })
    })

    test("a connection broken in the middle of the stream gives stream_cut", async () => {
      fake.enqueue(
        protocol,
        cut({ text: ["a", "b"], toolCalls: [{ name: "new_answer", args: { content: "x" }, chunks: 4 }] }, before, "error"),
      )
      expect(await failureOf(backend())).toMatchObject({ reason: "stream_cut", retryable: true })
    })

    test("unparsable JSON in the stream gives bad_reply, retryable", async () => {
      fake.enqueue(protocol, raw(BAD_SSE[protocol]))
      expect(await failureOf(backend())).toMatchObject({ reason: "bad_reply", retryable: true })
    })

    test("a server that never answers: Effect.timeout ends the call and the server sees the abort", async () => {
      fake.enqueue(protocol, hang())
      const exit = await Effect.runPromiseExit(
        backend()
          .call(roundRequest(), () => Effect.void)
          .pipe(Effect.timeout("100 millis")),
      )
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("TimeoutException")
      await fake.waitForAbort(1)
      expect(fake.aborted).toEqual([1])
    })

    test("interrupting a stream whose server went silent mid-reply aborts the request", async () => {
      fake.enqueue(protocol, stall({ text: ["first", "never"] }, protocol === "anthropic" ? 3 : 2))
      const program = Effect.gen(function* () {
        const first = yield* Deferred.make<string>()
        const fiber = yield* backend()
          .call(roundRequest(), (c) => (c._tag === "text" ? Deferred.succeed(first, c.text) : Effect.void))
          .pipe(Effect.fork)
        const text = yield* Deferred.await(first)
        const exit = yield* Fiber.interrupt(fiber)
        return { text, interrupted: Exit.isInterrupted(exit) }
      })
      expect(await Effect.runPromise(program)).toEqual({ text: "first", interrupted: true })
      await fake.waitForAbort(1)
    })

    test("the Backend carries its retry and timeout settings with defaults 3 and 300", () => {
      expect(backend()).toMatchObject({ type: "test", model: "fake-model", maxRetries: 3, callTimeoutSeconds: 300 })
      expect(backend({ maxRetries: 0, callTimeoutSeconds: 12 })).toMatchObject({ maxRetries: 0, callTimeoutSeconds: 12 })
    })
  })
