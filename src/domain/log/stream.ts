/**
 * A stream of lines of `events.jsonl` (`index.ts`): what a reader remembers of the lines it has
 * read, to tell a `duplicate` and an event `out_of_order`, and whole texts decoded with it.
 *
 * Contract: as in `index.ts`: none of these throws; `decodeLines` and `admitLine` add to the
 * memory, `decodeTail` does not (a torn tail may yet be finished). Words as in `index.ts`.
 */

import type { Event, EventMeta } from "../events/index.ts"
import { addSkips, type BlobTexts, type CountedSkipCause, type DecodedLine, decodeEventLine, noSkips, skipped } from "./line.ts"

/** An event as a reader gets it: with the machine facts of its line, its position in the stream and its line. */
export interface StoredEvent {
  readonly event: Event
  /** The envelope's machine facts, on the events that have them (run_started, run_resumed). */
  readonly meta: EventMeta | null
  /** Its place among the stream's events, from 0. */
  readonly position: number
  /** The line of the file it was read from, from 1. */
  readonly line: number
}

/**
 * What a reader remembers of the lines of a stream it has read, to tell a `duplicate` and an event `out_of_order`.
 * It keeps a 53-bit hash of each line read as an event, not its text: a log of a million lines is not held
 * twice. Two different lines that hash alike would read the second as a duplicate; with a million lines that
 * is about one chance in ten billion for each line whose event is not later than the last one read (the only
 * lines looked up).
 */
export interface LineMemory {
  /** The hash of every line read as an event, in order. */
  readonly events: number[]
  /** `events` as a set, made when first needed: when a line's event is not later than the last one read. */
  seen: Set<number> | null
  /** The time of the last event read; "" before the first. */
  lastTime: string
}

export const newLineMemory = (): LineMemory => ({ events: [], seen: null, lastTime: "" })

/** A line's hash: 53 bits of a 64-bit hash of its text, as one number. */
const lineHash = (line: string): number => Number(BigInt.asUintN(53, Bun.hash.rapidhash(line)))

/** Whether instant `a` is before `b` (both decoded times). Of one length, they compare as text: digit by digit, most significant first. */
const before = (a: string, b: string): boolean => (a.length === b.length ? a < b : Date.parse(a) < Date.parse(b))

/**
 * Whether `line`, whose event happened at `time`, is the text of a line read as an event.
 * Events are read in time order: a line later than the last read is none of them.
 */
const isRead = (line: string, time: string, memory: LineMemory): boolean => {
  if (memory.lastTime === "" || before(memory.lastTime, time)) return false
  memory.seen ??= new Set(memory.events)
  return memory.seen.has(lineHash(line))
}

const remember = (line: string, time: string, memory: LineMemory): void => {
  const hash = lineHash(line)
  memory.events.push(hash)
  memory.seen?.add(hash)
  memory.lastTime = time
}

const DUPLICATE = skipped("duplicate")
const OUT_OF_ORDER = skipped("out_of_order")

/**
 * One line of a stream as a reader that has read `memory` sees it; with `remember`, the line is then part of `memory`.
 * A line that does not decode is no line read as an event: only a line that does can be a `duplicate`.
 */
const readLine = (line: string, memory: LineMemory, keep: boolean, texts: BlobTexts | undefined): DecodedLine => {
  const decoded = decodeEventLine(line, texts)
  if (decoded._tag !== "event") return decoded
  const time = decoded.event.time
  if (isRead(line, time, memory)) return DUPLICATE
  if (memory.lastTime !== "" && before(time, memory.lastTime)) return OUT_OF_ORDER
  if (keep) remember(line, time, memory)
  return decoded
}

/**
 * Why a reader that has read `memory` would skip `line`, the line a writer
 * appends for `event` (`duplicate` or `out_of_order`), or null: then the line
 * is remembered as read.
 */
export const admitLine = (line: string, event: Event, memory: LineMemory): CountedSkipCause | null => {
  if (isRead(line, event.time, memory)) return "duplicate"
  if (memory.lastTime !== "" && before(event.time, memory.lastTime)) return "out_of_order"
  remember(line, event.time, memory)
  return null
}

/** What some lines of a stream hold. */
export interface LinesRead {
  /** The decoded events, in file order, numbered on from the position and line the text started at. */
  readonly events: StoredEvent[]
  /** How many non-blank lines were skipped: the sum of `skippedByCause`. */
  readonly skipped: number
  readonly skippedByCause: Record<CountedSkipCause, number>
  /** How many lines the text holds (a last line with no newline counts). */
  readonly lines: number
}

const decodeInto = (
  text: string,
  position: number,
  line: number,
  memory: LineMemory,
  tail: boolean,
  texts: BlobTexts | undefined,
): LinesRead => {
  const events: StoredEvent[] = []
  const skippedByCause = noSkips()
  let skippedCount = 0
  let lineNumber = line
  let start = 0
  while (start < text.length) {
    const end = text.indexOf("\n", start)
    const one = end === -1 ? text.slice(start) : text.slice(start, end)
    start = end === -1 ? text.length : end + 1
    lineNumber += 1
    const decoded = readLine(one, memory, !tail, texts)
    if (decoded._tag === "event") {
      events.push({ event: decoded.event, meta: decoded.meta ?? null, position: position + events.length, line: lineNumber })
    } else if (decoded.cause !== "blank") {
      skippedByCause[tail && decoded.cause === "not_json" ? "torn_tail" : decoded.cause] += 1
      skippedCount += 1
    }
  }
  return { events, skipped: skippedCount, skippedByCause, lines: lineNumber - line }
}

/**
 * Every line of a text, decoded, after the lines `memory` remembers (which
 * then remembers these too); the first event gets `position`, the first line
 * `line + 1`. A last line with no newline is decoded like any line: cut
 * inside its JSON it is skipped as `not_json`; if only its newline is missing,
 * its event is kept. (`decodeTail` reads such a line as a stream's last.)
 * `texts` is the blob store the long texts of the lines are read from (`long-texts.ts`).
 */
export const decodeLines = (text: string, position = 0, line = 0, memory: LineMemory = newLineMemory(), texts?: BlobTexts): LinesRead =>
  decodeInto(text, position, line, memory, false, texts)

/**
 * A stream's last line, with no newline after it (`line`: the lines before
 * it), after the lines `memory` remembers, which it does not change: the
 * line may yet be finished. Not JSON, it is skipped as the `torn_tail`.
 */
export const decodeTail = (text: string, position: number, line: number, memory: LineMemory, texts?: BlobTexts): LinesRead =>
  decodeInto(text, position, line, memory, true, texts)
/** What a whole file's text holds, as plain events. */
export interface EventsRead {
  /** The decoded events, in file order. */
  readonly events: Event[]
  /** The line of the file (from 1) each decoded event was read from. */
  readonly lines: number[]
  /** How many non-blank lines were skipped: the sum of `skippedByCause`. */
  readonly skipped: number
  readonly skippedByCause: Record<CountedSkipCause, number>
  /** The text is not empty and does not end with a newline: its last write did not finish. */
  readonly tornTail: boolean
}

/** Every line of a whole file's text, decoded as the event store reads a stream (its long texts from `texts`); for tests and tools that hold a log's text. */
export const readEventsText = (text: string, texts?: BlobTexts): EventsRead => {
  const cut = text.lastIndexOf("\n") + 1
  const memory = newLineMemory()
  const whole = decodeLines(text.slice(0, cut), 0, 0, memory, texts)
  const tail = cut < text.length ? decodeTail(text.slice(cut), whole.events.length, whole.lines, memory, texts) : null
  const stored = tail === null ? whole.events : [...whole.events, ...tail.events]
  const skippedByCause = { ...whole.skippedByCause }
  if (tail !== null) addSkips(skippedByCause, tail.skippedByCause)
  return {
    events: stored.map((s) => s.event),
    lines: stored.map((s) => s.line),
    skipped: whole.skipped + (tail?.skipped ?? 0),
    skippedByCause,
    tornTail: tail !== null,
  }
}
