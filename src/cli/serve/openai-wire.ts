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
 * conversation that does not end with a user message, `n` above 1, and `tools`,
 * `functions` or a `tool_choice` (not supported: the council answers, it does
 * not call the client's tools); 404 for a model that is not served. `system` and
 * `developer` messages are not shown to the agents (MassGen skips them too);
 * each agent keeps its own system message. Text content given as parts
 * (`[{type: "text", text}]`) is joined; any other part is a 400. Pure.
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

export interface ChatRequest {
  readonly model: string
  readonly question: string
  readonly conversation: ReadonlyArray<ConversationMessage>
  readonly stream: boolean
  /** `stream_options.include_usage`: a last chunk with `usage` and no choices. */
  readonly includeUsage: boolean
}

/** An error as OpenAI gives it, with the HTTP status it goes with. */
export interface WireError {
  readonly status: number
  readonly message: string
  readonly type:
    | "invalid_request_error"
    | "authentication_error"
    | "not_found_error"
    | "rate_limit_error"
    | "server_error"
    | "timeout_error"
    | "service_unavailable"
  readonly code: string | null
  readonly param?: string
}

export const badRequest = (message: string, param?: string, code: string | null = null): WireError => ({
  status: 400,
  message,
  type: "invalid_request_error",
  code,
  ...(param !== undefined ? { param } : {}),
})

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** A message's text: a string, or text parts joined; null for anything else. */
const textOf = (content: unknown): string | null => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return null
  const texts: Array<string> = []
  for (const part of content) {
    if (!isObject(part) || part.type !== "text" || typeof part.text !== "string") return null
    texts.push(part.text)
  }
  return texts.join("\n")
}

export const readChatRequest = (
  body: unknown,
  models: ReadonlyArray<string>,
  maxTextBytes = Number.MAX_SAFE_INTEGER,
): ChatRequest | WireError => {
  if (!isObject(body)) return badRequest("the request body must be a JSON object")
  for (const key of ["tools", "functions", "tool_choice", "function_call"] as const) {
    const v = body[key]
    if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0)) {
      return badRequest(
        `${key} is not supported: massgen serve answers with the council's final answer and calls no client tools`,
        key,
        "unsupported_parameter",
      )
    }
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1)
    return badRequest("n: only 1 choice is supported", "n", "unsupported_parameter")
  const model = body.model
  if (model !== undefined && typeof model !== "string") return badRequest("model must be a string", "model")
  const chosen = model ?? models[0]!
  if (!models.includes(chosen)) {
    return {
      status: 404,
      message: `The model ${JSON.stringify(chosen)} does not exist; served: ${models.join(", ")}`,
      type: "not_found_error",
      code: "model_not_found",
      param: "model",
    }
  }
  const messages = body.messages
  if (!Array.isArray(messages) || messages.length === 0)
    return badRequest("messages is required: a non-empty array of {role, content}", "messages")
  const said: Array<ConversationMessage> = []
  for (const [i, m] of messages.entries()) {
    if (!isObject(m) || typeof m.role !== "string") return badRequest(`messages[${i}] must be an object with a role`, `messages[${i}]`)
    if (m.role === "system" || m.role === "developer") continue
    if (m.role !== "user" && m.role !== "assistant")
      return badRequest(
        `messages[${i}].role ${JSON.stringify(m.role)} is not supported (user, assistant, system, developer)`,
        `messages[${i}].role`,
      )
    const text = textOf(m.content)
    if (text === null) return badRequest(`messages[${i}].content must be text: a string or text parts`, `messages[${i}].content`)
    said.push({ role: m.role, content: text })
  }
  const textBytes = said.reduce((n, m) => n + utf8Bytes(m.content), 0)
  if (textBytes > maxTextBytes) {
    return {
      status: 413,
      message: `the messages' text is ${textBytes} bytes, over this server's limit of ${maxTextBytes} (--max-question-bytes)`,
      type: "invalid_request_error",
      code: "question_too_large",
      param: "messages",
    }
  }
  const last = said[said.length - 1]
  if (last === undefined || last.role !== "user") return badRequest("the last user or assistant message must be the user's", "messages")
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean")
    return badRequest("stream must be a boolean", "stream")
  const options = body.stream_options
  return {
    model: chosen,
    question: last.content,
    conversation: said.slice(0, -1),
    stream: body.stream === true,
    includeUsage: isObject(options) && options.include_usage === true,
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
