/**
 * The OpenAI Chat Completions wire format of `massgen serve`: a request read
 * into a conversation, and the completion, stream chunks and errors written back.
 *
 * Contract: `readChatRequest(body, models, maxTextBytes)` takes the parsed JSON
 * body, the served model ids and the most UTF-8 bytes of message text a request
 * may bring, and gives a `ChatRequest` (the model, the conversation before
 * the last user message, that message as the question, whether to stream) or a
 * `WireError` with its HTTP status: 413 when the user and assistant messages'
 * text together is over `maxTextBytes` (`code: "question_too_large"`; the run
 * would record it and show it to every agent), 400 for a body that is not an object, a
 * missing or empty `messages`, a message that is not `{role, content}` text, a
 * conversation that does not end with a user message, and a field refused by
 * `readRequestFields` (`request-fields.ts`: `tools`, `n` above 1, `logprobs`,
 * an unknown field, ...); 404 for a model that is not served (`readModel`). `system` and
 * `developer` messages are not shown to the agents (MassGen skips them too);
 * each agent keeps its own system message. Text content given as parts
 * (`[{type: "text", text}]`; `input_text`, `output_text` as Responses has them) is
 * joined; any other part is a 400 (`readMessages`, which the Responses reader shares). Pure.
 *
 * What goes back (`completionBody`, `chunkBody`, `errorBody`) is OpenAI's shape,
 * plus the extension field `massgen`: `{run_id, log_dir, finish_reason,
 * winner, cost_usd}` (and `answer` on an error that has a salvaged answer).
 * `usage` holds the run's real summed tokens (reasoning tokens are part of
 * the completion tokens, cached ones of the prompt tokens, as OpenAI counts).
 *
 * Words: the *question* is the last user message; the *conversation* is every
 * user and assistant message before it.
 */
import type { ConversationMessage } from "../../domain/events/index.ts"
import type { Usage } from "../../domain/state/index.ts"
import { utf8Bytes } from "../../lib/utf8-bytes.ts"
import { type RequestFields, readRequestFields } from "./request-fields.ts"
import { badRequest, isObject, type WireError } from "./wire-error.ts"

export { badRequest, isObject, type WireError } from "./wire-error.ts"

export interface ChatRequest {
  readonly model: string
  readonly question: string
  readonly conversation: ReadonlyArray<ConversationMessage>
  readonly stream: boolean
  /** `stream_options.include_usage`: a last chunk with `usage` and no choices. */
  readonly includeUsage: boolean
  /** The request's sampling and answer format (`request-fields.ts`). */
  readonly fields?: RequestFields
}

const TEXT_PARTS = new Set<unknown>(["text", "input_text", "output_text"])

/** A message's text: a string, or text parts joined; null for anything else. */
const textOf = (content: unknown): string | null => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return null
  const texts: Array<string> = []
  for (const part of content) {
    if (!isObject(part) || !TEXT_PARTS.has(part.type) || typeof part.text !== "string") return null
    texts.push(part.text)
  }
  return texts.join("\n")
}

/** The served model a request names (the first served model when it names none), or its error. */
export const readModel = (body: Record<string, unknown>, models: ReadonlyArray<string>): string | WireError => {
  const model = body.model
  if (model !== undefined && model !== null && typeof model !== "string") return badRequest("model must be a string", "model")
  const chosen = typeof model === "string" ? model : models[0]!
  if (!models.includes(chosen)) {
    return {
      status: 404,
      message: `The model ${JSON.stringify(chosen)} does not exist; served: ${models.join(", ")}`,
      type: "not_found_error",
      code: "model_not_found",
      param: "model",
    }
  }
  return chosen
}

/**
 * The question and conversation of a list of `{role, content}` messages (`name`
 * is the field they came in, for errors): system and developer messages skipped.
 */
export const readMessages = (
  messages: ReadonlyArray<unknown>,
  maxTextBytes: number,
  name = "messages",
): { readonly question: string; readonly conversation: ReadonlyArray<ConversationMessage> } | WireError => {
  const said: Array<ConversationMessage> = []
  for (const [i, m] of messages.entries()) {
    if (!isObject(m) || typeof m.role !== "string") return badRequest(`${name}[${i}] must be an object with a role`, `${name}[${i}]`)
    if (m.role === "system" || m.role === "developer") continue
    if (m.role !== "user" && m.role !== "assistant")
      return badRequest(
        `${name}[${i}].role ${JSON.stringify(m.role)} is not supported (user, assistant, system, developer)`,
        `${name}[${i}].role`,
      )
    const text = textOf(m.content)
    if (text === null) return badRequest(`${name}[${i}].content must be text: a string or text parts`, `${name}[${i}].content`)
    said.push({ role: m.role, content: text })
  }
  const textBytes = said.reduce((n, m) => n + utf8Bytes(m.content), 0)
  if (textBytes > maxTextBytes) {
    return {
      status: 413,
      message: `the messages' text is ${textBytes} bytes, over this server's limit of ${maxTextBytes} (--max-question-bytes)`,
      type: "invalid_request_error",
      code: "question_too_large",
      param: name,
    }
  }
  const last = said[said.length - 1]
  if (last === undefined || last.role !== "user") return badRequest("the last user or assistant message must be the user's", name)
  return { question: last.content, conversation: said.slice(0, -1) }
}

export const readChatRequest = (
  body: unknown,
  models: ReadonlyArray<string>,
  maxTextBytes = Number.MAX_SAFE_INTEGER,
): ChatRequest | WireError => {
  if (!isObject(body)) return badRequest("the request body must be a JSON object")
  const fields = readRequestFields(body, "chat")
  if ("status" in fields) return fields
  const model = readModel(body, models)
  if (typeof model !== "string") return model
  const messages = body.messages
  if (!Array.isArray(messages) || messages.length === 0)
    return badRequest("messages is required: a non-empty array of {role, content}", "messages")
  const said = readMessages(messages, maxTextBytes)
  if ("status" in said) return said
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean")
    return badRequest("stream must be a boolean", "stream")
  const options = body.stream_options
  return {
    model,
    ...said,
    stream: body.stream === true,
    includeUsage: isObject(options) && options.include_usage === true,
    fields,
  }
}

/** What the `massgen` extension field says of a run. */
export interface RunFacts {
  readonly run_id: string
  readonly log_dir: string
  readonly finish_reason: string | null
  readonly winner: string | null
  readonly cost_usd: number | null
  /** On an error: the answer salvaged at the stop, where there is one. */
  readonly answer?: string
}

export const usageBody = (usage: Usage) => ({
  prompt_tokens: usage.inputTokens,
  completion_tokens: usage.outputTokens,
  total_tokens: usage.inputTokens + usage.outputTokens,
  prompt_tokens_details: { cached_tokens: usage.cachedInputTokens },
  completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
})

export const errorBody = (error: WireError, massgen?: RunFacts) => ({
  error: { message: error.message, type: error.type, param: error.param ?? null, code: error.code },
  ...(massgen ? { massgen } : {}),
})

export const completionBody = (input: {
  readonly id: string
  readonly created: number
  readonly model: string
  readonly content: string
  readonly finishReason: "stop" | "length"
  readonly usage: Usage
  readonly massgen: RunFacts
}) => ({
  id: input.id,
  object: "chat.completion",
  created: input.created,
  model: input.model,
  choices: [
    { index: 0, message: { role: "assistant", content: input.content, refusal: null }, logprobs: null, finish_reason: input.finishReason },
  ],
  usage: usageBody(input.usage),
  massgen: input.massgen,
})

/** One `chat.completion.chunk`: a delta (with `reasoning_content` for coordination progress), a finish, or the usage. */
export const chunkBody = (input: {
  readonly id: string
  readonly created: number
  readonly model: string
  readonly delta?: { readonly role?: "assistant"; readonly content?: string; readonly reasoning_content?: string }
  readonly finishReason?: "stop" | "length"
  readonly usage?: Usage
  readonly massgen?: RunFacts
}) => ({
  id: input.id,
  object: "chat.completion.chunk",
  created: input.created,
  model: input.model,
  choices:
    input.usage !== undefined && input.delta === undefined
      ? []
      : [{ index: 0, delta: input.delta ?? {}, logprobs: null, finish_reason: input.finishReason ?? null }],
  ...(input.usage !== undefined ? { usage: usageBody(input.usage) } : {}),
  ...(input.massgen !== undefined ? { massgen: input.massgen } : {}),
})

export const sseFrame = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`
export const SSE_DONE = "data: [DONE]\n\n"
