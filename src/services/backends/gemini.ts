/**
 * The native Gemini backend: type `gemini` (without `api: chat_completions`), through `@google/genai`.
 *
 * `makeGeminiBackend(opts)` streams `POST {baseURL}/v1beta/models/{model}:streamGenerateContent?alt=sse`
 * with the SDK's `generateContentStream` (the request: `gemini-request.ts`), the key in
 * `x-goog-api-key`. Each chunk's candidate parts are read in order: thought parts
 * (`thought: true`) become `reasoning` chunks, other text `text` chunks, `functionCall`
 * parts the reply's tool calls (an id made when the API sent none: `SYNTHETIC_ID_PREFIX`;
 * a `default_api:` the model put before the name taken off),
 * `executableCode` parts (code the provider ran) hosted tool uses, and the grounding
 * metadata of a `google_search` (its queries and its sources' URLs and titles) one
 * hosted tool use with its sources. When the reply holds anything that must go back
 * as it came (a `thoughtSignature`, a thought, code and its result), its parts are
 * the reply's `parts`, the whole turn: text pieces are joined, but never into or
 * across a signed part. The terminal chunk is the one with a `finishReason`; a
 * stream that ends without one is a `stream_cut`. Usage: input is `promptTokenCount`
 * plus `toolUsePromptTokenCount`, cached `cachedContentTokenCount`, output
 * `candidatesTokenCount` plus `thoughtsTokenCount`, reasoning `thoughtsTokenCount`.
 * The SDK retries nothing; an HTTP error is classified by status (`errors.ts`), a
 * 429's `retry-after` read from the response the call's fetch saw.
 */
import { ApiError, type GenerateContentResponse, GoogleGenAI, type Part } from "@google/genai"
import type { HostedToolUse, LlmChunk, LlmReply, ToolCall } from "../../domain/llm.ts"
import type { Backend } from "./backend.ts"
import type { SdkErrors } from "./errors.ts"
import { type GeminiOptions, geminiParams, SYNTHETIC_ID_PREFIX } from "./gemini-request.ts"
import {
  type Assembly,
  backendFields,
  callSite,
  fail,
  firstLine,
  lineCappedFetch,
  maxLineBytes,
  meterFor,
  type ReplyMeter,
  sdkCall,
  unmetered,
} from "./sdk-stream.ts"

/** A prefix Gemini models sometimes put before a function's name (MassGen strips it too). */
const MODEL_PREFIX = /^default_api(:|__)/

const isTextPart = (p: Part): boolean => typeof p.text === "string" && Object.keys(p).every((k) => k === "text" || k === "thought")

/** Whether a part must go back to the API as it came. */
const isOpaque = (p: Part): boolean =>
  p.thoughtSignature !== undefined || p.thought === true || p.executableCode !== undefined || p.codeExecutionResult !== undefined

interface Usage {
  input: number | null
  toolPrompt: number | null
  cached: number | null
  candidates: number | null
  thoughts: number | null
}

const sources = (g: NonNullable<NonNullable<GenerateContentResponse["candidates"]>[number]["groundingMetadata"]>) =>
  (g.groundingChunks ?? []).flatMap((c) => (c.web?.uri === undefined ? [] : [{ url: c.web.uri, title: c.web.title ?? null }]))

/** Accumulates the chunks of one streamed `generateContent`, counting what it keeps on `meter`. */
export const geminiAssembly = (meter: ReplyMeter = unmetered): Assembly<GenerateContentResponse> => {
  const parts: Array<Part> = []
  const usage: Usage = { input: null, toolPrompt: null, cached: null, candidates: null, thoughts: null }
  let finishReason: string | null = null
  let grounding: HostedToolUse | null = null
  let responseId = ""
  let modelVersion = ""

  /** Appends `part`, joining a text piece to the one before when neither is signed. */
  const keep = (part: Part): void => {
    const last = parts[parts.length - 1]
    if (last !== undefined && isTextPart(part) && isTextPart(last) && Boolean(last.thought) === Boolean(part.thought)) {
      last.text = `${last.text ?? ""}${part.text ?? ""}`
      meter.add(part.text ?? "")
      return
    }
    meter.entry()
    meter.add(JSON.stringify(part))
    parts.push({ ...part })
  }

  return {
    push: (chunk) => {
      const out: Array<LlmChunk> = []
      responseId = chunk.responseId ?? responseId
      modelVersion = chunk.modelVersion ?? modelVersion
      const candidate = chunk.candidates?.[0]
      for (const part of candidate?.content?.parts ?? []) {
        keep(part)
        if (typeof part.text === "string" && part.text !== "")
          out.push({ _tag: part.thought === true ? "reasoning" : "text", text: part.text })
      }
      const g = candidate?.groundingMetadata
      if (g !== undefined) {
        const queries = g.webSearchQueries ?? []
        const found = sources(g)
        meter.add(JSON.stringify({ queries, found }))
        grounding = { tool: "google_search", detail: firstLine(queries.join("; ")), sources: found }
      }
      const u = chunk.usageMetadata
      if (u !== undefined) {
        usage.input = u.promptTokenCount ?? usage.input
        usage.toolPrompt = u.toolUsePromptTokenCount ?? usage.toolPrompt
        usage.cached = u.cachedContentTokenCount ?? usage.cached
        usage.candidates = u.candidatesTokenCount ?? usage.candidates
        usage.thoughts = u.thoughtsTokenCount ?? usage.thoughts
      }
      if (candidate?.finishReason !== undefined) finishReason = candidate.finishReason
      if (chunk.promptFeedback?.blockReason !== undefined)
        fail("bad_request", `the prompt was blocked (${chunk.promptFeedback.blockReason})`, false)
      return out
    },
    finish: (): LlmReply => {
      if (finishReason === null) fail("stream_cut", "the stream ended without a finishReason")
      let n = 0
      const toolCalls: Array<ToolCall> = parts.flatMap((p) =>
        p.functionCall === undefined
          ? []
          : [
              {
                id: p.functionCall.id ?? `${SYNTHETIC_ID_PREFIX}${++n}`,
                name: (p.functionCall.name ?? "").replace(MODEL_PREFIX, ""),
                arguments: JSON.stringify(p.functionCall.args ?? {}),
              },
            ],
      )
      const code: Array<HostedToolUse> = parts.flatMap((p) =>
        p.executableCode === undefined ? [] : [{ tool: "code_execution", detail: firstLine(p.executableCode.code ?? "") }],
      )
      const hosted = [...(grounding === null ? [] : [grounding]), ...code]
      const pieces = (thought: boolean) =>
        parts
          .filter((p) => typeof p.text === "string" && Boolean(p.thought) === thought)
          .map((p) => p.text)
          .join("")
      return {
        text: pieces(false),
        reasoning: pieces(true),
        toolCalls,
        parts: parts.some(isOpaque) ? parts : [],
        ...(hosted.length > 0 ? { hostedToolUses: hosted } : {}),
        usage: {
          inputTokens: usage.input === null ? null : usage.input + (usage.toolPrompt ?? 0),
          cachedInputTokens: usage.cached,
          outputTokens: usage.candidates === null && usage.thoughts === null ? null : (usage.candidates ?? 0) + (usage.thoughts ?? 0),
          reasoningTokens: usage.thoughts,
        },
        truncated: finishReason === "MAX_TOKENS",
        raw: { responseId, modelVersion, candidates: [{ content: { role: "model", parts }, finishReason }], usageMetadata: usage },
      }
    },
  }
}

/** The API version of every call's path (`{baseURL}/v1beta/models/...`): the one with thinking, search and code execution. */
export const GEMINI_API_VERSION = "v1beta"

/** Errors of no SDK class: `@google/genai` throws `ApiError` for an HTTP status and the transport's own errors otherwise. */
class NeverThrown {}

const GEMINI_ERRORS: SdkErrors = {
  APIError: ApiError,
  APIUserAbortError: NeverThrown,
  APIConnectionError: NeverThrown,
  APIConnectionTimeoutError: NeverThrown,
}

export const makeGeminiBackend = (opts: GeminiOptions): Backend => {
  const client = new GoogleGenAI({
    vertexai: false,
    // A keyless endpoint (a local proxy) still gets a placeholder: without a key the SDK looks in the environment.
    apiKey: opts.apiKey ?? "no-key",
    httpOptions: { baseUrl: opts.baseURL, apiVersion: GEMINI_API_VERSION },
  })
  const site = callSite(opts)
  const capped = lineCappedFetch(maxLineBytes(opts))
  return {
    ...backendFields(opts),
    call: (request, onChunk) => {
      // The response the SDK turns into an `ApiError`, which keeps only its status: its headers say when to try again.
      let failed: Headers | undefined
      const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
        const response = await capped(input, init)
        if (!response.ok) failed = response.headers
        return response
      }
      const params = geminiParams(request, opts)
      return sdkCall({
        open: async (signal) => {
          const controller = new AbortController()
          signal.addEventListener("abort", () => controller.abort(), { once: true })
          const config = { ...params.config, abortSignal: controller.signal, httpOptions: { ...params.config?.httpOptions, fetch } }
          try {
            const stream = await client.models.generateContentStream({ ...params, config })
            return Object.assign(stream, { controller })
          } catch (e) {
            if (e instanceof ApiError) Object.assign(e, { headers: failed })
            throw e
          }
        },
        assemble: geminiAssembly,
        meter: meterFor(opts),
        site,
        sdk: GEMINI_ERRORS,
      })(onChunk)
    },
  }
}
