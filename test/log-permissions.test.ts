/**
 * Issue 9: a log directory is its owner's alone (prompts and answers are
 * private data), whatever the umask massgen is started with.
 *
 * Every command is started through `sh -c "umask 022; exec ..."`. A run of
 * one agent on the loopback fake is stopped with SIGINT while its call hangs
 * (the fake's first request says the run holds its lock and has written its
 * first files), then `massgen resume` finishes it, `massgen status` rewrites
 * its status.json and `massgen replay` writes a replayed copy. Every
 * directory under the run's directory (and the run's directory itself) is
 * 0700, every file 0600: events.jsonl, status.json, execution_metadata.yaml,
 * run.lock (while the run goes on), agent_outputs/, llm_log/, blobs/, final/,
 * snapshots/ and the other derived files.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import {
  type Behaviour,
  type FakeRequest,
  hang,
  NO_PROXY_ENV,
  offeredTools,
  promptText,
  reply,
  startFakeLlm,
  toolCall,
} from "./support/fake-llm.ts"
import { filesUnder, logDirOf, shown } from "./support/run-output.ts"

afterAll(() => cleanupSandboxes())

const UMASK = 0o022
const OPTIONS = { umask: UMASK, env: { ...NO_PROXY_ENV } }
const QUESTION = "What is 2+2?"

const modeOf = (path: string): string => (fs.statSync(path).mode & 0o777).toString(8)

/** The mode of `path`, or undefined when it is gone: mid-run, a temporary file may be renamed between the listing and its stat. */
const modeIfThere = (path: string): string | undefined => {
  const stat = fs.statSync(path, { throwIfNoEntry: false })
  return stat === undefined ? undefined : (stat.mode & 0o777).toString(8)
}

/** The directories and files below `dir`, walked one folder at a time; a folder gone mid-walk (renamed into place) is skipped. */
const walk = (dir: string): { dirs: Array<string>; files: Array<string> } => {
  const dirs: Array<string> = []
  const files: Array<string> = []
  const visit = (folder: string): void => {
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(folder, { withFileTypes: true })
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return
      throw e
    }
    for (const entry of entries) {
      const path = nodePath.join(folder, entry.name)
      if (entry.isDirectory()) {
        dirs.push(path)
        visit(path)
      } else if (entry.isFile()) files.push(path)
    }
  }
  visit(dir)
  return { dirs, files }
}

/** Every directory and file under `dir` (and `dir` itself) with a mode other than 0700 / 0600. */
const looseModes = (dir: string): Array<string> => {
  const { dirs, files } = walk(dir)
  const loose = (paths: Array<string>, wanted: string, suffix: string): Array<string> =>
    paths.flatMap((p) => {
      const mode = modeIfThere(p)
      return mode === undefined || mode === wanted ? [] : [`${nodePath.relative(dir, p) || "."}${suffix} ${mode}`]
    })
  return [...loose([dir, ...dirs], "700", "/"), ...loose(files, "600", "")]
}

describe("log directories are 0700 and their files 0600, whatever the umask", () => {
  test("a run stopped and resumed, then status and replay, all under umask 022", async () => {
    let respond: (req: FakeRequest) => Behaviour = () => hang()
    const fake = await startFakeLlm({ respond: (req) => respond(req) })
    try {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [
          {
            id: "solo",
            system_message: `You are careful. ${"Check every step. ".repeat(20)}`,
            backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl },
          },
        ],
        timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
      })
      const running = await startCli("source", ["--automation", "--config", config, QUESTION], { ...OPTIONS, cwd })
      const dir = (await running.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      await fake.waitForRequest(1)
      // Mid-run: the lock is held, the log started.
      expect(modeOf(nodePath.join(dir, "run.lock"))).toBe("600")
      expect(looseModes(dir)).toEqual([])
      running.proc.kill("SIGINT")
      expect((await running.done).exitCode).toBe(4)

      respond = (req) =>
        offeredTools(req).length === 0
          ? reply({ text: "Four." })
          : promptText(req).includes("<agent1.")
            ? toolCall("vote", { agent_id: "agent1", reason: "right" })
            : toolCall("new_answer", { content: "4" })
      const resumed = await runCli("source", ["resume", "--automation", dir], { ...OPTIONS, cwd })
      expect({ exit: resumed.exitCode, out: shown(resumed) }).toMatchObject({ exit: 0 })
      expect(logDirOf(resumed)).toBe(dir)
      expect((await runCli("source", ["status", dir], { ...OPTIONS, cwd })).exitCode).toBe(0)

      const files = filesUnder(dir)
      for (const expected of [
        "events.jsonl",
        "status.json",
        "execution_metadata.yaml",
        "coordination_events.json",
        "snapshot_mappings.json",
        "final/solo/answer.txt",
        "agent_outputs/solo.txt",
        "llm_log/calls.jsonl",
      ]) {
        expect(files).toContain(expected)
      }
      for (const folder of ["blobs/", "snapshots/"]) expect(files.some((f) => f.startsWith(folder))).toBe(true)
      expect(looseModes(dir)).toEqual([])

      const out = nodePath.join(cwd, "replayed")
      const replayed = await runCli("source", ["replay", dir, "--check", "--out", out], { ...OPTIONS, cwd })
      expect({ exit: replayed.exitCode, out: shown(replayed) }).toMatchObject({ exit: 0 })
      expect(filesUnder(out).filter((f) => f.endsWith("/events.jsonl"))).toHaveLength(1)
      expect(looseModes(out)).toEqual([])
    } finally {
      fake.stop()
    }
  }, 90_000)
})
