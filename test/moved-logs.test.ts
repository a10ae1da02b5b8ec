/**
 * Issue 9, a log directory moved or copied: every command works on the run
 * where it is now, end to end from source. The paths a command prints or
 * writes (`meta.log_dir` of status.json and of `run_resumed`, the automation
 * lines `LOG_DIR`, `STATUS` and `ANSWER_FILE`, `REPLAY_DIR`, the viewer's
 * lines) are those of the directory given, never the one recorded in the
 * events, and the directory the run was written in is not touched.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox } from "./support/cli.ts"
import { crashedRun, ENV, eventsPath, expectExit, lineValue, QUESTION, readEvents, scriptedRun, snapshot } from "./support/run-dirs.ts"

afterAll(cleanupSandboxes)

/** A copy of `dir` under a new sandbox, with another name. */
const copied = (dir: string, name: string) => {
  const to = nodePath.join(sandbox(), "elsewhere", name)
  fs.cpSync(dir, to, { recursive: true })
  return to
}

const statusFile = (dir: string) => JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))

/** What every command says of a run at `dir`, which was written at `original`. */
const expectAt = async (dir: string, original: string, cwd: string) => {
  const status = await runCli("source", ["status", "--json", dir], { cwd, env: ENV })
  expectExit(status, 0)
  expect(JSON.parse(status.stdout).meta).toMatchObject({ log_dir: dir, session_id: nodePath.basename(dir) })
  expect(JSON.parse(status.stdout).log.events).toBe(eventsPath(dir))
  expect(statusFile(dir).meta.log_dir).toBe(dir)

  const replay = await runCli("source", ["replay", dir], { cwd, env: ENV })
  expectExit(replay, 0)
  expect(lineValue(replay, "REPLAY_DIR")).toStartWith(nodePath.join(nodePath.dirname(dir), "replays"))

  const viewer = await runCli("source", ["viewer", dir], { cwd, env: ENV })
  expectExit(viewer, 0)
  expect(viewer.lines[0]).toEndWith(`(logs: ${dir})`)
  expect(viewer.stdout).not.toContain(original)
}

describe("a log directory moved or copied elsewhere", () => {
  test("a finished run moved away: status, resume --automation, replay and viewer use where it is now", async () => {
    const { cwd, dir: original } = await scriptedRun("source")
    const dir = nodePath.join(sandbox(), "moved", "log_renamed")
    fs.mkdirSync(nodePath.dirname(dir))
    fs.renameSync(original, dir)
    await expectAt(dir, original, cwd)
    const resume = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV })
    expectExit(resume, 0)
    expect(lineValue(resume, "LOG_DIR")).toBe(dir)
    expect(lineValue(resume, "STATUS")).toBe(nodePath.join(dir, "status.json"))
    expect(lineValue(resume, "ANSWER_FILE")).toBe(nodePath.join(dir, "final", "agent_a", "answer.txt"))
    expect(fs.existsSync(original)).toBe(false)
  }, 60_000)

  test("a crashed run copied elsewhere is resumed there: its new lines and files name the copy, the original is untouched", async () => {
    const { cwd, dir: original } = await crashedRun("source")
    const before = snapshot(original)
    const dir = copied(original, "log_copy")
    // Given as a relative path, from another working directory.
    const elsewhere = nodePath.dirname(nodePath.dirname(dir))
    const resume = await runCli("source", ["resume", "--automation", nodePath.join("elsewhere", "log_copy")], { cwd: elsewhere, env: ENV })
    expectExit(resume, 0)
    expect(resume.lines.slice(0, 3)).toEqual([`LOG_DIR: ${dir}`, `STATUS: ${nodePath.join(dir, "status.json")}`, `QUESTION: ${QUESTION}`])
    expect(lineValue(resume, "ANSWER_FILE")).toBe(nodePath.join(dir, "final", "agent_a", "answer.txt"))
    expect(fs.readFileSync(lineValue(resume, "ANSWER_FILE"), "utf8")).toBe("The answer is 4.")
    const resumed = readEvents(dir).find((e) => e.type === "run_resumed")
    expect(resumed.meta.log_dir).toBe(dir)
    expect(statusFile(dir)).toMatchObject({ is_complete: true, meta: { log_dir: dir } })
    expect(snapshot(original)).toEqual(before)
    await expectAt(dir, original, cwd)
    expect(snapshot(original)).toEqual(before)
  }, 60_000)

  test("the viewer on a copy of an unfinished run whose recorded process still lives: no process writes the copy, so it stops at once", async () => {
    const { cwd, dir: original } = await crashedRun("source")
    // The recorded process is alive (it is this test's), and it wrote the original directory, not the copy.
    const text = fs.readFileSync(eventsPath(original), "utf8")
    const started = JSON.parse(text.split("\n")[0]!)
    fs.writeFileSync(
      eventsPath(original),
      text.replace(text.split("\n")[0]!, JSON.stringify({ ...started, meta: { ...started.meta, pid: process.pid } })),
    )
    fs.rmSync(nodePath.join(original, "status.json"))
    const dir = copied(original, "log_copy_of_live")
    const viewer = await runCli("source", ["viewer", dir], { cwd, env: ENV, timeoutMs: 10_000 })
    expectExit(viewer, 0)
    expect(viewer.stderr).toBe(
      `massgen: the run's process is gone; it stopped without finishing: ${dir} (continue it with: massgen resume ${dir})\n`,
    )
  }, 30_000)
})
