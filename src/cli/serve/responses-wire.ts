/**
 * The OpenAI Responses wire format of `massgen serve`: a `POST /v1/responses` body read, and the response and its stream events written back.
 *
 * Contract: `readResponsesRequest(body, models, maxTextBytes)` gives a
 * `ResponsesRequest` or a `WireError`, as `readChatRequest` does for Chat
 * Completions: `input` is a string (the question) or a list of messages
 * (`{role, content}`, with or without `type: "message"`; content a string or
 * `input_text`/`output_text` parts), any other item a 400;
 * `instructions` is a system message (not shown to the agents);
 * `previous_response_id` names the response whose conversation this one
 * continues (`response-ids.ts`); the other fields are `readRequestFields`'s.
 * A response's id is `resp_` + its run's id (`responseId`, `runIdOf`).
 *
 * `responseBody` is a whole `response` object (`status` `completed`, or
 * `incomplete` for an answer salvaged at a timeout) with one `message` output
 * item and, when progress is given, a `reasoning` item before it holding the
 * progress lines as its summary; `usage` is the run's real tokens, as
 * `input_tokens`, `output_tokens` and their details. `responseEvents(base)`
 * writes the stream as OpenAI does, each event with its `sequence_number`:
 * `response.created`, `response.in_progress`, progress as a reasoning item's
 * `response.reasoning_summary_text.delta`s (one summary part, closed when the
 * answer starts; progress after it opens another item), the answer as a
 * message item's `response.output_text.delta`s, each item closed with its
 * `.done` events, then `response.completed` (or `response.incomplete`) with the
 * whole response, or `response.failed` with its error. Pure.
 */
import type { Usage } from "../../domain/state/index.ts"
import { badRequest, type ChatRequest, isObject, type RunFacts, readMessages, readModel, type WireError } from "./openai-wire.ts"
import { readRequestFields } from "./request-fields.ts"

export interface ResponsesRequest extends ChatRequest {
  readonly previousResponseId: string | null
}

const RESPONSE_PREFIX = "resp_"

export const responseId = (runId: string): string => `${RESPONSE_PREFIX}${runId}`

/** The run id a response id names, when it is one of this server's (`resp_log_...`, a safe name). */
export const runIdOf = (id: string): string | null => {
  const runId = id.startsWith(RESPONSE_PREFIX) ? id.slice(RESPONSE_PREFIX.length) : ""
  return /^log_[A-Za-z0-9_]+$/.test(runId) ? runId : null
}

/** `input` as messages: a string is one user message; items must be messages. */
const inputMessages = (input: unknown): ReadonlyArray<unknown> | WireError => {
  if (typeof input === "string") return [{ role: "user", content: input }]
  if (!Array.isArray(input) || input.length === 0) return badRequest("input is required: a string or a non-empty list of messages", "input")
  for (const [i, item] of input.entries()) {
    if (isObject(item) && item.type !== undefined && item.type !== "message")
      return badRequest(
        `input[${i}].type ${JSON.stringify(item.type)} is not supported: massgen serve takes messages (the council calls no client tools)`,
        `input[${i}].type`,
        "unsupported_parameter",
      )
  }
  return input
}

export const readResponsesRequest = (
  body: unknown,
  models: ReadonlyArray<string>,
  maxTextBytes = Number.MAX_SAFE_INTEGER,
): ResponsesRequest | WireError => {
  if (!isObject(body)) return badRequest("the request body must be a JSON object")
  const fields = readRequestFields(body, "responses")
  if ("status" in fields) return fields
  const model = readModel(body, models)
  if (typeof model !== "string") return model
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== "string")
    return badRequest("instructions must be a string", "instructions")
  const messages = inputMessages(body.input)
  if ("status" in messages) return messages
  const said = readMessages(messages, maxTextBytes, "input")
  if ("status" in said) return said
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean")
    return badRequest("stream must be a boolean", "stream")
  const previous = body.previous_response_id
  if (previous !== undefined && previous !== null && typeof previous !== "string")
    return badRequest("previous_response_id must be a string", "previous_response_id")
  return {
    model,
    ...said,
    stream: body.stream === true,
    includeUsage: false,
    fields,
    previousResponseId: typeof previous === "string" ? previous : null,
  }
}

export const responsesUsage = (usage: Usage) => ({
  input_tokens: usage.inputTokens,
  input_tokens_details: { cached_tokens: usage.cachedInputTokens },
  output_tokens: usage.outputTokens,
  output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  total_tokens: usage.inputTokens + usage.outputTokens,
})

/** What every response object of one request says, whatever its state. */
export interface ResponseBase {
  readonly id: string
  readonly createdAt: number
  readonly model: string
  readonly previousResponseId: string | null
  readonly runId: string
}

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed"

const reasoningItem = (id: string, text: string | null) => ({
  id,
  type: "reasoning",
  summary: text === null ? [] : [{ type: "summary_text", text }],
})

const textPart = (text: string) => ({ type: "output_text", text, annotations: [], logprobs: [] })

const messageItem = (id: string, text: string | null, status: "in_progress" | "completed" | "incomplete") => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content: text === null ? [] : [textPart(text)],
})

const responseObject = (
  base: ResponseBase,
  status: ResponseStatus,
  output: ReadonlyArray<unknown>,
  end: { readonly usage?: Usage; readonly massgen?: RunFacts; readonly error?: WireError } = {},
) => ({
  id: base.id,
  object: "response",
  created_at: base.createdAt,
  status,
  background: false,
  error: end.error ? { code: end.error.code ?? "server_error", message: end.error.message } : null,
  incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
  instructions: null,
  max_output_tokens: null,
  model: base.model,
  output,
  parallel_tool_calls: false,
  previous_response_id: base.previousResponseId,
  reasoning: { effort: null, summary: null },
  store: true,
  temperature: null,
  text: { format: { type: "text" } },
  tool_choice: "none",
  tools: [],
  top_p: null,
  truncation: "disabled",
  usage: end.usage ? responsesUsage(end.usage) : null,
  user: null,
  metadata: {},
  ...(end.massgen ? { massgen: end.massgen } : {}),
})

const messageId = (base: ResponseBase) => `msg_${base.runId}`

/** The whole response of a finished run. */
export const responseBody = (
  base: ResponseBase,
  end: { readonly content: string; readonly salvaged: boolean; readonly usage: Usage; readonly massgen: RunFacts },
) => {
  const status = end.salvaged ? "incomplete" : "completed"
  return responseObject(base, status, [messageItem(messageId(base), end.content, status)], end)
}

/** The stream of one response: each method gives the SSE text of the events it stands for. */
export const responseEvents = (base: ResponseBase) => {
  let sequence = 0
  const output: Array<unknown> = []
  let reasoning: { readonly id: string; readonly index: number; text: string } | null = null
  let message: { readonly id: string; readonly index: number; text: string } | null = null
  let reasoningCount = 0
  const frame = (type: string, data: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`

  const closeReasoning = (): string => {
    if (reasoning === null) return ""
    const { id, index, text } = reasoning
    reasoning = null
    const part = { type: "summary_text", text }
    const item = reasoningItem(id, text)
    output[index] = item
    return [
      frame("response.reasoning_summary_text.done", { item_id: id, output_index: index, summary_index: 0, text }),
      frame("response.reasoning_summary_part.done", { item_id: id, output_index: index, summary_index: 0, part }),
      frame("response.output_item.done", { output_index: index, item }),
    ].join("")
  }
  const closeMessage = (status: "completed" | "incomplete"): string => {
    if (message === null) return ""
    const { id, index, text } = message
    message = null
    const item = messageItem(id, text, status)
    output[index] = item
    return [
      frame("response.output_text.done", { item_id: id, output_index: index, content_index: 0, text, logprobs: [] }),
      frame("response.content_part.done", { item_id: id, output_index: index, content_index: 0, part: textPart(text) }),
      frame("response.output_item.done", { output_index: index, item }),
    ].join("")
  }

  return {
    start: (): string =>
      frame("response.created", { response: responseObject(base, "in_progress", []) }) +
      frame("response.in_progress", { response: responseObject(base, "in_progress", []) }),
    progress: (text: string): string => {
      let out = ""
      if (reasoning === null) {
        const id = `rs_${base.runId}_${++reasoningCount}`
        reasoning = { id, index: output.length, text: "" }
        output.push(reasoningItem(id, null))
        out +=
          frame("response.output_item.added", { output_index: reasoning.index, item: reasoningItem(id, null) }) +
          frame("response.reasoning_summary_part.added", {
            item_id: id,
            output_index: reasoning.index,
            summary_index: 0,
            part: { type: "summary_text", text: "" },
          })
      }
      reasoning.text += text
      return (
        out +
        frame("response.reasoning_summary_text.delta", {
          item_id: reasoning.id,
          output_index: reasoning.index,
          summary_index: 0,
          delta: text,
        })
      )
    },
    content: (text: string): string => {
      let out = closeReasoning()
      if (message === null) {
        message = { id: messageId(base), index: output.length, text: "" }
        output.push(messageItem(message.id, null, "in_progress"))
        out +=
          frame("response.output_item.added", { output_index: message.index, item: messageItem(message.id, null, "in_progress") }) +
          frame("response.content_part.added", { item_id: message.id, output_index: message.index, content_index: 0, part: textPart("") })
      }
      message.text += text
      return (
        out +
        frame("response.output_text.delta", {
          item_id: message.id,
          output_index: message.index,
          content_index: 0,
          delta: text,
          logprobs: [],
        })
      )
    },
    finish: (end: { readonly salvaged: boolean; readonly usage: Usage; readonly massgen: RunFacts }): string => {
      const status = end.salvaged ? "incomplete" : "completed"
      const closed = closeReasoning() + closeMessage(status)
      const type = end.salvaged ? "response.incomplete" : "response.completed"
      return closed + frame(type, { response: responseObject(base, status, output, end) })
    },
    fail: (error: WireError, massgen: RunFacts): string => {
      const closed = closeReasoning() + closeMessage("incomplete")
      return closed + frame("response.failed", { response: responseObject(base, "failed", output, { error, massgen }) })
    },
  }
}
