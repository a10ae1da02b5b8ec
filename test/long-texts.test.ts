/**
 * Long texts in the event store (`domain/log/long-texts.ts`, `services/event-store/storage.ts`): the
 * file layer writes a long question, answer, final answer or reply text once, to `blobs/<sha256>.txt`,
 * and its line references it; every read gives the event with its text. A short text stays in its
 * line; a log written before (long texts inline) reads and grows as before; a missing blob makes its
 * line `invalid_fields`; the memory layer keeps texts in its lines. And the shown form of a long text.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import { encodeEventLine, LONG_TEXT_CHARS, shownLongText, withLongTextsShown } from "../src/domain/log/index.ts"
import { blobPath } from "../src/domain/run-paths.ts"
import { hashText } from "../src/lib/sha256.ts"
import { EVENTS_FILE, EventStore, eventsOf, type MemoryStreams } from "../src/services/event-store/index.ts"
import { answer, at, callEnded, finalAnswer, runStarted, stamp } from "./support/given.ts"

const tempRoot = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-long-texts-"))
afterAll(() => fs.rmSync(tempRoot, { recursive: true, force: true }))
let dirs = 0
const newStream = (): string => {
  const stream = nodePath.join(tempRoot, `base${(dirs += 1)}`, "log_20260101_000000_000000")
  fs.mkdirSync(stream, { recursive: true })
  return stream
}

const long = (mark: string, n = LONG_TEXT_CHARS): string => `${mark} "quoted"\n`.repeat(Math.ceil(n / 12)).slice(0, n)
const QUESTION = long("question")
const ANSWER = long("answer", 2 * LONG_TEXT_CHARS)
const FINAL = long("final")

const started = (question: string, conversation?: ReadonlyArray<{ role: "user" | "assistant"; content: string }>): Event =>
  ({ ...runStarted(["a"]), question, ...(conversation ? { conversation } : {}) }) as Event
const withReplyText = (text: string): Event => {
  const e = callEnded("a", 1, 1) as Extract<Event, { _tag: "call_end" }>
  return { ...e, reply: { text, tool_calls: [], parts: [] } }
}
const EARLIER = long("earlier")
const events: ReadonlyArray<Event> = stamp([
  started(QUESTION, [
    { role: "user", content: "short" },
    { role: "assistant", content: EARLIER },
  ]),
  withReplyText(FINAL),
  answer("a", 1, "agent1.1", ANSWER),
  finalAnswer("a", "agent1.1", "presentation", FINAL),
])

const append = (stream: string, evs: ReadonlyArray<Event>, expected: number, layer = EventStore.file()) =>
  Effect.runPromise(Effect.flatMap(EventStore, (store) => store.append(stream, evs, expected)).pipe(Effect.provide(layer)))
const read = (stream: string, layer = EventStore.file()) =>
  Effect.runPromise(Effect.flatMap(EventStore, (store) => store.read(stream)).pipe(Effect.provide(layer)))
const lineText = (stream: string) => fs.readFileSync(nodePath.join(stream, EVENTS_FILE), "utf8")

describe("the file layer keeps long texts once, in the blob store", () => {
  test("each long text is one blob (0600) that its line references; a fresh store reads every event back whole", async () => {
    const stream = newStream()
    expect(await append(stream, events, 0)).toBe(4)
    const text = lineText(stream)
    for (const t of [QUESTION, ANSWER, FINAL, EARLIER]) {
      expect(text.includes(JSON.stringify(t).slice(1, -1))).toBe(false)
      const path = nodePath.join(stream, blobPath(hashText(t)))
      expect(fs.readFileSync(path, "utf8")).toBe(t)
      expect(fs.statSync(path).mode & 0o777).toBe(0o600)
    }
    // The final answer and the reply's text are one text: one blob.
    expect(fs.readdirSync(nodePath.join(stream, "blobs")).sort()).toEqual(
      [QUESTION, ANSWER, FINAL, EARLIER].map((t) => `${hashText(t)}.txt`).sort(),
    )
    const lines = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l))
    expect(lines[0].question).toEqual({ $blob: hashText(QUESTION) })
    expect(lines[0].conversation).toEqual([
      { role: "user", content: "short" },
      { role: "assistant", content: { $blob: hashText(EARLIER) } },
    ])
    expect(lines[1].reply.text).toEqual({ $blob: hashText(FINAL) })
    expect(lines[2].content).toEqual({ $blob: hashText(ANSWER) })
    expect(lines[3].content).toEqual({ $blob: hashText(FINAL) })
    const back = await read(stream)
    expect(back.skipped).toBe(0)
    expect(eventsOf(back)).toEqual([...events])
  })

  test("a text one character short of a long text stays in its line", async () => {
    const stream = newStream()
    const almost = long("q", LONG_TEXT_CHARS - 1)
    await append(stream, [{ ...started(almost), time: at(0) } as Event], 0)
    expect(JSON.parse(lineText(stream)).question).toBe(almost)
    expect(fs.existsSync(nodePath.join(stream, "blobs"))).toBe(false)
  })

  test("a log written before long texts (held in its lines) reads as before and grows with references", async () => {
    const stream = newStream()
    const before = `${events.slice(0, 3).map(encodeEventLine).join("\n")}\n`
    fs.writeFileSync(nodePath.join(stream, EVENTS_FILE), before)
    expect(eventsOf(await read(stream))).toEqual(events.slice(0, 3))
    await append(stream, events.slice(3), 3)
    expect(lineText(stream).startsWith(before)).toBe(true)
    const back = await read(stream)
    expect(back.skipped).toBe(0)
    expect(eventsOf(back)).toEqual([...events])
  })

  test("a line whose blob is missing is skipped as invalid_fields; the other lines read", async () => {
    const stream = newStream()
    await append(stream, events, 0)
    fs.rmSync(nodePath.join(stream, blobPath(hashText(ANSWER))))
    const back = await read(stream)
    expect(back.skippedByCause.invalid_fields).toBe(1)
    expect(eventsOf(back).map((e) => e._tag)).toEqual(["run_started", "call_end", "final_answer"])
  })

  test("the memory layer has no blob store: its lines hold their texts", async () => {
    const texts: MemoryStreams = new Map()
    const stream = "/memory/logs/log_20260101_000000_000000"
    const layer = EventStore.memory(texts)
    await append(stream, events, 0, layer)
    expect(JSON.parse(texts.get(stream)!.split("\n")[0]!).question).toBe(QUESTION)
    expect(eventsOf(await read(stream, layer))).toEqual([...events])
  })
})

describe("the shown form of a long text", () => {
  test("its first 1,000 characters, its length and its blob; a shorter text as it is", () => {
    expect(shownLongText(QUESTION)).toBe(
      `${QUESTION.slice(0, 1000)}… [${QUESTION.length} characters in all: ${blobPath(hashText(QUESTION))}]`,
    )
    expect(shownLongText("short")).toBe("short")
  })

  test("in a text, each occurrence of a long text, as it is or inside a JSON string, is its shown form", () => {
    const text = `Q:\n${QUESTION}\nA: ${JSON.stringify(ANSWER)}\nagain ${QUESTION}`
    expect(withLongTextsShown(text, [QUESTION, ANSWER])).toBe(
      `Q:\n${shownLongText(QUESTION)}\nA: ${JSON.stringify(shownLongText(ANSWER))}\nagain ${shownLongText(QUESTION)}`,
    )
    expect(withLongTextsShown("nothing long", [QUESTION])).toBe("nothing long")
  })
})
