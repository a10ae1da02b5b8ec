/**
 * The events of model calls and tool calls (`index.ts`): a call sent, come back (with its reply) or
 * retried; a tool call started and finished; a provider's own tool used.
 *
 * Contract: `call` numbers a run's model calls from 1 and `tool_call` its tool calls from 1; `role`
 * says whether the call is of a round or of the presentation. A recorded reply (`RecordedReply`) is
 * enough for the log alone to rebuild a round's transcript (`domain/replay/index.ts`). Words as in `index.ts`.
 */
import { Schema } from "effect"
import { jsonStringBody } from "../../lib/text.ts"
import { AgentId, Amount, Count, defineEvent } from "./fields.ts"

/** `evaluation`: the presenter's post-evaluation of a final answer (`attempts.ts`). */
export const CallRole = Schema.Literal("round", "presentation", "evaluation")
export type CallRole = typeof CallRole.Type

/** An LLM call was sent. `call` numbers the calls of a run from 1. */
export const CallStarted = defineEvent("call_start", {
  call: Count,
  agent: AgentId,
  round: Count,
  role: CallRole,
  model: Schema.NullOr(Schema.String),
  attempt: Count,
})

/** Any JSON value: what a provider's opaque parts are made of. */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
export const Json: Schema.Schema<Json> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.JsonNumber,
  Schema.String,
  Schema.Array(Schema.suspend(() => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend(() => Json) }),
)

/**
 * A text kept in the run's blob store (`blobs/<sha256>.txt`, `services/run-files/blobs.ts`), named by the
 * SHA-256 (hex) of its UTF-8 bytes: the reference the call logs write for their long texts.
 */
export const BlobRef = Schema.Struct({ $blob: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)) })
export type BlobRef = typeof BlobRef.Type

/**
 * A piece of arguments that is a text of the blob store: as it is, or (`escaped`) as it is written inside a JSON
 * string (`JSON.stringify(text)` without its quotes), as an answer is within `new_answer`'s arguments.
 */
export const BlobPiece = Schema.Struct({
  $blob: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)),
  escaped: Schema.optional(Schema.Literal(true)),
})
export type BlobPiece = typeof BlobPiece.Type

/**
 * A tool call's arguments as an event holds them: the JSON text the model wrote, or, for a text of
 * `ARGUMENTS_BLOB_MIN_CHARS` characters or more, a reference to it in the blob store, so that the
 * log keeps it once however many events name it; or, for arguments that hold a long text the run
 * keeps in the blob store anyway (a long answer: `domain/log/long-texts.ts`), their pieces in order:
 * texts, and that text's reference.
 */
export const ArgumentsText = Schema.Union(Schema.String, BlobRef, Schema.Array(Schema.Union(Schema.String, BlobPiece)))
export type ArgumentsText = typeof ArgumentsText.Type

/** Arguments this long or longer are kept in the blob store and referenced by the events (a write_file of a large file). */
export const ARGUMENTS_BLOB_MIN_CHARS = 16 * 1024

/** The text of `args`: as it is, or from the blob store through `blobOf`; undefined when a blob is missing. */
export const argumentsText = (args: ArgumentsText, blobOf: ((hash: string) => string | undefined) | undefined): string | undefined => {
  if (typeof args === "string") return args
  if (!Array.isArray(args)) return blobOf?.((args as BlobRef).$blob)
  let text = ""
  for (const piece of args as ReadonlyArray<string | BlobPiece>) {
    if (typeof piece === "string") text += piece
    else {
      const blob = blobOf?.(piece.$blob)
      if (blob === undefined) return undefined
      text += piece.escaped === true ? jsonStringBody(blob) : blob
    }
  }
  return text
}

/** The first blob `args` references, null for a text. */
export const argumentsBlob = (args: ArgumentsText): string | null => {
  if (typeof args === "string") return null
  if (!Array.isArray(args)) return (args as BlobRef).$blob
  for (const piece of args as ReadonlyArray<string | BlobPiece>) if (typeof piece !== "string") return piece.$blob
  return null
}

/** A tool call of a model reply, as the model wrote it (long arguments referenced: `ArgumentsText`). */
export const RecordedToolCall = Schema.Struct({ id: Schema.String, name: Schema.String, arguments: ArgumentsText })

/**
 * What a model call returned, as the round machine (`round-machine.ts`) reads it:
 * the reply's text, its tool calls, and the provider's opaque parts (thinking
 * blocks with their signatures, reasoning items), which a later call of the
 * same round may have to send back unchanged.
 */
export const RecordedReply = Schema.Struct({
  text: Schema.String,
  tool_calls: Schema.Array(RecordedToolCall),
  parts: Schema.Array(Json),
})
export type RecordedReply = typeof RecordedReply.Type

/**
 * An LLM call came back or failed. Token counts are the provider's, null where
 * its reply does not report them; `cost` is null when the model has no price.
 */
export const CallEnded = defineEvent("call_end", {
  call: Count,
  agent: AgentId,
  round: Count,
  role: CallRole,
  model: Schema.NullOr(Schema.String),
  seconds: Amount,
  input_tokens: Schema.NullOr(Count),
  cached_input_tokens: Schema.NullOr(Count),
  output_tokens: Schema.NullOr(Count),
  reasoning_tokens: Schema.NullOr(Count),
  truncated: Schema.NullOr(Schema.Boolean),
  cost: Schema.NullOr(Amount),
  error: Schema.NullOr(Schema.String),
  /** The reply, so that the log alone rebuilds a round's transcript; null for a failed call, absent in older logs. */
  reply: Schema.optional(Schema.NullOr(RecordedReply)),
})

/** A failed call is tried again after `delay_seconds`. */
export const CallRetried = defineEvent("call_retried", {
  call: Count,
  agent: AgentId,
  round: Count,
  retry: Count,
  delay_seconds: Amount,
  error: Schema.String,
})

/**
 * A tool call of a model reply began to run. `tool_call` numbers the tool calls
 * of a run from 1 (its full result is `tool_log/<tool_call>.json`); `call_id`
 * is the id the model gave the call; `server` is the MCP server of the tool,
 * null for a command tool; `arguments` are as the model wrote them (long ones referenced: `ArgumentsText`).
 */
/** The fields that name a tool call, in every event of it (the permission ledger's too). */
export const toolCallNames = {
  tool_call: Count,
  agent: AgentId,
  round: Count,
  role: CallRole,
  call_id: Schema.String,
  tool: Schema.String,
}

const toolCallFields = {
  ...toolCallNames,
  server: Schema.NullOr(Schema.String),
  arguments: ArgumentsText,
}

export const ToolCallStarted = defineEvent("tool_call_started", toolCallFields)

/**
 * A tool call ended, and this is what the model is given: `result` (the whole
 * text when it is short, else null: it is in `tool_log/<tool_call>.json`),
 * `result_chars` its length and `digest` its SHA-256 (hex). `ok` is false for
 * an error result, whose `error` says why (a failure, a timeout, an oversized
 * result cut to the cap).
 */
export const ToolCallFinished = defineEvent("tool_call_finished", {
  ...toolCallFields,
  ok: Schema.Boolean,
  error: Schema.NullOr(Schema.String),
  seconds: Amount,
  result: Schema.NullOr(Schema.String),
  result_chars: Count,
  digest: Schema.String,
})

/** A reply of call `call` used one of the provider's own tools (web search, code execution), as the provider reports it. */
export const HostedToolUsed = defineEvent("hosted_tool_used", {
  call: Count,
  agent: AgentId,
  round: Count,
  role: CallRole,
  tool: Schema.String,
  detail: Schema.String,
  /** The pages a search grounded the reply on (Gemini's grounding sources); absent when the provider names none. */
  sources: Schema.optional(Schema.Array(Schema.Struct({ url: Schema.String, title: Schema.NullOr(Schema.String) }))),
})
