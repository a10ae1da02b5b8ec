/**
 * What a reader skipped of a run's log, counted by kind, and the sentence that says so.
 *
 * Contract: `skipCounts(skippedByCause, skippedEvents)` groups what a read of
 * the log skipped (`domain/log/index.ts`'s causes) and what the fold skipped
 * (`State.skippedEvents`) into the kinds a person is told of: lines that are
 * the `torn_tail`, `unreadable` (not JSON, not an object, an unknown type, or
 * fields that do not decode: one kind, as none can be read by any version),
 * from a newer massgen (`newer_schema`: a newer version can read them),
 * `duplicate`, `out_of_order`, and events that do not fit the run
 * (`does_not_fit`). The kinds of lines add up to the lines skipped.
 * `skipSentence(file, counts)` says it in one line, kinds with none left out
 * ("events.jsonl: skipped 4 lines (1 torn tail, 2 unreadable, 1 duplicate)
 * and 1 event that does not fit"), or is null when nothing was skipped.
 *
 * Words: a *skip report* is that sentence, or in `massgen status --json` the
 * counts, for the log a command read.
 */
import type { CountedSkipCause } from "./line.ts"

export interface SkipCounts {
  readonly torn_tail: number
  readonly unreadable: number
  readonly newer_schema: number
  readonly duplicate: number
  readonly out_of_order: number
  readonly does_not_fit: number
}

export const skipCounts = (byCause: Readonly<Record<CountedSkipCause, number>>, skippedEvents: number): SkipCounts => ({
  torn_tail: byCause.torn_tail,
  unreadable: byCause.not_json + byCause.not_an_object + byCause.unknown_type + byCause.invalid_fields,
  newer_schema: byCause.newer_schema,
  duplicate: byCause.duplicate,
  out_of_order: byCause.out_of_order,
  does_not_fit: skippedEvents,
})

/** The kinds of skipped lines, in the order a sentence names them, with their words for one and for more. */
const LINE_KINDS: ReadonlyArray<readonly [Exclude<keyof SkipCounts, "does_not_fit">, string, string]> = [
  ["torn_tail", "torn tail", "torn tails"],
  ["unreadable", "unreadable", "unreadable"],
  ["newer_schema", "from a newer massgen", "from a newer massgen"],
  ["duplicate", "duplicate", "duplicates"],
  ["out_of_order", "out of order", "out of order"],
]

/** How many lines were skipped: the sum of the kinds of lines. */
export const skippedLines = (counts: SkipCounts): number => LINE_KINDS.reduce((n, [kind]) => n + counts[kind], 0)

const count = (n: number, one: string, more: string) => `${n} ${n === 1 ? one : more}`

export const skipSentence = (file: string, counts: SkipCounts): string | null => {
  const lines = skippedLines(counts)
  const parts: Array<string> = []
  if (lines > 0) {
    const kinds = LINE_KINDS.filter(([kind]) => counts[kind] > 0).map(([kind, one, more]) => count(counts[kind], one, more))
    parts.push(`${count(lines, "line", "lines")} (${kinds.join(", ")})`)
  }
  if (counts.does_not_fit > 0) parts.push(count(counts.does_not_fit, "event that does not fit", "events that do not fit"))
  return parts.length === 0 ? null : `${file}: skipped ${parts.join(" and ")}`
}
