/**
 * RunFiles: one suite run against the live layer (a temp dir) and the memory
 * layer, then what only the disk can show: appends finished by `flush`, and a
 * directory that cannot be written costs one warning per file, never the run.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Logger, type Layer } from "effect"
import { agentFile } from "../src/domain/run-paths.ts"
import { RunFiles, liveRunFiles, memoryRunFiles } from "../src/services/run-files.ts"

const tempRoot = fs.mkdtempSync(nodePath.join(os.tmpdir(), "run-files-test-"))
afterAll(() => fs.rmSync(tempRoot, { recursive: true, force: true }))
let fixtures = 0

interface Fixture {
  readonly layer: Layer.Layer<RunFiles>
  /** A file's text as a reader finds it; undefined when missing. */
  readonly read: (relativePath: string) => string | undefined
}

const liveFixture = (): Fixture => {
  fixtures += 1
  const dir = nodePath.join(tempRoot, `log${fixtures}`)
  const path = (p: string) => nodePath.join(dir, p)
  return { layer: liveRunFiles(dir), read: (p) => (fs.existsSync(path(p)) ? fs.readFileSync(path(p), "utf8") : undefined) }
}

const memoryFixture = (): Fixture => {
  const made = memoryRunFiles()
  return { layer: made.layer, read: (p) => made.files.get(p) }
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
          yield* files.write("llm_log/1.json", "{}\n")
          expect(f.read("llm_log/1.json")).toBe("{}\n")
          yield* files.write("llm_log/1.json", '{"call":1}\n')
          expect(f.read("llm_log/1.json")).toBe('{"call":1}\n')
        }),
      )
    })

    test("a call log is written whole, over what was there", async () => {
      const f = makeFixture()
      await withFiles(f, (files) =>
        Effect.gen(function* () {
          yield* files.write("llm_log/1.json", "a longer first text\n")
          yield* files.write("llm_log/1.json", "one\n")
          yield* files.write("llm_log/2.json", "two\n")
          yield* files.flush
        }),
      )
      expect([f.read("llm_log/1.json"), f.read("llm_log/2.json")]).toEqual(["one\n", "two\n"])
    })
  })

suite("live", liveFixture)
suite("memory", memoryFixture)

describe("RunFiles (live) modes", () => {
  test("every directory and file it makes is private (0700, 0600) under a umask of 022", async () => {
    const old = process.umask(0o022)
    const dir = nodePath.join(tempRoot, "modes")
    fs.mkdirSync(dir, { mode: 0o700 })
    try {
      await withFiles({ layer: liveRunFiles(dir), read: () => undefined }, (files) =>
        Effect.gen(function* () {
          yield* files.append(agentFile("a", "output"), "streamed")
          yield* files.write("llm_log/1.json", "{}")
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
    for (const [path, mode] of Object.entries(modes)) expect(`${path} ${mode}`).toBe(`${path} ${fs.statSync(nodePath.join(dir, path)).isDirectory() ? "700" : "600"}`)
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
          const result = yield* Effect.either(files.write("llm_log/1.json", "{}\n"))
          yield* files.flush
          return result
        }),
      ).pipe(Effect.provide(liveRunFiles(blocker)), Effect.provide(logger)),
    )
    expect(warnings.filter((w) => w.startsWith("agent_outputs/agent_a.txt: "))).toHaveLength(1)
    expect(written._tag).toBe("Left")
    expect(written._tag === "Left" && written.left.message).toBe(
      `cannot write ${nodePath.join(blocker, "llm_log/1.json")}: a path component is not a directory (ENOTDIR)`,
    )
    expect(fs.readFileSync(blocker, "utf8")).toBe("a file where the log directory should be")
  })
})
