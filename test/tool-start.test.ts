/**
 * Issue 25: a run whose tools do not start leaves a log that says so. Its
 * first events are written before its MCP servers start; a server that
 * exits at once (or a command tool whose program cannot run) is recorded as
 * `tool_start_failed` and the run fails before any model call: `FAILED:
 * error: ...` and exit 2. `massgen status` says failed and why, the viewer
 * reads it, `replay --check` makes the same events, and `massgen resume`
 * runs nothing and says why, naming the server. A resumed run whose server
 * no longer starts appends nothing and exits 1.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { faultServer } from "./support/mcp.ts"
import { ENV, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(cleanupSandboxes)

const TEST_TIMEOUT_MS = 90_000
const WHY =
  "MCP server db did not start: exited with code 1 before its handshake; its stderr ends: fault server: loading settings | fault server: cannot open the database"

const withServer = (server: Record<string, unknown>) => ({
  agents: [{ id: "a", backend: { type: "scripted", answer: "4", mcp_servers: [{ name: "db", ...server }] } }],
})

describe("a run whose MCP server does not start", () => {
  test(
    "is a failed run on record: its events, status, viewer, replay and resume all read it",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, withServer(faultServer("fails-to-start")))
      const r = await runCli("source", ["--automation", "--config", config, "What is 2+2?"], { cwd, env: ENV })
      expect(r.exitCode).toBe(2)
      const dir = lineValue(r, "LOG_DIR")
      expect(r.lines).toEqual([
        `LOG_DIR: ${dir}`,
        `STATUS: ${dir}/status.json`,
        "QUESTION: What is 2+2?",
        "[Coordination in progress - monitor status.json for real-time updates]",
        `FAILED: error: ${WHY}`,
      ])
      expect(r.stderr).toBe(`massgen: run error: ${WHY}\n`)

      const events = readEvents(dir)
      expect(events.map((e) => e.type)).toEqual(["run_started", "tool_start_failed", "run_finished"])
      expect(events[1]).toMatchObject({ kind: "mcp_server", name: "db", message: WHY })
      expect(events[2]).toMatchObject({ reason: "error", winner: null, message: WHY })
      const status = JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))
      expect(status.error).toEqual({ reason: "error", message: WHY })

      const shown = await runCli("source", ["status", dir], { cwd, env: ENV })
      expect(shown.exitCode).toBe(0)
      expect(shown.lines[0]).toMatch(/: failed \(initial_answer, 0%\)$/)
      expect(shown.lines[1]).toBe(`Failed: error: ${WHY}`)

      const viewer = await runCli("source", ["viewer", dir], { cwd, env: ENV })
      expect(viewer.exitCode).toBe(0)
      expect(viewer.lines).toContain(`Tools did not start: ${WHY}`)

      const replay = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV })
      expect(replay.exitCode).toBe(0)
      expect(replay.lines.at(-1)).toBe("SAME: every event matches the recorded run")

      const before = fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
      const resumed = await runCli("source", ["resume", dir], { cwd, env: ENV })
      expect(resumed.exitCode).toBe(2)
      expect(resumed.lines).toEqual([
        `The run in ${dir} failed before its first model call: ${WHY}; nothing to resume: start a new run once it starts (massgen doctor --config FILE tries it).`,
      ])
      expect(fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")).toBe(before)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a server whose command does not exist, and a command tool whose program is not executable, are named the same way",
    async () => {
      const cwd = sandbox()
      const missing = nodePath.join(cwd, "mcp-server-nothere")
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, withServer({ command: missing })), "Q?"], {
        cwd,
        env: ENV,
      })
      expect(r.exitCode).toBe(2)
      // How it ended depends on the moment (its exit, or the handshake's write to a pipe it closed); its stderr says why either way.
      expect(r.lines.at(-1)).toStartWith("FAILED: error: MCP server db did not start: ")
      expect(r.lines.at(-1)).toEndWith(`its stderr ends: failed to execute ${missing}: No such file or directory`)
      expect(readEvents(lineValue(r, "LOG_DIR"))[1]).toMatchObject({ type: "tool_start_failed", kind: "mcp_server", name: "db" })

      const script = nodePath.join(cwd, "count.sh")
      fs.writeFileSync(script, "#!/bin/sh\nwc -c\n", { mode: 0o644 })
      const tools = {
        agents: [{ id: "a", backend: { type: "scripted", answer: "4", custom_tools: [{ name: "count", command: [script] }] } }],
      }
      const t = await runCli("source", ["--automation", "--config", writeConfig(cwd, tools, "tools.yaml"), "Q?"], { cwd, env: ENV })
      expect(t.exitCode).toBe(2)
      const why = `command tool count of agent a cannot start: ${script} is not executable`
      expect(t.lines.at(-1)).toBe(`FAILED: error: ${why}`)
      expect(readEvents(lineValue(t, "LOG_DIR"))[1]).toMatchObject({
        type: "tool_start_failed",
        kind: "command_tool",
        name: "a/count",
        message: why,
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a stopped run whose server no longer starts: resume exits 1 naming it, and appends nothing",
    async () => {
      const cwd = sandbox()
      // The server's mode comes from the environment of each process: it serves the run, then fails the resume's start.
      const config = writeConfig(cwd, withServer(faultServer("serve", { env: { FAULT_MODE: "${MODE}" } })))
      const r = await runCli("source", ["--automation", "--config", config, "Q?"], { cwd, env: { ...ENV, MODE: "serve" } })
      expect(r.exitCode).toBe(0)
      const dir = lineValue(r, "LOG_DIR")
      // Stopped right after its start, as a kill -9 would leave it.
      const file = nodePath.join(dir, "events.jsonl")
      const stopped = `${fs.readFileSync(file, "utf8").split("\n")[0]}\n`
      fs.writeFileSync(file, stopped)
      const resumed = await runCli("source", ["resume", dir], { cwd, env: { ...ENV, MODE: "fails-to-start" } })
      expect({ code: resumed.exitCode, stderr: resumed.stderr }).toEqual({ code: 1, stderr: `massgen: ${WHY}\n` })
      expect(fs.readFileSync(file, "utf8")).toBe(stopped)
    },
    TEST_TIMEOUT_MS,
  )
})
