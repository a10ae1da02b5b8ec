/**
 * The shapes of deterministic replay (`index.ts`): a recorded call, a divergence, a replay's options and result.
 *
 * Words as in `index.ts`: a *divergence* is the first recorded event this
 * code makes differently; the rounds *in flight* at the end are what a
 * resume continues.
 */

import type { RoundMachine, Transition } from "../coordination/round-machine.ts"
import type { Event } from "../events/index.ts"
import type { LlmReply, LlmRequest, ToolSpec } from "../llm.ts"
import type { State } from "../state/index.ts"

export interface RecordedCall {
  readonly request: LlmRequest | null
  readonly reply: LlmReply | null
  readonly error: string | null
}

export interface Divergence {
  /** 0-based index of the event in the recorded log. */
  readonly index: number
  readonly recorded: Event | null
  readonly replayed: Event | null
  readonly reason: string
}

export interface ReplayResult {
  readonly events: ReadonlyArray<Event>
  readonly state: State
  readonly divergence: Divergence | null
  /** The rounds (and a presentation) in flight at the end of the log, by agent: what a resume would continue. */
  readonly rounds: ReadonlyMap<string, RoundMachine>
  /** The same, each with the step it goes on from; a round whose result is not judged yet is `done` with it. */
  readonly continuations: ReadonlyMap<string, Transition>
}

export interface ReplayOptions {
  readonly checkRequests: boolean
  /** The agent's own tools, for a call whose recorded request is not at hand (resume). */
  readonly toolsOf?: (agent: string) => ReadonlyArray<ToolSpec>
  /** The whole result of tool call `n` (`tool_log/<n>.json`), for a `tool_call_finished` that does not hold it. */
  readonly toolResultOf?: (n: number) => string | undefined
  /** The text of blob `hash` (`blobs/<hash>.txt`): the long tool-call arguments the events reference (`ArgumentsText`). */
  readonly blobOf?: (hash: string) => string | undefined
  /** SHA-256 (hex) of a text: with it, each recorded tool result is checked against its digest. */
  readonly digestOf?: (text: string) => string
}
