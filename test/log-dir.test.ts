/**
 * Log directories: their names, their base, and that no two runs share one.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect } from "effect"
import { createLogDir, logBaseDir, logDirName, nowEpochMicros } from "../src/services/log-dir/create.ts"

const tempRoot = fs.mkdtempSync(nodePath.join(os.tmpdir(), "log-dir-test-"))
afterAll(() => fs.rmSync(tempRoot, { recursive: true, force: true }))

/** 2025-03-04T05:06:07.089012Z in epoch microseconds. */
const MOMENT = Date.UTC(2025, 2, 4, 5, 6, 7) * 1000 + 89_012

describe("logDirName", () => {
  test("is log_YYYYMMDD_HHMMSS_ffffff in UTC", () => {
    expect(logDirName(MOMENT)).toBe("log_20250304_050607_089012")
    expect(logDirName(Date.UTC(1999, 11, 31, 23, 59, 59) * 1000 + 999_999)).toBe("log_19991231_235959_999999")
    expect(logDirName(0)).toBe("log_19700101_000000_000000")
  })

  test("the live clock gives a name of the same shape, near Date.now()", () => {
    // Between two readings of Date.now(), however long the machine takes between them, give or take
    // a second the wall clock may have been set by since the monotonic clock's origin.
    const before = Date.now()
    const now = nowEpochMicros()
    const after = Date.now()
    expect(Number.isSafeInteger(now)).toBe(true)
    const ms = now / 1000
    expect({ before, ms, after, between: before - 1000 <= ms && ms <= after + 1000 }).toEqual({ before, ms, after, between: true })
    expect(logDirName(now)).toMatch(/^log_\d{8}_\d{6}_\d{6}$/)
  })
})

describe("logBaseDir", () => {
  test("is <cwd>/.massgen/massgen_logs unless MASSGEN_LOG_BASE_DIR is set", () => {
    expect(logBaseDir({}, "/work/project")).toBe("/work/project/.massgen/massgen_logs")
    expect(logBaseDir({ MASSGEN_LOG_BASE_DIR: "" }, "/work/project")).toBe("/work/project/.massgen/massgen_logs")
    expect(logBaseDir({ MASSGEN_LOG_BASE_DIR: "/var/logs/mg" }, "/work/project")).toBe("/var/logs/mg")
    expect(logBaseDir({ MASSGEN_LOG_BASE_DIR: "logs" }, "/work/project")).toBe("/work/project/logs")
  })
})

describe("createLogDir", () => {
  test("creates the base and the run's directory, and gives its absolute path", async () => {
    const base = nodePath.join(tempRoot, "fresh", "nested")
    const dir = await Effect.runPromise(createLogDir(base, MOMENT))
    expect(dir).toBe(nodePath.join(base, "log_20250304_050607_089012"))
    expect(nodePath.isAbsolute(dir)).toBe(true)
    expect(fs.statSync(dir).isDirectory()).toBe(true)
  })

  test("the run's directory is private (0700) under a umask of 022", async () => {
    const old = process.umask(0o022)
    try {
      const dir = await Effect.runPromise(createLogDir(nodePath.join(tempRoot, "private"), MOMENT))
      expect((fs.statSync(dir).mode & 0o777).toString(8)).toBe("700")
    } finally {
      process.umask(old)
    }
  })

  test("a relative base resolves against the working directory", async () => {
    const relative = nodePath.relative(process.cwd(), nodePath.join(tempRoot, "relative"))
    const dir = await Effect.runPromise(createLogDir(relative, MOMENT))
    expect(dir).toBe(nodePath.join(tempRoot, "relative", "log_20250304_050607_089012"))
  })

  test("20 concurrent creations at the same microsecond give 20 distinct directories", async () => {
    const base = nodePath.join(tempRoot, "same-moment")
    const dirs = await Effect.runPromise(
      Effect.forEach(Array.from({ length: 20 }), () => createLogDir(base, MOMENT), { concurrency: "unbounded" }),
    )
    expect(new Set(dirs).size).toBe(20)
    expect(fs.readdirSync(base).sort()).toEqual(dirs.map((d) => nodePath.basename(d)).sort())
    expect(nodePath.basename(dirs.toSorted().at(-1) ?? "")).toBe("log_20250304_050607_089031")
  })

  test("4 processes creating 5 directories each at the same microsecond get 20 distinct ones", async () => {
    const base = nodePath.join(tempRoot, "processes")
    const module = nodePath.join(import.meta.dir, "..", "src", "services", "log-dir", "create.ts")
    const script = `
      import { Effect } from "effect"
      import { createLogDir } from ${JSON.stringify(module)}
      for (let i = 0; i < 5; i++) console.log(await Effect.runPromise(createLogDir(${JSON.stringify(base)}, ${MOMENT})))`
    const outputs = await Promise.all(
      Array.from({ length: 4 }, () =>
        new Response(
          Bun.spawn([process.execPath, "-e", script], { cwd: nodePath.join(import.meta.dir, ".."), stdout: "pipe" }).stdout,
        ).text(),
      ),
    )
    const dirs = outputs.flatMap((out) => out.trim().split("\n"))
    expect(dirs).toHaveLength(20)
    expect(new Set(dirs).size).toBe(20)
  })

  test("stepping past the last microsecond of a second moves into the next second", async () => {
    const base = nodePath.join(tempRoot, "carry")
    const last = Date.UTC(2025, 0, 1, 0, 0, 59) * 1000 + 999_999
    const dirs = await Effect.runPromise(Effect.all([createLogDir(base, last), createLogDir(base, last)]))
    expect(dirs.map((d) => nodePath.basename(d))).toEqual(["log_20250101_000059_999999", "log_20250101_000100_000000"])
  })

  test("honours MASSGEN_LOG_BASE_DIR through logBaseDir", async () => {
    const override = nodePath.join(tempRoot, "override")
    const dir = await Effect.runPromise(createLogDir(logBaseDir({ MASSGEN_LOG_BASE_DIR: override }, "/nowhere"), MOMENT))
    expect(nodePath.dirname(dir)).toBe(override)
  })

  test("a base that cannot be created fails with base_unusable", async () => {
    const blocker = nodePath.join(tempRoot, "a-file")
    fs.writeFileSync(blocker, "")
    const error = await Effect.runPromise(Effect.flip(createLogDir(nodePath.join(blocker, "logs"), MOMENT)))
    expect(error.reason).toBe("base_unusable")
    expect(error.message).toContain(blocker)
  })
})
