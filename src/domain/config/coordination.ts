/**
 * MassGen's `orchestrator.coordination` sub-keys and the voting keys beside them, each read on its own.
 *
 * `COORDINATION_KEYS` and `VOTING_KEYS` hold, for every key MassGen v0.1.91
 * reads there, its type (checked by the schema, `file.ts`: a wrong type is
 * one line naming the key) and its *rule*: a `switch` is refused unless its
 * value is off (a feature switched off needs nothing); a `setting` configures
 * another key's feature and does nothing while that one is off; `ignored`
 * keys change only MassGen's logs or UI, never an answer (a warning says so);
 * a `supported` key is a feature massgen has (skills, memory filesystem mode; the voting keys, which
 * `votingSettingsOf` turns into run settings: `domain/coordination/fairness.ts`).
 * `coordinationProblems(orchestrator)` gives one problem per key refused
 * (its reason, and how to run without it) or ignored. `verdictOf` says a
 * rule in words (`docs/coordination.md`, `scripts/measure-massgen-configs.ts --keys`). Pure.
 *
 * Words: *off* is the value that leaves massgen's behaviour as it is.
 */
import { Schema } from "effect"
import { type ChecklistSettings, type Criterion, DEFAULT_CRITERIA, type RunSettings } from "../events/index.ts"
import { type ConfigProblem, FiniteNumber, found, NonNegativeInt, oneOf, opt, PositiveInt } from "./schema.ts"

type Rule =
  | {
      readonly kind: "switch"
      /** What the key turns on, as a noun ("planning mode"). */
      readonly feature: string
      readonly off: (value: unknown) => boolean
      /** The off value in words, for the verdict ("false"). */
      readonly offText: string
      readonly suggestion: string
    }
  | { readonly kind: "setting"; readonly of: string }
  | { readonly kind: "ignored"; readonly why: string }
  /** A feature massgen has: accepted, whatever its value (`what`: what it does, for the verdict). */
  | { readonly kind: "supported"; readonly what: string }

export interface KeySpec {
  readonly type: Schema.Schema.AnyNoContext
  readonly rule: Rule
}

/** `schema` or null (MassGen's None), one message for both. */
const nullable = (schema: Schema.Schema.AnyNoContext, what: string) =>
  Schema.NullOr(schema).annotations({
    message: (issue) => ({ message: `Expected ${what} or null${found(issue as { actual: unknown })}`, override: true }),
  })
const Bool = Schema.Boolean
const Text = Schema.String
const Count = NonNegativeInt
const NullCount = nullable(NonNegativeInt, "a whole number of 0 or more")
const NullPositive = nullable(PositiveInt, "a whole number of 1 or more")
const Strings = nullable(Schema.Array(Schema.String), "a list of strings")
const Mapping = nullable(Schema.Record({ key: Schema.String, value: Schema.Unknown }), "a mapping")
const Level = oneOf("low", "medium", "high")
const Ratio = FiniteNumber.pipe(Schema.between(0, 1, { message: (issue) => `Expected a number from 0 to 1${found(issue)}` }))

const ISSUE = "is not supported yet (issue 27)"
const isOff = (offValue: unknown) => (value: unknown) => value === offValue || value === null
const enabledOff = (value: unknown) => value === null || typeof value !== "object" || (value as Record<string, unknown>).enabled !== true
const emptyOff = (value: unknown) => value === null || (typeof value === "object" && Object.keys(value as object).length === 0)

/** Refused unless `false`. */
const flag = (feature: string, suggestion = "remove it to run without it"): KeySpec => ({
  type: Schema.Boolean,
  rule: { kind: "switch", feature, off: isOff(false), offText: "false", suggestion },
})
/** Refused unless `off`. */
const unless = (type: Schema.Schema.AnyNoContext, off: unknown, feature: string, suggestion = "remove it to run without it"): KeySpec => ({
  type,
  rule: { kind: "switch", feature, off: isOff(off), offText: JSON.stringify(off), suggestion },
})
/** A mapping `{enabled, ...}`, refused when `enabled: true`. */
const generator = (feature: string): KeySpec => ({
  type: Mapping,
  rule: { kind: "switch", feature, off: enabledOff, offText: "enabled: false", suggestion: "remove it to run without it" },
})
const setting = (type: Schema.Schema.AnyNoContext, of: string): KeySpec => ({ type, rule: { kind: "setting", of } })
const supported = (type: Schema.Schema.AnyNoContext, what: string): KeySpec => ({ type, rule: { kind: "supported", what } })

const TASK_PLANNING = "enable_agent_task_planning"
const SUBAGENTS = "enable_subagents"
const BROADCAST = "broadcast"
const CHECKLIST = "voting_sensitivity: checklist_gated"

/** `orchestrator.coordination`: MassGen's `CoordinationConfig` keys (v0.1.91). */
export const COORDINATION_KEYS: Readonly<Record<string, KeySpec>> = {
  enable_planning_mode: supported(Bool, "planning mode: irreversible tools wait for the final presentation"),
  planning_mode_instruction: setting(Text, "enable_planning_mode"),
  // massgen's own: the tools planning mode blocks, in place of its default rule (docs/coordination.md).
  planning_mode_blocked_tools: setting(Strings, "enable_planning_mode"),
  plan_depth: setting(
    nullable(oneOf("dynamic", "shallow", "medium", "deep"), "dynamic, shallow, medium or deep"),
    "task planning (--plan)",
  ),
  plan_target_steps: setting(NullPositive, "task planning (--plan)"),
  plan_target_chunks: setting(NullPositive, "task planning (--plan)"),
  max_orchestration_restarts: supported(
    Count,
    "the presenter may restart the orchestration this many times after judging the final answer incomplete (docs/coordination.md)",
  ),
  enable_agent_task_planning: supported(Bool, "task planning tools (create_task_plan, add_task, ...)"),
  max_tasks_per_plan: setting(PositiveInt, TASK_PLANNING),
  task_planning_filesystem_mode: setting(Bool, TASK_PLANNING),
  broadcast: unless(nullable(Schema.Literal(false, "agents", "human"), 'false, "agents" or "human"'), false, "broadcast (ask_others)"),
  broadcast_sensitivity: setting(Level, BROADCAST),
  response_depth: setting(Level, BROADCAST),
  broadcast_timeout: setting(Count, BROADCAST),
  broadcast_wait_by_default: setting(Bool, BROADCAST),
  max_broadcasts_per_agent: setting(Count, BROADCAST),
  enable_memory_filesystem_mode: supported(
    Bool,
    "memory/short_term and memory/long_term in each workspace, their files shown to each round (docs/workspaces.md)",
  ),
  learning_capture_mode: supported(
    oneOf("round", "verification_and_final_only", "final_only"),
    "when rounds may write memory files (docs/workspaces.md#memory); a setting of enable_memory_filesystem_mode",
  ),
  disable_final_only_round_capture_fallback: supported(Bool, "final_only keeps rounds from writing memory even with no presentation"),
  compression_target_ratio: {
    type: Ratio,
    rule: { kind: "ignored", why: "massgen does not compress a conversation that outgrows the context (the call fails instead)" },
  },
  use_skills: supported(Bool, "the SKILL.md bundles found are offered to every agent, read-only (docs/workspaces.md)"),
  massgen_skills: {
    type: Strings,
    rule: { kind: "ignored", why: "it names MassGen's built-in skills, which are MassGen's own text: massgen ships none" },
  },
  skills_directory: supported(Text, "where use_skills looks first (default .agent/skills), relative to the working directory"),
  load_previous_session_skills: supported(Bool, "use_skills also offers the skills earlier runs' winners wrote (tasks/evolving_skill/)"),
  persona_generator: generator("persona generation"),
  evaluation_criteria_generator: generator("evaluation criteria generation"),
  prompt_improver: generator("prompt improvement before coordination"),
  pre_collab_voting_threshold: setting(NullPositive, "persona_generator, evaluation_criteria_generator or task_decomposer"),
  enable_subagents: flag("starting subagents"),
  subagent_default_timeout: setting(Count, SUBAGENTS),
  subagent_min_timeout: setting(Count, SUBAGENTS),
  subagent_max_timeout: setting(Count, SUBAGENTS),
  subagent_max_concurrent: setting(Count, SUBAGENTS),
  subagent_round_timeouts: setting(Mapping, SUBAGENTS),
  subagent_runtime_mode: setting(oneOf("isolated", "inherited"), SUBAGENTS),
  subagent_runtime_fallback_mode: setting(nullable(Schema.Literal("inherited"), "inherited"), SUBAGENTS),
  subagent_host_launch_prefix: setting(Strings, SUBAGENTS),
  subagent_orchestrator: setting(Mapping, SUBAGENTS),
  background_subagents: setting(Mapping, SUBAGENTS),
  subagent_types: setting(Strings, SUBAGENTS),
  round_evaluator_before_checklist: setting(Bool, SUBAGENTS),
  orchestrator_managed_round_evaluator: setting(Bool, SUBAGENTS),
  round_evaluator_skip_synthesis: setting(Bool, SUBAGENTS),
  round_evaluator_refine: setting(Bool, SUBAGENTS),
  round_evaluator_transformation_pressure: setting(oneOf("gentle", "balanced", "aggressive"), SUBAGENTS),
  enable_quality_rethink_on_iteration: setting(Bool, SUBAGENTS),
  enable_novelty_on_iteration: setting(Bool, SUBAGENTS),
  enable_execution_trace_analyzer: setting(Bool, SUBAGENTS),
  auto_trace_analysis: setting(Bool, SUBAGENTS),
  use_two_tier_workspace: flag("the two-tier workspace (scratch/ and deliverable/)"),
  task_decomposer: generator("task decomposition"),
  write_mode: unless(
    nullable(Schema.Literal("auto", "worktree", "isolated", "legacy"), "auto, worktree, isolated or legacy"),
    "legacy",
    "isolating agents' writes (write_mode auto, worktree or isolated)",
    "set write_mode: legacy, which is how massgen writes",
  ),
  drift_conflict_policy: setting(oneOf("skip", "prefer_presenter", "fail"), "write_mode: isolated"),
  enable_changedoc: flag("the changedoc decision journal", "set enable_changedoc: false to run without it"),
  evolving_criteria: flag("evolving evaluation criteria"),
  evolving_criteria_score_threshold: setting(Count, "evolving_criteria"),
  evolving_criteria_max_evolutions: setting(Count, "evolving_criteria"),
  evolving_criteria_min_high_score_count: setting(Count, "evolving_criteria"),
  evolving_criteria_timeout: setting(Count, "evolving_criteria"),
  enable_evaluator_personas: flag("the evaluator personas tool"),
  novelty_injection: unless(oneOf("none", "gentle", "moderate", "aggressive"), "none", "novelty injection"),
  improvements: {
    type: Mapping,
    rule: {
      kind: "switch",
      feature: "the quality gate of draft_approach",
      off: emptyOff,
      offText: "{}",
      suggestion: "remove it to run without it",
    },
  },
  checklist_criteria_preset: unless(
    nullable(
      Schema.Literal("persona", "decomposition", "evaluation", "prompt", "analysis", "planning", "spec", "round_evaluator"),
      "persona, decomposition, evaluation, prompt, analysis, planning, spec or round_evaluator",
    ),
    null,
    "MassGen's preset checklist criteria",
    "give the criteria in checklist_criteria_inline, or remove it for massgen's default criteria",
  ),
  checklist_criteria_inline: setting(
    nullable(Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })), "a list of mappings"),
    CHECKLIST,
  ),
  criteria_mode: unless(
    oneOf("static", "bootstrap_inline", "bootstrap_subagent"),
    "static",
    "criteria emerging during the run (criteria_mode)",
  ),
  bootstrap_max_per_agent_per_round: setting(Count, "criteria_mode: bootstrap_*"),
  bootstrap_max_total: setting(Count, "criteria_mode: bootstrap_*"),
  resume_from_log: unless(Mapping, null, "resuming from a MassGen log", "remove it; resume a massgen run with massgen resume"),
  checkpoint_enabled: flag("checkpoint coordination"),
  checkpoint_mode: setting(oneOf("conversation", "task"), "checkpoint_enabled"),
  checkpoint_guidance: setting(Text, "checkpoint_enabled"),
  checkpoint_gated_patterns: setting(Strings, "checkpoint_enabled"),
  standalone_checkpoint: generator("the standalone checkpoint tool"),
  web_review: {
    type: Bool,
    rule: { kind: "ignored", why: "MassGen's web UI review of changes (--web); it changes no answer" },
  },
  fast_iteration_mode: flag("fast iteration mode"),
  max_verifications_per_round: unless(NullCount, null, "fast iteration's cap on verifications per round"),
  max_internal_fix_loops: unless(NullCount, null, "fast iteration's cap on fix loops"),
  skip_redundant_scaffolding: flag("fast iteration's scaffolding guidance"),
}

/** MassGen's `voting_sensitivity`: massgen's three strictness levels and `checklist_gated`. */
const VotingSensitivity = oneOf("lenient", "balanced", "strict", "checklist_gated")

/** The voting keys of `orchestrator:` beside `coordination` (MassGen v0.1.91's `AgentConfig`). */
export const VOTING_KEYS: Readonly<Record<string, KeySpec>> = {
  voting_sensitivity: {
    type: VotingSensitivity,
    rule: {
      kind: "supported",
      what: "lenient, balanced, strict: the bar the prompt sets for a vote; checklist_gated: a vote counts only after the agent scored the shown answers with submit_checklist",
    },
  },
  voting_threshold: {
    type: NullPositive,
    rule: {
      kind: "supported",
      what: "with checklist_gated, MassGen's 1-10 strictness of the checklist (default 5): how many criteria the best answer must pass, at which score",
    },
  },
  fairness_enabled: {
    type: Bool,
    rule: { kind: "supported", what: "MassGen's fairness (the two caps below): on when true, or when unset and a cap is set" },
  },
  fairness_lead_cap_answers: {
    type: NullCount,
    rule: {
      kind: "supported",
      what: "with fairness, no new round for an agent whose next answer would put it more than this many ahead of the slowest active peer (default 1)",
    },
  },
  max_midstream_injections_per_round: {
    type: NullCount,
    rule: {
      kind: "supported",
      what: "with fairness, at most this many agents' new answers reach one round in flight; the rest wait for its next round (default 2)",
    },
  },
  defer_peer_updates_until_restart: {
    type: Bool,
    rule: { kind: "supported", what: "new answers wait for an agent's next round instead of reaching its round in flight" },
  },
}

const fieldsOf = (keys: Readonly<Record<string, KeySpec>>) =>
  Object.fromEntries(Object.entries(keys).map(([key, spec]) => [key, opt(spec.type)])) as Record<
    string,
    Schema.optionalWith<Schema.Schema.AnyNoContext, { exact: true }>
  >

/** The schema of `orchestrator.coordination`. */
export const CoordinationConfig = Schema.Struct(fieldsOf(COORDINATION_KEYS)).annotations({ identifier: "a coordination mapping" })

/** The voting keys, for `file.ts`'s orchestrator mapping. */
export const VotingOrchestratorFields = { ...fieldsOf(VOTING_KEYS), voting_sensitivity: opt(VotingSensitivity) }

const keyProblems = (at: string, section: unknown, keys: Readonly<Record<string, KeySpec>>): ReadonlyArray<ConfigProblem> => {
  if (section === null || typeof section !== "object") return []
  return Object.entries(section as Record<string, unknown>).flatMap(([key, value]): ReadonlyArray<ConfigProblem> => {
    const rule = keys[key]?.rule
    if (rule === undefined || rule.kind === "setting" || rule.kind === "supported") return []
    if (rule.kind === "ignored") return [{ path: `${at}.${key}`, message: `ignored: ${rule.why}`, kind: "warning" }]
    return rule.off(value) ? [] : [{ path: `${at}.${key}`, message: `${rule.feature} ${ISSUE}`, suggestion: rule.suggestion }]
  })
}

const WRITE_MODE_AT = "orchestrator.coordination.write_mode"

/** Whether the orchestrator names a context path the presenter may write (`permission: write`). */
const writesContext = (orchestrator: Record<string, unknown>): boolean =>
  Array.isArray(orchestrator.context_paths) &&
  orchestrator.context_paths.some((c) => c !== null && typeof c === "object" && (c as Record<string, unknown>).permission === "write")

/**
 * One problem per refused or ignored key of a decoded `orchestrator:` mapping: its voting keys, then its `coordination`.
 * `write_mode` isolates writes to context paths; with none written, it is a warning, not an error: each agent already
 * writes only its own workspace, and MassGen's per-round git branches inside that workspace are not made.
 */
export const coordinationProblems = (orchestrator: unknown): ReadonlyArray<ConfigProblem> => {
  if (orchestrator === null || typeof orchestrator !== "object") return []
  const o = orchestrator as Record<string, unknown>
  return [
    ...keyProblems("orchestrator", o, VOTING_KEYS),
    ...keyProblems("orchestrator.coordination", o.coordination, COORDINATION_KEYS),
  ].map(
    (problem): ConfigProblem =>
      problem.path === WRITE_MODE_AT && problem.kind !== "warning" && !writesContext(o)
        ? {
            path: WRITE_MODE_AT,
            message:
              "ignored: no context path is written, so there is nothing to isolate (each agent writes only its own workspace; MassGen's per-round git branches in it are not made)",
            kind: "warning",
          }
        : problem,
  )
}

/** A key's rule in words: "supported", "refused unless false: planning mode is not supported yet (issue 27)", ... */
export const verdictOf = (spec: KeySpec): string => {
  const rule = spec.rule
  switch (rule.kind) {
    case "switch":
      return `refused unless ${rule.offText}: ${rule.feature} ${ISSUE}`
    case "setting":
      return `accepted: a setting of ${rule.of}, no effect while that is off`
    case "ignored":
      return `accepted, ignored (warning): ${rule.why}`
    case "supported":
      return `supported: ${rule.what}`
  }
}

/** `checklist_gated`'s settings: `voting_threshold` (MassGen's `or 5`: unset, null or 0 is 5) and the inline criteria, else massgen's. */
const checklistOf = (o: Readonly<Record<string, unknown>>): ChecklistSettings => {
  const coordination = (o.coordination ?? {}) as Record<string, unknown>
  const inline = criteriaOf(coordination.checklist_criteria_inline ?? [])
  const criteria = typeof inline !== "string" && inline.length > 0 ? inline : DEFAULT_CRITERIA
  return { voting_threshold: typeof o.voting_threshold === "number" && o.voting_threshold > 0 ? o.voting_threshold : 5, criteria }
}

/**
 * Criteria as MassGen reads them (`checklist_criteria_inline`, `--eval-criteria`): a list, or `{criteria: [...]}`, of
 * mappings with `text` (or `description`, `name`), numbered E1, E2, ...; a string says what is wrong.
 */
export const criteriaOf = (value: unknown): ReadonlyArray<Criterion> | string => {
  const list = value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>).criteria : value
  if (!Array.isArray(list)) return 'expected a JSON list of criteria, or {"criteria": [...]}'
  const criteria: Array<Criterion> = []
  for (const [i, item] of list.entries()) {
    const c = item !== null && typeof item === "object" ? (item as Record<string, unknown>) : null
    const text = [c?.text, c?.description, c?.name].find((t): t is string => typeof t === "string" && t.trim() !== "")
    if (text === undefined) return `criterion ${i + 1} has no text (expected {"text": "...", "category": "primary|standard|stretch"})`
    criteria.push({ id: `E${i + 1}`, text })
  }
  return criteria
}

const FAIRNESS_LEAD_CAP = 1
const MIDSTREAM_CAP = 2

/**
 * The run settings of the voting keys: fairness is on when `fairness_enabled: true`, or when it is
 * not set and `fairness_lead_cap_answers` or `max_midstream_injections_per_round` is (MassGen has it
 * on unless `false`; massgen keeps a config without fairness keys as it ran before); when on, its caps
 * take MassGen's defaults.
 */
export const votingSettingsOf = (o: Readonly<Record<string, unknown>>): Partial<RunSettings> => {
  const set = (key: string) => o[key] !== undefined
  const fairness =
    o.fairness_enabled === true ||
    (o.fairness_enabled === undefined && (set("fairness_lead_cap_answers") || set("max_midstream_injections_per_round")))
  const cap = (key: string, fallback: number) => (set(key) ? (o[key] as number | null) : fallback)
  return {
    ...(fairness
      ? {
          fairness_lead_cap_answers: cap("fairness_lead_cap_answers", FAIRNESS_LEAD_CAP),
          max_midstream_injections_per_round: cap("max_midstream_injections_per_round", MIDSTREAM_CAP),
        }
      : {}),
    ...(o.defer_peer_updates_until_restart === true ? { defer_peer_updates_until_restart: true } : {}),
    ...(o.voting_sensitivity === "checklist_gated" ? { checklist: checklistOf(o) } : {}),
  }
}
