/**
 * MassGen's `orchestrator.coordination` sub-keys and the voting keys beside them, each read on its own.
 *
 * `COORDINATION_KEYS` and `VOTING_KEYS` hold, for every key MassGen v0.1.91
 * reads there, its type (checked by the schema, `file.ts`: a wrong type is
 * one line naming the key) and its *rule*: a `switch` is refused unless its
 * value is off (a feature switched off needs nothing); a `setting` configures
 * another key's feature and does nothing while that one is off; `ignored`
 * keys change only MassGen's logs or UI, never an answer (a warning says so).
 * `coordinationProblems(orchestrator)` gives one problem per key refused
 * (its reason, and how to run without it) or ignored. `verdictOf` says a
 * rule in words (`docs/coordination.md`, `scripts/measure-massgen-configs.ts --keys`). Pure.
 *
 * Words: *off* is the value that leaves massgen's behaviour as it is.
 */
import { Schema } from "effect"
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
  /** Implemented: `what` says what it does, in words for the verdict. */
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

const TASK_PLANNING = "enable_agent_task_planning"
const SUBAGENTS = "enable_subagents"
const BROADCAST = "broadcast"
const SKILLS = "use_skills"
const CHECKLIST = "voting_sensitivity: checklist_gated"

/** `orchestrator.coordination`: MassGen's `CoordinationConfig` keys (v0.1.91). */
export const COORDINATION_KEYS: Readonly<Record<string, KeySpec>> = {
  enable_planning_mode: flag("planning mode"),
  planning_mode_instruction: setting(Text, "enable_planning_mode"),
  plan_depth: setting(
    nullable(oneOf("dynamic", "shallow", "medium", "deep"), "dynamic, shallow, medium or deep"),
    "task planning (--plan)",
  ),
  plan_target_steps: setting(NullPositive, "task planning (--plan)"),
  plan_target_chunks: setting(NullPositive, "task planning (--plan)"),
  max_orchestration_restarts: {
    type: Count,
    rule: {
      kind: "supported",
      what: "the presenter may restart the orchestration this many times after judging the final answer incomplete (docs/coordination.md)",
    },
  },
  enable_agent_task_planning: flag("giving agents task planning tools"),
  max_tasks_per_plan: setting(PositiveInt, TASK_PLANNING),
  task_planning_filesystem_mode: setting(Bool, TASK_PLANNING),
  broadcast: unless(nullable(Schema.Literal(false, "agents", "human"), 'false, "agents" or "human"'), false, "broadcast (ask_others)"),
  broadcast_sensitivity: setting(Level, BROADCAST),
  response_depth: setting(Level, BROADCAST),
  broadcast_timeout: setting(Count, BROADCAST),
  broadcast_wait_by_default: setting(Bool, BROADCAST),
  max_broadcasts_per_agent: setting(Count, BROADCAST),
  enable_memory_filesystem_mode: flag("memory filesystem mode (memory files in the workspace)"),
  learning_capture_mode: setting(oneOf("round", "verification_and_final_only", "final_only"), `${SKILLS} or enable_memory_filesystem_mode`),
  disable_final_only_round_capture_fallback: setting(Bool, "learning_capture_mode: final_only"),
  compression_target_ratio: {
    type: Ratio,
    rule: { kind: "ignored", why: "massgen does not compress a conversation that outgrows the context (the call fails instead)" },
  },
  use_skills: flag("offering skills (SKILL.md bundles) to agents"),
  massgen_skills: setting(Strings, SKILLS),
  skills_directory: setting(Text, SKILLS),
  load_previous_session_skills: setting(Bool, SKILLS),
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
  checklist_criteria_preset: setting(
    nullable(
      Schema.Literal("persona", "decomposition", "evaluation", "prompt", "analysis", "planning", "spec", "round_evaluator"),
      "persona, decomposition, evaluation, prompt, analysis, planning, spec or round_evaluator",
    ),
    CHECKLIST,
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
      kind: "switch",
      feature: "checklist-gated voting",
      off: (value) => value !== "checklist_gated",
      offText: "lenient, balanced or strict",
      suggestion: "use lenient, balanced or strict",
    },
  },
  voting_threshold: setting(NullPositive, CHECKLIST),
  fairness_enabled: flag(
    "fairness (no agent more than fairness_lead_cap_answers answers ahead of the slowest)",
    "set fairness_enabled: false, which is how massgen runs",
  ),
  fairness_lead_cap_answers: setting(Count, "fairness_enabled"),
  max_midstream_injections_per_round: unless(
    NullCount,
    null,
    "a cap on the updates injected into one round",
    "remove it: massgen injects every new answer into a round in flight",
  ),
  defer_peer_updates_until_restart: flag("deferring peer updates until an agent's round restarts"),
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

/** One problem per refused or ignored key of a decoded `orchestrator:` mapping: its voting keys, then its `coordination`. */
export const coordinationProblems = (orchestrator: unknown): ReadonlyArray<ConfigProblem> => {
  if (orchestrator === null || typeof orchestrator !== "object") return []
  return [
    ...keyProblems("orchestrator", orchestrator, VOTING_KEYS),
    ...keyProblems("orchestrator.coordination", (orchestrator as Record<string, unknown>).coordination, COORDINATION_KEYS),
  ]
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
