/**
 * RunFiles: one suite run against the live layer (a temp dir) and the memory
 * layer, then what only the disk can show: appends finished by `flush`, and a
 * directory that cannot be written costs one warning per file, never the run.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, type Layer, Logger } from "effect"
import { agentFile } from "../src/domain/run-paths.ts"
import { CALL_LOG_FILE, callLogPath, callLogTexts } from "../src/services/run-files/call-logs.ts"
import { liveRunFiles, memoryRunFiles, RunFiles } from "../src/services/run-files/index.ts"

const tempRoot = fs.mkdtempSync(nodePath.join(os.tmpdir(), "run-files-test-"))
afterAll(() => fs.rmSync(tempRoot, { recursive: true, force: true }))
let fixtures = 0

interface Fixture {
  readonly layer: Layer.Layer<RunFiles>
  /** A file's text as a reader finds it; undefined when missing. */
  readonly read: (relativePath: string) => string | undefined
  /** Call `n`'s log as replay finds it, parsed; undefined when missing. */
  readonly call: (n: number) => unknown
}

const parsed = (text: string | undefined): unknown => (text === undefined ? undefined : JSON.parse(text))

const liveFixture = (): Fixture => {
  fixtures += 1
  const dir = nodePath.join(tempRoot, `log${fixtures}`)
  const path = (p: string) => nodePath.join(dir, p)
  return {
    layer: liveRunFiles(dir),
    read: (p) => (fs.existsSync(path(p)) ? fs.readFileSync(path(p), "utf8") : undefined),
    call: (n) => parsed(callLogTexts(dir).get(n)),
  }
}

const memoryFixture = (): Fixture => {
  const made = memoryRunFiles()
  return { layer: made.layer, read: (p) => made.files.get(p), call: (n) => parsed(made.files.get(callLogPath(n))) }
}

const withFiles = <A, E>(f: Fixture, body: (files: typeof RunFiles.Service) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.flatMap(RunFiles, body).pipe(Effect.provide(f.layer)))

const suite = (name: string, makeFixture: () => Fixture) =>
  describe(`RunFiles (${name})`, () => {
    test("appends to an agent's output land in the order made, once flushed", async () => {
      const f = makeFixture()
      const pieces = Array.from({ length: 300 }, (_, i) => `piece ${i} ${"x".repeat(i % 7 === 0 ? 20_000 : 3)}\n`)
      await withFiles(f, (files) =>
        Effect.gen(function* () {
          for (const [i, piece] of pieces.entries()) yield* files.append(agentFile(i % 2 === 0 ? "agent_a" : "agent_b", "output"), piece)
          yield* files.flush
        }),
      )
      expect(f.read("agent_outputs/agent_a.txt")).toBe(pieces.filter((_, i) => i % 2 === 0).join(""))
      expect(f.read("agent_outputs/agent_b.txt")).toBe(pieces.filter((_, i) => i % 2 === 1).join(""))
    })

    test("write has the whole file in place when it returns, and replaces it", async () => {
      const f = makeFixture()
      await withFiles(f, (files) =>
        Effect.gen(function* () {
          yield* files.write("final/a/answer.txt", "a longer first answer")
          expect(f.read("final/a/answer.txt")).toBe("a longer first answer")
          yield* files.write("final/a/answer.txt", "4")
          expect(f.read("final/a/answer.txt")).toBe("4")
        }),
      )
    })

    test("a call log is there for replay when write returns; of two of one call, the later counts", async () => {
      const f = makeFixture()
      await withFiles(f, (files) =>
        Effect.gen(function* () {
          yield* files.write(callLogPath(1), '{"call":1,"text":"a longer first text"}\n')
          expect(f.call(1)).toEqual({ call: 1, text: "a longer first text" })
          yield* files.write(callLogPath(1), '{"call":1,"text":"one"}\n')
          yield* files.write(callLogPath(2), '{"call":2,"text":"two"}')
          expect(f.call(2)).toEqual({ call: 2, text: "two" })
        }),
      )
      expect([f.call(1), f.call(2), f.call(3)]).toEqual([{ call: 1, text: "one" }, { call: 2, text: "two" }, undefined])
    })
  })

suite("live", liveFixture)
suite("memory", memoryFixture)

describe("RunFiles (live) call logs", () => {
  const record = (n: number) => `{"call":${n},"request":{"messages":["question ${n}"]}}`
  const write = (dir: string, calls: ReadonlyArray<number>) =>
    withFiles({ layer: liveRunFiles(dir), read: () => undefined, call: () => undefined }, (files) =>
      Effect.forEach(calls, (n) => files.write(callLogPath(n), `${record(n)}\n`), { discard: true }),
    )

  test("are lines of one file, llm_log/calls.jsonl, whatever the number of calls; a later process appends to it", async () => {
    const dir = nodePath.join(tempRoot, "call-lines")
    await write(dir, [1, 2, 3])
    await write(dir, [4])
    expect(fs.readdirSync(nodePath.join(dir, "llm_log"))).toEqual(["calls.jsonl"])
    expect(fs.readFileSync(nodePath.join(dir, CALL_LOG_FILE), "utf8")).toBe([1, 2, 3, 4].map((n) => `${record(n)}\n`).join(""))
    expect([...callLogTexts(dir).keys()]).toEqual([1, 2, 3, 4])
  })

  test("a line a crash cut short is ended before the next process appends: it is skipped, the next line is whole", async () => {
    const dir = nodePath.join(tempRoot, "call-torn")
    fs.mkdirSync(nodePath.join(dir, "llm_log"), { recursive: true })
    fs.writeFileSync(nodePath.join(dir, CALL_LOG_FILE), `${record(1)}\n${record(2).slice(0, 20)}`)
    await write(dir, [3])
    expect([...callLogTexts(dir)]).toEqual([
      [1, record(1)],
      [3, record(3)],
    ])
  })

  test("an older run's llm_log/<n>.json files are read too, and a file comes before a line of the same call", async () => {
    const dir = nodePath.join(tempRoot, "call-files")
    await write(dir, [1, 2])
    fs.writeFileSync(nodePath.join(dir, "llm_log", "2.json"), '{"call":2,"from":"file"}\n')
    fs.writeFileSync(nodePath.join(dir, "llm_log", "7.json"), '{"call":7}\n')
    fs.writeFileSync(nodePath.join(dir, "llm_log", "notes.txt"), "not a call log")
    const texts = callLogTexts(dir)
    expect([...texts.keys()].sort((a, b) => a - b)).toEqual([1, 2, 7])
    expect(JSON.parse(texts.get(2)!)).toEqual({ call: 2, from: "file" })
  })
})

describe("RunFiles (live) modes", () => {
  test("every directory and file it makes is private (0700, 0600) under a umask of 022", async () => {
    const old = process.umask(0o022)
    const dir = nodePath.join(tempRoot, "modes")
    fs.mkdirSync(dir, { mode: 0o700 })
    try {
      await withFiles({ layer: liveRunFiles(dir), read: () => undefined, call: () => undefined }, (files) =>
        Effect.gen(function* () {
          yield* files.append(agentFile("a", "output"), "streamed")
          yield* files.write(callLogPath(1), '{"call":1}')
          yield* files.write("final/a/answer.txt", "4")
          yield* files.write("snapshots/a/1/answer.txt", "4")
          yield* files.flush
        }),
      )
    } finally {
      process.umask(old)
    }
    const entries = fs.readdirSync(dir, { recursive: true, withFileTypes: true }).map((d) => nodePath.join(d.parentPath, d.name))
    const modes = Object.fromEntries(entries.map((p) => [nodePath.relative(dir, p), (fs.statSync(p).mode & 0o777).toString(8)]))
    expect(Object.keys(modes).length).toBeGreaterThanOrEqual(10)
    for (const [path, mode] of Object.entries(modes))
      expect(`${path} ${mode}`).toBe(`${path} ${fs.statSync(nodePath.join(dir, path)).isDirectory() ? "700" : "600"}`)
  })
})

describe("RunFiles (live) on a directory it cannot write", () => {
  test("appends fail quietly (one warning per file, at flush); a whole-file write fails with its path and cause", async () => {
    const blocker = nodePath.join(tempRoot, "not-a-dir")
    fs.writeFileSync(blocker, "a file where the log directory should be")
    const warnings: Array<string> = []
    const logger = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ message }) => void warnings.push(String(Array.isArray(message) ? message.join(" ") : message))),
    )
    const written = await Effect.runPromise(
      Effect.flatMap(RunFiles, (files) =>
        Effect.gen(function* () {
          for (let i = 0; i < 20; i++) yield* files.append(agentFile("agent_a", "output"), `line ${i}\n`)
          const result = yield* Effect.either(files.write(callLogPath(1), '{"call":1}\n'))
          yield* files.flush
          return result
        }),
      ).pipe(Effect.provide(liveRunFiles(blocker)), Effect.provide(logger)),
    )
    expect(warnings.filter((w) => w.startsWith("agent_outputs/agent_a.txt: "))).toHaveLength(1)
    expect(written._tag).toBe("Left")
    expect(written._tag === "Left" && written.left.message).toBe(
      `cannot write ${nodePath.join(blocker, "llm_log/calls.jsonl")}: a path component is not a directory (ENOTDIR)`,
    )
    expect(fs.readFileSync(blocker, "utf8")).toBe("a file where the log directory should be")
  })
})
