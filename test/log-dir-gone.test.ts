/**
 * Issue 25: a log directory deleted or moved away while its run goes on. The
 * run stops at the next write it cannot make, and says in one line that its
 * log directory was deleted or moved (not that another writer changed its
 * events, nor a resume hint for a directory that is not there), exit 2 as
 * any run that cannot keep its record (README, exit codes). The write that
 * finds it out here is the stop a SIGTERM asks for: the agent's call is still
 * out, so nothing else is written meanwhile.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, sandbox, startCli, waitForSignalHandler, writeConfig } from "./support/cli.ts"
import { ENV } from "./support/run-dirs.ts"

afterAll(cleanupSandboxes)

const TEST_TIMEOUT_MS = 90_000

/** A run whose one agent's call is out (for 600 s), and its log directory. */
const runWithCallOut = async () => {
  const cwd = sandbox()
  const config = writeConfig(cwd, { agents: [{ id: "a", backend: { type: "scripted", answer: "4", delay_seconds: 600 } }] })
  const run = await startCli("source", ["--automation", "--config", config, "What is 2+2?"], { cwd, env: ENV, timeoutMs: 80_000 })
  const dir = (await run.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
  const events = nodePath.join(dir, "events.jsonl")
  for (let i = 0; i < 4000 && !(fs.existsSync(events) && fs.readFileSync(events, "utf8").includes('"type":"call_start"')); i++)
    await Bun.sleep(10)
  await waitForSignalHandler(run.proc.pid, "SIGTERM")
  return { cwd, run, dir }
}

describe("a log directory that goes away during its run", () => {
  for (const how of ["deleted", "moved"] as const) {
    test(
      `${how}: one line saying so, exit 2`,
      async () => {
        const { cwd, run, dir } = await runWithCallOut()
        if (how === "deleted") fs.rmSync(dir, { recursive: true, force: true })
        else fs.renameSync(dir, nodePath.join(cwd, "elsewhere"))
        run.proc.kill("SIGTERM")
        const r = await run.done
        expect({ code: r.exitCode, stderr: r.stderr }).toEqual({
          code: 2,
          stderr: `massgen: the log directory ${dir} was deleted or moved during the run; the run stopped\n`,
        })
        expect(r.lines).toEqual([
          `LOG_DIR: ${dir}`,
          `STATUS: ${dir}/status.json`,
          "QUESTION: What is 2+2?",
          "[Coordination in progress - monitor status.json for real-time updates]",
        ])
        // What was written is kept where it went.
        if (how === "moved") expect(fs.readFileSync(nodePath.join(cwd, "elsewhere", "events.jsonl"), "utf8")).toContain("call_start")
      },
      TEST_TIMEOUT_MS,
    )
  }
})
