/**
 * Issue 25: a run that failed says so everywhere, keeping MassGen's lines.
 *
 * Every agent fails (scripted agents whose calls fail): `--automation` prints
 * no `COMPLETED:` line but `FAILED: error: <message>` with the agents' errors,
 * exit 2; status.json is complete (`is_complete`, as MassGen's viewer reads
 * it) but not 100 %, its phase is how far the run got, and its top-level
 * `error` says why; `massgen status` of the log says failed, with the
 * agents' errors. A served run whose client goes away (with
 * `--cancel-on-disconnect`) is `cancelled by the client` in `massgen status`,
 * not interrupted by a signal at 100 %.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import OpenAI from "openai"
import { readEventsText } from "../src/domain/log/index.ts"
import { cleanupSandboxes, runCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"
import { ENV, lineValue } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const failing = (id: string) => ({ id, backend: { type: "scripted", fail_calls: 99, max_retries: 0 } })

describe("a run whose agents all fail", () => {
  test("stdout ends with FAILED, not COMPLETED; status.json and massgen status say it failed and why", async () => {
    const cwd = sandbox()
    const config = writeConfig(cwd, { agents: [failing("a"), failing("b")] })
    const r = await runCli("source", ["--automation", "--config", config, "What is 2+2?"], { cwd, env: ENV, timeoutMs: 60_000 })
    expect(r.exitCode).toBe(2)
    expect(r.lines.filter((l) => l.startsWith("COMPLETED:"))).toEqual([])
    const last = r.lines.at(-1)!
    expect(last).toMatch(/^FAILED: error: every agent failed \(a: .+; b: .+\)$/)

    const dir = lineValue(r, "LOG_DIR")
    const status = JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))
    expect(status.is_complete).toBe(true)
    expect(status.finish_reason).toBe("error")
    expect(status.coordination.completion_percentage).toBe(0)
    expect(status.coordination.phase).toBe("initial_answer")
    expect(status.error).toEqual({ reason: "error", message: last.slice("FAILED: error: ".length) })
    expect(status.results.winner).toBeNull()

    const shown = await runCli("source", ["status", dir], { cwd, env: ENV })
    expect(shown.exitCode).toBe(0)
    expect(shown.lines[0]).toMatch(/: failed \(initial_answer, 0%\)$/)
    expect(shown.lines[1]).toBe(`Failed: error: ${status.error.message}`)
    expect(shown.lines.filter((l) => /^ {2}[ab]: error, 0 answers, error: /.test(l))).toHaveLength(2)
    expect(shown.lines).toContain("Winner: none")
    // Rebuilt from the log, status.json says the same.
    const rebuilt = JSON.parse((await runCli("source", ["status", "--json", dir], { cwd, env: ENV })).stdout)
    expect({ pct: rebuilt.coordination.completion_percentage, error: rebuilt.error }).toEqual({ pct: 0, error: status.error })
  }, 60_000)
})

describe("a served run whose client goes away, with --cancel-on-disconnect", () => {
  test("is recorded and shown as cancelled by the client", async () => {
    const cwd = sandbox()
    const doc = { agents: [{ id: "a", backend: { type: "scripted", answer: "4", delay_seconds: 600 } }] }
    const cli = await startUntilLine(
      "source",
      ["serve", "--config", writeConfig(cwd, doc, "team.yaml"), "--port", "0", "--cancel-on-disconnect"],
      "Serving ",
      {
        cwd,
        timeoutMs: 90_000,
      },
    )
    try {
      const url = cli.lines.find((l) => l.startsWith("Serving "))!.split(" ")[1]!
      const client = new OpenAI({ baseURL: url, apiKey: "none", maxRetries: 0 })
      const leaving = new AbortController()
      const stream = await client.chat.completions.create(
        { model: "team", messages: [{ role: "user", content: "slow?" }], stream: true },
        { signal: leaving.signal },
      )
      const first = (await stream[Symbol.asyncIterator]().next()).value as any
      const logDir: string = first.massgen.log_dir
      const file = nodePath.join(logDir, "events.jsonl")
      const events = () => (fs.existsSync(file) ? readEventsText(fs.readFileSync(file, "utf8")).events : [])
      // Gone once the agent's call is out.
      for (let i = 0; i < 2000 && !events().some((e) => e._tag === "call_start"); i++) await Bun.sleep(10)
      leaving.abort()
      for (let i = 0; i < 2000 && events().at(-1)?._tag !== "run_finished"; i++) await Bun.sleep(10)
      const shown = await runCli("source", ["status", logDir], { cwd })
      expect(shown.lines[0]).toMatch(/: cancelled by the client \(initial_answer, 0%\)$/)
      expect(shown.lines.at(-1)).toBe(`Stopped: cancelled by the client; continue it with: massgen resume ${logDir}`)
      expect(shown.stdout).not.toContain("signal")
      const json = JSON.parse((await runCli("source", ["status", "--json", logDir], { cwd })).stdout)
      expect(json.stopped.cause).toBe("cancelled")
      expect(json.error).toEqual({ reason: "interrupted", message: "cancelled by the client" })
    } finally {
      cli.proc.kill("SIGTERM")
      await cli.done
    }
  }, 90_000)
})
