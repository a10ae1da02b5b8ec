/**
 * Issue 9: a run whose disk fills up stops at once, says why, and can be resumed.
 *
 * Each test mounts a small tmpfs (as root, which CI is) as the log base, fills
 * most of it with a filler file, and runs a scripted council whose texts do
 * not fit in what is left: early (the answers) or late (the final answer).
 * The run must exit 2 before any timeout of its own (the test stops it after
 * 90 s; its agents' timeout is 600 s and the orchestrator's 1,800 s), print
 * one line on stderr naming the file and "disk full", keep stdout to the
 * automation contract's lines with no `WINNER:`/`ANSWER_FILE:`, and leave an
 * `events.jsonl` that reads with at most a torn last line. Once the filler is
 * removed, `massgen resume` completes the run. Where no tmpfs can be mounted,
 * each test prints why and checks nothing else.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { readEventsText } from "../src/domain/log/index.ts"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"

const mounts: Array<string> = []
afterAll(() => {
  for (const m of mounts) spawnSync("umount", ["-l", m])
  for (const m of mounts) fs.rmSync(m, { recursive: true, force: true })
  cleanupSandboxes()
})

/** A fresh tmpfs of `kib` KiB, or why none can be had here. */
const tmpfs = (kib: number): { readonly dir: string } | { readonly why: string } => {
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-tmpfs-"))
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${kib}k`, "tmpfs", dir], { encoding: "utf8" })
  if (r.status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true })
    return { why: `cannot mount a tmpfs here (${(r.stderr || r.error?.message || "mount failed").trim()})` }
  }
  mounts.push(dir)
  return { dir }
}

/** Fills the file system of `dir` until `freeKib` KiB are left, with one file; returns its path. */
const fillUntil = (dir: string, freeKib: number): string => {
  const filler = nodePath.join(dir, "filler")
  const free = fs.statfsSync(dir).bavail * fs.statfsSync(dir).bsize
  fs.writeFileSync(filler, Buffer.alloc(Math.max(0, free - freeKib * 1024)))
  return filler
}

/** The lines the automation contract allows on stdout. */
const CONTRACT =
  /^(LOG_DIR|STATUS|QUESTION|WINNER|ANSWER_FILE|DURATION|ANSWER_PREVIEW|COMPLETED|FAILED): |^\[Coordination in progress - monitor status\.json for real-time updates\]$/

const QUESTION = "What is 2+2?"

const council = (answerBytes: number, finalBytes: number) => ({
  agents: ["a", "b", "c"].map((x, i) => ({
    id: `agent_${x}`,
    backend: {
      type: "scripted",
      answer: `${x}`.repeat(answerBytes),
      vote: "agent1",
      ...(i === 0 ? { final: "F".repeat(finalBytes) } : {}),
    },
  })),
})

const expectStoppedForDiskFull = (
  result: { exitCode: number; stdout: string; stderr: string; lines: ReadonlyArray<string> },
  logBase: string,
) => {
  expect({ code: result.exitCode, stderr: result.stderr }).toEqual({ code: 2, stderr: expect.stringContaining("disk full (ENOSPC)") })
  const errors = result.stderr.split("\n").filter((l) => l.startsWith("massgen: cannot write "))
  expect(errors).toHaveLength(1)
  expect(errors[0]).toContain(logBase)
  expect(errors[0]).toContain("resume with: massgen resume ")
  for (const line of result.lines) expect(line).toMatch(CONTRACT)
  expect(result.lines.some((l) => l.startsWith("WINNER: ") || l.startsWith("ANSWER_FILE: "))).toBe(false)
  const logDir = result.lines.find((l) => l.startsWith("LOG_DIR: "))!.slice("LOG_DIR: ".length)
  const text = fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")
  const read = readEventsText(text)
  // Parseable: at most a torn last line.
  expect(read.skipped).toBeLessThanOrEqual(read.tornTail ? 1 : 0)
  expect(read.events.some((e) => e._tag === "run_finished")).toBe(false)
  return logDir
}

describe.serial("a full disk", () => {
  // The config (with its texts) is copied into execution_metadata.yaml first: what is free leaves room for that.
  for (const [when, answerBytes, finalBytes, freeKib] of [
    ["mid-run (the answers do not fit)", 60_000, 10, 300],
    ["late (the final answer does not fit)", 200, 400_000, 650],
  ] as const) {
    test(`${when}: exit 2 at once with one line naming the file, no ANSWER_FILE; resume completes once space is freed`, async () => {
      const fs0 = tmpfs(8192)
      if ("why" in fs0) {
        console.log(`not checked: ${fs0.why}`)
        return
      }
      const cwd = sandbox()
      const config = writeConfig(cwd, council(answerBytes, finalBytes))
      const filler = fillUntil(fs0.dir, freeKib)
      const env = { MASSGEN_LOG_BASE_DIR: fs0.dir }
      // Still running after 90 s, it is killed and this fails: far from the run's own timeouts, however busy the machine.
      const result = await runCli("source", ["--automation", "--config", config, QUESTION], { cwd, env, timeoutMs: 90_000 })
      const logDir = expectStoppedForDiskFull(result, fs0.dir)

      fs.rmSync(filler)
      const resumed = await runCli("source", ["resume", logDir, "--automation"], { cwd, env, timeoutMs: 90_000 })
      expect(resumed.exitCode).toBe(0)
      // At most the report of a line the full disk cut.
      for (const line of resumed.stderr.split("\n").filter((l) => l !== ""))
        expect(line).toMatch(/^massgen: .*events\.jsonl: skipped 1 line \(1 torn tail\)$/)
      const answerFile = resumed.lines.find((l) => l.startsWith("ANSWER_FILE: "))!.slice("ANSWER_FILE: ".length)
      expect(fs.existsSync(answerFile)).toBe(true)
      const status = JSON.parse(fs.readFileSync(nodePath.join(logDir, "status.json"), "utf8"))
      expect(status).toMatchObject({ is_complete: true, finish_reason: "completed" })
    }, 240_000)
  }

  test("a log directory that cannot be created is an execution error: exit 2, one line", async () => {
    const fs0 = tmpfs(64)
    if ("why" in fs0) {
      console.log(`not checked: ${fs0.why}`)
      return
    }
    const cwd = sandbox()
    const config = writeConfig(cwd, council(10, 10))
    // A read-only mount cannot take the run's directory.
    spawnSync("mount", ["-o", "remount,ro", fs0.dir])
    const result = await runCli("source", ["--automation", "--config", config, QUESTION], { cwd, env: { MASSGEN_LOG_BASE_DIR: fs0.dir } })
    expect(result.exitCode).toBe(2)
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^massgen: cannot create the run's log directory .*read-only file system/),
    ])
    expect(result.stdout).toBe("")
  }, 60_000)
})
