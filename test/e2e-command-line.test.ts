/**
 * `execute_command` end to end, from source: a scripted agent with
 * `enable_mcp_command_line: true` runs commands in the sandbox during a run;
 * they run in the run directory (its workspace until workspaces exist), write
 * nothing outside it, see no API key of massgen's environment, and a blocked
 * one is refused, each recorded as a tool call; a later run's command reads
 * neither the working directory's `.env` nor the earlier run. A mode that cannot run here
 * (no `docker`, no `bwrap` on the PATH) fails the run at start, before any call:
 * `tool_start_failed` with the reason, then `FAILED: error: ...`, exit 2.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { ENV, expectExit, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const SECRET = "sk-e2e-command-line-secret"

const doc = (backend: Record<string, unknown>, script: ReadonlyArray<unknown> = []) => ({
  agents: [
    {
      id: "worker",
      backend: {
        type: "scripted",
        script: [...script, { new_answer: "ran it" }],
        vote: "agent1",
        final: "ran it",
        enable_mcp_command_line: true,
        ...backend,
      },
    },
  ],
})

describe("execute_command in a run", () => {
  test("sandboxed commands run in the run directory, write nothing outside it, see no key; a blocked one is refused", async () => {
    const cwd = sandbox()
    const config = writeConfig(
      cwd,
      doc({ command_line_execution_mode: "sandbox", command_line_blocked_commands: ["curl"] }, [
        {
          tool: "execute_command",
          args: { command: `env > env.txt; echo made > made.txt; echo x > ../escape.txt; echo x > ${cwd}/escape.txt; echo done` },
        },
        { tool: "execute_command", args: { command: "curl http://example.com" } },
      ]),
    )
    const r = await runCli("source", ["--automation", "--config", config, "Run it."], { cwd, env: { ...ENV, OPENAI_API_KEY: SECRET } })
    expectExit(r, 0)
    const dir = lineValue(r, "LOG_DIR")
    const finished = readEvents(dir).filter((e) => e.type === "tool_call_finished")
    expect(finished.map((e) => [e.tool, e.ok])).toEqual([
      ["execute_command", true],
      ["execute_command", false],
    ])
    expect(JSON.parse(finished[0].result)).toMatchObject({ success: true, stdout: "done\n", work_dir: "." })
    expect(finished[1].result).toBe('error: refused: the command matches command_line_blocked_commands pattern "curl"')
    expect(fs.readFileSync(nodePath.join(dir, "made.txt"), "utf8")).toBe("made\n")
    const env = fs.readFileSync(nodePath.join(dir, "env.txt"), "utf8")
    expect(env).toContain("PATH=")
    expect(env).not.toContain(SECRET)
    expect(env).not.toContain("OPENAI_API_KEY")
    // The run's /tmp is the sandbox's own: what it wrote beside the run directory is gone with it.
    expect(fs.existsSync(nodePath.join(nodePath.dirname(dir), "escape.txt"))).toBe(false)
    expect(fs.existsSync(nodePath.join(cwd, "escape.txt"))).toBe(false)
    expect(fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")).not.toContain(SECRET)
  }, 60_000)

  test("with a workspace (cwd), sandboxed commands run in it, see the context paths read-only and no other file of the run; what they write is in the answer's snapshot", async () => {
    const cwd = sandbox()
    const ctx = nodePath.join(cwd, "project")
    fs.mkdirSync(ctx)
    fs.writeFileSync(nodePath.join(ctx, "README"), "the user's\n")
    const config = writeConfig(cwd, {
      ...doc({ cwd: "workspace", command_line_execution_mode: "sandbox" }, [
        {
          tool: "execute_command",
          args: { command: `pwd; ls ..; ls ../..; cat ${ctx}/README; echo made > made.txt; echo x > ${ctx}/planted.txt || echo refused` },
        },
      ]),
      orchestrator: { context_paths: [{ path: ctx, permission: "write" }] },
    })
    const r = await runCli("source", ["--automation", "--config", config, "Run it."], { cwd, env: ENV })
    expectExit(r, 0)
    const dir = lineValue(r, "LOG_DIR")
    const finished = readEvents(dir).filter((e) => e.type === "tool_call_finished")
    const out = JSON.parse(finished[0].result) as { stdout: string }
    expect(out.stdout).toBe(`${fs.realpathSync(dir)}/workspaces/agent1\nagent1\nworkspaces\nthe user's\nrefused\n`)
    expect(fs.readFileSync(nodePath.join(dir, "workspaces", "agent1", "made.txt"), "utf8")).toBe("made\n")
    expect(fs.readFileSync(nodePath.join(dir, "snapshot_storage", "agent1.1", "made.txt"), "utf8")).toBe("made\n")
    expect(fs.existsSync(nodePath.join(ctx, "planted.txt"))).toBe(false)
  }, 60_000)

  test("a sandboxed command of the second run reads neither the working directory's .env, nor the first run, nor massgen's other variables", async () => {
    const cwd = sandbox()
    fs.writeFileSync(nodePath.join(cwd, ".env"), "OPENAI_API_KEY=sk-dotenv-canary-456\n")
    const logRoot = nodePath.join(cwd, ".massgen", "massgen_logs")
    const env = { ...ENV, DATABASE_URL: "postgres://app:dbpass-canary@db/x", GH_PAT: "ghp_canary" }
    const first = await runCli(
      "source",
      ["--automation", "--config", writeConfig(cwd, doc({ command_line_execution_mode: "sandbox" })), "first run canary-q1"],
      { cwd, env },
    )
    expectExit(first, 0)
    const probe = `cat ${cwd}/.env; grep -rh question ${logRoot}; ls -A ${logRoot} ${cwd}; env; echo probed`
    const config = writeConfig(
      cwd,
      doc({ cwd: "workspace", command_line_execution_mode: "sandbox" }, [{ tool: "execute_command", args: { command: probe } }]),
    )
    const second = await runCli("source", ["--automation", "--config", config, "second run"], { cwd, env })
    expectExit(second, 0)
    const dir = lineValue(second, "LOG_DIR")
    const out = JSON.parse(readEvents(dir).filter((e) => e.type === "tool_call_finished")[0].result) as { stdout: string; stderr: string }
    expect(out.stdout).toContain("probed\n")
    for (const canary of ["sk-dotenv-canary", "canary-q1", "dbpass-canary", "ghp_canary", "DATABASE_URL", "GH_PAT"])
      expect(out.stdout).not.toContain(canary)
    // The log root and the working directory show only the way to this run's workspace.
    expect(out.stdout).toContain(`${fs.realpathSync(cwd)}:\n.massgen\n\n${fs.realpathSync(logRoot)}:\n${nodePath.basename(dir)}\n`)
  }, 60_000)

  test("docker mode without the docker CLI fails the run at start, before any call, with the reason on record", async () => {
    const cwd = sandbox()
    const config = writeConfig(cwd, doc({ command_line_execution_mode: "docker" }))
    const r = await runCli("source", ["--automation", "--config", config, "Run it."], { cwd, env: { ...ENV, PATH: cwd } })
    expectExit(r, 2)
    const why =
      "agent worker: command_line_execution_mode docker: the docker CLI is not on the PATH: install Docker, or use command_line_execution_mode sandbox or local"
    expect(r.stderr).toContain(`massgen: run error: ${why}\n`)
    expect(r.lines.at(-1)).toBe(`FAILED: error: ${why}`)
    expect(r.lines.some((l) => l.startsWith("WINNER:"))).toBe(false)
    const events = readEvents(lineValue(r, "LOG_DIR"))
    expect(events.map((e) => e.type)).toEqual(["run_started", "tool_start_failed", "run_finished"])
    expect(events[1]).toMatchObject({ kind: "execute_command", name: "worker", message: why })
  }, 60_000)

  test("sandbox mode without bwrap fails the run at start with the reason", async () => {
    const cwd = sandbox()
    const config = writeConfig(cwd, doc({ command_line_execution_mode: "sandbox" }))
    const r = await runCli("source", ["--automation", "--config", config, "Run it."], { cwd, env: { ...ENV, PATH: cwd } })
    expectExit(r, 2)
    expect(r.stderr).toContain("massgen: run error: agent worker: command_line_execution_mode sandbox: bwrap is not on the PATH")
  }, 60_000)
})

describe("examples/commands.yaml", () => {
  test("runs offline: the sum is computed in the sandbox, the write to /etc fails, the run completes", async () => {
    const cwd = sandbox()
    const r = await runCli(
      "source",
      ["--automation", "--config", nodePath.join(import.meta.dir, "..", "examples", "commands.yaml"), "What is 3 + 4 + 5?"],
      { cwd, env: ENV },
    )
    expectExit(r, 0)
    expect(r.lines).toContain("WINNER: calculator")
    const dir = lineValue(r, "LOG_DIR")
    const results = readEvents(dir)
      .filter((e) => e.type === "tool_call_finished")
      .map((e) => JSON.parse(e.result))
    expect(results.map((x) => [x.success, x.stdout])).toEqual([
      [true, "12\n"],
      [false, ""],
    ])
    expect(results[1].stderr).toContain("Read-only file system")
    expect(fs.readFileSync(nodePath.join(dir, "nums.txt"), "utf8")).toBe("3\n4\n5\n")
    expect(fs.existsSync("/etc/planted.txt")).toBe(false)
  }, 60_000)
})
