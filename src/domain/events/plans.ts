/**
 * The event of task planning (`index.ts`, `domain/tools/planning/`): an agent's task plan changed by one of its planning tool calls.
 *
 * Contract: the event holds the whole plan after the call (`null`: cleared), so the plan is the last such
 * event of its agent; it is appended inside the tool call, before `tool_call_finished`. A task plan holds
 * MassGen's fields (`planning_dataclasses.py`), its times as ISO instants. Words as in `index.ts`.
 */
import { Schema } from "effect"
import { Json } from "./calls.ts"
import { AgentId, Count, defineEvent, Time } from "./fields.ts"

export const TaskStatus = Schema.Literal("pending", "in_progress", "completed", "verified", "blocked")
export type TaskStatus = typeof TaskStatus.Type
export const TaskPriority = Schema.Literal("low", "medium", "high")
export type TaskPriority = typeof TaskPriority.Type

/** One task of a plan: MassGen's `Task`. */
export const PlanTask = Schema.Struct({
  id: Schema.String,
  description: Schema.String,
  status: TaskStatus,
  priority: TaskPriority,
  created_at: Time,
  completed_at: Schema.NullOr(Time),
  verified_at: Schema.NullOr(Time),
  /** The ids of the tasks this one waits for. */
  dependencies: Schema.Array(Schema.String),
  /** `verification`, `verification_method`, `execution`, `completion_notes`, ... as MassGen keeps them. */
  metadata: Schema.Record({ key: Schema.String, value: Json }),
})
export type PlanTask = typeof PlanTask.Type

/** An agent's task plan: MassGen's `TaskPlan`. */
export const TaskPlan = Schema.Struct({
  tasks: Schema.Array(PlanTask),
  created_at: Time,
  updated_at: Time,
})
export type TaskPlan = typeof TaskPlan.Type

/** Tool call `tool_call` (`tool`, the model's `call_id`) of `agent` changed its task plan to `plan` (null: cleared). */
export const TaskPlanUpdated = defineEvent("task_plan_updated", {
  agent: AgentId,
  tool_call: Count,
  call_id: Schema.String,
  tool: Schema.String,
  plan: Schema.NullOr(TaskPlan),
})
