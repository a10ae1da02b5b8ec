/**
 * The Anthropic Messages backend: type `claude`.
 *
 * `makeAnthropicMessagesBackend(opts)` streams `POST {baseURL}/v1/messages` with the
 * system prompt at top level, the conversation as content blocks (tool results go
 * back as `tool_result` blocks leading one user message, a failed call's with
 * `is_error: true`, and consecutive messages of
 * one role are merged), and the request's tools as `{name, description, input_schema}`
 * after the server tools the config turns on (web search, code execution), with
 * `tool_choice: {type: "auto"}` (none when the request has no tools of its own). `top_p`,
 * `reasoning.effort` (as `output_config.effort`) and `extra_body` pass through.
 * `server_tool_use` blocks are the reply's hosted tool uses; they and their result
 * blocks go back with the signed thinking as its opaque parts. A turn paused by the
 * server tools' loop (`pause_turn`) is sent back as it came and continued within
 * the same call (up to `MAX_PAUSE_CONTINUATIONS` times); the call's reply joins
 * them. Claude models that think by default (Sonnet 5 and later) answer a forced
 * tool choice with a 400, and a reply without a tool call is asked again like on
 * any backend. `text_delta` becomes `text` chunks,
 * `thinking_delta` `reasoning` chunks; `input_json_delta` fragments are joined per
 * content block. The terminal event is `message_stop`; without it the call is a
 * `stream_cut`. Input tokens are `input_tokens` plus both cache counts.
 */
import Anthropic from "@anthropic-ai/sdk"
import { Effect } from "effect"
import type { HostedToolUse, LlmChunk, LlmMessage, LlmReply, LlmRequest, MediaPart, TokenUsage } from "../../domain/llm.ts"
import type { Backend, OnChunk } from "./backend.ts"
import {
  type Assembly,
  backendFields,
  callSite,
  clientUrl,
  fail,
  firstLine,
  lineCappedFetch,
  maxLineBytes,
  meterFor,
  type ReplyMeter,
  type SdkBackendOptions,
  sdkCall,
  unmetered,
  withExtraBody,
} from "./sdk-stream.ts"

type Params = Anthropic.Messages.MessageCreateParamsStreaming
type Event = Anthropic.Messages.RawMessageStreamEvent
type Block = Anthropic.Messages.ContentBlockParam

/**
 * Anthropic requires `max_tokens`; this is used when the config sets none. Claude
 * 5 models think before they answer, by default and within this limit, so it
 * leaves room for that: a reply cut off before its tool call is a wasted call.
 * (Only usage is billed; every Claude model still served takes 32K.)
 */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 32_000

/** What an empty tool result is sent as. */
export const EMPTY_RESULT = "(no output)"

const parseInput = (args: string): unknown => {
  try {
    const value: unknown = JSON.parse(args)
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : {}
  } catch {
    return {}
  }
}

/** A file as a content block: an image, or a document (a PDF), base64; the API reads them before the text. */
const mediaBlock = (m: MediaPart): Block => {
  if (m.kind === "file")
    return {
      type: "document",
      source: m.url !== undefined ? { type: "url", url: m.url } : { type: "base64", media_type: "application/pdf", data: m.data ?? "" },
      title: m.name,
    }
  const mediaType = m.mediaType as "image/png" | "image/jpeg" | "image/gif" | "image/webp"
  return {
    type: "image",
    source: m.url !== undefined ? { type: "url", url: m.url } : { type: "base64", media_type: mediaType, data: m.data ?? "" },
  }
}

const toTurn = (m: LlmMessage): { role: "user" | "assistant"; blocks: Array<Block> } => {
  switch (m.role) {
    case "user":
      return {
        role: "user",
        blocks: [...(m.media ?? []).map(mediaBlock), ...(m.content === "" ? [] : [{ type: "text" as const, text: m.content }])],
      }
    case "assistant":
      return {
        role: "assistant",
        blocks: [
          ...((m.parts ?? []) as Array<Block>),
          ...(m.content === "" ? [] : [{ type: "text" as const, text: m.content }]),
          ...(m.toolCalls ?? []).map((c) => ({ type: "tool_use" as const, id: c.id, name: c.name, input: parseInput(c.arguments) })),
        ],
      }
    case "tool":
      // The API refuses an empty result ("content field is empty").
      return {
        role: "user",
        blocks: [
          {
            type: "tool_result",
            tool_use_id: m.toolCallId,
            content: m.content === "" ? EMPTY_RESULT : m.content,
            ...(m.isError ? { is_error: true } : {}),
          },
        ],
      }
  }
}

/**
 * Merges consecutive turns of one role and drops empty ones (the API rejects empty
 * text). In a user turn the tool results come first, as the API requires: the
 * results of one reply's parallel calls are one user message, followed by any text.
 */
export const toAnthropicMessages = (messages: ReadonlyArray<LlmMessage>): Array<Anthropic.Messages.MessageParam> => {
  const out: Array<{ role: "user" | "assistant"; content: Array<Block> }> = []
  for (const turn of messages.map(toTurn)) {
    if (turn.blocks.length === 0) continue
    const last = out[out.length - 1]
    if (last !== undefined && last.role === turn.role) last.content.push(...turn.blocks)
    else out.push({ role: turn.role, content: [...turn.blocks] })
  }
  for (const turn of out) {
    if (turn.role === "user") turn.content.sort((a, b) => Number(b.type === "tool_result") - Number(a.type === "tool_result"))
  }
  return out
}

/**
 * The provider's own tools the config turns on, as server tools: basic web search
 * (every Claude model with web search takes it) and the Bash-and-files code
 * execution tool. Both are generally available: no beta header.
 */
const hostedTools = (opts: SdkBackendOptions): Array<Anthropic.Messages.ToolUnion> => [
  ...(opts.provider?.webSearch === true ? [{ type: "web_search_20250305" as const, name: "web_search" as const }] : []),
  ...(opts.provider?.codeExecution === true ? [{ type: "code_execution_20250825" as const, name: "code_execution" as const }] : []),
]

/**
 * The pass-through settings: `top_p` as written, `reasoning.effort` as
 * `output_config.effort` (`decodeConfig` allows only the levels Claude takes).
 * Sampling settings are not in the SDK's types (Claude 5 models refuse them), so
 * they go in as extra fields.
 */
const settings = (opts: SdkBackendOptions): Record<string, unknown> => {
  const p = opts.provider
  return {
    // The Messages API accepts 0..1 where the config allows 0..2.
    ...(opts.temperature !== undefined ? { temperature: Math.min(1, opts.temperature) } : {}),
    ...(p?.topP === undefined ? {} : { top_p: p.topP }),
    ...(p?.reasoningEffort === undefined ? {} : { output_config: { effort: p.reasoningEffort } }),
  }
}

/** The request body for one call (without the transport options). */
export const anthropicParams = (request: LlmRequest, opts: SdkBackendOptions): Params => {
  const tools = [
    ...hostedTools(opts),
    ...request.tools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: { ...t.parameters, required: [...t.parameters.required] },
    })),
  ]
  return withExtraBody(
    {
      model: opts.model,
      max_tokens: opts.maxTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
      stream: true,
      ...(request.system === "" ? {} : { system: request.system }),
      messages: toAnthropicMessages(request.messages),
      ...(tools.length > 0 ? { tools } : {}),
      ...(request.tools.length > 0 ? { tool_choice: { type: "auto" as const } } : {}),
      ...settings(opts),
    },
    opts,
  )
}

/** What a hosted tool use shows of its input: the query, the URL, the command or the code's first line. */
const hostedDetail = (name: string, input: unknown): string => {
  const i = (input ?? {}) as Record<string, unknown>
  const text = (key: string) => (typeof i[key] === "string" ? (i[key] as string) : "")
  switch (name) {
    case "web_search":
      return firstLine(text("query"))
    case "web_fetch":
      return firstLine(text("url"))
    case "code_execution":
      return firstLine(text("code"))
    case "bash_code_execution":
      return firstLine(text("command"))
    case "text_editor_code_execution":
      return firstLine(`${text("command")} ${text("path")}`)
    default:
      return firstLine(JSON.stringify(input ?? {}))
  }
}

interface BlockState {
  type: string
  text: string
  json: string
  /** A thinking block's signature; a redacted thinking block's data. */
  signature?: string
  data?: string
  id?: string
  name?: string
  input?: unknown
  /** A block that comes whole (a server tool's result), as it came: it goes back unchanged. */
  raw?: Block
}

/** The block types whose content streams in deltas; every other block comes whole at its start. */
const STREAMED_BLOCKS: ReadonlySet<string> = new Set(["text", "thinking", "redacted_thinking", "tool_use", "server_tool_use"])

interface UsageState {
  input: number | null
  cacheRead: number | null
  cacheWrite: number | null
  output: number | null
  thinking: number | null
}

const toUsage = (u: UsageState): TokenUsage => ({
  inputTokens: u.input === null ? null : u.input + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0),
  cachedInputTokens: u.cacheRead,
  outputTokens: u.output,
  reasoningTokens: u.thinking,
})

const mergeUsage = (into: UsageState, u: Partial<Anthropic.Messages.MessageDeltaUsage> | null | undefined): void => {
  if (u == null) return
  if (typeof u.input_tokens === "number") into.input = u.input_tokens
  if (typeof u.cache_read_input_tokens === "number") into.cacheRead = u.cache_read_input_tokens
  if (typeof u.cache_creation_input_tokens === "number") into.cacheWrite = u.cache_creation_input_tokens
  if (typeof u.output_tokens === "number") into.output = u.output_tokens
  if (typeof u.output_tokens_details?.thinking_tokens === "number") into.thinking = u.output_tokens_details.thinking_tokens
}

/** Accumulates the events of one streamed message, counting what it keeps on `meter`. */
export const anthropicAssembly = (meter: ReplyMeter = unmetered): Assembly<Event> => {
  let id = ""
  let model = ""
  let stopReason: string | null = null
  let stopped = false
  const usage: UsageState = { input: null, cacheRead: null, cacheWrite: null, output: null, thinking: null }
  const blocks = new Map<number, BlockState>()

  return {
    push: (event) => {
      const out: Array<LlmChunk> = []
      switch (event.type) {
        case "message_start":
          id = event.message.id
          model = event.message.model
          mergeUsage(usage, event.message.usage)
          break
        case "content_block_start": {
          const cb = event.content_block
          const state: BlockState = { type: cb.type, text: "", json: "" }
          if (cb.type === "text") meter.add(cb.text)
          if (cb.type === "tool_use" || cb.type === "server_tool_use") meter.add(`${cb.id}${cb.name}${JSON.stringify(cb.input ?? {})}`)
          if (cb.type === "thinking") meter.add(`${cb.thinking ?? ""}${cb.signature ?? ""}`)
          if (cb.type === "redacted_thinking") meter.add(cb.data)
          // A block that comes whole (a server tool's result) is kept as it came.
          if (!STREAMED_BLOCKS.has(cb.type)) meter.add(JSON.stringify(cb))
          if (cb.type === "text" && cb.text !== "") {
            state.text = cb.text
            out.push({ _tag: "text", text: cb.text })
          }
          if (cb.type === "tool_use" || cb.type === "server_tool_use") Object.assign(state, { id: cb.id, name: cb.name, input: cb.input })
          if (!STREAMED_BLOCKS.has(cb.type)) state.raw = cb as Block
          if (cb.type === "thinking") Object.assign(state, { text: cb.thinking ?? "", signature: cb.signature ?? "" })
          if (cb.type === "redacted_thinking") state.data = cb.data
          if (!blocks.has(event.index)) meter.entry()
          blocks.set(event.index, state)
          break
        }
        case "content_block_delta": {
          const block = blocks.get(event.index)
          const d = event.delta
          if (d.type === "text_delta") meter.add(d.text)
          else if (d.type === "thinking_delta") meter.add(d.thinking)
          else if (d.type === "signature_delta") meter.add(d.signature)
          else if (d.type === "input_json_delta") meter.add(d.partial_json)
          if (d.type === "text_delta") {
            if (block !== undefined) block.text += d.text
            out.push({ _tag: "text", text: d.text })
          } else if (d.type === "thinking_delta") {
            if (block !== undefined) block.text += d.thinking
            out.push({ _tag: "reasoning", text: d.thinking })
          } else if (d.type === "signature_delta") {
            if (block !== undefined) block.signature = (block.signature ?? "") + d.signature
          } else if (d.type === "input_json_delta") {
            if (block?.type !== "tool_use" && block?.type !== "server_tool_use")
              fail("bad_reply", `input_json_delta for content block ${event.index}, which is not a tool_use`)
            else block.json += d.partial_json
          }
          break
        }
        case "message_delta":
          stopReason = event.delta.stop_reason ?? stopReason
          mergeUsage(usage, event.usage)
          break
        case "message_stop":
          stopped = true
          break
      }
      return out
    },
    finish: (): LlmReply => {
      if (!stopped) fail("stream_cut", "message stream ended without message_stop")
      const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, b]) => b)
      const toolCalls = ordered
        .filter((b) => b.type === "tool_use")
        .map((b) => ({ id: b.id ?? "", name: b.name ?? "", arguments: b.json !== "" ? b.json : JSON.stringify(b.input ?? {}) }))
      const inputOf = (b: BlockState) => (b.json !== "" ? parseInput(b.json) : (b.input ?? {}))
      // The reply's blocks as they go back to the API: thinking signed, server tools' uses and results as they came.
      const content = ordered.map((b): Block => {
        switch (b.type) {
          case "text":
            return { type: "text", text: b.text }
          case "thinking":
            return { type: "thinking", thinking: b.text, signature: b.signature ?? "" }
          case "redacted_thinking":
            return { type: "redacted_thinking", data: b.data ?? "" }
          case "tool_use":
            return { type: "tool_use", id: b.id ?? "", name: b.name ?? "", input: inputOf(b) }
          case "server_tool_use":
            return {
              type: "server_tool_use",
              id: b.id ?? "",
              name: b.name as Anthropic.Messages.ServerToolUseBlockParam["name"],
              input: inputOf(b),
            }
          default:
            return b.raw as Block
        }
      })
      // Thinking must go back, signed and unchanged, with a later call that continues from this reply;
      // so do the server tools' uses and results, which the model reads on.
      const parts = content.filter((block) => block.type !== "text" && block.type !== "tool_use")
      const hostedToolUses = ordered.flatMap(
        (b): Array<HostedToolUse> =>
          b.type === "server_tool_use" ? [{ tool: b.name ?? "", detail: hostedDetail(b.name ?? "", inputOf(b)) }] : [],
      )
      return {
        parts,
        ...(hostedToolUses.length > 0 ? { hostedToolUses } : {}),
        text: ordered
          .filter((b) => b.type === "text")
          .map((b) => b.text)
          .join(""),
        reasoning: ordered
          .filter((b) => b.type === "thinking")
          .map((b) => b.text)
          .join(""),
        toolCalls,
        usage: toUsage(usage),
        truncated: stopReason === null ? null : stopReason === "max_tokens" || stopReason === "model_context_window_exceeded",
        raw: {
          id,
          type: "message",
          role: "assistant",
          model,
          content,
          stop_reason: stopReason,
          usage: {
            input_tokens: usage.input,
            cache_read_input_tokens: usage.cacheRead,
            cache_creation_input_tokens: usage.cacheWrite,
            output_tokens: usage.output,
          },
        },
      }
    },
  }
}

export const makeAnthropicMessagesBackend = (opts: SdkBackendOptions): Backend => {
  // A keyless endpoint (a local proxy) still gets a placeholder: without any key the SDK refuses to send.
  const client = new Anthropic({
    apiKey: opts.apiKey ?? "no-key",
    authToken: null,
    ...clientUrl(opts.baseURL),
    maxRetries: 0,
    logLevel: "off",
    fetch: lineCappedFetch(maxLineBytes(opts)),
  })
  const site = callSite(opts)
  const once = (request: LlmRequest, onChunk: OnChunk, meter: ReplyMeter) =>
    sdkCall({
      open: (signal) => client.messages.create(anthropicParams(request, opts), { signal }),
      assemble: anthropicAssembly,
      meter,
      site,
      sdk: Anthropic,
    })(onChunk)
  return {
    ...backendFields(opts),
    call: (request, onChunk) =>
      Effect.gen(function* () {
        // One cap for the call: its continuations of a paused turn count on the same meter.
        const meter = meterFor(opts)
        let reply = yield* once(request, onChunk, meter)
        // The paused turn goes back as it came, and the model goes on from there, in the same call.
        const paused: Array<Block> = []
        for (let n = 0; isPaused(reply) && n < MAX_PAUSE_CONTINUATIONS; n++) {
          paused.push(...(reply.raw as { content: Array<Block> }).content)
          const turn: LlmMessage = { role: "assistant", content: "", parts: [...paused] }
          reply = joinReplies(reply, yield* once({ ...request, messages: [...request.messages, turn] }, onChunk, meter))
        }
        return reply
      }),
  }
}

/**
 * How many times one call continues a paused turn (`stop_reason: "pause_turn"`:
 * the server tools' loop stopped before the model finished, and the API asks for
 * the turn back to go on) before the reply is taken as it is.
 */
export const MAX_PAUSE_CONTINUATIONS = 5

const isPaused = (reply: LlmReply): boolean => {
  const raw = reply.raw as { stop_reason?: unknown } | Array<{ stop_reason?: unknown }>
  return (Array.isArray(raw) ? raw[raw.length - 1] : raw)?.stop_reason === "pause_turn"
}

const sum = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : a + b)

/** A paused turn's reply and its continuation's, as one reply: both were billed, and the later one says how it ended. */
const joinReplies = (a: LlmReply, b: LlmReply): LlmReply => {
  const hosted = [...(a.hostedToolUses ?? []), ...(b.hostedToolUses ?? [])]
  return {
    text: a.text + b.text,
    reasoning: a.reasoning + b.reasoning,
    toolCalls: [...a.toolCalls, ...b.toolCalls],
    usage: {
      inputTokens: sum(a.usage.inputTokens, b.usage.inputTokens),
      cachedInputTokens: sum(a.usage.cachedInputTokens, b.usage.cachedInputTokens),
      outputTokens: sum(a.usage.outputTokens, b.usage.outputTokens),
      reasoningTokens: sum(a.usage.reasoningTokens, b.usage.reasoningTokens),
    },
    truncated: b.truncated,
    raw: [...(Array.isArray(a.raw) ? a.raw : [a.raw]), b.raw],
    parts: [...(a.parts ?? []), ...(b.parts ?? [])],
    ...(hosted.length > 0 ? { hostedToolUses: hosted } : {}),
  }
}
