/**
 * The frames of a served stream, for Chat Completions and for Responses: its start, progress, the answer's deltas and its end.
 *
 * Contract: a `StreamFrames` gives the SSE text of each moment of a stream;
 * `end(ended, rest)` is the last of it: for a run with an answer (`answered`),
 * what is left of the answer (`rest`, `answer-feed.ts`), then the finish (Chat:
 * the chunk with `finish_reason` and `massgen`, the usage chunk when asked,
 * `data: [DONE]`; Responses: the closing item events and `response.completed`,
 * or `response.incomplete` for a salvaged answer); for a run without one, its
 * error (Chat: a `data: {"error": ...}` frame then `[DONE]`; Responses:
 * `response.failed`). When the streamed text was not the final answer
 * (`rest.whole` false), `massgen.answer` of the finish holds it.
 */
import type { Usage } from "../../domain/state/index.ts"
import { type ChatRequest, chunkBody, errorBody, type RunFacts, SSE_DONE, sseFrame, type WireError } from "./openai-wire.ts"
import { type ResponseBase, responseEvents } from "./responses-wire.ts"

/** What a finished run answers: its content, usage and facts, or the error it is. */
export interface Ended {
  readonly content: string
  readonly usage: Usage | null
  readonly facts: RunFacts
  readonly error: WireError | null
  /** An answer salvaged at a timeout or a spent budget: a 200 cut short. */
  readonly salvaged: boolean
  /** A retry cannot change it (`x-should-retry: false`). */
  readonly final: boolean
}

/** A run a stream answers: completed, or cut short with a salvaged answer. */
export const answered = (ended: Ended): boolean => ended.error === null

export interface StreamFrames {
  readonly start: () => string
  readonly progress: (text: string) => string
  readonly content: (text: string) => string
  readonly end: (ended: Ended, rest: { readonly text: string; readonly whole: boolean }) => string
}

const factsOf = (ended: Ended, whole: boolean): RunFacts => (whole ? ended.facts : { ...ended.facts, answer: ended.content })

export const chatFrames = (
  chat: ChatRequest,
  started: { readonly id: string; readonly created: number; readonly model: string },
  first: RunFacts,
): StreamFrames => ({
  start: () => sseFrame(chunkBody({ ...started, delta: { role: "assistant", content: "" }, massgen: first })),
  progress: (text) => sseFrame(chunkBody({ ...started, delta: { reasoning_content: text } })),
  content: (text) => sseFrame(chunkBody({ ...started, delta: { content: text } })),
  end: (ended, rest) => {
    if (!answered(ended)) return sseFrame(errorBody(ended.error!, ended.facts)) + SSE_DONE
    const finishReason = ended.salvaged ? "length" : "stop"
    return [
      rest.text === "" ? "" : sseFrame(chunkBody({ ...started, delta: { content: rest.text } })),
      sseFrame(chunkBody({ ...started, delta: {}, finishReason, massgen: factsOf(ended, rest.whole) })),
      chat.includeUsage && ended.usage !== null ? sseFrame(chunkBody({ ...started, usage: ended.usage })) : "",
      SSE_DONE,
    ].join("")
  },
})

export const responseFrames = (base: ResponseBase): StreamFrames => {
  const events = responseEvents(base)
  return {
    start: events.start,
    progress: events.progress,
    content: events.content,
    end: (ended, rest) => {
      if (!answered(ended) || ended.usage === null) return events.fail(ended.error!, ended.facts)
      return (
        (rest.text === "" ? "" : events.content(rest.text)) +
        events.finish({ salvaged: ended.salvaged, usage: ended.usage, massgen: factsOf(ended, rest.whole) })
      )
    },
  }
}
