/**
 * The event log service, one suite run against the live layer (a temp dir) and the memory layer.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, type Layer } from "effect"
import fc from "fast-check"
import { encodeEventLine } from "../src/domain/event-codec.ts"
import type { Event } from "../src/domain/events.ts"
import { EventLog, type EventLogError, type MemoryFiles } from "../src/services/event-log.ts"

const TIME = "2025-06-01T12:00:00.000Z"

const started = (round: number): Event => ({
  _tag: "round_started", time: TIME, agent: "agent_a", round, shown: ["agent2.1"], vote_only: false, restart: false,
})
const answered: Event = {
  _tag: "answer_submitted", time: TIME, agent: "agent_b", round: 1, label: "agent2.1", content: "ünïcode ✓ \"quoted\"",
}
const finished: Event = { _tag: "run_finished", time: TIME, reason: "completed", winner: "agent_b", message: "done" }

/** One log of one layer, and the raw text under it. */
interface Fixture {
  readonly path: string
  /** A log over `path`, opened anew each time the layer is built. */
  readonly layer: () => Layer.Layer<EventLog, EventLogError>
  readonly rawAppend: (text: string) => void
  readonly rawWrite: (text: string) => void
  readonly rawText: () => string
}

const tempRoot = fs.mkdtempSync(nodePath.join(os.tmpdir(), "event-log-test-"))
afterAll(() => fs.rmSync(tempRoot, { recursive: true, force: true }))
let fixtures = 0

const liveFixture = (): Fixture => {
  fixtures += 1
  const path = nodePath.join(tempRoot, `run${fixtures}`, "events.jsonl")
  return {
    path,
    layer: () => EventLog.live(path),
    rawAppend: (text) => fs.appendFileSync(path, text),
    rawWrite: (text) => fs.writeFileSync(path, text),
    rawText: () => fs.readFileSync(path, "utf8"),
  }
}

const memoryFixture = (): Fixture => {
  const files: MemoryFiles = new Map()
  const path = "/memory/events.jsonl"
  return {
    path,
    layer: () => EventLog.memory(files, path),
    rawAppend: (text) => files.set(path, (files.get(path) ?? "") + text),
    rawWrite: (text) => files.set(path, text),
    rawText: () => files.get(path) ?? "",
  }
}

const withLog = <A, E>(fixture: Fixture, body: (log: typeof EventLog.Service) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.flatMap(EventLog, body).pipe(Effect.provide(fixture.layer())))

const suite = (name: string, makeFixture: () => Fixture) =>
  describe(`EventLog (${name})`, () => {
    test("append then read gives the events back in order", async () => {
      const f = makeFixture()
      const read = await withLog(f, (log) =>
        Effect.gen(function* () {
          for (const event of [started(1), answered, finished]) yield* log.append(event)
          return yield* log.read(f.path)
        }),
      )
      expect(read).toEqual({
        events: [started(1), answered, finished],
        skipped: 0,
        skippedByCause: { not_json: 0, not_an_object: 0, newer_schema: 0, unknown_type: 0, invalid_fields: 0 },
        lines: [1, 2, 3],
        tornTail: false,
      })
      expect(f.rawText()).toBe([started(1), answered, finished].map((e) => `${encodeEventLine(e)}\n`).join(""))
    })

    test("500 appends from concurrent fibers give 500 intact lines", async () => {
      const f = makeFixture()
      const read = await withLog(f, (log) =>
        Effect.gen(function* () {
          yield* Effect.forEach(
            Array.from({ length: 500 }, (_, i) => i),
            (i) => Effect.yieldNow().pipe(Effect.zipRight(log.append(started(i)))),
            { concurrency: "unbounded", discard: true },
          )
          return yield* log.read(f.path)
        }),
      )
      expect(read.skipped).toBe(0)
      expect(read.events.map((e) => (e._tag === "round_started" ? e.round : -1)).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 500 }, (_, i) => i),
      )
      expect(f.rawText().split("\n")).toHaveLength(501)
    })

    test("a torn last line is skipped and counted; reopening the log starts the next event on its own line", async () => {
      const f = makeFixture()
      await withLog(f, (log) => Effect.forEach([started(1), answered], log.append))
      f.rawAppend(encodeEventLine(finished).slice(0, 25))
      const torn = await withLog(f, (log) => log.read(f.path))
      expect(torn.events).toEqual([started(1), answered])
      expect(torn.skipped).toBe(1)
      expect(torn.skippedByCause.not_json).toBe(1)
      expect(torn.tornTail).toBe(true)

      const after = await withLog(f, (log) => log.append(finished).pipe(Effect.zipRight(log.read(f.path))))
      expect(after.events).toEqual([started(1), answered, finished])
      expect(after.skipped).toBe(1)
      expect(after.tornTail).toBe(false)
    })

    test("a missing file fails with reason missing", async () => {
      const f = makeFixture()
      const error = await withLog(f, (log) => Effect.flip(log.read(`${f.path}.nowhere`)))
      expect(error._tag).toBe("EventLogError")
      expect(error.reason).toBe("missing")
      expect(error.message).toContain("nowhere")
    })

    test("reading never fails on what the lines hold, and counts every non-blank line", async () => {
      const f = makeFixture()
      const eventLine = fc.constantFrom(started(3), answered, finished).map(encodeEventLine)
      const line = fc
        .oneof(fc.string(), fc.string({ unit: "binary" }), fc.json(), eventLine, eventLine.map((l) => l.slice(0, -3)))
        .map((l) => l.replaceAll("\n", ""))
      await withLog(f, (log) =>
        Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.array(line, { maxLength: 20 }), fc.boolean(), async (lines, newlineAtEnd) => {
              const text = lines.join("\n") + (newlineAtEnd ? "\n" : "")
              f.rawWrite(text)
              const read = await Effect.runPromise(log.read(f.path))
              const nonBlank = text.split("\n").filter((l) => l.trim() !== "").length
              expect(read.events.length + read.skipped).toBe(nonBlank)
            }),
            { numRuns: 100 },
          ),
        ),
      )
    })
  })

suite("live", liveFixture)
suite("memory", memoryFixture)

describe("EventLog (live) on disk", () => {
  test("a log in a directory that cannot be created fails to open with write_failed", async () => {
    const blocker = nodePath.join(tempRoot, "a-file")
    fs.writeFileSync(blocker, "")
    const exit = await Effect.runPromiseExit(
      Effect.flatMap(EventLog, (log) => log.append(finished)).pipe(
        Effect.provide(EventLog.live(nodePath.join(blocker, "events.jsonl"))),
        Effect.flip,
      ),
    )
    expect(exit._tag).toBe("Success")
    if (exit._tag === "Success") expect(exit.value.reason).toBe("write_failed")
  })
})
