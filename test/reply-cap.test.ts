/**
 * The cap on one model reply (`max_reply_bytes`), backend by backend, against a
 * loopback fake that streams without end (`endless` in `support/fake-llm.ts`):
 * the call fails with `reply_too_large`, not retryable, naming the cap; what was
 * handed on stays within the cap; and the request is aborted, so the stream
 * stops. The meter itself is checked as a property.
 */
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import fc from "fast-check"
import { decodeConfig } from "../src/domain/config/index.ts"
import { makeAnthropicMessagesBackend } from "../src/services/backends/anthropic-messages.ts"
import { makeChatCompletionsBackend } from "../src/services/backends/chat-completions.ts"
import { makeGeminiBackend } from "../src/services/backends/gemini.ts"
import type { Backend } from "../src/services/backends/index.ts"
import { BackendError } from "../src/services/backends/index.ts"
import { makeOpenAiResponsesBackend } from "../src/services/backends/openai-responses.ts"
import { DEFAULT_MAX_REPLY_BYTES, ENTRY_BYTES, replyMeter, type SdkBackendOptions } from "../src/services/backends/sdk-stream.ts"
import { TEST_KEY } from "./support/backend-suite.ts"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { endless, type FakeLlm, NO_PROXY_ENV, type Protocol, type ReplySpec, raw, startFakeLlm } from "./support/fake-llm.ts"
import { roundRequest } from "./support/llm-requests.ts"
import { eventsOf, logDirOf, shown } from "./support/run-output.ts"

const CAP = 64 * 1024
const PIECE = "e".repeat(4000)

const BACKENDS: ReadonlyArray<readonly [Protocol, (fake: FakeLlm, opts: Partial<SdkBackendOptions>) => Backend]> = [
  [
    "chat",
    (fake, opts) => makeChatCompletionsBackend({ type: "groq", model: "m", baseURL: fake.openAiBaseUrl, apiKey: TEST_KEY, ...opts }),
  ],
  [
    "responses",
    (fake, opts) => makeOpenAiResponsesBackend({ type: "openai", model: "m", baseURL: fake.openAiBaseUrl, apiKey: TEST_KEY, ...opts }),
  ],
  ["anthropic", (fake, opts) => makeAnthropicMessagesBackend({ type: "claude", model: "m", baseURL: fake.url, apiKey: TEST_KEY, ...opts })],
  ["gemini", (fake, opts) => makeGeminiBackend({ type: "gemini", model: "m", baseURL: fake.url, apiKey: TEST_KEY, ...opts })],
]

/** What streams without end: text deltas, reasoning deltas, or the arguments of one tool call. */
const STREAMS: ReadonlyArray<readonly [string, ReplySpec]> = [
  ["text", { text: [PIECE, PIECE] }],
  ["reasoning", { reasoning: [PIECE, PIECE] }],
  ["tool-call arguments", { toolCalls: [{ name: "new_answer", args: PIECE + PIECE, chunks: 2 }] }],
]

/** Runs one call; its failure and the bytes of the chunks it handed on. */
const failedCall = async (backend: Backend): Promise<{ readonly error: BackendError; readonly handedOn: number }> => {
  let handedOn = 0
  const error = await Effect.runPromise(
    backend.call(roundRequest(), (chunk) => Effect.sync(() => void (handedOn += Buffer.byteLength(chunk.text)))).pipe(Effect.flip),
  )
  return { error, handedOn }
}

for (const [protocol, make] of BACKENDS) {
  describe(`${protocol}: a reply without end`, () => {
    let fake: FakeLlm
    beforeEach(async () => {
      fake = await startFakeLlm()
    })
    afterEach(() => fake.stop())

    for (const [what, spec] of STREAMS) {
      // The Responses and Anthropic fakes stream reasoning too; Chat as reasoning_content.
      test(`endless ${what}: cut at max_reply_bytes, not retryable, the request aborted`, async () => {
        fake.enqueue(protocol, endless(spec, PIECE))
        const { error, handedOn } = await failedCall(make(fake, { maxReplyBytes: CAP }))
        expect(error).toBeInstanceOf(BackendError)
        expect(error.reason).toBe("reply_too_large")
        expect(error.retryable).toBe(false)
        expect(error.message).toStartWith("reply too large: ")
        expect(error.message).toContain(`max_reply_bytes (${CAP} bytes`)
        expect(handedOn).toBeLessThanOrEqual(CAP)
        if (what !== "tool-call arguments") expect(handedOn).toBeGreaterThan(CAP - 2 * PIECE.length)
        // The stream stops: the client aborted the request.
        await fake.waitForAbort(1)
        expect(fake.requests.length).toBe(1)
      })
    }
  })
}

for (const [protocol, make] of BACKENDS) {
  test(`${protocol}: a line of the stream without end is cut at 6 × max_reply_bytes + 64 KiB, the request aborted`, async () => {
    const fake = await startFakeLlm()
    try {
      fake.enqueue(protocol, endless({ text: [PIECE] }, PIECE, true))
      const { error, handedOn } = await failedCall(make(fake, { maxReplyBytes: CAP }))
      expect(error.reason).toBe("reply_too_large")
      expect(error.retryable).toBe(false)
      expect(error.message).toContain(`a line of the reply's stream passed ${6 * CAP + 64 * 1024} bytes`)
      expect(handedOn).toBe(0)
      await fake.waitForAbort(1)
    } finally {
      fake.stop()
    }
  })
}

test("anthropic: blocks that come whole (server tool results) count too", async () => {
  const fake = await startFakeLlm()
  try {
    fake.enqueue("anthropic", endless({ hosted: [{ tool: "web_search", query: "q" }], text: "t" }, "encrypted_content"))
    const { error } = await failedCall(BACKENDS[2]![1](fake, { maxReplyBytes: 4096 }))
    expect(error.reason).toBe("reply_too_large")
    await fake.waitForAbort(1)
  } finally {
    fake.stop()
  }
})

/** Frames that each open one more, empty, tool call or content block: no text at all. */
const EMPTY_ENTRIES: Readonly<Record<Protocol, (n: number) => string>> = {
  chat: (n) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta: { tool_calls: [{ index: n }] }, finish_reason: null }] })}\n\n`,
  responses: (n) =>
    `event: response.function_call_arguments.delta\ndata: ${JSON.stringify({ type: "response.function_call_arguments.delta", item_id: `fc_${n}`, output_index: n, delta: "", sequence_number: n })}\n\n`,
  anthropic: (n) =>
    `event: content_block_start\ndata: ${JSON.stringify({ type: "content_block_start", index: n, content_block: { type: "text", text: "" } })}\n\n`,
  gemini: () => `data: ${JSON.stringify({ candidates: [{ content: { role: "model", parts: [{ functionCall: { name: "" } }] } }] })}\n\n`,
}

for (const [protocol, make] of BACKENDS) {
  test(`${protocol}: a stream of empty tool calls or blocks counts ENTRY_BYTES each, and is cut at the cap`, async () => {
    const fake = await startFakeLlm()
    try {
      fake.enqueue(protocol, raw(Array.from({ length: 2000 }, (_, n) => EMPTY_ENTRIES[protocol](n)).join("")))
      const { error } = await failedCall(make(fake, { maxReplyBytes: 50 * ENTRY_BYTES }))
      expect(error.reason).toBe("reply_too_large")
    } finally {
      fake.stop()
    }
  })
}

describe("max_reply_bytes in a config", () => {
  const backendOf = (max: unknown) => ({
    agents: [{ id: "a", backend: { type: "chatcompletion", model: "m", base_url: "http://127.0.0.1:1/v1", max_reply_bytes: max } }],
  })
  test("a whole number of 1 or more reaches the backend's options; anything else is one problem naming the key", () => {
    const decoded = decodeConfig(backendOf(1000), {})
    expect(Either.isRight(decoded) && decoded.right.agents[0]!.backend.max_reply_bytes).toBe(1000)
    for (const bad of [0, -5, 1.5, "big"]) {
      const refused = decodeConfig(backendOf(bad), {})
      const paths = Either.isLeft(refused) ? refused.left.map((p) => p.path) : []
      expect({ bad, paths }).toEqual({ bad, paths: ["agents[0].backend.max_reply_bytes"] })
    }
  })
})

describe("the reply meter", () => {
  test("the default cap is 4 MiB", () => {
    expect(DEFAULT_MAX_REPLY_BYTES).toBe(4 * 1024 * 1024)
  })

  test("it lets pieces through while their UTF-8 bytes stay within the cap, and fails the first that passes it", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: "binary", maxLength: 40 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 600 }),
        (pieces, cap) => {
          const meter = replyMeter(cap)
          let total = 0
          for (const piece of pieces) {
            const bytes = new TextEncoder().encode(piece).length
            if (total + bytes > cap) {
              expect(() => meter.add(piece)).toThrow(/max_reply_bytes/)
              return
            }
            meter.add(piece)
            total += bytes
          }
        },
      ),
    )
  })

  test("a piece that takes another's place counts only what it adds", () => {
    const meter = replyMeter(10)
    meter.add("12345678")
    meter.replace("12345678", "1234567890")
    meter.replace("1234567890", "123")
    expect(() => meter.add("x")).toThrow(/reply_too_large|max_reply_bytes/)
  })
})

describe("a run whose model streams without end", () => {
  let fake: FakeLlm
  beforeEach(async () => {
    fake = await startFakeLlm({ respond: () => endless({ text: [PIECE, PIECE] }, PIECE) })
  })
  afterEach(() => fake.stop())
  afterAll(() => cleanupSandboxes())

  const WIRES = [
    ["chatcompletion", (f: FakeLlm) => f.openAiBaseUrl],
    ["openai", (f: FakeLlm) => f.openAiBaseUrl],
    ["claude", (f: FakeLlm) => f.url],
  ] as const

  for (const [type, baseUrl] of WIRES) {
    test(`${type}: the call fails once at the cap, the agent is out, the run ends with exit 2, and its output file holds at most the cap`, async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [{ id: "agent_a", backend: { type, model: "m", base_url: baseUrl(fake), api_key: "k", max_reply_bytes: CAP } }],
        timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 60 },
      })
      const result = await runCli("source", ["--automation", "--config", config, "What is 2+2?"], {
        cwd,
        env: { ...NO_PROXY_ENV, MASSGEN_LOG_BASE_DIR: undefined },
      })
      expect({ exit: result.exitCode, output: shown(result) }).toMatchObject({ exit: 2 })
      const logDir = logDirOf(result)
      const events = eventsOf(logDir)
      const ends = events.filter((e) => e.type === "call_end")
      expect(ends.length).toBe(1)
      expect(ends[0].error).toStartWith(`reply too large: the reply passed max_reply_bytes (${CAP} bytes`)
      expect(events.filter((e) => e.type === "call_retried")).toEqual([])
      expect(events.filter((e) => e.type === "agent_failed").map((e) => [e.agent, e.message])).toEqual([["agent_a", ends[0].error]])
      expect(events.at(-1)).toMatchObject({ type: "run_finished", reason: "error" })
      // The text streamed before the cap, a call heading and the error line: about the cap, never more than a little over.
      const output = fs.statSync(nodePath.join(logDir, "agent_outputs", "agent_a.txt")).size
      expect(output).toBeGreaterThan(CAP - 2 * PIECE.length)
      expect(output).toBeLessThan(CAP + 1024)
      expect(fake.requests.length).toBe(1)
    }, 60_000)
  }
})
