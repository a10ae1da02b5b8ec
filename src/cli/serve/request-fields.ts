/**
 * What a request to `massgen serve` may ask besides its messages: each field is honoured or refused, none is dropped.
 *
 * Contract: `readRequestFields(body, api)` checks every top-level field of a
 * Chat Completions (`chat`) or Responses (`responses`) body and gives the
 * request's `RequestFields`, or a 400 naming the first field it refuses:
 * - the sampling fields (`temperature`, `top_p`, `max_tokens`,
 *   `max_completion_tokens`, `max_output_tokens`, `stop`, `seed`) are the
 *   presenter's (`presenter-backends.ts`), checked here for their type and range;
 * - `response_format` (Chat) and `text.format` (Responses), `json_object` or
 *   `json_schema`, ask for a final answer that is valid JSON (matching the schema:
 *   `answer-format.ts`);
 * - the fields the API reads elsewhere (`model`, `messages`, `input`,
 *   `instructions`, `stream`, `stream_options.include_usage`,
 *   `previous_response_id`) and those that change nothing here but are accepted
 *   as the API defines them (`user`, `metadata`, `safety_identifier`,
 *   `prompt_cache_key`, `parallel_tool_calls`, `store` true, `n` 1, `logprobs`
 *   false, empty `tools`/`include`, `tool_choice` none) pass;
 * - anything else is refused: `logprobs` true, `top_logprobs`, `n` above 1,
 *   `tools`, `functions`, `tool_choice`, `store` false (every request is a run kept
 *   in its log directory), the penalties, `logit_bias`, `audio`, ..., and a field
 *   the API does not have. A null value is the field's absence. Pure.
 *
 * Words: the *sampling* of a request is what its presenter's calls are sent.
 */
import { type AnswerFormat, readAnswerFormat } from "./answer-format.ts"
import { badRequest, isObject, type WireError } from "./wire-error.ts"

export type Api = "chat" | "responses"

export interface Sampling {
  readonly temperature?: number
  readonly topP?: number
  readonly maxTokens?: number
  readonly stop?: ReadonlyArray<string>
  readonly seed?: number
}

export interface RequestFields {
  readonly sampling: Sampling
  readonly format: AnswerFormat | null
  /** The sampling and format fields as the request gave them, which the run records (`served-resume.ts`); null: none. */
  readonly given?: { readonly api: Api; readonly fields: Record<string, unknown> } | null
}

export const NO_FIELDS: RequestFields = { sampling: {}, format: null }

/** Fields read by the API's own reader (`openai-wire.ts`, `responses-wire.ts`). */
const READ_ELSEWHERE: Record<Api, ReadonlyArray<string>> = {
  chat: ["model", "messages", "stream"],
  responses: ["model", "input", "instructions", "stream", "previous_response_id"],
}

/** Accepted as the API defines them, changing nothing here. */
const IDENTIFYING = ["user", "metadata", "safety_identifier", "prompt_cache_key"]

const SAMPLING: Record<Api, ReadonlyArray<string>> = {
  chat: ["temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed"],
  responses: ["temperature", "top_p", "max_output_tokens"],
}

const NOT_HERE = "massgen serve answers with the council's final answer"

/** Why a field the API has cannot be honoured; a field missing here is not one of the API's. */
const REFUSED: Record<string, string> = {
  tools: `${NOT_HERE} and calls no client tools`,
  functions: `${NOT_HERE} and calls no client tools`,
  tool_choice: `${NOT_HERE} and calls no client tools`,
  function_call: `${NOT_HERE} and calls no client tools`,
  logprobs: "the council's answer has no token log probabilities",
  top_logprobs: "the council's answer has no token log probabilities",
  n: "only 1 choice is supported",
  store: "store: false cannot be honoured, every request is a run kept in its log directory",
  include: "nothing more can be included in the answer",
  frequency_penalty: "not passed to the models",
  presence_penalty: "not passed to the models",
  logit_bias: "not passed to the models",
  audio: "the answer is text",
  modalities: "the answer is text",
  prediction: "not passed to the models",
  reasoning_effort: "each agent's reasoning is its config's",
  reasoning: "each agent's reasoning is its config's",
  service_tier: "each agent's backend is its config's",
  verbosity: "not passed to the models",
  web_search_options: "each agent's tools are its config's",
  background: "a request is answered on its own connection",
  conversation: "use previous_response_id",
  prompt: "stored prompts are not supported",
  truncation: "the conversation is never truncated",
  max_tool_calls: `${NOT_HERE} and calls no client tools`,
  stream_options: "only stream_options.include_usage is supported",
  text: "only text.format is supported",
}

const refuse = (field: string, why: string): WireError =>
  badRequest(`${field} is not supported here: ${why}`, field, "unsupported_parameter")

/** A value of a field that means what its absence means (so it is accepted). */
const harmless = (field: string, v: unknown, api: Api): boolean => {
  switch (field) {
    case "n":
      return v === 1
    case "logprobs":
      return v === false
    case "store":
      return v === true
    case "parallel_tool_calls":
      return typeof v === "boolean"
    case "tools":
    case "functions":
    case "include":
      return Array.isArray(v) && v.length === 0
    case "tool_choice":
      return v === "none"
    case "stream_options":
      return isObject(v) && Object.keys(v).every((k) => k === "include_usage") && api === "chat"
    case "text":
      return isObject(v) && Object.keys(v).every((k) => k === "format") && api === "responses"
    default:
      return false
  }
}

const number = (
  body: Record<string, unknown>,
  field: string,
  min: number,
  max: number,
  integer = false,
): number | WireError | undefined => {
  const v = body[field]
  if (v === undefined || v === null) return undefined
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v)))
    return badRequest(`${field} must be ${integer ? "a whole number" : "a number"} from ${min} to ${max}`, field, "invalid_value")
  return v
}

const readStop = (v: unknown): ReadonlyArray<string> | WireError | undefined => {
  if (v === undefined || v === null) return undefined
  const list = typeof v === "string" ? [v] : v
  if (!Array.isArray(list) || list.length > 4 || list.some((s) => typeof s !== "string" || s === ""))
    return badRequest("stop must be a string or up to 4 non-empty strings", "stop", "invalid_value")
  return list as ReadonlyArray<string>
}

const isError = (v: unknown): v is WireError => isObject(v) && typeof v.status === "number" && typeof v.message === "string"

export const readRequestFields = (body: Record<string, unknown>, api: Api): RequestFields | WireError => {
  for (const [field, v] of Object.entries(body)) {
    if (v === null || v === undefined) continue
    if (READ_ELSEWHERE[api].includes(field) || IDENTIFYING.includes(field) || SAMPLING[api].includes(field)) continue
    if (field === "response_format" && api === "chat") continue
    if (field === "stream_options" && api === "chat" && isObject(v) && Object.keys(v).every((k) => k === "include_usage")) continue
    if (harmless(field, v, api)) continue
    const why = REFUSED[field]
    return why === undefined
      ? badRequest(`${field}: unknown field of the ${api === "chat" ? "Chat Completions" : "Responses"} API`, field, "unknown_parameter")
      : refuse(field, why)
  }
  const maxField = api === "responses" ? "max_output_tokens" : body.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens"
  const read = {
    temperature: number(body, "temperature", 0, 2),
    topP: number(body, "top_p", 0, 1),
    maxTokens: number(body, maxField, 1, Number.MAX_SAFE_INTEGER, true),
    stop: readStop(body.stop),
    seed: number(body, "seed", Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true),
  }
  const sampling: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(read)) {
    if (isError(v)) return v
    if (v !== undefined) sampling[key] = v
  }
  const formatField = api === "chat" ? "response_format" : "text.format"
  const given = api === "chat" ? body.response_format : isObject(body.text) ? body.text.format : undefined
  const format = readAnswerFormat(given, formatField, api)
  if (isError(format)) return format
  const kept = [...SAMPLING[api], api === "chat" ? "response_format" : "text"]
  const fields = Object.fromEntries(Object.entries(body).filter(([k, v]) => kept.includes(k) && v !== null && v !== undefined))
  return { sampling: sampling as Sampling, format, given: Object.keys(fields).length === 0 ? null : { api, fields } }
}
