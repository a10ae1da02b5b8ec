/**
 * The planning keys of `orchestrator.coordination` as a run uses them: task planning tools and planning mode.
 *
 * `planningOf(coordination)` reads `enable_agent_task_planning` (with
 * `max_tasks_per_plan`, default 10, and `task_planning_filesystem_mode`) and
 * `enable_planning_mode` (with `planning_mode_instruction` and massgen's own
 * `planning_mode_blocked_tools`) from a checked coordination mapping; a feature
 * switched off gives nothing. `withTaskPlanningGuide` adds to an agent's system
 * message how to use the planning tools (MassGen's prompt has a task planning
 * section; this is massgen's own, shorter). Pure.
 */

/** `enable_agent_task_planning`: every agent gets the planning tools (`services/tools/planning-tools.ts`). */
export interface TaskPlanningSettings {
  readonly maxTasks: number
  /** Also keep the plan in `tasks/plan.json` of the agent's workspace. */
  readonly filesystemMode: boolean
}

/** `enable_planning_mode`: during coordination the irreversible tools are refused (`domain/tools/planning/mode.ts`). */
export interface PlanningModeSettings {
  /** Added to each agent's system message in its rounds (not in the presentation). */
  readonly instruction: string
  /** The tools refused during coordination, by name (a trailing `*`: a prefix); null: the default rule. */
  readonly blockedTools: ReadonlyArray<string> | null
}

/** MassGen's default `max_tasks_per_plan`. */
export const DEFAULT_MAX_TASKS = 10

export const DEFAULT_PLANNING_INSTRUCTION =
  "Planning mode: while the agents coordinate, do not act on the world. Tools with lasting effects (sending, posting, running commands, writing outside your workspace) are refused now; describe exactly what you would do with them instead. The agent chosen to present the final answer carries the plan out."

export const planningOf = (
  coordination: Readonly<Record<string, unknown>> | undefined,
): { readonly taskPlanning?: TaskPlanningSettings; readonly planningMode?: PlanningModeSettings } => {
  const c = coordination ?? {}
  const taskPlanning: TaskPlanningSettings | undefined =
    c.enable_agent_task_planning === true
      ? {
          maxTasks: typeof c.max_tasks_per_plan === "number" ? c.max_tasks_per_plan : DEFAULT_MAX_TASKS,
          filesystemMode: c.task_planning_filesystem_mode === true,
        }
      : undefined
  const planningMode: PlanningModeSettings | undefined =
    c.enable_planning_mode === true
      ? {
          instruction:
            typeof c.planning_mode_instruction === "string" && c.planning_mode_instruction.trim() !== ""
              ? c.planning_mode_instruction
              : DEFAULT_PLANNING_INSTRUCTION,
          blockedTools: Array.isArray(c.planning_mode_blocked_tools) ? (c.planning_mode_blocked_tools as ReadonlyArray<string>) : null,
        }
      : undefined
  return { ...(taskPlanning ? { taskPlanning } : {}), ...(planningMode ? { planningMode } : {}) }
}

/** What an agent with the planning tools is told of them, in every request of its own. */
export const taskPlanningGuide = (settings: TaskPlanningSettings): string =>
  `Task planning: for work of several steps, first make a plan with create_task_plan (each task with its verification criteria, at most ${settings.maxTasks} tasks), mark each task in_progress, completed and then verified with update_task_status as you go, and read the plan back with get_task_plan or get_ready_tasks.${settings.filesystemMode ? " Your plan is also kept in tasks/plan.json in your workspace." : ""}`

/** `systemMessage` with the task planning guide after it. */
export const withTaskPlanningGuide = (systemMessage: string | null, settings: TaskPlanningSettings): string => {
  const guide = taskPlanningGuide(settings)
  return systemMessage === null || systemMessage.trim() === "" ? guide : `${systemMessage.trim()}\n\n${guide}`
}
