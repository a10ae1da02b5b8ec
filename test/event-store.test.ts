/**
 * The event store: the shared suite on the file layer (temp directories) and
 * the memory layer; what only the file layer does; that a store decodes a line
 * once; and the schema-1 logs kept in `test/fixtures/v1`, read, projected,
 * replayed and resumed by this version on copies of them.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import { encodeEventLine } from "../src/domain/log/index.ts"
import { EVENTS_FILE, EventStore, eventsOf, type MemoryStreams } from "../src/services/event-store/index.ts"
import { eventStoreSuite, type StoreFixture } from "./support/event-store-suite.ts"

const tempRoot = fs.mkdtempSync(nodePath.join(os.tmpdir(), "event-store-test-"))
afterAll(() => fs.rmSync(tempRoot, { recursive: true, force: true }))
let bases = 0

const fileFixture = (): StoreFixture => {
  bases += 1
  const base = nodePath.join(tempRoot, `base${bases}`)
  const fileOf = (stream: string) => nodePath.join(stream, EVENTS_FILE)
  return {
    base,
    layer: (options = {}) => EventStore.file({ pollMs: 20, ...options }),
    rawAppend: (stream, text) => {
      fs.mkdirSync(stream, { recursive: true })
      fs.appendFileSync(fileOf(stream), text)
    },
    rawText: (stream) => fs.readFileSync(fileOf(stream), "utf8"),
  }
}

const memoryFixture = (): StoreFixture => {
  const texts: MemoryStreams = new Map()
  return {
    base: "/memory/logs",
    layer: (options = {}) => EventStore.memory(texts, { pollMs: 20, ...options }),
    rawAppend: (stream, text) => texts.set(stream, (texts.get(stream) ?? "") + text),
    rawText: (stream) => texts.get(stream) ?? "",
  }
}

eventStoreSuite("file", fileFixture)
eventStoreSuite("memory", memoryFixture)

const TIME = "2025-06-01T12:00:00.000Z"
const round = (n: number): Event => ({
  _tag: "round_started",
  time: TIME,
  agent: "agent_a",
  round: n,
  shown: [],
  vote_only: false,
  restart: false,
})

describe("EventStore: each line is decoded once", () => {
  /** A layer over one stream, and a way to change the stream's bytes behind the store's back. */
  const layers = {
    file: () => {
      const stream = nodePath.join(tempRoot, `once${(bases += 1)}`, "log_20260101_000000_000000")
      fs.mkdirSync(stream, { recursive: true })
      const path = nodePath.join(stream, EVENTS_FILE)
      return {
        stream,
        layer: EventStore.file(),
        text: () => fs.readFileSync(path, "utf8"),
        write: (t: string) => fs.writeFileSync(path, t),
      }
    },
    memory: () => {
      const stream = "/memory/logs/log_20260101_000000_000000"
      const texts: MemoryStreams = new Map()
      return {
        stream,
        layer: EventStore.memory(texts),
        text: () => texts.get(stream) ?? "",
        write: (t: string) => void texts.set(stream, t),
      }
    },
  }
  for (const [name, make] of Object.entries(layers)) {
    test(`${name}: a read after an append decodes only the lines appended since`, async () => {
      const { stream, layer, text, write } = make()
      write(`${encodeEventLine(round(1))}\n`)
      const read = await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* store.read(stream)
          // The same size, other bytes: a store that decoded the first line again would skip it now.
          write(`${"x".repeat(text().length - 1)}\n${encodeEventLine(round(2))}\n`)
          return yield* store.read(stream)
        }).pipe(Effect.provide(layer)),
      )
      expect(eventsOf(read)).toEqual([round(1), round(2)])
      expect(read.skipped).toBe(0)
    })
  }
})

describe("EventStore (file) on disk", () => {
  test("a stream whose directory cannot be made fails with write_failed, and the next append is not stuck", async () => {
    const blocker = nodePath.join(tempRoot, "a-file")
    fs.writeFileSync(blocker, "")
    const error = await Effect.runPromise(
      Effect.flip(Effect.flatMap(EventStore, (store) => store.append(nodePath.join(blocker, "log_x"), [round(1)], 0))).pipe(
        Effect.provide(EventStore.file()),
      ),
    )
    expect(error).toMatchObject({ _tag: "EventStoreError", reason: "write_failed" })
  })

  test("the stream is a log directory: its events are in events.jsonl there", async () => {
    const dir = nodePath.join(tempRoot, "runs", "log_20260101_000000_000001")
    await Effect.runPromise(Effect.flatMap(EventStore, (store) => store.append(dir, [round(1)], 0)).pipe(Effect.provide(EventStore.file())))
    expect(fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")).toBe(`${encodeEventLine(round(1))}\n`)
  })

  test("a store measures a stream it wrote through the file it holds: another writer's appends conflict; a removed stream is missing, then made again", async () => {
    const dir = nodePath.join(tempRoot, "held", "log_20260101_000000_000002")
    const file = nodePath.join(dir, EVENTS_FILE)
    await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* EventStore
        expect(yield* store.append(dir, [round(1)], 0)).toBe(1)
        fs.appendFileSync(file, `${encodeEventLine(round(2))}\n`)
        expect(yield* Effect.flip(store.append(dir, [round(3)], 1))).toMatchObject({ _tag: "EventStoreConflict", expected: 1, actual: 2 })
        expect(yield* store.append(dir, [round(3)], 2)).toBe(3)
        fs.rmSync(dir, { recursive: true })
        expect(yield* Effect.flip(store.read(dir))).toMatchObject({ _tag: "EventStoreError", reason: "missing" })
        const gone = yield* Effect.flip(store.append(dir, [round(4)], 3))
        expect(gone).toMatchObject({ _tag: "EventStoreConflict", expected: 3, actual: 0 })
        expect(gone.message).toBe(`the events of ${dir} were deleted or emptied while they were written: expected 3 events, found none`)
        expect(yield* store.append(dir, [round(4)], 0)).toBe(1)
        expect(eventsOf(yield* store.read(dir))).toEqual([round(4)])
      }).pipe(Effect.provide(EventStore.file())),
    )
    expect(fs.readFileSync(file, "utf8")).toBe(`${encodeEventLine(round(4))}\n`)
  })
})
