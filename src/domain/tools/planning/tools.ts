/**
 * MassGen's task planning tools (`_planning_mcp_server.py`), written anew: what one call does to a plan.
 *
 * The tools' schemas are `specs.ts` (`PLANNING_TOOL_SPECS`). `runPlanningTool(name, args, plan, call)` gives MassGen's result (a JSON
 * object with `success` and `operation`) and the plan after the call; a plan
 * operation that fails is a result with `success: false` and MassGen's
 * `error`, as in MassGen, and leaves the plan as it was. Arguments of the wrong
 * type throw `PlanArgumentError` (the tool runner's bad arguments, as MCP's
 * argument check). Every task needs `verification` (MassGen's default), and a
 * plan holds at most `maxTasks` tasks (`max_tasks_per_plan`). Pure.
 */
import type { Json, TaskPlan, TaskPriority, TaskStatus } from "../../events/index.ts"
import {
  addTask,
  awaitingVerification,
  blockedTasks,
  blockingTasks,
  deleteTask,
  editTask,
  emptyPlan,
  type NewTask,
  PlanError,
  planDict,
  readyTasks,
  setStatus,
  TASK_PRIORITIES,
  TASK_STATUSES,
  taskDict,
  taskOf,
} from "./plan.ts"

export class PlanArgumentError extends Error {}

/** What a call needs besides its arguments: who calls, when, and the limits. */
export interface PlanningCall {
  /** The name the plan goes by in results (the agent's anonymous id). */
  readonly planId: string
  /** Seeds the ids of tasks the call makes (the model's call id, with the agent). */
  readonly seed: string
  readonly now: string
  readonly maxTasks: number
}

export interface PlanningOutcome {
  readonly result: Record<string, Json>
  /** The plan after the call (null: none). */
  readonly plan: TaskPlan | null
  /** Whether the call changed the plan (a `task_plan_updated` is due). */
  readonly changed: boolean
}

const text = (args: Record<string, unknown>, key: string, required: boolean): string | null => {
  const v = args[key]
  if (v === undefined || v === null) {
    if (required) throw new PlanArgumentError(`${key} is required`)
    return null
  }
  if (typeof v !== "string") throw new PlanArgumentError(`${key} must be a string`)
  return v
}

const strings = (args: Record<string, unknown>, key: string): ReadonlyArray<string> => {
  const v = args[key]
  if (v === undefined || v === null) return []
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new PlanArgumentError(`${key} must be a list of strings`)
  return v
}

const isRecord = (v: unknown): v is Record<string, Json> => v !== null && typeof v === "object" && !Array.isArray(v)

/** The hex digits that make a task id of `seed`'s call unique. */
const idOf = (prefix: string, seed: string, plan: TaskPlan, taken: ReadonlySet<string>, hash: (s: string) => string): string => {
  for (let n = 0; ; n++) {
    const id = `${prefix}_${hash(`${seed}\n${plan.tasks.length}\n${n}`).slice(0, 8)}`
    if (!taken.has(id) && taskOf(plan, id) === undefined) return id
  }
}

const priorityOf = (v: unknown): TaskPriority => {
  if (v === undefined || v === null) return "medium"
  if (typeof v === "string" && (TASK_PRIORITIES as ReadonlyArray<string>).includes(v)) return v as TaskPriority
  throw new PlanError(`Invalid priority '${String(v)}'. Must be one of: ${TASK_PRIORITIES.join(", ")}`)
}

const tooMany = (count: number, max: number) =>
  new PlanError(`A task plan holds at most ${max} tasks (max_tasks_per_plan); this one would hold ${count}`)

/** MassGen's create_task_plan: ids made, index dependencies resolved to ids, each task added in order. */
const createPlan = (plan: TaskPlan | null, raw: unknown, call: PlanningCall, hash: (s: string) => string): TaskPlan => {
  if (!Array.isArray(raw) || !raw.every(isRecord)) throw new PlanArgumentError("tasks must be a list of task objects")
  const current = plan ?? emptyPlan(call.now)
  if (current.tasks.length > 0) {
    const count = (s: TaskStatus) => current.tasks.filter((t) => t.status === s).length
    throw new PlanError(
      `A task plan already exists with ${current.tasks.length} tasks (${count("completed")} completed, ${count("in_progress")} in_progress, ${count("pending")} pending). Use get_task_plan to see current state, or add_task to add new tasks.`,
    )
  }
  if (raw.length > call.maxTasks) throw tooMany(raw.length, call.maxTasks)
  const taken = new Set<string>()
  const ids = raw.map((t, i) => {
    const id = typeof t.id === "string" && t.id !== "" ? t.id : idOf(`task_${i}`, call.seed, current, taken, hash)
    taken.add(id)
    return id
  })
  const specs = raw.map((t, i): NewTask & { readonly id: string } => {
    const deps = t.depends_on ?? []
    if (!Array.isArray(deps)) throw new PlanArgumentError(`tasks[${i}].depends_on must be a list`)
    const dependsOn = deps.map((d) => {
      if (typeof d === "number") {
        if (!Number.isInteger(d) || d < 0 || d >= raw.length) throw new PlanError(`Task '${ids[i]}': Invalid dependency index ${d}`)
        if (d >= i) throw new PlanError(`Task '${ids[i]}': Dependencies must reference earlier tasks`)
        return ids[d]!
      }
      if (typeof d !== "string") throw new PlanArgumentError(`tasks[${i}].depends_on holds ids or indices`)
      if (!ids.includes(d)) throw new PlanError(`Task ${ids[i]}: Dependency ${d} not found in task list`)
      if (d === ids[i]) throw new PlanError(`Task ${ids[i]}: Self-dependency detected`)
      return d
    })
    const meta = isRecord(t.metadata) ? t.metadata : {}
    const description = t.description
    if (typeof description !== "string") throw new PlanArgumentError(`tasks[${i}].description must be a string`)
    const verification =
      typeof t.verification === "string" ? t.verification : typeof meta.verification === "string" ? meta.verification : null
    const method =
      typeof t.verification_method === "string"
        ? t.verification_method
        : typeof meta.verification_method === "string"
          ? meta.verification_method
          : null
    return {
      id: ids[i]!,
      description,
      dependsOn,
      priority: priorityOf(t.priority),
      verification,
      verificationMethod: method,
      execution: t.execution ?? meta.execution,
      metadata: {
        ...meta,
        ...(t.verification_group !== undefined && meta.verification_group === undefined
          ? { verification_group: t.verification_group }
          : {}),
      },
    }
  })
  return specs.reduce((p, s) => addTask(p, s, s.id, call.now, true), current)
}

const summaryOf = (plan: TaskPlan): Record<string, Json> => {
  const count = (s: TaskStatus) => plan.tasks.filter((t) => t.status === s).length
  const awaiting = awaitingVerification(plan)
  return {
    total_tasks: plan.tasks.length,
    completed_tasks: count("completed"),
    verified_tasks: count("verified"),
    in_progress_tasks: count("in_progress"),
    ready_tasks: readyTasks(plan).length,
    blocked_tasks: blockedTasks(plan).length,
    awaiting_verification: Object.values(awaiting).reduce((n, ts) => n + ts.length, 0),
  }
}

/** What MassGen's update_task_status adds to its result: the tasks made ready, and the verification still due. */
const statusResult = (after: TaskPlan, id: string, status: TaskStatus): Record<string, Json> => {
  const task = taskOf(after, id)!
  if (status !== "completed") return { task: taskDict(task) }
  const ready = after.tasks.filter((t) => t.status === "pending" && t.dependencies.includes(id) && readyTasks(after).includes(t))
  const out: Record<string, Json> = { task: taskDict(task), newly_ready_tasks: ready.map(taskDict) }
  if (typeof task.metadata.verification === "string" && task.metadata.verification !== "") {
    out.verification_pending = true
    out.verification = task.metadata.verification
    if (task.metadata.verification_method !== undefined) out.verification_method = task.metadata.verification_method
    out.unverified_count = after.tasks.filter(
      (t) => t.status === "completed" && typeof t.metadata.verification === "string" && t.metadata.verification !== "",
    ).length
  }
  return out
}

/** One call of planning tool `name` on `plan`; `hash` is SHA-256 in hex (task ids). */
export const runPlanningTool = (
  name: string,
  args: Record<string, unknown>,
  plan: TaskPlan | null,
  call: PlanningCall,
  hash: (s: string) => string,
): PlanningOutcome => {
  const same = (result: Record<string, Json>): PlanningOutcome => ({
    result: { success: true, operation: name, ...result },
    plan,
    changed: false,
  })
  const to = (after: TaskPlan | null, result: Record<string, Json>): PlanningOutcome => ({
    result: { success: true, operation: name, ...result },
    plan: after,
    changed: true,
  })
  const current = plan ?? emptyPlan(call.now)
  try {
    switch (name) {
      case "create_task_plan": {
        const after = createPlan(plan, args.tasks, call, hash)
        return to(after, {
          plan_id: call.planId,
          tasks: after.tasks.map(taskDict),
          summary: { total_tasks: after.tasks.length, ready_tasks: readyTasks(after).length, blocked_tasks: blockedTasks(after).length },
        })
      }
      case "add_task": {
        const description = text(args, "description", true)!
        const priority = priorityOf(args.priority)
        if (current.tasks.length + 1 > call.maxTasks) throw tooMany(current.tasks.length + 1, call.maxTasks)
        const id = idOf("task", call.seed, current, new Set(), hash)
        const spec: NewTask = {
          description,
          afterTaskId: text(args, "after_task_id", false),
          dependsOn: strings(args, "depends_on"),
          priority,
          verification: text(args, "verification", false),
          verificationMethod: text(args, "verification_method", false),
          execution: args.execution,
        }
        const after = addTask(current, spec, id, call.now, true)
        return to(after, { task: taskDict(taskOf(after, id)!) })
      }
      case "update_task_status": {
        const id = text(args, "task_id", true)!
        const status = text(args, "status", true)!
        if (!(TASK_STATUSES as ReadonlyArray<string>).includes(status))
          throw new PlanError(`Invalid status '${status}'. Must be one of: [${TASK_STATUSES.map((t) => `'${t}'`).join(", ")}]`)
        const after = setStatus(current, id, status as TaskStatus, text(args, "completion_notes", false), call.now)
        return to(after, statusResult(after, id, status as TaskStatus))
      }
      case "edit_task": {
        const id = text(args, "task_id", true)!
        const after = editTask(current, id, text(args, "description", false), call.now)
        return to(after, { task: taskDict(taskOf(after, id)!) })
      }
      case "delete_task": {
        const id = text(args, "task_id", true)!
        return to(deleteTask(current, id, call.now), { deleted_task_id: id })
      }
      case "get_task_plan":
        return same({
          plan: planDict(current, call.planId),
          summary: summaryOf(current),
          verification_groups: Object.fromEntries(Object.entries(awaitingVerification(current)).map(([g, ts]) => [g, ts.map(taskDict)])),
        })
      case "get_ready_tasks": {
        const ready = readyTasks(current)
        return same({ ready_tasks: ready.map(taskDict), count: ready.length })
      }
      case "get_blocked_tasks": {
        const blocked = blockedTasks(current)
        return same({
          blocked_tasks: blocked.map((t) => ({ ...taskDict(t), blocking_task_ids: [...blockingTasks(current, t.id)] })),
          count: blocked.length,
        })
      }
      case "clear_task_plan":
        return plan === null ? same({ had_existing_plan: false }) : to(null, { had_existing_plan: true })
      default:
        throw new PlanArgumentError(`no planning tool named ${name}`)
    }
  } catch (e) {
    if (e instanceof PlanError) return { result: { success: false, operation: name, error: e.message }, plan, changed: false }
    throw e
  }
}
