/**
 * What a served stream sends while its run goes on: progress lines, and the presenter's text as it writes.
 *
 * Contract: `answerFeed(logDir, hold, sink)` is the run's observer for a
 * stream. Each event but the final answer and the run's end gives a progress
 * line (`--no-display`'s, with its newline) to `sink.progress`. A text delta of
 * the agent whose presentation call is open (from its `call_start` to its
 * `call_end`, role `presentation`) goes to `sink.content` at once, unless
 * `hold` (a JSON answer format: the answer is sent once it is checked).
 * `rest(answer)` is what is left to send of the final answer at the end: the
 * part past what was streamed when that is its beginning (all of it when
 * nothing was), else nothing, with `whole` false: the presenter's streamed text
 * is then not the final answer (a presentation call retried after it wrote, or
 * text before a tool step), and the finishing frame carries the answer.
 */
import type { Event } from "../../domain/events/index.ts"
import type { State } from "../../domain/state/index.ts"
import { plainLine } from "../run/automation-output.ts"

export interface FeedSink {
  readonly progress: (text: string) => void
  readonly content: (text: string) => void
}

export interface AnswerFeed {
  readonly onEvent: (event: Event, state: State) => void
  readonly onText: (agent: string, text: string) => void
  readonly rest: (answer: string) => { readonly text: string; readonly whole: boolean }
}

/** Lines of progress a stream shows: the final answer and the run's end are said otherwise. */
const progressLine = (event: Event, state: State, logDir: string): string | null =>
  event._tag === "final_answer" || event._tag === "run_finished" ? null : plainLine(event, state, logDir)

export const answerFeed = (logDir: string, hold: boolean, sink: FeedSink): AnswerFeed => {
  let presenting: string | null = null
  let sent = ""
  return {
    onEvent: (event, state) => {
      if (event._tag === "call_start" && event.role === "presentation") presenting = event.agent
      if (event._tag === "call_end" && event.role === "presentation") presenting = null
      const line = progressLine(event, state, logDir)
      if (line !== null) sink.progress(`${line}\n`)
    },
    onText: (agent, text) => {
      if (hold || agent !== presenting || text === "") return
      sent += text
      sink.content(text)
    },
    rest: (answer) => (answer.startsWith(sent) ? { text: answer.slice(sent.length), whole: true } : { text: "", whole: false }),
  }
}
