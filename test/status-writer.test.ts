/**
 * The status writer, one suite run against the live layer (a temp dir) and the memory layer,
 * and atomic replacement on disk under a concurrent reader.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Fiber, type Layer } from "effect"
import { StatusWriter, writeFileAtomic } from "../src/services/run-files/status-writer.ts"

const tempRoot = fs.mkdtempSync(nodePath.join(os.tmpdir(), "status-writer-test-"))
afterAll(() => fs.rmSync(tempRoot, { recursive: true, force: true }))
let fixtures = 0

interface Fixture {
  readonly layer: Layer.Layer<StatusWriter>
  /** The current status, as a reader parses it; undefined before the first write. */
  readonly current: () => unknown
  /** Resolves once no write is left in flight (no temporary file on disk). */
  readonly settled: () => Promise<void>
}

const liveFixture = (): Fixture => {
  fixtures += 1
  const path = nodePath.join(tempRoot, `run${fixtures}`, "status.json")
  return {
    layer: StatusWriter.live(path),
    current: () => (fs.existsSync(path) ? JSON.parse(fs.readFileSync(path, "utf8")) : undefined),
    settled: async () => {
      const inFlight = () => fs.existsSync(nodePath.dirname(path)) && fs.readdirSync(nodePath.dirname(path)).some((n) => n.endsWith(".tmp"))
      for (let n = 0; n < 1000 && inFlight(); n++) await Bun.sleep(5)
    },
  }
}

const memoryFixture = (): Fixture => {
  const written: unknown[] = []
  return { layer: StatusWriter.memory(written), current: () => written.at(-1), settled: async () => undefined }
}

const withWriter = <A, E>(f: Fixture, body: (w: typeof StatusWriter.Service) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.flatMap(StatusWriter, body).pipe(Effect.provide(f.layer)))

const suite = (name: string, makeFixture: () => Fixture) =>
  describe(`StatusWriter (${name})`, () => {
    test("the last status written is the current one", async () => {
      const f = makeFixture()
      expect(f.current()).toBeUndefined()
      await withWriter(f, (w) => w.write({ phase: "coordinating", agents: { agent_a: "answering" } }))
      await withWriter(f, (w) => w.write({ phase: "done", winner: null }))
      expect(f.current()).toEqual({ phase: "done", winner: null })
    })

    test("writes asked for at once land in the order asked: the last one is the current one", async () => {
      const f = makeFixture()
      const big = (i: number) => ({ write: i, filler: "x".repeat((i % 2) * 2_000_000) })
      await withWriter(f, (w) => Effect.forEach([1, 2, 3, 4, 5, 6], (i) => w.write(big(i)), { concurrency: "unbounded", discard: true }))
      expect((f.current() as { write: number }).write).toBe(6)
    })

    test("a write whose fiber is interrupted ends before a later write, never over it", async () => {
      const f = makeFixture()
      await withWriter(f, (w) =>
        Effect.gen(function* () {
          // A large status takes a while to write: the interrupt comes while it is in flight.
          const slow = yield* Effect.fork(w.write({ write: "old", filler: "x".repeat(4_000_000) }))
          yield* Effect.yieldNow()
          yield* Fiber.interrupt(slow)
          yield* w.write({ write: "new" })
        }),
      )
      await f.settled()
      expect(f.current()).toEqual({ write: "new" })
    })

    test("a status with no JSON form fails with not_serializable and leaves the current one", async () => {
      const f = makeFixture()
      await withWriter(f, (w) => w.write({ phase: "one" }))
      const cyclic: Record<string, unknown> = {}
      cyclic.self = cyclic
      for (const bad of [cyclic, undefined, 10n]) {
        const error = await withWriter(f, (w) => Effect.flip(w.write(bad)))
        expect(error.reason).toBe("not_serializable")
      }
      expect(f.current()).toEqual({ phase: "one" })
    })
  })

suite("live", liveFixture)
suite("memory", memoryFixture)

describe("StatusWriter (live) on disk", () => {
  test("writes pretty JSON with a 2-space indent and leaves no temporary file", async () => {
    const dir = nodePath.join(tempRoot, "pretty")
    const path = nodePath.join(dir, "status.json")
    await Effect.runPromise(Effect.flatMap(StatusWriter, (w) => w.write({ a: [1] })).pipe(Effect.provide(StatusWriter.live(path))))
    expect(fs.readFileSync(path, "utf8")).toBe('{\n  "a": [\n    1\n  ]\n}\n')
    expect(fs.readdirSync(dir)).toEqual(["status.json"])
  })

  test("a concurrent reader always parses a whole status while 200 writes replace it", async () => {
    const path = nodePath.join(tempRoot, "concurrent", "status.json")
    const status = (i: number) => ({ write: i, filler: "x".repeat(((i * 7919) % 200) * 1000) })
    const writes = 200
    const layer = StatusWriter.live(path)
    await Effect.runPromise(Effect.flatMap(StatusWriter, (w) => w.write(status(0))).pipe(Effect.provide(layer)))
    const writer = Effect.flatMap(StatusWriter, (w) =>
      Effect.forEach(
        Array.from({ length: writes }, (_, i) => i + 1),
        (i) => w.write(status(i)),
        { discard: true },
      ),
    ).pipe(Effect.provide(layer))
    const reader = Effect.promise(async () => {
      const seen: number[] = []
      for (let n = 0; n < 200; n++) {
        const parsed = JSON.parse(await fs.promises.readFile(path, "utf8")) as ReturnType<typeof status>
        expect(parsed.filler).toBe(status(parsed.write).filler)
        seen.push(parsed.write)
      }
      return seen
    })
    const [, seen] = await Effect.runPromise(Effect.all([writer, reader], { concurrency: "unbounded" }))
    expect(seen).toHaveLength(200)
    expect(seen).toEqual([...seen].sort((a, b) => a - b))
    expect(JSON.parse(fs.readFileSync(path, "utf8")).write).toBe(writes)
    expect(fs.readdirSync(nodePath.dirname(path))).toEqual(["status.json"])
  })

  test("writeFileAtomic replaces any text file, and fails with write_failed where it cannot write", async () => {
    const path = nodePath.join(tempRoot, "answers", "final_answer.txt")
    await Effect.runPromise(writeFileAtomic(path, "first"))
    await Effect.runPromise(writeFileAtomic(path, "second"))
    expect(fs.readFileSync(path, "utf8")).toBe("second")
    const error = await Effect.runPromise(Effect.flip(writeFileAtomic(nodePath.join(path, "inside"), "x")))
    expect(error.reason).toBe("write_failed")
    expect(fs.readdirSync(nodePath.dirname(path))).toEqual(["final_answer.txt"])
  })
})
