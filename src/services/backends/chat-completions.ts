/**
 * The Chat Completions backend: type `chatcompletion` and the OpenAI-compatible presets.
 *
 * `makeChatCompletionsBackend(opts)` streams `POST {baseURL}/chat/completions` with
 * `stream_options.include_usage`, offering the request's tools as `function` tools with
 * `tool_choice: "required"` (no tools at all when the request has none); tool results
 * go back as `role: tool` messages after the assistant message with its `tool_calls`.
 * `reasoning.effort` is sent as `reasoning_effort`, and `verbosity`, `top_p` and
 * `extra_body` pass through (provider tools are refused by `decodeConfig`, but for
 * OpenRouter's web search: `plugins: [{id: "web"}]`, and the `url_citation` annotations
 * its deltas carry are one `web_search` hosted tool use with those pages as its sources). Reasoning
 * streamed as `reasoning_content` is the reply's opaque part and goes back on its
 * assistant message (DeepSeek requires it beside tool calls), and so does a tool
 * call's `extra_content` on its entry (Gemini 3's signature). A server
 * that refuses a forced tool choice with a 400 naming it (Claude 5 models behind
 * OpenRouter do) is asked again at once with `"auto"`, and that backend says
 * `"auto"` from then on; a reply without a tool call is asked again like on any backend. Content
 * deltas become `text` chunks, `reasoning_content`/`reasoning` deltas (sent by
 * DeepSeek, vLLM, Groq, OpenRouter, Ollama) `reasoning` chunks; tool-call fragments
 * are joined by index. The SDK swallows `[DONE]`, so the terminal mark is the
 * choice's `finish_reason`: a stream that ends without one is a `stream_cut`.
 */

import { Effect } from "effect"
import OpenAI, { AzureOpenAI } from "openai"
import { AZURE_API_VERSION } from "../../domain/config/index.ts"
import type { LlmChunk, LlmMessage, LlmReply, LlmRequest, MediaPart, TokenUsage } from "../../domain/llm.ts"
import { noUsage } from "../../domain/llm.ts"
import { dataUrl } from "../../domain/tools/media.ts"
import type { Backend, BackendError, OnChunk } from "./backend.ts"
import {
  type Assembly,
  backendFields,
  callSite,
  clientUrl,
  fail,
  lineCappedFetch,
  maxLineBytes,
  meterFor,
  type ReplyMeter,
  type SdkBackendOptions,
  sdkCall,
  unmetered,
  withExtraBody,
} from "./sdk-stream.ts"

type Params = OpenAI.Chat.ChatCompletionCreateParamsStreaming
type Chunk = OpenAI.Chat.ChatCompletionChunk

/**
 * What a reply must send back, kept as its opaque parts. Its `reasoning_content`:
 * DeepSeek (and the servers that copy it) refuse a later call whose assistant
 * message with tool calls lacks the reasoning that came with them; reasoning sent
 * as `reasoning` (OpenRouter, Groq) is not sent back, as not every server takes
 * that field in a message. And a tool call's `extra_content`: Gemini 3 signs its
 * tool calls there (`google.thought_signature`) and refuses them back unsigned.
 */
interface ReasoningPart {
  readonly reasoning_content: string
}

interface ToolCallExtraPart {
  readonly tool_call_id: string
  readonly extra_content: unknown
}

const isReasoningPart = (part: unknown): part is ReasoningPart =>
  part !== null && typeof part === "object" && typeof (part as { reasoning_content?: unknown }).reasoning_content === "string"

const isToolCallExtraPart = (part: unknown): part is ToolCallExtraPart =>
  part !== null &&
  typeof part === "object" &&
  typeof (part as { tool_call_id?: unknown }).tool_call_id === "string" &&
  "extra_content" in part

/** A user message's text and files as content parts: images as data URLs, audio as `input_audio`, documents as `file`. */
const withMedia = (text: string, media: ReadonlyArray<MediaPart>): Array<OpenAI.Chat.ChatCompletionContentPart> => [
  ...(text === "" ? [] : [{ type: "text" as const, text }]),
  ...media.map((m): OpenAI.Chat.ChatCompletionContentPart => {
    if (m.kind === "audio")
      return { type: "input_audio", input_audio: { data: m.data ?? "", format: m.mediaType === "audio/wav" ? "wav" : "mp3" } }
    if (m.kind === "file") return { type: "file", file: { filename: m.name, file_data: dataUrl(m) } }
    return { type: "image_url", image_url: { url: dataUrl(m) } }
  }),
]

const toMessage = (m: LlmMessage): OpenAI.Chat.ChatCompletionMessageParam => {
  switch (m.role) {
    case "user":
      return { role: "user", content: m.media === undefined || m.media.length === 0 ? m.content : withMedia(m.content, m.media) }
    case "assistant": {
      const parts = m.parts ?? []
      const extraOf = (id: string) => parts.find((p): p is ToolCallExtraPart => isToolCallExtraPart(p) && p.tool_call_id === id)
      const message: OpenAI.Chat.ChatCompletionAssistantMessageParam =
        m.toolCalls !== undefined && m.toolCalls.length > 0
          ? {
              role: "assistant",
              content: m.content === "" ? null : m.content,
              tool_calls: m.toolCalls.map((c) => {
                const extra = extraOf(c.id)
                return {
                  id: c.id,
                  type: "function" as const,
                  function: { name: c.name, arguments: c.arguments },
                  ...(extra === undefined ? {} : { extra_content: extra.extra_content }),
                }
              }),
            }
          : { role: "assistant", content: m.content }
      const carried = parts.find(isReasoningPart)
      return carried === undefined ? message : { ...message, ...carried }
    }
    case "tool":
      return { role: "tool", tool_call_id: m.toolCallId, content: m.content }
  }
}

/** The config's pass-through settings as Chat Completions names them; a reasoning summary has no Chat form. */
const settings = (opts: SdkBackendOptions): Partial<Params> => {
  const p = opts.provider
  if (p === undefined) return {}
  return {
    ...(p.reasoningEffort === undefined ? {} : { reasoning_effort: p.reasoningEffort as OpenAI.ReasoningEffort }),
    ...(p.verbosity === undefined ? {} : { verbosity: p.verbosity as "low" | "medium" | "high" }),
    ...(p.topP === undefined ? {} : { top_p: p.topP }),
  }
}

/** The request body for one call (without the transport options). */
export const chatParams = (request: LlmRequest, opts: SdkBackendOptions, forceToolChoice = true): Params =>
  withExtraBody(
    {
      model: opts.model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        ...(request.system === "" ? [] : [{ role: "system" as const, content: request.system }]),
        ...request.messages.map(toMessage),
      ],
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((t) => ({
              type: "function" as const,
              function: { name: t.name, description: t.description, parameters: { ...t.parameters } },
            })),
            tool_choice: forceToolChoice ? ("required" as const) : ("auto" as const),
          }
        : {}),
      ...(opts.temperature !== undefined ? { temperature: opts.temperature } : {}),
      ...(opts.maxTokens !== undefined ? { max_tokens: opts.maxTokens } : {}),
      ...settings(opts),
      // OpenRouter's web search is a plugin of the request (`decodeConfig` refuses the key on the other Chat types).
      ...(searches(opts) ? { plugins: [{ id: "web" }] } : {}),
    },
    opts,
  )

/** A citation of the reply's text, as OpenRouter's web plugin streams it in a delta's `annotations`. */
type Annotation = { readonly type?: string; readonly url_citation?: { readonly url?: unknown; readonly title?: unknown } } | null

interface PartialCall {
  id: string | undefined
  name: string | undefined
  args: string
  extra?: unknown
}

const toUsage = (u: OpenAI.CompletionUsage | null | undefined): TokenUsage =>
  u == null
    ? noUsage
    : {
        inputTokens: u.prompt_tokens ?? null,
        cachedInputTokens: u.prompt_tokens_details?.cached_tokens ?? null,
        outputTokens: u.completion_tokens ?? null,
        reasoningTokens: u.completion_tokens_details?.reasoning_tokens ?? null,
      }

/** Accumulates the chunks of one streamed chat completion, counting what it keeps on `meter`. */
/** Whether a backend made with `opts` asks for a web search (OpenRouter's plugin), whose citations its replies record. */
const searches = (opts: SdkBackendOptions): boolean => opts.type === "openrouter" && opts.provider?.webSearch === true

/** `cited`: record the `url_citation` annotations of the deltas (the call asked for a search). */
export const chatAssembly = (meter: ReplyMeter = unmetered, cited = false): Assembly<Chunk> => {
  let id = ""
  let model = ""
  let text = ""
  let reasoning = ""
  let finishReason: string | null = null
  /** Pages the text cites (OpenRouter's web plugin), by URL, each once. */
  const sources = new Map<string, string | null>()
  let usage: OpenAI.CompletionUsage | null = null
  /** Whether the reasoning came as `reasoning_content`, which goes back with the round's later calls. */
  let reasoningContent = false
  const calls = new Map<number, PartialCall>()

  const slotFor = (index: number | undefined, callId: string | undefined): number => {
    if (index !== undefined) return index
    for (const [i, c] of calls) if (callId !== undefined && c.id === callId) return i
    return callId !== undefined || calls.size === 0 ? calls.size : calls.size - 1
  }

  return {
    push: (chunk) => {
      const out: Array<LlmChunk> = []
      if (chunk.id) id = chunk.id
      if (chunk.model) model = chunk.model
      if (chunk.usage) usage = chunk.usage
      const choice = chunk.choices?.[0]
      if (choice === undefined) return out
      const delta = (choice.delta ?? {}) as OpenAI.Chat.ChatCompletionChunk.Choice.Delta & {
        reasoning_content?: unknown
        reasoning?: unknown
      }
      if (typeof delta.reasoning_content === "string") reasoningContent = true
      const thought = typeof delta.reasoning_content === "string" ? delta.reasoning_content : delta.reasoning
      if (typeof thought === "string" && thought !== "") {
        meter.add(thought)
        reasoning += thought
        out.push({ _tag: "reasoning", text: thought })
      }
      if (typeof delta.content === "string" && delta.content !== "") {
        meter.add(delta.content)
        text += delta.content
        out.push({ _tag: "text", text: delta.content })
      }
      for (const tc of delta.tool_calls ?? []) {
        const slot = slotFor(tc.index as number | undefined, tc.id ?? undefined)
        let call = calls.get(slot)
        if (call === undefined) {
          meter.entry()
          call = { id: undefined, name: undefined, args: "" }
          calls.set(slot, call)
        }
        // Some servers repeat a call's id and name with every fragment: what replaces them is counted as a replacement.
        if (tc.id) meter.replace(call.id ?? "", tc.id)
        if (tc.function?.name) meter.replace(call.name ?? "", tc.function.name)
        meter.add(tc.function?.arguments ?? "")
        if (tc.id) call.id = tc.id
        if (tc.function?.name) call.name = tc.function.name
        call.args += tc.function?.arguments ?? ""
        const extra = (tc as { extra_content?: unknown }).extra_content
        if (extra !== undefined && extra !== null) {
          meter.add(JSON.stringify(extra))
          call.extra = extra
        }
      }
      for (const a of (cited ? ((delta as { annotations?: unknown }).annotations ?? []) : []) as ReadonlyArray<Annotation>) {
        const cited = a?.type === "url_citation" ? a.url_citation : undefined
        if (typeof cited?.url !== "string" || sources.has(cited.url)) continue
        meter.add(`${cited.url}${cited.title ?? ""}`)
        sources.set(cited.url, typeof cited.title === "string" ? cited.title : null)
      }
      if (choice.finish_reason) finishReason = choice.finish_reason
      return out
    },
    finish: (): LlmReply => {
      if (finishReason === null) fail("stream_cut", "chat completion stream ended before a finish_reason")
      const entries = [...calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, c]) => ({
          id: c.id ?? `call_${index}`,
          name: c.name ?? fail("bad_reply", `tool call at index ${index} has arguments but no name`),
          arguments: c.args,
          extra: c.extra,
        }))
      const parts = [
        ...(reasoningContent ? [{ reasoning_content: reasoning } satisfies ReasoningPart] : []),
        ...entries.flatMap((c) =>
          c.extra === undefined ? [] : [{ tool_call_id: c.id, extra_content: c.extra } satisfies ToolCallExtraPart],
        ),
      ]
      const toolCalls = entries.map(({ id, name, arguments: args }) => ({ id, name, arguments: args }))
      const cited = [...sources].map(([url, title]) => ({ url, title }))
      return {
        ...(parts.length > 0 ? { parts } : {}),
        ...(cited.length > 0 ? { hostedToolUses: [{ tool: "web_search", detail: "", sources: cited }] } : {}),
        text,
        reasoning,
        toolCalls,
        usage: toUsage(usage),
        truncated: finishReason === "length",
        raw: {
          id,
          object: "chat.completion",
          model,
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: text === "" ? null : text,
                ...(reasoning === "" ? {} : { reasoning_content: reasoning }),
                ...(toolCalls.length === 0
                  ? {}
                  : {
                      tool_calls: toolCalls.map((c) => ({
                        id: c.id,
                        type: "function",
                        function: { name: c.name, arguments: c.arguments },
                      })),
                    }),
              },
              finish_reason: finishReason,
            },
          ],
          usage,
        },
      }
    },
  }
}

/** A keyless server still gets a placeholder: the OpenAI client refuses to start without a key. */
export const openAiClient = (opts: SdkBackendOptions): OpenAI =>
  opts.type === "azure_openai"
    ? azureClient(opts)
    : new OpenAI({
        apiKey: opts.apiKey ?? "no-key",
        ...clientUrl(opts.baseURL),
        maxRetries: 0,
        logLevel: "off",
        fetch: lineCappedFetch(maxLineBytes(opts)),
      })

/**
 * The official SDK's Azure client: `baseURL` is the resource's endpoint (the SDK adds
 * `/openai`), or a URL that already ends in `/openai`; the deployment is the model.
 */
const azureClient = (opts: SdkBackendOptions): OpenAI => {
  const { baseURL, defaultQuery } = clientUrl(opts.baseURL)
  const url = /\/openai\/?$/.test(baseURL) ? { baseURL } : { endpoint: baseURL }
  return new AzureOpenAI({
    apiKey: opts.apiKey ?? "no-key",
    apiVersion: opts.apiVersion ?? AZURE_API_VERSION,
    deployment: opts.model,
    ...url,
    ...(defaultQuery !== undefined ? { defaultQuery } : {}),
    maxRetries: 0,
    logLevel: "off",
    fetch: lineCappedFetch(maxLineBytes(opts)),
  })
}

/** A 400 whose message names the tool choice: the server will not be told to call a tool. */
const refusesForcedToolChoice = (e: BackendError): boolean => e.reason === "bad_request" && /tool[_ ]?choice/i.test(e.detail)

export const makeChatCompletionsBackend = (opts: SdkBackendOptions): Backend => {
  const client = openAiClient(opts)
  const site = callSite(opts)
  let forceToolChoice = true
  const callWith = (request: LlmRequest, onChunk: OnChunk, force: boolean) =>
    sdkCall({
      open: (signal) => client.chat.completions.create(chatParams(request, opts, force), { signal }),
      assemble: (meter) => chatAssembly(meter, searches(opts)),
      meter: meterFor(opts),
      site,
      sdk: OpenAI,
    })(onChunk)
  return {
    ...backendFields(opts),
    call: (request, onChunk) =>
      Effect.suspend(() => {
        const force = forceToolChoice && request.tools.length > 0
        return callWith(request, onChunk, force).pipe(
          Effect.catchIf(
            (e) => force && refusesForcedToolChoice(e),
            () => {
              forceToolChoice = false
              return callWith(request, onChunk, false)
            },
          ),
        )
      }),
  }
}
