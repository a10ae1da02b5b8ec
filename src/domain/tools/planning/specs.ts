/**
 * The schemas of MassGen's task planning tools (`_planning_mcp_server.py`), as the model is offered them.
 *
 * `PLANNING_TOOL_SPECS` are the tools under MassGen's names and arguments:
 * `create_task_plan {tasks}`, `add_task {description, after_task_id?,
 * depends_on?, priority?, verification?, verification_method?, execution?}`,
 * `update_task_status {task_id, status, completion_notes?}`, `edit_task
 * {task_id, description?}`, `get_task_plan`, `delete_task {task_id}`,
 * `get_ready_tasks`, `get_blocked_tasks`, `clear_task_plan`; what a call does
 * is `tools.ts`. Pure.
 */
import type { ToolSpec } from "../../llm.ts"
import { TASK_PRIORITIES, TASK_STATUSES } from "./plan.ts"

const str = (description: string) => ({ type: "string", description })
const spec = (name: string, description: string, properties: Record<string, unknown>, required: ReadonlyArray<string> = []): ToolSpec => ({
  name,
  description,
  parameters: { type: "object", properties, required: [...required] },
})

const taskItem = {
  type: "object",
  properties: {
    description: str("What the task is (required)"),
    verification: str("What success looks like: acceptance criteria (required)"),
    verification_method: str("How to verify it"),
    id: str("A task id of your own (default: made for you)"),
    depends_on: { type: "array", items: {}, description: "Ids, or 0-based indices of earlier tasks in this list, this task waits for" },
    priority: { type: "string", enum: TASK_PRIORITIES },
  },
  required: ["description"],
}

export const PLANNING_TOOL_SPECS: ReadonlyArray<ToolSpec> = [
  spec(
    "create_task_plan",
    "Create your task plan from a list of tasks, each with a description and verification criteria. Dependencies refer to earlier tasks by id or index; cycles are refused. Fails if you already have a plan (use get_task_plan or add_task).",
    { tasks: { type: "array", items: taskItem, description: "The tasks, in order" } },
    ["tasks"],
  ),
  spec(
    "add_task",
    "Add a task to your plan (after after_task_id, else at the end).",
    {
      description: str("What the task is"),
      after_task_id: str("Insert after this task"),
      depends_on: { type: "array", items: { type: "string" }, description: "Ids of the tasks it waits for" },
      priority: { type: "string", enum: TASK_PRIORITIES, description: "Default medium" },
      verification: str("What success looks like: acceptance criteria (required)"),
      verification_method: str("How to verify it"),
      execution: { type: "object", description: 'How the task is done: {"mode": "inline"} (default)' },
    },
    ["description"],
  ),
  spec(
    "update_task_status",
    "Set a task's status (pending -> in_progress -> completed -> verified, or blocked); completing one tells you the tasks it made ready.",
    {
      task_id: str("The task"),
      status: { type: "string", enum: TASK_STATUSES },
      completion_notes: str("How it was done (completed) or what was checked (verified)"),
    },
    ["task_id", "status"],
  ),
  spec("edit_task", "Change a task's description.", { task_id: str("The task"), description: str("The new description") }, ["task_id"]),
  spec("get_task_plan", "Your whole task plan, with a summary of its tasks' statuses.", {}),
  spec("delete_task", "Remove a task from your plan (refused while another task depends on it).", { task_id: str("The task") }, [
    "task_id",
  ]),
  spec("get_ready_tasks", "The pending tasks whose dependencies are all done.", {}),
  spec("get_blocked_tasks", "The pending tasks still waiting for a dependency, with the ids they wait for.", {}),
  spec("clear_task_plan", "Remove your whole task plan to start afresh.", {}),
]
