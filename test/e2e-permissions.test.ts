/**
 * The permission engine end to end, from source, as a user runs it: a model
 * on the loopback fake LLM calls `execute_command` with a command a deny rule
 * forbids (written to slip past it, through `sh -c`): it does not run (its
 * marker file is never made), the ledger records the decision before the
 * call's end, and the model's next request holds the denial. An `ask` in
 * `approval_mode: file` writes its request in the log directory and waits:
 * the test answers when it sees the request file, and the command runs; with
 * no answer it is denied at the timeout. A run killed while an allowed
 * command runs is resumed without asking again, and `replay --check` asks
 * nobody.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { type FakeRequest, loneCouncilReply, NO_PROXY_ENV, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { scriptedCommandsDoc } from "./support/permissions.ts"
import { waitFor } from "./support/poll.ts"
import { killAllWith, markerSeconds } from "./support/processes.ts"
import { ENV, eventsPath, expectExit, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)
const ledgerOf = (dir: string) => readEvents(dir).filter((e) => e.type.startsWith("permission_") || e.type.startsWith("tool_call_"))

/** The one request file of a run, once it is there. */
const requestOf = (dir: string) =>
  waitFor("a request file", () => {
    const at = nodePath.join(dir, "permissions", "requests")
    const names = fs.existsSync(at) ? fs.readdirSync(at).filter((n) => n.endsWith(".json")) : []
    return names.length === 1 ? JSON.parse(fs.readFileSync(nodePath.join(at, names[0]!), "utf8")) : undefined
  })

const answer = (dir: string, id: string, body: unknown) => {
  const at = nodePath.join(dir, "permissions", "responses")
  fs.writeFileSync(nodePath.join(at, `${id}.tmp`), JSON.stringify(body))
  fs.renameSync(nodePath.join(at, `${id}.tmp`), nodePath.join(at, `${id}.json`))
}

const workspaceOf = (dir: string) => nodePath.join(dir, "workspaces", "agent1")

describe("a deny rule, with a model on the wire", () => {
  test("a denied execute_command does not run, the ledger says by which rule, and the model is told", async () => {
    const cwd = sandbox()
    const toolMessages = (req: FakeRequest) =>
      ((req.body?.messages ?? []) as Array<{ role?: string; content?: unknown }>).filter((m) => m.role === "tool")
    const respond = (req: FakeRequest) => {
      if (offeredTools(req).includes("new_answer") && !promptText(req).includes("<agent1.1>") && toolMessages(req).length === 0)
        return reply({ toolCalls: [{ name: "execute_command", args: { command: `sh -c "rm -f x; touch marker.txt"` } }] })
      return loneCouncilReply(req)
    }
    const fake = await startFakeLlm({ respond })
    try {
      const doc = {
        agents: [
          {
            id: "coder",
            backend: {
              type: "chatcompletion",
              model: "m",
              base_url: fake.openAiBaseUrl,
              api_key: "sk-x",
              cwd: "workspace",
              enable_mcp_command_line: true,
              command_line_execution_mode: "local",
              permissions: { rules: { deny: ["command(rm *)"], allow: ["command(*)"] } },
            },
          },
        ],
        orchestrator: { skip_final_presentation: true },
      }
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Clean up."], {
        cwd,
        env: { ...ENV, ...NO_PROXY_ENV },
        timeoutMs: 110_000,
      })
      expectExit(r, 0)
      const dir = lineValue(r, "LOG_DIR")
      expect(fs.existsSync(nodePath.join(workspaceOf(dir), "marker.txt"))).toBe(false)
      const ledger = ledgerOf(dir)
      expect(ledger.map((e) => e.type)).toEqual(["tool_call_started", "permission_decided", "tool_call_finished"])
      expect(ledger[1]).toMatchObject({
        tool: "execute_command",
        action: "command",
        target: 'sh -c "rm -f x; touch marker.txt"',
        decision: "deny",
        by: "rule",
        rule: "deny: command(rm *)",
      })
      const denial = "error: refused: permission denied: the rule deny: command(rm *) matches"
      expect(ledger[2]).toMatchObject({ ok: false, result: denial })
      // The model's next call carries the denial as the tool's result.
      const told = fake.requests.flatMap(toolMessages).map((m) => m.content)
      expect(told).toEqual([denial])
    } finally {
      fake.stop()
    }
  }, 120_000)
})

/** A run whose one command, `touch marker.txt`, is asked about through a request file; once the request is there. */
const askedTouch = async () => {
  const cwd = sandbox()
  const doc = scriptedCommandsDoc(["touch marker.txt"], { rules: { ask: ["command(touch *)"] }, approval_mode: "file" })
  const run = await startCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Make it."], {
    cwd,
    env: ENV,
    timeoutMs: 110_000,
  })
  const dir = (await run.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
  return { run, dir, request: await requestOf(dir) }
}

describe("approval_mode: file, answered or not", () => {
  test("an ask writes its request in the log directory; the answer allows it, and the command runs", async () => {
    const { run, dir, request } = await askedTouch()
    expect(request).toMatchObject({
      agent: "worker",
      round: 1,
      tool: "execute_command",
      action: "command",
      target: "touch marker.txt",
      rule: "ask: command(touch *)",
      timeout_seconds: 300,
      respond_to: `permissions/responses/${request.id}.json`,
    })
    // The question is in the log before it is asked, and the command has not run.
    expect(ofType(readEvents(dir), "permission_asked")).toEqual([expect.objectContaining({ via: "response_file", request: request.id })])
    expect(fs.existsSync(nodePath.join(workspaceOf(dir), "marker.txt"))).toBe(false)
    answer(dir, request.id, { approved: true, feedback: "go ahead" })
    const r = await run.done
    expectExit(r, 0)
    expect(fs.existsSync(nodePath.join(workspaceOf(dir), "marker.txt"))).toBe(true)
    const decided = ofType(readEvents(dir), "permission_decided")
    expect(decided).toEqual([
      expect.objectContaining({
        decision: "allow",
        by: "response_file",
        reason: `permissions/responses/${request.id}.json allows it: go ahead`,
      }),
    ])
  }, 120_000)

  test("a denying answer is a denial the model is told, with its feedback", async () => {
    const { run, dir, request } = await askedTouch()
    answer(dir, request.id, { decision: "deny", reason: "not today" })
    expectExit(await run.done, 0)
    expect(fs.existsSync(nodePath.join(workspaceOf(dir), "marker.txt"))).toBe(false)
    expect(ofType(readEvents(dir), "tool_call_finished")[0].result).toBe(
      `error: refused: permission denied: permissions/responses/${request.id}.json denies it: not today`,
    )
  }, 120_000)

  test("no answer within approval_timeout_seconds: denied by the timeout (fail closed)", async () => {
    const cwd = sandbox()
    const doc = scriptedCommandsDoc(["touch marker.txt"], {
      rules: { ask: ["command(touch *)"] },
      approval_mode: "file",
      approval_timeout_seconds: 1,
    })
    const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Make it."], { cwd, env: ENV, timeoutMs: 110_000 })
    expectExit(r, 0)
    const dir = lineValue(r, "LOG_DIR")
    expect(fs.existsSync(nodePath.join(workspaceOf(dir), "marker.txt"))).toBe(false)
    const [decided] = ofType(readEvents(dir), "permission_decided")
    expect(decided).toMatchObject({ decision: "deny", by: "timeout" })
    expect(decided.reason).toMatch(
      /^no answer to permissions\/requests\/worker-r1-[0-9a-f]{16}\.json within 1s \(approval_timeout_seconds\): denied$/,
    )
  }, 120_000)
})

describe("resume and replay ask nobody again", () => {
  test("killed while an allowed command runs: resume runs it again without a new ask; replay --check asks nobody", async () => {
    const cwd = sandbox()
    const held = markerSeconds()
    // The first run of the command marks it and holds; the second (after the resume) marks it again and ends.
    const command = `if [ -e mark ]; then echo again >> mark; else echo first > mark; exec sleep ${held}; fi`
    const doc = scriptedCommandsDoc([command], { rules: { ask: ["command(*mark*)"] }, approval_mode: "file", approval_timeout_seconds: 2 })
    const config = writeConfig(cwd, doc)
    try {
      const first = await startCli("source", ["--automation", "--config", config, "Mark it."], { cwd, env: ENV, timeoutMs: 110_000 })
      const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      const request = await requestOf(dir)
      answer(dir, request.id, { approved: true })
      await waitFor("the command to run", () => (fs.existsSync(nodePath.join(workspaceOf(dir), "mark")) ? true : undefined))
      first.proc.kill("SIGKILL")
      expect((await first.done).signal).toBe("SIGKILL")
      killAllWith(held)
      // Without the answer a new ask would time out and deny: the recorded decision is what lets it run.
      fs.rmSync(nodePath.join(dir, "permissions", "responses", `${request.id}.json`))
      const r = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV, timeoutMs: 110_000 })
      expectExit(r, 0)
      expect(fs.readFileSync(nodePath.join(workspaceOf(dir), "mark"), "utf8")).toBe("first\nagain\n")
      const events = readEvents(dir)
      expect(ofType(events, "permission_asked")).toHaveLength(1)
      expect(ofType(events, "permission_decided")).toEqual([expect.objectContaining({ decision: "allow", by: "response_file" })])
      expect(ofType(events, "tool_call_finished")).toEqual([expect.objectContaining({ ok: true })])
      expect(fs.readdirSync(nodePath.join(dir, "permissions", "requests"))).toEqual([`${request.id}.json`])
      const replayed = await runCli("source", ["replay", "--check", dir], { cwd, env: ENV, timeoutMs: 110_000 })
      expectExit(replayed, 0)
      expect(replayed.stdout).toContain("SAME: every event matches the recorded run")
      expect(fs.existsSync(nodePath.join(lineValue(replayed, "REPLAY_DIR"), "permissions"))).toBe(false)
      expect(readEvents(dir)).toHaveLength(events.length)
      expect(fs.existsSync(eventsPath(dir))).toBe(true)
    } finally {
      killAllWith(held)
    }
  }, 180_000)
})
