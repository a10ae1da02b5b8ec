/**
 * The layout of `agent_outputs/<agent_id>.txt`: everything an agent streamed,
 * call by call.
 *
 * Contract: each call's part opens with `callHeader(round, call, presentation)`
 * on a line of its own; what follows, up to the next header, is that call's
 * streamed text and then a summary of its tool calls or its error (written by
 * `agent-round.ts`). `textByCall` cuts a file back into those parts, so a
 * finished run can be replayed with what each agent wrote (`services/log-dir/feed.ts`).
 * Text before the first header (none in a file massgen wrote) is dropped.
 * Pure: no I/O.
 */

/** The line that opens call `call`'s part of an agent's output file. */
export const callHeader = (round: number, call: number, presentation: boolean): string =>
  `\n--- round ${round}, call ${call}${presentation ? " (presentation)" : ""} ---\n`

const HEADER = /\n--- round \d+, call (\d+)(?: \(presentation\))? ---\n/g

/** Whether `text` (a piece of an output file) holds only call headers and white space: nothing a model sent. */
export const onlyHeaders = (text: string): boolean => text.replace(HEADER, "").trim() === ""

/** Each call's part of an agent's output file, by call number, without its header. */
export const textByCall = (file: string): ReadonlyMap<number, string> => {
  const parts = new Map<number, string>()
  const headers = [...file.matchAll(HEADER)]
  for (const [i, header] of headers.entries()) {
    const start = header.index + header[0].length
    const end = headers[i + 1]?.index ?? file.length
    parts.set(Number(header[1]), file.slice(start, end))
  }
  return parts
}
