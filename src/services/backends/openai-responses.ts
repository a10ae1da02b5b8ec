/**
 * The OpenAI Responses backend: type `openai`, and `grok` when it turns on a provider tool (xAI's Responses endpoint).
 *
 * `makeOpenAiResponsesBackend(opts)` streams `POST {baseURL}/responses` with the
 * system prompt as `instructions`, the conversation as input items (tool results as
 * `function_call_output` items after the reply's opaque parts and `function_call`
 * items), and the request's tools as non-strict `function` tools with `tool_choice:
 * "required"` (none when the request has none). The provider's own tools the config
 * turns on (`web_search`, `code_interpreter`) come first; `reasoning`, `text`,
 * `top_p` and `extra_body` pass through. Its `web_search_call` and
 * `code_interpreter_call` output items are the reply's hosted tool uses (the pages its
 * text cites, `url_citation` annotations, the last search's sources), and go
 * back with the reasoning items as its opaque parts. `response.output_text.delta`
 * becomes `text` chunks and `response.reasoning_summary_text.delta` /
 * `response.reasoning_text.delta` `reasoning` chunks. Function-call arguments are joined from their deltas, and the
 * `...arguments.done` / `output_item.done` events, when sent, give the final text.
 * The terminal event is `response.completed` or `response.incomplete`; a stream
 * without one is a `stream_cut`, and `response.failed` fails with the provider's code.
 */
import { Effect } from "effect"
import OpenAI from "openai"
import type { HostedToolUse, LlmChunk, LlmMessage, LlmReply, LlmRequest, MediaPart, TokenUsage } from "../../domain/llm.ts"
import { noUsage } from "../../domain/llm.ts"
import { dataUrl } from "../../domain/tools/media.ts"
import { type Backend, BackendError } from "./backend.ts"
import { openAiClient } from "./chat-completions.ts"
import { toBackendError } from "./errors.ts"
import {
  type Assembly,
  backendFields,
  callSite,
  fail,
  firstLine,
  meterFor,
  type ReplyMeter,
  type SdkBackendOptions,
  sdkCall,
  unmetered,
  withExtraBody,
} from "./sdk-stream.ts"

type Params = OpenAI.Responses.ResponseCreateParamsStreaming
type Event = OpenAI.Responses.ResponseStreamEvent
type Response = OpenAI.Responses.Response

/** A user message's text and files as input parts: images as `input_image`, documents as `input_file`, both as data URLs. */
const withMedia = (text: string, media: ReadonlyArray<MediaPart>): OpenAI.Responses.ResponseInputMessageContentList => [
  ...(text === "" ? [] : [{ type: "input_text" as const, text }]),
  ...media.map(
    (m): OpenAI.Responses.ResponseInputContent =>
      m.kind === "file"
        ? m.url !== undefined
          ? { type: "input_file", file_url: m.url }
          : { type: "input_file", filename: m.name, file_data: dataUrl(m) }
        : { type: "input_image", image_url: dataUrl(m), detail: "auto" },
  ),
]

const toItems = (m: LlmMessage): Array<OpenAI.Responses.ResponseInputItem> => {
  switch (m.role) {
    case "user":
      return [{ role: "user", content: m.media === undefined || m.media.length === 0 ? m.content : withMedia(m.content, m.media) }]
    case "assistant":
      return [
        ...((m.parts ?? []) as Array<OpenAI.Responses.ResponseInputItem>),
        ...(m.content === "" ? [] : [{ role: "assistant" as const, content: m.content }]),
        ...(m.toolCalls ?? []).map((c) => ({ type: "function_call" as const, call_id: c.id, name: c.name, arguments: c.arguments })),
      ]
    case "tool":
      return [{ type: "function_call_output", call_id: m.toolCallId, output: m.content }]
  }
}

/** The provider's own tools the config turns on, in the Responses tool format (as MassGen sends them). */
const hostedTools = (opts: SdkBackendOptions): Array<OpenAI.Responses.Tool> => [
  ...(opts.provider?.webSearch === true ? [{ type: "web_search" as const }] : []),
  ...(opts.provider?.codeExecution === true ? [{ type: "code_interpreter" as const, container: { type: "auto" as const } }] : []),
]

/** `reasoning` and `text` as the config gives them; effort and summary are checked by `decodeConfig`. */
const settings = (opts: SdkBackendOptions): Partial<Params> => {
  const p = opts.provider
  if (p === undefined) return {}
  const reasoning = {
    ...(p.reasoningEffort === undefined ? {} : { effort: p.reasoningEffort as OpenAI.ReasoningEffort }),
    ...(p.reasoningSummary === undefined ? {} : { summary: p.reasoningSummary as "auto" | "concise" | "detailed" }),
  }
  return {
    ...(Object.keys(reasoning).length === 0 ? {} : { reasoning }),
    ...(p.verbosity === undefined ? {} : { text: { verbosity: p.verbosity as "low" | "medium" | "high" } }),
    ...(p.topP === undefined ? {} : { top_p: p.topP }),
  }
}

/** The request body for one call (without the transport options). */
export const responsesParams = (request: LlmRequest, opts: SdkBackendOptions): Params => {
  const tools = [
    ...hostedTools(opts),
    ...request.tools.map((t) => ({
      type: "function" as const,
      name: t.name,
      description: t.description,
      parameters: { ...t.parameters },
      strict: false,
    })),
  ]
  return withExtraBody(
    {
      model: opts.model,
      stream: true,
      ...(request.system === "" ? {} : { instructions: request.system }),
      input: request.messages.flatMap(toItems),
      ...(tools.length > 0 ? { tools } : {}),
      ...(request.tools.length > 0 ? { tool_choice: "required" as const } : {}),
      ...(opts.temperature !== undefined ? { temperature: opts.temperature } : {}),
      ...(opts.maxTokens !== undefined ? { max_output_tokens: opts.maxTokens } : {}),
      ...settings(opts),
    },
    opts,
  )
}

interface PartialCall {
  id: string | undefined
  name: string | undefined
  args: string
}

const toUsage = (u: OpenAI.Responses.ResponseUsage | null | undefined): TokenUsage =>
  u == null
    ? noUsage
    : {
        inputTokens: u.input_tokens ?? null,
        cachedInputTokens: u.input_tokens_details?.cached_tokens ?? null,
        outputTokens: u.output_tokens ?? null,
        reasoningTokens: u.output_tokens_details?.reasoning_tokens ?? null,
      }

/** A web search or code interpreter item of the output, as a hosted tool use; null for any other item. */
const hostedUse = (item: Response["output"][number]): HostedToolUse | null => {
  if (item.type === "code_interpreter_call") return { tool: "code_interpreter", detail: firstLine(item.code ?? "") }
  if (item.type !== "web_search_call") return null
  const action = item.action as
    | Partial<{ type: string; query: string; queries: Array<string>; url: string | null; pattern: string }>
    | undefined
  const detail =
    action?.type === "open_page"
      ? `open ${action.url ?? ""}`
      : action?.type === "find_in_page"
        ? `find ${JSON.stringify(action.pattern ?? "")} in ${action.url ?? ""}`
        : (action?.queries ?? []).join("; ") || (action?.query ?? "")
  return { tool: "web_search", detail: firstLine(detail) }
}

/** The pages the reply's text cites (`url_citation` annotations of its message items), each once. */
const citations = (output: Response["output"]): ReadonlyArray<{ url: string; title: string | null }> => {
  const seen = new Map<string, string | null>()
  for (const item of output) {
    if (item.type !== "message") continue
    for (const part of item.content ?? []) {
      if (part.type !== "output_text") continue
      for (const a of part.annotations ?? []) if (a.type === "url_citation" && !seen.has(a.url)) seen.set(a.url, a.title ?? null)
    }
  }
  return [...seen].map(([url, title]) => ({ url, title }))
}

/** The reply's hosted tool uses, its citations on its last web search (or on a search of their own when it reports none). */
const withCitations = (uses: ReadonlyArray<HostedToolUse>, output: Response["output"]): ReadonlyArray<HostedToolUse> => {
  const sources = citations(output)
  if (sources.length === 0) return uses
  const last = uses.map((u) => u.tool).lastIndexOf("web_search")
  if (last < 0) return [...uses, { tool: "web_search", detail: "", sources }]
  return uses.map((u, i) => (i === last ? { ...u, sources } : u))
}

/** Output items a later call of the round must get back: reasoning, and the hosted tool calls that may follow it. */
const OPAQUE_ITEMS: ReadonlySet<string> = new Set(["reasoning", "web_search_call", "code_interpreter_call"])

const failed = (response: Response): never => {
  const code = response.error?.code ?? "unknown"
  const detail = `response failed: ${code}: ${response.error?.message ?? "no message"}`
  if (code.includes("rate_limit")) return fail("rate_limited", detail)
  if (code.startsWith("invalid")) return fail("bad_request", detail, false)
  return fail("server_error", detail)
}

/** Accumulates the events of one streamed response, counting what it keeps on `meter`. */
export const responsesAssembly = (meter: ReplyMeter = unmetered): Assembly<Event> => {
  let text = ""
  let reasoning = ""
  let final: Response | null = null
  const calls = new Map<number, PartialCall>()
  const callAt = (index: number): PartialCall => {
    let call = calls.get(index)
    if (call === undefined) {
      meter.entry()
      call = { id: undefined, name: undefined, args: "" }
      calls.set(index, call)
    }
    return call
  }

  return {
    push: (event) => {
      const out: Array<LlmChunk> = []
      switch (event.type) {
        case "response.output_text.delta":
        case "response.refusal.delta":
          meter.add(event.delta)
          text += event.delta
          out.push({ _tag: "text", text: event.delta })
          break
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta":
          meter.add(event.delta)
          reasoning += event.delta
          out.push({ _tag: "reasoning", text: event.delta })
          break
        case "response.output_item.added":
        case "response.output_item.done":
          if (event.item.type === "function_call") {
            const call = callAt(event.output_index)
            const args = event.type === "response.output_item.done" || call.args === "" ? (event.item.arguments ?? call.args) : call.args
            meter.replace(`${call.id ?? ""}${call.name ?? ""}${call.args}`, `${event.item.call_id}${event.item.name}${args}`)
            call.id = event.item.call_id
            call.name = event.item.name
            call.args = args
          }
          break
        case "response.function_call_arguments.delta":
          meter.add(event.delta)
          callAt(event.output_index).args += event.delta
          break
        case "response.function_call_arguments.done": {
          const call = callAt(event.output_index)
          meter.replace(call.args, event.arguments)
          call.args = event.arguments
          break
        }
        case "response.completed":
        case "response.incomplete":
          final = event.response
          break
        case "response.failed":
          failed(event.response)
          break
      }
      return out
    },
    finish: (): LlmReply => {
      const response = final ?? fail("stream_cut", "responses stream ended without response.completed")
      const fromOutput = (response.output ?? []).flatMap((item, index) =>
        item.type === "function_call" ? [[index, { id: item.call_id, name: item.name, args: item.arguments }] as const] : [],
      )
      const entries = calls.size > 0 ? [...calls.entries()] : fromOutput
      const toolCalls = [...entries]
        .sort(([a], [b]) => a - b)
        .map(([index, c]) => ({
          id: c.id ?? `call_${index}`,
          name: c.name ?? fail("bad_reply", `function call at output ${index} has arguments but no name`),
          arguments: c.args,
        }))
      const output = response.output ?? []
      const hostedToolUses = withCitations(
        output.flatMap((item) => hostedUse(item) ?? []),
        output,
      )
      return {
        // Reasoning items (and the hosted tool calls after them) go back with a later call that continues from this reply.
        parts: output.filter((item) => OPAQUE_ITEMS.has(item.type)),
        ...(hostedToolUses.length > 0 ? { hostedToolUses } : {}),
        text: text === "" ? (response.output_text ?? "") : text,
        reasoning,
        toolCalls,
        usage: toUsage(response.usage),
        truncated: response.status === "incomplete" ? response.incomplete_details?.reason === "max_output_tokens" : false,
        raw: response,
      }
    },
  }
}

export const makeOpenAiResponsesBackend = (opts: SdkBackendOptions): Backend => {
  const client = openAiClient(opts)
  const site = callSite(opts)
  return {
    ...backendFields(opts),
    call: (request, onChunk) =>
      sdkCall({
        open: (signal) => client.responses.create(responsesParams(request, opts), { signal }),
        assemble: responsesAssembly,
        meter: meterFor(opts),
        site,
        sdk: OpenAI,
      })(onChunk),
    ...(opts.type === "openai" ? { generateImage: imageGenerator(client, site) } : {}),
  }
}

/** The images model `generate_media` uses (MassGen's default for OpenAI). */
export const IMAGE_MODEL = "gpt-image-1"

/** One image from the images API (`POST /images/generations`), base64. */
const imageGenerator = (client: OpenAI, site: ReturnType<typeof callSite>) => (prompt: string, size: string | null) =>
  Effect.tryPromise({
    try: (signal) =>
      client.images.generate({ model: IMAGE_MODEL, prompt, n: 1, ...(size !== null ? { size: size as "1024x1024" } : {}) }, { signal }),
    catch: (e) => toBackendError(e, "open", site.secrets, site.endpoint, OpenAI),
  }).pipe(
    Effect.flatMap((r) => {
      const data = r.data?.[0]?.b64_json
      return data === undefined
        ? Effect.fail(
            new BackendError({
              reason: "bad_reply",
              detail: "the images API gave no image data",
              retryable: false,
              retryAfterSeconds: null,
            }),
          )
        : Effect.succeed({ data, model: IMAGE_MODEL })
    }),
  )
