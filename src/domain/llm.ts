/**
 * The provider-neutral shape of one LLM call: what is asked and what comes back.
 *
 * The orchestrator builds an `LlmRequest` from a round's context (`prompts.ts`);
 * a backend (`services/backends/*`) turns it into its provider's wire format,
 * hands each `LlmChunk` (a text or reasoning delta) to its caller as it
 * arrives, and returns the whole `LlmReply`. Nothing here does I/O.
 *
 * Words: a *tool* is one of the workflow tools (`new_answer`, `vote`) offered
 * to the model as a JSON-schema function; a *tool call* is the model's use of
 * one, with its arguments as the raw JSON text the model produced.
 */

export interface ToolSpec {
  readonly name: string
  readonly description: string
  /** JSON Schema of the arguments (an object schema). */
  readonly parameters: {
    readonly type: "object"
    readonly properties: Record<string, unknown>
    readonly required: ReadonlyArray<string>
    readonly additionalProperties?: boolean
  }
}

/** What a media part is: `file` is a document (a PDF). */
export type MediaKind = "image" | "audio" | "video" | "file"

/**
 * A file sent to the model beside a user message's text: `data` is its bytes in base64 (or, for a
 * file given as a link, `url` its http(s) URL), `mediaType` its MIME type (`image/png`), `name` the
 * file's name as the user or the agent gave it.
 */
export interface MediaPart {
  readonly kind: MediaKind
  readonly mediaType: string
  readonly name: string
  readonly data?: string
  readonly url?: string
}

export type LlmMessage =
  | {
      readonly role: "user"
      readonly content: string
      /** Files sent with the text (images, audio, documents), in order, after it. */
      readonly media?: ReadonlyArray<MediaPart>
    }
  | {
      readonly role: "assistant"
      readonly content: string
      readonly toolCalls?: ReadonlyArray<ToolCall>
      /** The reply's opaque provider parts (`LlmReply.parts`), sent back before its text and tool calls. */
      readonly parts?: ReadonlyArray<unknown>
    }
  | {
      readonly role: "tool"
      readonly toolCallId: string
      readonly name: string
      readonly content: string
      /** Set (only ever to true) when the call failed: its result is an error result (`tool_call_finished` with `ok: false`). */
      readonly isError?: true
    }

/** What an answer round showed, for backends that act on structure (the scripted one) rather than text. */
export interface ShownAnswer {
  readonly label: string
  readonly anonId: string
  readonly content: string
}

export interface RoundContext {
  readonly kind: "round"
  readonly selfAnonId: string
  readonly shown: ReadonlyArray<ShownAnswer>
  readonly voteOnly: boolean
  /** `answer_novelty_requirement` other than `lenient`: how far a new answer must be from the shown ones. */
  readonly novelty?: "balanced" | "strict"
  /** `defer_voting_until_all_answered` holds votes back: only `new_answer` is offered. */
  readonly answerOnly?: boolean
  /** Checklist-gated voting: the criteria, and the gate of `submit_checklist` (`coordination/checklist.ts`). */
  readonly checklist?: {
    readonly criteria: ReadonlyArray<{ readonly id: string; readonly text: string }>
    readonly required: number
    readonly cutoff: number
  }
}

export interface PresentationContext {
  readonly kind: "presentation"
  readonly selfAnonId: string
  readonly shown: ReadonlyArray<ShownAnswer>
}

export interface LlmRequest {
  readonly agentId: string
  readonly system: string
  readonly messages: ReadonlyArray<LlmMessage>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly context: RoundContext | PresentationContext
}

export interface ToolCall {
  readonly id: string
  readonly name: string
  /** The arguments as the model wrote them (JSON text, possibly invalid). */
  readonly arguments: string
}

export interface TokenUsage {
  readonly inputTokens: number | null
  readonly cachedInputTokens: number | null
  readonly outputTokens: number | null
  readonly reasoningTokens: number | null
}

export interface LlmReply {
  readonly text: string
  readonly reasoning: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly usage: TokenUsage
  /** True when the reply was cut off at the output limit, null when the provider does not say. */
  readonly truncated: boolean | null
  /** The provider's raw reply (or what was assembled from its stream), kept for the call log. */
  readonly raw: unknown
  /**
   * The provider's opaque parts a later call of the same round must send back
   * unchanged: Anthropic thinking blocks with their signatures, OpenAI reasoning items.
   */
  readonly parts?: ReadonlyArray<unknown>
  /** The provider's own tools (web search, code execution) the reply used, as the provider reports them. */
  readonly hostedToolUses?: ReadonlyArray<HostedToolUse>
}

/** One use of a provider-side tool: `tool` is the provider's name for it (`web_search`, `code_interpreter`, ...). */
export interface HostedToolUse {
  readonly tool: string
  /** A short description of what it did (the query, the code's first line), as the provider reports it. */
  readonly detail: string
  /** The pages a search grounded the reply on, as the provider reports them (Gemini's grounding chunks). */
  readonly sources?: ReadonlyArray<{ readonly url: string; readonly title: string | null }>
}

export type LlmChunk = { readonly _tag: "text"; readonly text: string } | { readonly _tag: "reasoning"; readonly text: string }

/**
 * `messages` without the error flags of tool results, as logs written before
 * the flag existed recorded them: `replay` compares such a log's requests so.
 */
export const withoutErrorFlags = (messages: ReadonlyArray<LlmMessage>): ReadonlyArray<LlmMessage> =>
  messages.map((m) =>
    m.role === "tool" && m.isError !== undefined ? { role: m.role, toolCallId: m.toolCallId, name: m.name, content: m.content } : m,
  )

/** Whether a tool result of `messages` carries the error flag. */
export const hasErrorFlags = (messages: ReadonlyArray<LlmMessage>): boolean => messages.some((m) => m.role === "tool" && m.isError === true)

export const noUsage: TokenUsage = {
  inputTokens: null,
  cachedInputTokens: null,
  outputTokens: null,
  reasoningTokens: null,
}
