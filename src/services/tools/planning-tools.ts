/**
 * An agent's task planning tools (`enable_agent_task_planning`), as a `ToolProvider`: MassGen's planning MCP server, built in.
 *
 * The tools and what a call does are `domain/tools/planning/`. The plan is
 * the run's fact: a call reads the agent's plan from the run's state
 * (`AgentState.taskPlan`, the fold of its `task_plan_updated` events) and a
 * call that changes it appends `task_plan_updated` with the whole plan
 * before it returns, so a resume and a replay see the plan the log holds. A
 * call that a stop cut off after its `task_plan_updated` (its call id the
 * same, its tool call never finished) is worked out again on the plan before
 * it, at the recorded time, and recorded once: it gives the same result and
 * changes nothing twice. Calls of one agent run one at a time (a reply's
 * calls run together). With `task_planning_filesystem_mode` the plan is also
 * written, as MassGen writes it, to `tasks/plan.json` in the agent's workspace
 * (walked without following links: `confined-fs.ts`), and removed when cleared.
 */
import { Effect } from "effect"
import type { TaskPlan } from "../../domain/events/index.ts"
import { planDict } from "../../domain/tools/planning/plan.ts"
import { PLANNING_TOOL_SPECS } from "../../domain/tools/planning/specs.ts"
import { PlanArgumentError, runPlanningTool } from "../../domain/tools/planning/tools.ts"
import { hashText } from "../../lib/sha256.ts"
import { ConfinedFsError, closeDir, lstatAt, openRoot, removeAt, walk, writeFileAt } from "./confined-fs.ts"
import { type ToolContext, type ToolProvider, ToolRunError } from "./tool-provider.ts"

export interface PlanningToolsInput {
  /** `max_tasks_per_plan`. */
  readonly maxTasks: number
  /** The agent's workspace, where `tasks/plan.json` is kept (`task_planning_filesystem_mode`); null: the plan is only in the log. */
  readonly planFileIn: string | null
}

/** Writes (or, for no plan, removes) `tasks/plan.json` below `workspace`. */
const keepPlanFile = (workspace: string, plan: TaskPlan | null, planId: string): void => {
  const root = openRoot(workspace)
  try {
    const dir = walk(root, ["tasks"], plan !== null)
    try {
      if (plan !== null) writeFileAt(dir, "plan.json", JSON.stringify(planDict(plan, planId), null, 2), "tasks/plan.json")
      else if (lstatAt(dir, "plan.json") !== undefined) removeAt(dir, "plan.json", "tasks/plan.json")
    } finally {
      if (dir !== root) closeDir(dir)
    }
  } catch (e) {
    if (!(plan === null && e instanceof ConfinedFsError && e.reason === "missing")) throw e
  } finally {
    closeDir(root)
  }
}

export const makePlanningTools = (input: PlanningToolsInput): ToolProvider => {
  const lock = Effect.unsafeMakeSemaphore(1)
  const call = (name: string, args: Record<string, unknown>, context: ToolContext) =>
    Effect.gen(function* () {
      const state = yield* context.state
      const agent = state.agents.find((a) => a.info.id === context.agent)
      if (agent === undefined) return yield* new ToolRunError({ reason: "refused", detail: `no agent ${context.agent} in this run` })
      const entry = agent.taskPlan
      const again = entry !== undefined && !entry.settled && entry.callId === context.callId
      const now = again ? entry.time : yield* context.now
      const planId = agent.info.anon_id
      const outcome = yield* Effect.try({
        try: () =>
          runPlanningTool(
            name,
            args,
            again ? entry.before : (entry?.plan ?? null),
            { planId, seed: `${context.agent}\n${context.callId}`, now, maxTasks: input.maxTasks },
            hashText,
          ),
        catch: (e) =>
          new ToolRunError({
            reason: e instanceof PlanArgumentError ? "bad_arguments" : "failed",
            detail: e instanceof Error ? e.message : String(e),
          }),
      })
      if (outcome.changed && !again)
        yield* context.emit({
          _tag: "task_plan_updated",
          time: now,
          agent: context.agent,
          tool_call: context.toolCall,
          call_id: context.callId,
          tool: name,
          plan: outcome.plan,
        })
      const dir = input.planFileIn
      if (outcome.changed && dir !== null)
        yield* Effect.try({
          try: () => keepPlanFile(dir, outcome.plan, planId),
          catch: (e) => new ToolRunError({ reason: "failed", detail: `tasks/plan.json: ${e instanceof Error ? e.message : String(e)}` }),
        })
      return JSON.stringify(outcome.result, null, 2)
    })
  return {
    tools: PLANNING_TOOL_SPECS.map((spec) => ({ spec, server: null })),
    run: (name, args, context) =>
      context === undefined
        ? Effect.fail(new ToolRunError({ reason: "refused", detail: `${name}: no run to record the plan in` }))
        : lock.withPermits(1)(call(name, args, context)),
  }
}
