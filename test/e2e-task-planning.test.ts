/**
 * Task planning and planning mode end to end, through the CLI, with a loopback fake model (the real OpenAI SDK).
 *
 * `enable_agent_task_planning`: the model creates a plan, completes a task
 * and reads the plan back; massgen is killed (SIGKILL) while the model call
 * after the update hangs, and `massgen resume` finishes the run: each plan
 * change is recorded once (`task_plan_updated`), the plan read after the
 * resume is the one the log holds, `tasks/plan.json` (filesystem mode) holds
 * it too, and `replay --check` says SAME. `enable_planning_mode`: a command
 * tool and an MCP tool its server does not mark read-only, called in a round,
 * are refused (error results the model sees, recorded), a read-only MCP tool
 * runs, and the presenter's call of the command tool in the final presentation runs;
 * the planning instruction is in the rounds' system message, not the
 * presentation's.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { type FakeRequest, hang, NO_PROXY_ENV, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { everythingStdio } from "./support/mcp.ts"
import { waitFor } from "./support/poll.ts"
import { ENV, eventsPath, expectExit, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)
/** A tool call's whole result: in its event, or, when long, in `tool_log/<n>.json`. */
const resultOf = (dir: string, e: any): string =>
  e.result ?? JSON.parse(fs.readFileSync(nodePath.join(dir, "tool_log", `${e.tool_call}.json`), "utf8")).result
const toolMessages = (req: FakeRequest) => ((req.body?.messages ?? []) as Array<{ role?: string }>).filter((m) => m.role === "tool").length
const isRound = (req: FakeRequest) => offeredTools(req).includes("new_answer") || offeredTools(req).includes("vote")
const env = { ...ENV, ...NO_PROXY_ENV }

/** Every file named `name` below `dir`. */
const findFiles = (dir: string, name: string): Array<string> =>
  fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((p) => nodePath.basename(p) === name)
    .map((p) => nodePath.join(dir, p))

const PLAN = [
  { id: "research", description: "Find the facts", verification: "three sources" },
  { id: "write", description: "Write it up", depends_on: ["research"], verification: "one page" },
]

describe("task planning tools", () => {
  test("a plan made, updated and read across a kill -9: each change recorded once, the plan read back from the log, replay SAME", async () => {
    const cwd = sandbox()
    let hold = true
    const respond = (req: FakeRequest) => {
      if (!isRound(req)) return reply({ text: "Planned." })
      if (promptText(req).includes("<agent1.1>"))
        return reply({ toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: "ok" } }] })
      switch (toolMessages(req)) {
        case 0:
          return reply({ toolCalls: [{ name: "create_task_plan", args: { tasks: PLAN } }] })
        case 1:
          return reply({
            toolCalls: [{ name: "update_task_status", args: { task_id: "research", status: "completed", completion_notes: "done" } }],
          })
        case 2:
          return hold ? hang() : reply({ toolCalls: [{ name: "get_task_plan", args: {} }] })
        default:
          return reply({ toolCalls: [{ name: "new_answer", args: { content: "planned and researched" } }] })
      }
    }
    const fake = await startFakeLlm({ respond })
    try {
      const doc = {
        agents: [
          {
            id: "planner",
            backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl, api_key: "sk-x", cwd: "workspace" },
          },
        ],
        orchestrator: {
          skip_final_presentation: true,
          coordination: { enable_agent_task_planning: true, task_planning_filesystem_mode: true, max_tasks_per_plan: 5 },
        },
        timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90 },
      }
      const config = writeConfig(cwd, doc)
      const first = await startCli("source", ["--automation", "--config", config, "Plan it."], { cwd, env })
      const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      // The model call after the update is in flight (and hangs): both changes are recorded.
      await waitFor("the update recorded", () =>
        fs.existsSync(eventsPath(dir)) && ofType(readEvents(dir), "tool_call_finished").length === 2 && fake.requests.length >= 3
          ? true
          : undefined,
      )
      first.proc.kill("SIGKILL")
      expect((await first.done).signal).toBe("SIGKILL")
      const before = readEvents(dir)
      expect(ofType(before, "task_plan_updated").map((e) => e.tool)).toEqual(["create_task_plan", "update_task_status"])
      hold = false
      const r = await runCli("source", ["resume", "--automation", dir], { cwd, env, timeoutMs: 110_000 })
      expectExit(r, 0)
      const events = readEvents(dir)
      // No plan change twice; the plan read after the resume is the one the log holds.
      const updates = ofType(events, "task_plan_updated")
      expect(updates.map((e) => [e.tool, e.plan.tasks.map((t: any) => `${t.id}:${t.status}`)])).toEqual([
        ["create_task_plan", ["research:pending", "write:pending"]],
        ["update_task_status", ["research:completed", "write:pending"]],
      ])
      const finished = ofType(events, "tool_call_finished")
      expect(finished.map((e) => [e.tool, e.ok])).toEqual([
        ["create_task_plan", true],
        ["update_task_status", true],
        ["get_task_plan", true],
      ])
      const update = JSON.parse(resultOf(dir, finished[1]))
      expect(update).toMatchObject({
        success: true,
        operation: "update_task_status",
        newly_ready_tasks: [{ id: "write" }],
        verification_pending: true,
      })
      const read = JSON.parse(resultOf(dir, finished[2]))
      expect(read.summary).toEqual({
        total_tasks: 2,
        completed_tasks: 1,
        verified_tasks: 0,
        in_progress_tasks: 0,
        ready_tasks: 1,
        blocked_tasks: 0,
        awaiting_verification: 1,
      })
      expect(read.plan.tasks[0].metadata).toEqual({
        verification: "three sources",
        execution: { mode: "inline" },
        completion_notes: "done",
      })
      const [planFile] = findFiles(dir, "plan.json").filter((p) => p.includes(`${nodePath.sep}tasks${nodePath.sep}`))
      expect(JSON.parse(fs.readFileSync(planFile!, "utf8"))).toEqual(read.plan)
      expect(ofType(events, "run_finished")).toEqual([expect.objectContaining({ reason: "completed", winner: "planner" })])
      expect(JSON.stringify(fake.requests[0]!.body.messages[0])).toContain("Task planning: for work of several steps, first make a plan")
      const check = await runCli("source", ["replay", dir, "--check"], { cwd, env })
      expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
    } finally {
      fake.stop()
    }
  }, 150_000)
})

describe("planning mode", () => {
  test("a command tool and an MCP tool not read-only are refused in a round (error results, recorded), a read-only one runs; the presenter runs the command; the instruction is in rounds only", async () => {
    const cwd = sandbox()
    const respond = (req: FakeRequest) => {
      const calls = toolMessages(req)
      if (!isRound(req))
        return calls === 0 ? reply({ toolCalls: [{ name: "publish", args: { text: "final" } }] }) : reply({ text: "Published." })
      if (promptText(req).includes("<agent1.1>"))
        return reply({ toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: "ok" } }] })
      if (calls === 0)
        return reply({
          toolCalls: [
            { name: "publish", args: { text: "draft" } },
            { name: "mcp__everything__echo", args: { message: "hi" } },
            { name: "mcp__everything__toggle-simulated-logging", args: {} },
          ],
        })
      return reply({ toolCalls: [{ name: "new_answer", args: { content: "I would publish the text." } }] })
    }
    const fake = await startFakeLlm({ respond })
    try {
      const publish = {
        name: "publish",
        description: "Publishes a text",
        parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        command: ["sh", "-c", 'read -r args; printf "%s\\n" "$args" >> "$0/published"; echo published', cwd],
      }
      const doc = {
        agents: [
          {
            id: "writer",
            backend: {
              type: "chatcompletion",
              model: "m",
              base_url: fake.openAiBaseUrl,
              api_key: "sk-x",
              custom_tools: [publish],
              mcp_servers: [everythingStdio({ name: "everything" })],
            },
          },
        ],
        orchestrator: { coordination: { enable_planning_mode: true, planning_mode_instruction: "PLAN ONLY, DO NOT ACT." } },
        timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90 },
      }
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Publish it."], { cwd, env, timeoutMs: 110_000 })
      expectExit(r, 0)
      const dir = r.lines.find((l) => l.startsWith("LOG_DIR: "))!.slice("LOG_DIR: ".length)
      const finished = ofType(readEvents(dir), "tool_call_finished")
      // The calls of one reply run together: their order is the order they finished in.
      const round = finished.filter((e) => e.role === "round").sort((a, b) => a.tool.localeCompare(b.tool))
      expect(round.map((e) => [e.tool, e.ok, e.error])).toEqual([
        ["mcp__everything__echo", true, null],
        [
          "mcp__everything__toggle-simulated-logging",
          false,
          expect.stringContaining(
            "planning mode: mcp__everything__toggle-simulated-logging is not run during coordination (its MCP server does not mark it read-only)",
          ),
        ],
        ["publish", false, expect.stringContaining("refused: planning mode: publish is not run during coordination (it runs a command)")],
      ])
      expect(finished.filter((e) => e.role === "presentation").map((e) => [e.tool, e.ok])).toEqual([["publish", true]])
      // Only the presenter's call ran.
      expect(fs.readFileSync(nodePath.join(cwd, "published"), "utf8")).toBe('{"text":"final"}\n')
      const systemOf = (req: FakeRequest) => JSON.stringify((req.body?.messages ?? [])[0] ?? "")
      expect(systemOf(fake.requests.find(isRound)!)).toContain("PLAN ONLY, DO NOT ACT.")
      expect(systemOf(fake.requests.find((q) => !isRound(q))!)).not.toContain("PLAN ONLY")
      const check = await runCli("source", ["replay", dir, "--check"], { cwd, env })
      expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
    } finally {
      fake.stop()
    }
  }, 150_000)
})
