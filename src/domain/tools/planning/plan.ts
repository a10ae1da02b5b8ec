/**
 * An agent's task plan and what may be done to it: MassGen's `TaskPlan` (`planning_dataclasses.py`), written anew, immutable.
 *
 * Each operation takes a plan and gives the plan after it, or throws a
 * `PlanError` whose message is MassGen's (the tool gives it as `error`).
 * A task is *ready* when it is pending and every task it depends on is
 * completed or verified; *blocked* when it is pending and one is not. Ids a
 * caller does not give are made from `seed` (the tool call), so the same call
 * makes the same ids on every run. Pure.
 *
 * Words: a plan's *tasks* are in order; a task's *dependencies* are ids of tasks of the same plan.
 */
import type { Json, PlanTask, TaskPlan, TaskPriority, TaskStatus } from "../../events/index.ts"

export class PlanError extends Error {}

export const TASK_STATUSES: ReadonlyArray<TaskStatus> = ["pending", "in_progress", "completed", "verified", "blocked"]
export const TASK_PRIORITIES: ReadonlyArray<TaskPriority> = ["low", "medium", "high"]

const done = (t: PlanTask | undefined): boolean => t !== undefined && (t.status === "completed" || t.status === "verified")

export const taskOf = (plan: TaskPlan, id: string): PlanTask | undefined => plan.tasks.find((t) => t.id === id)

/** Whether every dependency of task `id` is completed or verified. */
export const canStart = (plan: TaskPlan, id: string): boolean => {
  const task = taskOf(plan, id)
  return task !== undefined && task.dependencies.every((d) => done(taskOf(plan, d)))
}

export const readyTasks = (plan: TaskPlan): ReadonlyArray<PlanTask> =>
  plan.tasks.filter((t) => t.status === "pending" && canStart(plan, t.id))
export const blockedTasks = (plan: TaskPlan): ReadonlyArray<PlanTask> =>
  plan.tasks.filter((t) => t.status === "pending" && !canStart(plan, t.id))

/** The dependencies of task `id` not yet completed or verified. */
export const blockingTasks = (plan: TaskPlan, id: string): ReadonlyArray<string> =>
  (taskOf(plan, id)?.dependencies ?? []).filter((d) => {
    const dep = taskOf(plan, d)
    return dep !== undefined && !done(dep)
  })

/** Completed tasks by `metadata.verification_group` (`ungrouped` without one). */
export const awaitingVerification = (plan: TaskPlan): Readonly<Record<string, ReadonlyArray<PlanTask>>> => {
  const out = new Map<string, Array<PlanTask>>()
  for (const t of plan.tasks) {
    if (t.status !== "completed") continue
    const group = typeof t.metadata.verification_group === "string" ? t.metadata.verification_group : "ungrouped"
    out.set(group, [...(out.get(group) ?? []), t])
  }
  return Object.fromEntries(out)
}

/** MassGen's `normalize_task_execution`: `{mode: inline}`, `{mode: delegate, subagent_type | subagent_id, ...}` or `{mode: checkpoint, ...}`. */
export const normalizeExecution = (execution: unknown): Record<string, Json> => {
  const raw: Record<string, Json> =
    execution !== null && typeof execution === "object" && !Array.isArray(execution) ? { ...(execution as Record<string, Json>) } : {}
  const type = raw.subagent_type ?? raw.subagent_name
  const id = raw.subagent_id
  const mode = raw.mode === undefined || raw.mode === null || raw.mode === "" ? (type || id ? "delegate" : "inline") : raw.mode
  if (mode !== "inline" && mode !== "delegate" && mode !== "checkpoint")
    throw new PlanError("execution.mode must be 'inline', 'delegate', or 'checkpoint'")
  if (mode === "checkpoint") {
    const { mode: _, ...rest } = raw
    return { ...rest, mode: "checkpoint" }
  }
  if (mode === "inline") {
    if (type || id) throw new PlanError("inline execution cannot include subagent_type or subagent_id")
    return { mode: "inline" }
  }
  if (!type && !id) throw new PlanError("Delegate execution requires subagent_type or subagent_id")
  const { subagent_name: _n, subagent_type: _t, subagent_id: _i, mode: _m, ...rest } = raw
  return { ...rest, mode: "delegate", ...(type ? { subagent_type: String(type) } : {}), ...(id ? { subagent_id: String(id) } : {}) }
}

/** Whether a task depending on `deps` (by id, in `tasks`) closes a cycle back to `id`. */
const closesCycle = (id: string, tasks: ReadonlyArray<PlanTask>): boolean => {
  const byId = new Map(tasks.map((t) => [t.id, t]))
  const visiting = new Set<string>()
  const seen = new Set<string>()
  const cycle = (tid: string): boolean => {
    if (visiting.has(tid)) return true
    if (seen.has(tid)) return false
    seen.add(tid)
    visiting.add(tid)
    const found = (byId.get(tid)?.dependencies ?? []).some(cycle)
    visiting.delete(tid)
    return found
  }
  return cycle(id)
}

export interface NewTask {
  readonly description: string
  readonly id?: string | null
  readonly afterTaskId?: string | null
  readonly dependsOn?: ReadonlyArray<string>
  readonly priority?: TaskPriority
  readonly verification?: string | null
  readonly verificationMethod?: string | null
  readonly execution?: unknown
  readonly metadata?: Readonly<Record<string, Json>>
}

/** An empty plan made at `now`. */
export const emptyPlan = (now: string): TaskPlan => ({ tasks: [], created_at: now, updated_at: now })

/** MassGen's `add_task`: the plan with `spec` added (after `afterTaskId`, else at the end). `requireVerification`: a task needs `verification`. */
export const addTask = (plan: TaskPlan, spec: NewTask, id: string, now: string, requireVerification: boolean): TaskPlan => {
  if (taskOf(plan, id) !== undefined) throw new PlanError(`Task ID already exists: ${id}`)
  for (const dep of spec.dependsOn ?? []) if (taskOf(plan, dep) === undefined) throw new PlanError(`Dependency task does not exist: ${dep}`)
  if (requireVerification && !spec.verification)
    throw new PlanError(
      `Task '${spec.description.slice(0, 60)}' is missing required 'verification' field. Provide acceptance criteria describing what success looks like.`,
    )
  const metadata: Record<string, Json> = {
    ...(spec.verification ? { verification: spec.verification } : {}),
    ...(spec.verificationMethod ? { verification_method: spec.verificationMethod } : {}),
    execution: normalizeExecution(spec.execution),
    ...(spec.metadata ?? {}),
  }
  const task: PlanTask = {
    id,
    description: spec.description,
    status: "pending",
    priority: spec.priority ?? "medium",
    created_at: now,
    completed_at: null,
    verified_at: null,
    dependencies: [...(spec.dependsOn ?? [])],
    metadata,
  }
  if (closesCycle(id, [...plan.tasks, task])) throw new PlanError(`Circular dependency detected for task: ${id}`)
  const tasks = plan.tasks.slice()
  if (spec.afterTaskId) {
    const at = tasks.findIndex((t) => t.id === spec.afterTaskId)
    if (at < 0) throw new PlanError(`after_task_id not found: ${spec.afterTaskId}`)
    tasks.splice(at + 1, 0, task)
  } else tasks.push(task)
  return { ...plan, tasks, updated_at: now }
}

const replaced = (plan: TaskPlan, task: PlanTask, now: string): TaskPlan => ({
  ...plan,
  tasks: plan.tasks.map((t) => (t.id === task.id ? task : t)),
  updated_at: now,
})

const found = (plan: TaskPlan, id: string): PlanTask => {
  const task = taskOf(plan, id)
  if (task === undefined) throw new PlanError(`Task not found: ${id}`)
  return task
}

/** MassGen's `update_task_status`: notes go to `completion_notes` (completed) or `verification_notes` (verified). */
export const setStatus = (plan: TaskPlan, id: string, status: TaskStatus, notes: string | null, now: string): TaskPlan => {
  const task = found(plan, id)
  const next: PlanTask =
    status === "completed"
      ? { ...task, status, completed_at: now, metadata: notes ? { ...task.metadata, completion_notes: notes } : task.metadata }
      : status === "verified"
        ? { ...task, status, verified_at: now, metadata: notes ? { ...task.metadata, verification_notes: notes } : task.metadata }
        : { ...task, status }
  return replaced(plan, next, now)
}

/** MassGen's `edit_task`: a new description (none: the task as it is, the plan's time moved). */
export const editTask = (plan: TaskPlan, id: string, description: string | null, now: string): TaskPlan => {
  const task = found(plan, id)
  return replaced(plan, description === null ? task : { ...task, description }, now)
}

/** MassGen's `delete_task`: refused while another task depends on it. */
export const deleteTask = (plan: TaskPlan, id: string, now: string): TaskPlan => {
  found(plan, id)
  const dependent = plan.tasks.find((t) => t.dependencies.includes(id))
  if (dependent !== undefined) throw new PlanError(`Cannot delete task ${id}: task ${dependent.id} depends on it`)
  return { ...plan, tasks: plan.tasks.filter((t) => t.id !== id), updated_at: now }
}

/** A task as MassGen's `to_dict` gives it: its fields, and its `execution` beside its metadata. */
export const taskDict = (t: PlanTask): Record<string, Json> => ({
  id: t.id,
  description: t.description,
  status: t.status,
  priority: t.priority,
  created_at: t.created_at,
  completed_at: t.completed_at,
  verified_at: t.verified_at,
  dependencies: [...t.dependencies],
  metadata: { ...t.metadata },
  ...(t.metadata.execution !== null && typeof t.metadata.execution === "object" && !Array.isArray(t.metadata.execution)
    ? { execution: { ...t.metadata.execution } }
    : {}),
})

/** A plan as MassGen's `to_dict` gives it; `agentId`: the name it goes by (the agent's anonymous id). */
export const planDict = (plan: TaskPlan, agentId: string): Record<string, Json> => ({
  agent_id: agentId,
  tasks: plan.tasks.map(taskDict),
  created_at: plan.created_at,
  updated_at: plan.updated_at,
  subagents: {},
})

/** The line a view shows for a `task_plan_updated`: the tool and the plan's tasks by status. */
export const taskPlanLine = (event: { readonly tool: string; readonly plan: TaskPlan | null }): string => {
  if (event.plan === null) return `task plan cleared (${event.tool})`
  const tasks = event.plan.tasks
  const by = TASK_STATUSES.flatMap((s) => {
    const n = tasks.filter((t) => t.status === s).length
    return n === 0 ? [] : [`${n} ${s.replace("_", " ")}`]
  })
  return `task plan (${event.tool}): ${tasks.length} task${tasks.length === 1 ? "" : "s"}${by.length === 0 ? "" : `, ${by.join(", ")}`}`
}
