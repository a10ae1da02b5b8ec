/**
 * Issue 28 end to end: a `claude_code` agent is the real Claude Code CLI, from its npm package.
 *
 * `massgen --automation` (from source) runs one `claude_code` agent and one
 * scripted agent; the CLI is the SDK's own native package, pointed at the
 * loopback fake of the Messages API (`ANTHROPIC_BASE_URL`), offline
 * (`CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`, a HOME of its own, no
 * auto-update). The fake plays a coding model: it writes `notes.txt` with the
 * CLI's Write tool, then calls `mcp__massgen__new_answer` (massgen's MCP
 * server), then ends its turn; in the vote round it calls `mcp__massgen__vote`;
 * with no massgen tool offered it is the presentation. The run completes, the
 * CLI's Write is a `hosted_tool_used` event, its file is in the agent's
 * workspace, its session id is in the `call_end`, no file holds the key, and
 * `replay --check` is SAME. Killed with SIGKILL mid-call, the CLI dies with
 * massgen and the run resumes: the cut-off call is made again in a new session
 * (the file it wrote stayed) and only the finished call's tool use is recorded.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import {
  type Behaviour,
  type FakeLlm,
  type FakeRequest,
  hang,
  lastToolResult,
  offeredTools,
  promptText,
  reply,
  startFakeLlm,
} from "./support/fake-llm.ts"
import { eventsPath, expectExit, QUESTION, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const KEY = "sk-ant-SECRET-cli-1"
const FINAL = "Final: 2+2 is 4."

const lastToolName = (req: FakeRequest): string | null => lastToolResult(req)?.name ?? null

/** Claude Code joins messages of one id, and tool uses are matched by id: each reply gets its own. */
const tool = (req: FakeRequest, name: string, args: object): Behaviour =>
  reply({ messageId: `msg_${req.n}`, toolCalls: [{ id: `toolu_${req.n}`, name, args }] })
const text = (req: FakeRequest, t: string): Behaviour => reply({ messageId: `msg_${req.n}`, text: t })

/** The coding model: Write, then new_answer; a vote once an answer is shown; the final text when no massgen tool is offered. */
const codingModel = (req: FakeRequest): Behaviour => {
  const last = lastToolName(req)
  if (last?.startsWith("mcp__massgen__")) return text(req, "Done.")
  if (!offeredTools(req).includes("mcp__massgen__new_answer")) return text(req, FINAL)
  if (last === "Write") return tool(req, "mcp__massgen__new_answer", { content: "It is 4 (see notes.txt)." })
  if (!promptText(req).includes("<agent1.1>")) return tool(req, "Write", { file_path: "notes.txt", content: "2+2=4\n" })
  return tool(req, "mcp__massgen__vote", { agent_id: "agent1", reason: "notes.txt shows it" })
}

const setup = (fake: FakeLlm) => {
  const cwd = sandbox()
  fs.mkdirSync(nodePath.join(cwd, "home"))
  const config = writeConfig(cwd, {
    agents: [
      { id: "coder", backend: { type: "claude_code", model: "claude-sonnet-4-5", cwd: "ws", permission_mode: "acceptEdits" } },
      { id: "bot", backend: { type: "scripted", answer: "four", vote: "agent1" } },
    ],
    timeout_settings: { orchestrator_timeout_seconds: 120, agent_timeout_seconds: 90 },
  })
  const env = {
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_API_KEY: KEY,
    HOME: nodePath.join(cwd, "home"),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    OPENAI_API_KEY: undefined,
    MASSGEN_LOG_BASE_DIR: undefined,
  }
  return { cwd, config, env }
}

const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)

/** Every file under `dir`, recursively. */
const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const path = nodePath.join(d.parentPath, d.name)
    return d.isDirectory() ? filesUnder(path) : d.isFile() ? [path] : []
  })

/** What every completed run of this config shows, whatever happened on the way. */
const expectCompleted = async (dir: string, cwd: string, env: Record<string, string | undefined>, writeDetail = "notes.txt → ok") => {
  const events = readEvents(dir)
  expect(ofType(events, "run_finished")).toEqual([expect.objectContaining({ reason: "completed", winner: "coder" })])
  // The CLI's Write, recorded once, from the call that finished.
  const uses = ofType(events, "hosted_tool_used")
  expect(uses.map((e) => [e.agent, e.tool, e.detail])).toEqual([["coder", "Write", writeDetail]])
  const answerCall = ofType(events, "call_end").find((e) => e.call === uses[0].call)
  expect(answerCall.reply.tool_calls.map((c: any) => c.name)).toEqual(["new_answer"])
  expect(answerCall.reply.parts).toEqual([{ type: "claude_code_session", session_id: expect.stringMatching(/^[0-9a-f-]{36}$/) }])
  expect(answerCall.input_tokens).toBeGreaterThan(0)
  expect(ofType(events, "answer_submitted").map((e) => [e.agent, e.label])).toContainEqual(["coder", "agent1.1"])
  expect(fs.readFileSync(nodePath.join(dir, "final", "coder", "answer.txt"), "utf8")).toBe(FINAL)
  expect(fs.readFileSync(nodePath.join(dir, "final", "coder", "workspace", "notes.txt"), "utf8")).toBe("2+2=4\n")
  for (const file of filesUnder(dir)) expect({ file, key: fs.readFileSync(file, "utf8").includes(KEY) }).toEqual({ file, key: false })
  const check = await runCli("source", ["replay", dir, "--check"], { cwd, env })
  expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
}

describe("claude_code: the real CLI against the fake Messages API", () => {
  test("a run with a claude_code agent and a scripted one completes; the CLI's tool use is on record", async () => {
    const fake = await startFakeLlm({ respond: codingModel })
    try {
      const { cwd, config, env } = setup(fake)
      const r = await runCli("source", ["--automation", "--config", config, QUESTION], { cwd, env, timeoutMs: 120_000 })
      expectExit(r, 0)
      expect(r.lines).toContain("WINNER: coder")
      const dir = r.lines[0]!.slice("LOG_DIR: ".length)
      // Every request of the CLI reached the fake with the key, and with massgen's tools as MCP tools.
      expect(fake.requests.every((q) => q.path === "/v1/messages" && q.headers["x-api-key"] === KEY)).toBe(true)
      expect(fake.requests.some((q) => offeredTools(q).includes("mcp__massgen__vote"))).toBe(true)
      await expectCompleted(dir, cwd, env)
    } finally {
      fake.stop()
    }
  }, 180_000)

  test("killed with SIGKILL in the CLI's call, the run resumes: the call is made again, its tool use recorded once", async () => {
    const phase: { respond: (req: FakeRequest) => Behaviour } = {
      // The Write goes through; the reply after it is held back until the CLI goes away.
      respond: (req) => (lastToolName(req) === "Write" ? hang() : codingModel(req)),
    }
    const fake = await startFakeLlm({ respond: (req) => phase.respond(req) })
    try {
      const { cwd, config, env } = setup(fake)
      const first = await startCli("source", ["--automation", "--config", config, QUESTION], { cwd, env, timeoutMs: 120_000 })
      const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      const held = await fake.waitForRequest(2)
      expect(lastToolName(held)).toBe("Write")
      first.proc.kill("SIGKILL")
      expect((await first.done).signal).toBe("SIGKILL")
      // The CLI child does not outlive massgen: it drops the held request.
      await fake.waitForAbort(2)
      const beforeText = fs.readFileSync(eventsPath(dir), "utf8")
      const before = readEvents(dir)
      expect(ofType(before, "run_finished")).toEqual([])
      expect(ofType(before, "hosted_tool_used")).toEqual([])
      expect(ofType(before, "call_start").filter((e) => e.agent === "coder")).toHaveLength(1)

      phase.respond = codingModel
      const r = await runCli("source", ["resume", "--automation", dir], { cwd, env, timeoutMs: 120_000 })
      expectExit(r, 0)
      expect(fs.readFileSync(eventsPath(dir), "utf8").startsWith(beforeText)).toBe(true)
      // The cut-off call was made again from its request, in a new session: the CLI wrote notes.txt again.
      const writes = fake.requests.filter((q) => offeredTools(q).includes("mcp__massgen__new_answer") && lastToolName(q) === "Write")
      expect(writes.length).toBe(2)
      // The file the cut-off call wrote stayed in the workspace: the new session's CLI refuses to overwrite it unread.
      await expectCompleted(
        dir,
        cwd,
        env,
        "notes.txt → error: <tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
      )
    } finally {
      fake.stop()
    }
  }, 240_000)
})
