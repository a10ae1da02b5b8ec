/**
 * What a decoded config holds: its agents and the run's settings.
 *
 * `configOf(file, agents)` turns a checked `ConfigFile` into a `Config`: the
 * `orchestrator` and `timeout_settings` keys become `RunSettings`, each key
 * not set taking its value from `DEFAULT_SETTINGS`, with `pricing`, the tool
 * timeout, the display and the batch budget beside them. `quickSettings` is
 * MassGen's `--quick` over such settings. Pure.
 *
 * Words: an `Agent` has its `id` (as written, or `agentN`) and its *anonId*
 * (`agentN`, by its position).
 */
import type { RunSettings } from "../events/index.ts"
import type { PermissionsBlock } from "../permissions/index.ts"
import { votingSettingsOf } from "./coordination.ts"
import type { BackendConfig, ConfigFile, Price } from "./file.ts"
import { type PlanningModeSettings, planningOf, type TaskPlanningSettings, withTaskPlanningGuide } from "./planning.ts"
import type { PythonTool } from "./python-tools.ts"
import { type WorkspaceLimits, workspaceLimitsOf } from "./workspaces.ts"

export interface Agent {
  readonly id: string
  readonly anonId: string
  readonly systemMessage: string | null
  readonly backend: BackendConfig
  /** MassGen's Python custom tools of its backend (`custom_tools` entries with a `path` and a `function`). */
  readonly pythonTools?: ReadonlyArray<PythonTool>
  /** The agent's own `voting_sensitivity`, over the run's. */
  readonly votingSensitivity?: "lenient" | "balanced" | "strict"
  /** Planning mode's instruction, added to the system message of the agent's rounds (`planning.ts`). */
  readonly planningInstruction?: string
}

export interface Config {
  readonly agents: ReadonlyArray<Agent>
  readonly settings: RunSettings
  readonly pricing: Readonly<Record<string, Price>>
  /** Seconds one tool call may run (`timeout_settings.tool_timeout_seconds`); absent: the default of `domain/tools/calls.ts`. */
  readonly toolTimeoutSeconds?: number
  /** `ui.display_type`: `plain` for `none`/`simple` (as `--no-display`), `live` for the terminal view; absent: the default. */
  readonly display?: "live" | "plain"
  /** `batch.budget_usd`: a batch starts no new item once its items have spent this much. */
  readonly batchBudgetUsd?: number
  /** `orchestrator.workspace_limits`, with the defaults for keys not set: what a snapshot or final copy may take. */
  readonly workspaceLimits?: WorkspaceLimits
  /** `use_skills`: where to look for SKILL.md bundles (`skills_directory`, as written) and whether earlier runs' skills are offered too. */
  readonly skills?: { readonly directory: string; readonly previousSessions: boolean }
  /** The top-level `permissions:` block, for every agent (each agent's own is on its backend: `domain/permissions/policy.ts`). */
  readonly permissions?: PermissionsBlock
  /** `enable_agent_task_planning`: the planning tools' settings (`planning.ts`). */
  readonly taskPlanning?: TaskPlanningSettings
  /** `enable_planning_mode`: which tools wait for the presentation (`planning.ts`). */
  readonly planningMode?: PlanningModeSettings
}

/** The run settings of a config that sets none of them. */
export const DEFAULT_SETTINGS: RunSettings = {
  max_new_answers_per_agent: null,
  skip_final_presentation: false,
  final_answer_strategy: "winner_present",
  orchestrator_timeout_seconds: 1800,
  agent_timeout_seconds: 600,
  budget_usd: null,
  disable_injection: false,
}

/** `orchestrator.coordination.max_orchestration_restarts`, 0 when unset. */
const restartsOf = (coordination: unknown): number => {
  const n = (coordination as { max_orchestration_restarts?: unknown } | undefined)?.max_orchestration_restarts
  return typeof n === "number" ? n : 0
}

/** The `Config` of a checked file and its agents. */
export const configOf = (file: ConfigFile, agents: ReadonlyArray<Agent>): Config => {
  const o = file.orchestrator ?? {}
  const t = file.timeout_settings ?? {}
  // MassGen: only the default strategy turns into reuse; an explicit winner_present or synthesize still presents.
  const strategy = o.final_answer_strategy ?? (o.skip_final_presentation === true ? "winner_reuse" : DEFAULT_SETTINGS.final_answer_strategy)
  const displayType = file.ui?.display_type ?? file.display?.type
  const c = (o.coordination ?? {}) as Readonly<Record<string, unknown>>
  const optional = {
    ...(c.use_skills === true ? { use_skills: true } : {}),
    ...(c.enable_memory_filesystem_mode === true ? { memory_filesystem_mode: true } : {}),
    ...memoryCaptureOf(c, o, strategy),
    ...(o.skip_voting !== undefined ? { skip_voting: o.skip_voting } : {}),
    ...(o.defer_voting_until_all_answered !== undefined ? { defer_voting_until_all_answered: o.defer_voting_until_all_answered } : {}),
    ...(o.max_new_answers_global !== undefined ? { max_new_answers_global: o.max_new_answers_global } : {}),
    ...(o.answer_novelty_requirement !== undefined ? { answer_novelty_requirement: o.answer_novelty_requirement } : {}),
    // checklist_gated is its own setting (`checklist`, from votingSettingsOf), not a bar of the prompt.
    ...(o.voting_sensitivity !== undefined && o.voting_sensitivity !== "checklist_gated"
      ? { voting_sensitivity: o.voting_sensitivity }
      : {}),
    ...votingSettingsOf(o),
    ...(t.initial_round_timeout_seconds !== undefined ? { initial_round_timeout_seconds: t.initial_round_timeout_seconds } : {}),
    ...(t.subsequent_round_timeout_seconds !== undefined ? { subsequent_round_timeout_seconds: t.subsequent_round_timeout_seconds } : {}),
    ...(t.round_timeout_grace_seconds !== undefined ? { round_timeout_grace_seconds: t.round_timeout_grace_seconds } : {}),
    ...(restartsOf(o.coordination) > 0 ? { max_orchestration_restarts: restartsOf(o.coordination) } : {}),
  }
  const planning = planningOf(o.coordination as Readonly<Record<string, unknown>> | undefined)
  const instruction = planning.planningMode?.instruction
  const tasks = planning.taskPlanning
  return {
    agents: agents.map((a) => ({
      ...a,
      ...(tasks === undefined ? {} : { systemMessage: withTaskPlanningGuide(a.systemMessage, tasks) }),
      ...(instruction === undefined ? {} : { planningInstruction: instruction }),
    })),
    ...planning,
    settings: {
      max_new_answers_per_agent: o.max_new_answers_per_agent ?? DEFAULT_SETTINGS.max_new_answers_per_agent,
      skip_final_presentation: strategy === "winner_reuse",
      final_answer_strategy: strategy,
      orchestrator_timeout_seconds: t.orchestrator_timeout_seconds ?? DEFAULT_SETTINGS.orchestrator_timeout_seconds,
      agent_timeout_seconds: t.agent_timeout_seconds ?? DEFAULT_SETTINGS.agent_timeout_seconds,
      budget_usd: o.budget_usd ?? DEFAULT_SETTINGS.budget_usd,
      disable_injection: o.disable_injection ?? DEFAULT_SETTINGS.disable_injection,
      ...(o.context_paths?.length
        ? {
            context_paths: o.context_paths.map((c) => ({
              path: c.path,
              permission: c.permission ?? "read",
              protected_paths: c.protected_paths ?? [],
            })),
          }
        : {}),
      ...optional,
    },
    pricing: file.pricing ?? {},
    workspaceLimits: workspaceLimitsOf(o.workspace_limits),
    ...(t.tool_timeout_seconds !== undefined ? { toolTimeoutSeconds: t.tool_timeout_seconds } : {}),
    ...(displayType !== undefined
      ? { display: displayType === "none" || displayType === "simple" ? ("plain" as const) : ("live" as const) }
      : {}),
    ...(typeof file.batch?.budget_usd === "number" ? { batchBudgetUsd: file.batch.budget_usd } : {}),
    ...(file.permissions !== undefined ? { permissions: file.permissions } : {}),
    ...(c.use_skills === true
      ? {
          skills: {
            directory: typeof c.skills_directory === "string" ? c.skills_directory : DEFAULT_SKILLS_DIRECTORY,
            previousSessions: c.load_previous_session_skills === true,
          },
        }
      : {}),
  }
}

/**
 * When rounds may write memory, by MassGen's `learning_capture_mode` (its default for a config file: `round`):
 * `verification_and_final_only` keeps them to the verification memo; `final_only` to none, unless no presentation
 * would consolidate (a reused answer, or `skip_voting`), and `disable_final_only_round_capture_fallback` is not set.
 */
const memoryCaptureOf = (
  c: Readonly<Record<string, unknown>>,
  o: { readonly skip_final_presentation?: boolean | undefined; readonly skip_voting?: boolean | undefined },
  strategy: string,
): { readonly memory_capture?: "verification" | "final" } => {
  if (c.enable_memory_filesystem_mode !== true) return {}
  if (c.learning_capture_mode === "verification_and_final_only") return { memory_capture: "verification" }
  if (c.learning_capture_mode !== "final_only") return {}
  const fallback =
    c.disable_final_only_round_capture_fallback !== true &&
    o.skip_final_presentation === true &&
    (o.skip_voting === true || (strategy !== "winner_present" && strategy !== "synthesize"))
  return fallback ? {} : { memory_capture: "final" }
}

/** MassGen's default `skills_directory`, relative to the working directory. */
export const DEFAULT_SKILLS_DIRECTORY = ".agent/skills"

/**
 * MassGen's `--quick`: one answer per agent and no presentation of its own.
 * Several agents: no injection, no vote before every agent has answered, and
 * the first agent synthesizes the answers (quick synthesize: no vote round);
 * one agent: no vote at all, its answer is the final answer.
 */
export const quickSettings = (settings: RunSettings, agents: number): RunSettings =>
  agents > 1
    ? {
        ...settings,
        max_new_answers_per_agent: 1,
        skip_final_presentation: false,
        final_answer_strategy: "synthesize",
        disable_injection: true,
        defer_voting_until_all_answered: true,
      }
    : { ...settings, max_new_answers_per_agent: 1, skip_final_presentation: true, final_answer_strategy: "winner_reuse", skip_voting: true }
