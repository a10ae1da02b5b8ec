/**
 * Log directories made by the command line, for the end-to-end tests of what reads them.
 *
 * - `scriptedRun(mode)`: a finished run of three scripted agents (no network),
 *   made by `massgen --automation`; its working directory and log directory.
 * - `crashedRun(mode, keep)`: such a run cut as a crash leaves it: the first
 *   `keep` lines of its log, no final answer, and no lock.
 * - `snapshot(dir)`: every file under `dir` with its bytes, to show nothing changed.
 * - `readEvents(dir)`: the JSON objects of its `events.jsonl` lines (unreadable ones left out).
 * - `deadPid()`: the pid of a process that has exited, for a stale `run.lock`.
 * - `expectExit(result, code)`: the exit code, showing the output when it differs.
 * - `viewerPick(cwd, logs, input)`: `massgen viewer --pick` from source over the
 *   runs under `logs`, with `input` typed on its stdin.
 */
import { expect } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { type CliResult, type Mode, runCli, SOURCE_MAIN, sandbox, writeConfig } from "./cli.ts"

export const QUESTION = "What is 2+2?"
/** The child's environment: no API key, no log base (each run logs under its own working directory). */
export const ENV = { OPENAI_API_KEY: undefined, MASSGEN_LOG_BASE_DIR: undefined }

export const SCRIPTED_DOC = {
  agents: [
    { id: "agent_a", backend: { type: "scripted", answer: "Four.", vote: "agent1", final: "The answer is 4." } },
    { id: "agent_b", backend: { type: "scripted", answer: "4", vote: "agent1" } },
    { id: "agent_c", backend: { type: "scripted", answer: "2+2=4", vote: "agent1" } },
  ],
}

export const eventsPath = (dir: string) => nodePath.join(dir, "events.jsonl")

export const readEvents = (dir: string): Array<any> =>
  fs
    .readFileSync(eventsPath(dir), "utf8")
    .split("\n")
    .flatMap((l) => {
      try {
        return l === "" ? [] : [JSON.parse(l)]
      } catch {
        return []
      }
    })

export const snapshot = (dir: string): Record<string, string> =>
  Object.fromEntries(
    fs
      .readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d): [string, string] => {
        const path = nodePath.join(d.parentPath, d.name)
        return [nodePath.relative(dir, path), fs.readFileSync(path, "base64")]
      })
      .sort(([a], [b]) => a.localeCompare(b)),
  )

const shown = (r: CliResult) => `exit ${r.exitCode}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`
export const expectExit = (r: CliResult, code: number) =>
  expect({ code: r.exitCode, output: shown(r) }).toEqual({ code, output: expect.any(String) })

/** The value of an automation line (`LOG_DIR: ...`). */
export const lineValue = (r: CliResult, key: string): string => r.lines.find((l) => l.startsWith(`${key}: `))!.slice(key.length + 2)

export const scriptedRun = async (mode: Mode) => {
  const cwd = sandbox()
  const config = writeConfig(cwd, SCRIPTED_DOC)
  const r = await runCli(mode, ["--automation", "--config", config, QUESTION], { cwd, env: ENV })
  expectExit(r, 0)
  return { cwd, dir: lineValue(r, "LOG_DIR") }
}

export const crashedRun = async (mode: Mode, keep = 12) => {
  const run = await scriptedRun(mode)
  const lines = fs.readFileSync(eventsPath(run.dir), "utf8").split("\n")
  fs.writeFileSync(
    eventsPath(run.dir),
    lines
      .slice(0, keep)
      .map((l) => `${l}\n`)
      .join(""),
  )
  fs.rmSync(nodePath.join(run.dir, "final"), { recursive: true, force: true })
  return run
}

export const deadPid = async () => {
  const p = Bun.spawn(["true"])
  await p.exited
  return p.pid
}

export const viewerPick = async (cwd: string, logs: string, input: string) => {
  const proc = Bun.spawn([process.execPath, SOURCE_MAIN, "viewer", "--pick"], {
    cwd,
    env: { ...process.env, MASSGEN_LOG_BASE_DIR: logs },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  })
  proc.stdin.write(input)
  await proc.stdin.end()
  const killer = setTimeout(() => proc.kill("SIGKILL"), 20_000)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(killer)
  return { code, stdout, stderr }
}
