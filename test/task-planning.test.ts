/**
 * Task planning and planning mode, below the CLI: MassGen's plan rules (`domain/tools/planning/tools.ts`),
 * the plan folded from `task_plan_updated` (`domain/state`), the provider that records each change once
 * (`services/tools/planning-tools.ts`), and which tools planning mode refuses (`domain/tools/planning/mode.ts`).
 */
import { describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { planningOf } from "../src/domain/config/planning.ts"
import type { Event, TaskPlan } from "../src/domain/events/index.ts"
import { foldEvents, type State } from "../src/domain/state/index.ts"
import { planningModeBlock } from "../src/domain/tools/planning/mode.ts"
import { type PlanningCall, runPlanningTool } from "../src/domain/tools/planning/tools.ts"
import { hashText } from "../src/lib/sha256.ts"
import { combineProviders } from "../src/services/tools/agent-tools.ts"
import type { PermissionGate } from "../src/services/tools/permission-gate.ts"
import { withPlanningMode } from "../src/services/tools/planning-mode.ts"
import { makePlanningTools } from "../src/services/tools/planning-tools.ts"
import type { ToolContext, ToolProvider } from "../src/services/tools/tool-provider.ts"
import { makeToolRunner } from "../src/services/tools/tool-runner.ts"
import { at, roundStarted, runStarted } from "./support/given.ts"

const call = (seed = "c1", maxTasks = 10): PlanningCall => ({ planId: "agent1", seed, now: at(5), maxTasks })
const run = (name: string, args: Record<string, unknown>, plan: TaskPlan | null, c = call()) =>
  runPlanningTool(name, args, plan, c, hashText)
const TWO = [
  { id: "a", description: "first", verification: "it works" },
  { description: "second", depends_on: [0], verification: "it works too" },
]
const planOf = (...steps: ReadonlyArray<[string, Record<string, unknown>]>): TaskPlan | null =>
  steps.reduce<TaskPlan | null>((plan, [name, args], i) => run(name, args, plan, call(`c${i}`)).plan, null)

describe("MassGen's plan rules (given a plan, when a tool is called, then its result and the plan after)", () => {
  test("create_task_plan: an index dependency becomes the earlier task's id; an id not given is made from the call, the same every time", () => {
    const { result, plan, changed } = run("create_task_plan", { tasks: TWO }, null)
    expect(changed).toBe(true)
    const second = plan!.tasks[1]!
    expect(second.id).toMatch(/^task_1_[0-9a-f]{8}$/)
    expect(second.dependencies).toEqual(["a"])
    expect(run("create_task_plan", { tasks: TWO }, null).plan).toEqual(plan)
    expect(result).toMatchObject({
      success: true,
      operation: "create_task_plan",
      plan_id: "agent1",
      summary: { total_tasks: 2, ready_tasks: 1, blocked_tasks: 1 },
    })
    expect(second.metadata).toEqual({ verification: "it works too", execution: { mode: "inline" } })
  })

  test("a second create_task_plan, a task without verification, a forward or cyclic dependency: success false, the plan unchanged", () => {
    const plan = planOf(["create_task_plan", { tasks: TWO }])
    const again = run("create_task_plan", { tasks: TWO }, plan)
    expect(again).toEqual({
      result: {
        success: false,
        operation: "create_task_plan",
        error:
          "A task plan already exists with 2 tasks (0 completed, 0 in_progress, 2 pending). Use get_task_plan to see current state, or add_task to add new tasks.",
      },
      plan,
      changed: false,
    })
    expect(run("add_task", { description: "no criteria" }, plan).result.error).toStartWith(
      "Task 'no criteria' is missing required 'verification' field.",
    )
    expect(run("add_task", { description: "x", verification: "v", depends_on: ["zzz"] }, plan).result.error).toBe(
      "Dependency task does not exist: zzz",
    )
    expect(run("create_task_plan", { tasks: [{ description: "x", depends_on: [0], verification: "v" }] }, null).result.error).toStartWith(
      "Task 'task_0_",
    )
    expect(run("update_task_status", { task_id: "nope", status: "completed" }, plan).result.error).toBe("Task not found: nope")
    expect(run("update_task_status", { task_id: "a", status: "done" }, plan).result.error).toBe(
      "Invalid status 'done'. Must be one of: ['pending', 'in_progress', 'completed', 'verified', 'blocked']",
    )
  })

  test("completing a task lists the tasks it made ready and the verification due; verified takes notes of its own", () => {
    const plan = planOf(["create_task_plan", { tasks: TWO }])
    const done = run("update_task_status", { task_id: "a", status: "completed", completion_notes: "did it" }, plan)
    expect(done.result).toMatchObject({
      success: true,
      newly_ready_tasks: [{ id: plan!.tasks[1]!.id }],
      verification_pending: true,
      verification: "it works",
      unverified_count: 1,
    })
    expect(done.plan!.tasks[0]).toMatchObject({ status: "completed", completed_at: at(5), metadata: { completion_notes: "did it" } })
    const verified = run("update_task_status", { task_id: "a", status: "verified", completion_notes: "checked" }, done.plan)
    expect(verified.plan!.tasks[0]!.metadata.verification_notes).toBe("checked")
    expect(run("get_ready_tasks", {}, verified.plan).result).toMatchObject({ count: 1, ready_tasks: [{ description: "second" }] })
  })

  test("delete_task is refused while a task depends on it; get_blocked_tasks names what each waits for; clear_task_plan empties it", () => {
    const plan = planOf(["create_task_plan", { tasks: TWO }])
    expect(run("delete_task", { task_id: "a" }, plan).result.error).toBe(`Cannot delete task a: task ${plan!.tasks[1]!.id} depends on it`)
    expect(run("get_blocked_tasks", {}, plan).result).toMatchObject({ count: 1, blocked_tasks: [{ blocking_task_ids: ["a"] }] })
    expect(run("clear_task_plan", {}, plan)).toMatchObject({ result: { had_existing_plan: true }, plan: null, changed: true })
    expect(run("clear_task_plan", {}, null)).toMatchObject({ result: { had_existing_plan: false }, changed: false })
  })

  test("add_task after a task, and max_tasks_per_plan: a plan holds at most that many tasks", () => {
    const plan = planOf(["create_task_plan", { tasks: TWO }])
    const added = run("add_task", { description: "between", verification: "v", after_task_id: "a" }, plan)
    expect(added.plan!.tasks.map((t) => t.description)).toEqual(["first", "between", "second"])
    expect(run("add_task", { description: "third", verification: "v" }, plan, call("c9", 2)).result.error).toBe(
      "A task plan holds at most 2 tasks (max_tasks_per_plan); this one would hold 3",
    )
    expect(run("create_task_plan", { tasks: TWO }, null, call("c1", 1)).result.success).toBe(false)
  })

  test("arguments of the wrong type are not a plan's refusal: they throw (the tool runner's bad arguments)", () => {
    expect(() => run("create_task_plan", { tasks: "all of it" }, null)).toThrow("tasks must be a list of task objects")
    expect(() => run("update_task_status", { task_id: 3, status: "completed" }, null)).toThrow("task_id must be a string")
  })
})

const planned = (tool: string, toolCall: number, callId: string, plan: TaskPlan | null, time = at(4)): Event => ({
  _tag: "task_plan_updated",
  time,
  agent: "a",
  tool_call: toolCall,
  call_id: callId,
  tool,
  plan,
})
const toolFinished = (toolCall: number, callId: string): Event => ({
  _tag: "tool_call_finished",
  time: at(6),
  tool_call: toolCall,
  agent: "a",
  round: 1,
  role: "round",
  call_id: callId,
  tool: "create_task_plan",
  server: null,
  arguments: "{}",
  ok: true,
  error: null,
  seconds: 0,
  result: "{}",
  result_chars: 2,
  digest: "x",
})

describe("the plan folded from the log", () => {
  const made = run("create_task_plan", { tasks: TWO }, null).plan

  test("given task_plan_updated, the agent's plan is its plan, the one before kept, unsettled until its tool call finishes", () => {
    const open = foldEvents([runStarted(["a"]), roundStarted("a", 1, []), planned("create_task_plan", 1, "c1", made)])
    expect(open.agents[0]!.taskPlan).toEqual({ plan: made, before: null, toolCall: 1, callId: "c1", time: at(4), settled: false })
    const settled = foldEvents([toolFinished(1, "c1")], open)
    expect(settled.agents[0]!.taskPlan?.settled).toBe(true)
    const cleared = foldEvents([planned("clear_task_plan", 2, "c2", null)], settled)
    expect(cleared.agents[0]!.taskPlan).toMatchObject({ plan: null, before: made, settled: false })
  })
})

describe("the planning provider records each change once", () => {
  const contextOf = (state: () => State, emitted: Array<Event>, toolCall: number, callId: string): ToolContext => ({
    agent: "a",
    round: 1,
    role: "round",
    toolCall,
    callId,
    state: Effect.sync(state),
    emit: (e) => Effect.sync(() => void emitted.push(e)),
    now: Effect.succeed(at(9)),
  })
  const provider = makePlanningTools({ maxTasks: 10, planFileIn: null })
  const call1 = (p: ToolProvider, name: string, args: Record<string, unknown>, ctx: ToolContext) =>
    Effect.runPromise(p.run(name, args, ctx))

  test("a change is appended; a call a stop cut off after its change runs again on the plan before it and appends nothing", async () => {
    const emitted: Array<Event> = []
    let state = foldEvents([runStarted(["a"]), roundStarted("a", 1, [])])
    const first = await call1(
      provider,
      "create_task_plan",
      { tasks: TWO },
      contextOf(() => state, emitted, 1, "c1"),
    )
    expect(emitted.map((e) => e._tag)).toEqual(["task_plan_updated"])
    // The stop: the change is in the log, its tool_call_finished is not. The call runs again under a new number.
    state = foldEvents(emitted, state)
    const again = await call1(
      provider,
      "create_task_plan",
      { tasks: TWO },
      contextOf(() => state, emitted, 2, "c1"),
    )
    expect(again).toBe(first)
    expect(emitted).toHaveLength(1)
    // Once the call finished, the same call id is a new call, on the plan as it is.
    state = foldEvents([toolFinished(1, "c1")], state)
    const later = JSON.parse(
      await call1(
        provider,
        "create_task_plan",
        { tasks: TWO },
        contextOf(() => state, emitted, 3, "c1"),
      ),
    )
    expect(later.success).toBe(false)
  })
})

describe("which tools planning mode refuses during coordination", () => {
  test("by default: MCP tools not marked read-only and commands; not a read-only MCP tool, the file tools, the planning tools", () => {
    expect(planningModeBlock({ name: "mcp__discord__send", nature: "mcp", readOnly: false }, null)).toBe(
      "its MCP server does not mark it read-only",
    )
    expect(planningModeBlock({ name: "mcp__discord__read", nature: "mcp", readOnly: true }, null)).toBeNull()
    expect(planningModeBlock({ name: "execute_command", nature: "command", readOnly: false }, null)).toBe("it runs a command")
    expect(planningModeBlock({ name: "write_file", nature: "other", readOnly: false }, null)).toBeNull()
    expect(planningModeBlock({ name: "create_task_plan", nature: "other", readOnly: false }, null)).toBeNull()
  })

  test("planning_mode_blocked_tools replaces the rule: exactly the names listed, a trailing * a prefix", () => {
    const listed = ["write_file", "mcp__github__*"]
    expect(planningModeBlock({ name: "write_file", nature: "other", readOnly: false }, listed)).toBe(
      "it is listed in planning_mode_blocked_tools",
    )
    expect(planningModeBlock({ name: "mcp__github__create_issue", nature: "mcp", readOnly: true }, listed)).not.toBeNull()
    expect(planningModeBlock({ name: "mcp__discord__send", nature: "mcp", readOnly: false }, listed)).toBeNull()
    expect(planningModeBlock({ name: "execute_command", nature: "command", readOnly: false }, listed)).toBeNull()
  })

  test("a refused tool fails in a round with reason refused, and runs in the presentation", async () => {
    let ran = 0
    const inner: ToolProvider = {
      tools: [
        { spec: { name: "mcp__s__send", description: "", parameters: { type: "object", properties: {}, required: [] } }, server: "s" },
      ],
      run: () => Effect.sync(() => `sent ${++ran}`),
    }
    const gated = withPlanningMode(inner, "other", null)
    const context = (role: "round" | "presentation") => ({ role }) as ToolContext
    const refused = await Effect.runPromise(Effect.flip(gated.run("mcp__s__send", {}, context("round"))))
    expect([refused.reason, refused.message]).toEqual([
      "refused",
      "refused: planning mode: mcp__s__send is not run during coordination (its MCP server does not mark it read-only); describe what you would do with it, and the presenter will run it in the final presentation",
    ])
    expect(await Effect.runPromise(gated.run("mcp__s__send", {}, context("presentation")))).toBe("sent 1")
    expect(withPlanningMode({ ...inner, tools: [{ ...inner.tools[0]!, readOnly: true }] }, "other", null).run).toBe(inner.run)
  })

  test("through the tool runner, a refused call is an error result before the permission gate: nobody is asked about it", async () => {
    let asked = 0
    const gate = { check: () => Effect.sync(() => void asked++).pipe(Effect.as(null)) } as unknown as PermissionGate
    const inner: ToolProvider = {
      tools: [{ spec: { name: "publish", description: "", parameters: { type: "object", properties: {}, required: [] } }, server: null }],
      run: () => Effect.succeed("published"),
    }
    const combined = combineProviders([withPlanningMode(inner, "command", null), makePlanningTools({ maxTasks: 10, planFileIn: null })])
    if (Either.isLeft(combined)) throw new Error(combined.left)
    const events: Array<Event> = []
    let n = 0
    const runTools = makeToolRunner({
      providerOf: () => combined.right,
      emit: (e) => Effect.sync(() => void events.push(e)),
      now: Effect.succeed(at(1)),
      nextToolCall: Effect.sync(() => ++n),
      writeLog: () => Effect.void,
      digest: hashText,
      gate,
    })
    const publish = [{ id: "p1", name: "publish", arguments: "{}" }]
    const [round] = await Effect.runPromise(runTools("a", 1, "round", publish))
    expect([round!.isError, asked]).toEqual([true, 0])
    const [presented] = await Effect.runPromise(runTools("a", 0, "presentation", publish))
    expect([presented!.content, asked]).toEqual(["published", 1])
    expect(events.filter((e) => e._tag === "tool_call_finished").map((e) => e._tag === "tool_call_finished" && [e.role, e.ok])).toEqual([
      ["round", false],
      ["presentation", true],
    ])
  })

  test("the keys as a run reads them: defaults, and nothing while the features are off", () => {
    expect(planningOf({ enable_agent_task_planning: true })).toEqual({ taskPlanning: { maxTasks: 10, filesystemMode: false } })
    expect(planningOf({ enable_planning_mode: true, planning_mode_blocked_tools: ["x"] }).planningMode?.blockedTools).toEqual(["x"])
    expect(planningOf({ enable_planning_mode: false, max_tasks_per_plan: 3, planning_mode_instruction: "x" })).toEqual({})
  })
})
