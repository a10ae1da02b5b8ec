/**
 * MCP servers in a run, end to end with the compiled binary: a server that does
 * not start fails the run (recorded, exit 2) before any call; the servers stop when the
 * run ends, on a signal, and when massgen is killed with SIGKILL; `--validate`
 * checks entries without starting them or reading their variables.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, ensureBinary, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { faultServer, isGone, startsOf, waitForRunStart, waitForStarts, waitUntilGone } from "./support/mcp.ts"

beforeAll(ensureBinary, 120_000)
afterAll(cleanupSandboxes)

const TEST_TIMEOUT_MS = 90_000

const team = (backendA: Record<string, unknown>, backendB: Record<string, unknown> = { answer: "B." }) => ({
  agents: [
    { id: "agent_a", backend: { type: "scripted", ...backendA } },
    { id: "agent_b", backend: { type: "scripted", ...backendB } },
  ],
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
})

const logDirOf = (cwd: string): string | null => {
  const base = nodePath.join(cwd, ".massgen", "massgen_logs")
  const runs = fs.existsSync(base) ? fs.readdirSync(base) : []
  return runs.length === 0 ? null : nodePath.join(base, runs[0]!)
}

describe.concurrent("MCP servers in a run", () => {
  test(
    "a server that does not start: a failed run before any call, naming it with its exit and stderr; the other server is stopped",
    async () => {
      const cwd = sandbox()
      const starts = nodePath.join(cwd, "starts")
      const config = writeConfig(
        cwd,
        team(
          { answer: "A.", mcp_servers: [{ name: "db", ...faultServer("fails-to-start") }] },
          { answer: "B.", mcp_servers: { good: faultServer("serve", { env: { STARTS_FILE: starts } }) } },
        ),
      )
      const result = await runCli("binary", ["--automation", "--config", config, "Anything?"], { cwd })
      const why =
        "MCP server db did not start: exited with code 1 before its handshake; its stderr ends: fault server: loading settings | fault server: cannot open the database"
      expect(result.exitCode).toBe(2)
      expect(result.stderr).toBe(`massgen: run error: ${why}\n`)
      expect(result.lines.at(-1)).toBe(`FAILED: error: ${why}`)
      const events = fs.readFileSync(nodePath.join(logDirOf(cwd)!, "events.jsonl"), "utf8")
      expect(events).toContain('"type":"tool_start_failed"')
      expect(events).not.toContain('"type":"call_start"')
      for (const pid of await waitForStarts(starts)) await waitUntilGone(pid)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a completed run whose agents never call a tool starts its servers and stops them at its end",
    async () => {
      const cwd = sandbox()
      const starts = nodePath.join(cwd, "starts")
      const config = writeConfig(
        cwd,
        team({ answer: "A.", mcp_servers: [{ name: "tools", ...faultServer("serve", { env: { STARTS_FILE: starts } }) }] }),
      )
      const result = await runCli("binary", ["--automation", "--config", config, "Anything?"], { cwd })
      expect(result.exitCode).toBe(0)
      const pids = await waitForStarts(starts)
      expect(pids).toHaveLength(1)
      expect(isGone(pids[0]!)).toBe(true)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "SIGTERM stops the run (exit 4) and its servers, even one that outlives the end of its stdin",
    async () => {
      const cwd = sandbox()
      const starts = nodePath.join(cwd, "starts")
      const server = faultServer("serve", { env: { STARTS_FILE: starts, KEEP_ALIVE: "1" } })
      const config = writeConfig(cwd, team({ hang: true, mcp_servers: [{ name: "tools", ...server }] }, { hang: true }))
      const run = await startCli("binary", ["--automation", "--config", config, "Anything?"], { cwd })
      const [pid] = await waitForStarts(starts)
      run.proc.kill("SIGTERM")
      const result = await run.done
      expect(result.exitCode).toBe(4)
      expect(isGone(pid!)).toBe(true)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "no orphan: after a SIGKILL of massgen, its MCP server process is gone, even one that outlives the end of its stdin",
    async () => {
      const cwd = sandbox()
      const starts = nodePath.join(cwd, "starts")
      const server = faultServer("serve", { env: { STARTS_FILE: starts, KEEP_ALIVE: "1" } })
      const config = writeConfig(cwd, team({ hang: true, mcp_servers: [{ name: "tools", ...server }] }, { hang: true }))
      const run = await startCli("binary", ["--automation", "--config", config, "Anything?"], { cwd })
      // Once it has answered the handshake: a server killed by a write to a closed pipe would prove nothing.
      await waitForRunStart(await run.waitForLine("LOG_DIR: "))
      const [pid] = startsOf(starts)
      expect(isGone(pid!)).toBe(false)
      run.proc.kill("SIGKILL")
      await run.done
      await waitUntilGone(pid!)
    },
    TEST_TIMEOUT_MS,
  )
})

describe.concurrent("an agent that calls an MCP tool", () => {
  const everything = {
    name: "everything",
    command: process.execPath,
    args: [nodePath.join(import.meta.dir, "..", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"],
  }

  test(
    "the reference server's echo and get-sum run in a round, their results are events, and replay --check runs no tool",
    async () => {
      const cwd = sandbox()
      const script = [
        { tool: "mcp__everything__echo", args: { message: "hello from the council" } },
        { tool: "mcp__everything__get-sum", args: { a: 2, b: 2 } },
      ]
      const config = writeConfig(
        cwd,
        team({ answer: "A: four.", vote: "agent1", script, mcp_servers: [everything] }, { answer: "B: 4.", vote: "agent1" }),
      )
      const result = await runCli("binary", ["--automation", "--config", config, "What is 2+2?"], { cwd })
      expect(result.exitCode).toBe(0)
      const logDir = /^LOG_DIR: (.*)$/m.exec(result.stdout)![1]!
      const events = fs
        .readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
      const finished = events.filter((e) => e.type === "tool_call_finished")
      expect(finished.map((e) => [e.tool, e.server, e.ok, e.result])).toEqual([
        ["mcp__everything__echo", "everything", true, "Echo: hello from the council"],
        ["mcp__everything__get-sum", "everything", true, expect.stringContaining("The sum of 2 and 2 is 4")],
      ])
      const status = JSON.parse(fs.readFileSync(nodePath.join(logDir, "status.json"), "utf8"))
      expect(status.agents.agent_a.tool_calls).toMatchObject({ total: 2, errors: 0 })
      // Replay offers the same tools from the recorded requests and feeds the recorded results: no server is started.
      const replay = await runCli("binary", ["replay", "--check", logDir], { cwd, env: { ...process.env, PATH: "/nonexistent" } })
      expect({ code: replay.exitCode, out: replay.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
    },
    TEST_TIMEOUT_MS,
  )
})

describe.concurrent("--validate and MCP entries", () => {
  test(
    "entries are checked without their variables; a bad entry is named",
    async () => {
      const cwd = sandbox()
      const good = writeConfig(
        cwd,
        team({
          answer: "A.",
          mcp_servers: [{ name: "gh", command: "npx", args: ["-y", "server"], env: { TOKEN: "${UNSET_TOKEN_FOR_TEST}" } }],
        }),
        "good.yaml",
      )
      const bad = writeConfig(
        cwd,
        team({ answer: "A.", mcp_servers: { web: { type: "streamable-http" }, "bad name": { command: "x" } } }),
        "bad.yaml",
      )
      const [valid, invalid] = await Promise.all([
        runCli("binary", ["--validate", good], { cwd }),
        runCli("binary", ["--validate", bad], { cwd }),
      ])
      expect(valid.stdout).toBe("valid\n")
      expect(valid.exitCode).toBe(0)
      expect(invalid.exitCode).toBe(1)
      expect(invalid.stdout).toContain(`config ${bad}: agents[0].backend.mcp_servers`)
    },
    TEST_TIMEOUT_MS,
  )
})
