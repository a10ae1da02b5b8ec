/**
 * The run configuration: MassGen's YAML keys, decoded with Effect Schema.
 *
 * `decodeConfig(raw, env)` takes the parsed YAML document and the environment,
 * expands `${VAR}` in every string (a value that is one whole `${VAR}` where a
 * number or a boolean is expected is read as one), and returns either a `Config` or the list of
 * `ConfigProblem`s, each naming the key's path (`agents[1].backend.type`), what
 * was expected and what was found. It is pure: the environment comes in as a map.
 * A problem never shows what a `${VAR}` expanded to: a value that holds a
 * reference is shown as written (`found ${MY_KEY}`), and wherever else the
 * problem's message holds a referenced variable's value, its reference stands
 * instead; the credentials of a URL are masked (`safe-url.ts`).
 * `maskSecrets(raw)` gives the document as it may be written to a log
 * (`execution_metadata.yaml`): secret-looking keys hold `***` unless they only
 * name an environment variable, and URLs have their credentials masked.
 *
 * Words: an *agent* entry has an `id` (a safe name, `run-paths.ts`), an optional `system_message` and a
 * `backend`; the `orchestrator` section holds the coordination settings and
 * `timeout_settings` the two timeouts.
 */
import { Either, ParseResult, Schema } from "effect"
import type { RunSettings } from "./events.ts"
import { SafeName } from "./run-paths.ts"
import { hasMaskedCredential, maskUrlCredentials } from "./safe-url.ts"
import { mcpProblems } from "./mcp-config.ts"
import { type ConfigProblem, FiniteNumber, NonNegativeInt, PositiveInt, PositiveNumber, deleteAt, formatPath, found, oneOf, opt, setAt, valueAt } from "./config-schema.ts"
import { UNSUPPORTED_BACKENDS, type UnknownKey, featureProblems } from "./config-compat.ts"
import { CommandLineFields, CommandToolConfig, McpServers, ProviderFields, providerProblems, withoutPythonTools } from "./config-tools.ts"
import { WorkspaceBackendFields, WorkspaceOrchestratorFields, contextPathProblems } from "./config-workspaces.ts"

export { type ConfigProblem, type ProblemKind, formatProblem } from "./config-schema.ts"
export { CLAUDE_EFFORTS, CommandToolConfig, McpServerEntry, McpServers, PYTHON_TOOL_PROBLEM, REASONING_EFFORTS } from "./config-tools.ts"

/** Backend types the config accepts; each is built by `services/backend-factory.ts`. */
export const BACKEND_TYPES = [
  "scripted",
  "openai",
  "chatcompletion",
  "claude",
  "grok",
  "groq",
  "together",
  "openrouter",
  "cerebras",
  "fireworks",
  "gemini",
  "ollama",
  "lmstudio",
  "vllm",
  "sglang",
  "azure_openai",
  "zai",
] as const
export type BackendType = (typeof BACKEND_TYPES)[number]

const isHttpUrl = (text: string): boolean => {
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

/** An http(s) URL, and not a copy whose credentials were masked (`execution_metadata.yaml` keeps such copies). */
const BaseUrl = Schema.String.pipe(
  Schema.filter((text) =>
    !isHttpUrl(text)
      ? `Expected an http or https URL, found ${JSON.stringify(text)}`
      : hasMaskedCredential(text)
        ? `Expected a URL with its credentials, found ${JSON.stringify(text)}, masked as logs record it: write them as \${VAR}`
        : true,
  ),
)

/** One scripted reply, used in order before the `answer`/`vote` rules apply. */
export const ScriptStep = Schema.Union(
  Schema.Struct({ new_answer: Schema.String }),
  Schema.Struct({ vote: Schema.String, reason: opt(Schema.String) }),
  Schema.Struct({ text: Schema.String }),
  Schema.Struct({ fail: Schema.String }),
  Schema.Struct({ tool: Schema.String, args: opt(Schema.Record({ key: Schema.String, value: Schema.Unknown })) }),
).annotations({
  message: () => ({ message: "Expected one of {new_answer}, {vote, reason}, {text}, {fail} or {tool, args}", override: true }),
})
export type ScriptStep = typeof ScriptStep.Type

export const BackendConfig = Schema.Struct({
  type: oneOf(...BACKEND_TYPES),
  model: opt(Schema.String),
  base_url: opt(BaseUrl),
  api_key: opt(Schema.String),
  /** `azure_openai`: the resource's endpoint (`https://NAME.openai.azure.com/`), as `base_url` may give it too; and the API version. */
  endpoint: opt(BaseUrl),
  api_version: opt(Schema.String),
  temperature: opt(FiniteNumber.pipe(Schema.between(0, 2, { message: (issue) => `Expected a number from 0 to 2${found(issue)}` }))),
  max_tokens: opt(PositiveInt),
  max_retries: opt(NonNegativeInt),
  call_timeout_seconds: opt(PositiveNumber),
  ...ProviderFields,
  // scripted backend
  answer: opt(Schema.String),
  vote: opt(Schema.String.pipe(Schema.pattern(/^agent\d+$/, { message: () => "Expected agentN" }))),
  reason: opt(Schema.String),
  final: opt(Schema.String),
  delay_seconds: opt(FiniteNumber.pipe(Schema.nonNegative({ message: (issue) => `Expected a number of 0 or more${found(issue)}` }))),
  fail_calls: opt(NonNegativeInt),
  hang: opt(Schema.Boolean),
  keep_answering: opt(Schema.Boolean),
  script: opt(Schema.Array(ScriptStep)),
  /** Tool steps the scripted presenter plays before its final answer. */
  presentation_script: opt(Schema.Array(Schema.Struct({ tool: Schema.String, args: opt(Schema.Record({ key: Schema.String, value: Schema.Unknown })) }))),
  custom_tools: opt(Schema.Array(CommandToolConfig)),
  input_tokens: opt(NonNegativeInt),
  output_tokens: opt(NonNegativeInt),
  mcp_servers: opt(McpServers),
  ...CommandLineFields,
  ...WorkspaceBackendFields,
}).annotations({ identifier: "a backend mapping" })
export type BackendConfig = typeof BackendConfig.Type

const STRICTNESS = ["lenient", "balanced", "strict"] as const

export const AgentConfig = Schema.Struct({
  id: opt(SafeName),
  system_message: opt(Schema.String),
  /** MassGen's per-agent override of `orchestrator.voting_sensitivity`. */
  voting_sensitivity: opt(oneOf(...STRICTNESS)),
  backend: BackendConfig,
}).annotations({ identifier: "an agent mapping" })

export const Price = Schema.Struct({
  input: FiniteNumber.pipe(Schema.nonNegative({ message: (issue) => `Expected a price of 0 or more${found(issue)}` })),
  cached_input: opt(FiniteNumber.pipe(Schema.nonNegative({ message: (issue) => `Expected a price of 0 or more${found(issue)}` }))),
  output: FiniteNumber.pipe(Schema.nonNegative({ message: (issue) => `Expected a price of 0 or more${found(issue)}` })),
}).annotations({ identifier: "a price {input, cached_input, output}" })
export type Price = typeof Price.Type

const OrchestratorConfig = Schema.Struct({
  max_new_answers_per_agent: opt(Schema.NullOr(PositiveInt)),
  skip_final_presentation: opt(Schema.Boolean),
  final_answer_strategy: opt(oneOf("winner_present", "winner_reuse", "synthesize")),
  budget_usd: opt(Schema.NullOr(PositiveNumber)),
  disable_injection: opt(Schema.Boolean),
  ...WorkspaceOrchestratorFields,
  skip_voting: opt(Schema.Boolean),
  defer_voting_until_all_answered: opt(Schema.Boolean),
  max_new_answers_global: opt(Schema.NullOr(PositiveInt)),
  answer_novelty_requirement: opt(oneOf(...STRICTNESS)),
  voting_sensitivity: opt(oneOf(...STRICTNESS)),
}).annotations({ identifier: "an orchestrator mapping" })

const TimeoutSettings = Schema.Struct({
  orchestrator_timeout_seconds: opt(PositiveNumber),
  agent_timeout_seconds: opt(PositiveNumber),
  tool_timeout_seconds: opt(PositiveNumber),
  initial_round_timeout_seconds: opt(Schema.NullOr(PositiveNumber)),
  subsequent_round_timeout_seconds: opt(Schema.NullOr(PositiveNumber)),
  round_timeout_grace_seconds: opt(FiniteNumber.pipe(Schema.nonNegative({ message: (issue) => `Expected a number of 0 or more${found(issue)}` }))),
}).annotations({ identifier: "a timeout_settings mapping" })

/** MassGen's display types: `none` and `simple` print plain lines (as `--no-display`), the others the live view. */
export const DISPLAY_TYPES = ["rich_terminal", "textual_terminal", "simple", "none"] as const
const DisplayType = oneOf(...DISPLAY_TYPES)
/** `ui:` (MassGen's `display:` before it: `type` for `display_type`). */
const UiConfig = Schema.Struct({ display_type: opt(DisplayType), logging_enabled: opt(Schema.Boolean) }).annotations({ identifier: "a ui mapping" })
const DisplayConfig = Schema.Struct({ type: opt(DisplayType), logging_enabled: opt(Schema.Boolean) }).annotations({ identifier: "a display mapping" })
/** `batch:` keys, read by `massgen batch` only (a single run ignores them). */
const BatchConfig = Schema.Struct({
  budget_usd: opt(Schema.NullOr(PositiveNumber)),
}).annotations({ identifier: "a batch mapping" })

const ConfigFile = Schema.Struct({
  agents: opt(Schema.Array(AgentConfig).annotations({ identifier: "a list of agents" }).pipe(Schema.minItems(1, { message: () => "Expected at least one agent" }))),
  agent: opt(AgentConfig),
  orchestrator: opt(OrchestratorConfig),
  timeout_settings: opt(TimeoutSettings),
  pricing: opt(Schema.Record({ key: Schema.String, value: Price }).annotations({ identifier: "a pricing mapping of model names" })),
  ui: opt(UiConfig),
  display: opt(DisplayConfig),
  batch: opt(BatchConfig),
})

export interface Agent {
  readonly id: string
  readonly anonId: string
  readonly systemMessage: string | null
  readonly backend: BackendConfig
  /** The agent's own `voting_sensitivity`, over the run's. */
  readonly votingSensitivity?: "lenient" | "balanced" | "strict"
}

export interface Config {
  readonly agents: ReadonlyArray<Agent>
  readonly settings: RunSettings
  readonly pricing: Readonly<Record<string, Price>>
  /** Seconds one tool call may run (`timeout_settings.tool_timeout_seconds`); absent: the default of `tool-calls.ts`. */
  readonly toolTimeoutSeconds?: number
  /** `ui.display_type`: `plain` for `none`/`simple` (as `--no-display`), `live` for the terminal view; absent: the default. */
  readonly display?: "live" | "plain"
  /** `batch.budget_usd`: a batch starts no new item once its items have spent this much. */
  readonly batchBudgetUsd?: number
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/** Expands `${VAR}` in every string of `value`, noting each variable that is not set. */
export const expandEnv = (
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  problems: Array<ConfigProblem>,
  path: ReadonlyArray<PropertyKey> = [],
): unknown => {
  // MCP entries are expanded when their server starts, for the agents that use them (`domain/mcp-config.ts`).
  if (path.at(-1) === "mcp_servers" && path.at(-2) === "backend") return value
  if (typeof value === "string") {
    return value.replace(ENV_REF, (_, name: string) => {
      const found = env[name]
      if (found === undefined) {
        problems.push({ path: formatPath(path), message: `environment variable ${name} is not set` })
        return ""
      }
      return found
    })
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, problems, [...path, i]))
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, problems, [...path, k])]))
  }
  return value
}

/** Whether `value` (a string, or any string within it) holds a `${VAR}` reference. */
const holdsReference = (value: unknown): boolean =>
  typeof value === "string"
    ? new RegExp(ENV_REF.source).test(value)
    : value !== null && typeof value === "object" && Object.values(value).some(holdsReference)

/**
 * What a message about `written` (a part of the document as written) may not
 * show, and what it shows instead: each expanded string that holds a reference,
 * quoted (the string as written, quoted), and the value of each variable named
 * (`${NAME}`), longest first.
 */
const hiddenValues = (written: unknown, env: Readonly<Record<string, string | undefined>>): ReadonlyArray<readonly [string, string]> => {
  const pairs: Array<readonly [string, string]> = []
  const visit = (value: unknown): void => {
    if (typeof value === "string") {
      if (!holdsReference(value)) return
      pairs.push([JSON.stringify(expandEnv(value, env, [])), JSON.stringify(value)])
      for (const [, name] of value.matchAll(ENV_REF)) {
        const found = env[name!]
        if (found !== undefined && found.length >= MIN_HIDDEN_CHARS) pairs.push([found, `\${${name}}`])
      }
    } else if (value !== null && typeof value === "object") Object.values(value).forEach(visit)
  }
  visit(written)
  return pairs.sort((a, b) => b[0].length - a[0].length)
}

/** Variable values shorter than this (`9`, `true`) are only hidden where the message says what it found. */
const MIN_HIDDEN_CHARS = 4

/**
 * A problem's message as it may be shown: what was found, as written when it
 * holds a reference; no value of a variable it names; no URL credential.
 */
const shownMessage = (message: string, written: unknown, env: Readonly<Record<string, string | undefined>>): string => {
  if (!holdsReference(written)) return maskUrlCredentials(message)
  let out = message.replace(/, found [\s\S]*$/, `, found ${isWholeReference(written) ? String(written) : JSON.stringify(written)}`)
  for (const [value, shown] of hiddenValues(written, env)) out = out.split(value).join(shown)
  return maskUrlCredentials(out)
}

const isWholeReference = (value: unknown): boolean => typeof value === "string" && /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value)

/** A number or a boolean when `value` is the text of one (as YAML would read it unquoted), else `value`. */
const scalarOf = (value: unknown): unknown => {
  if (typeof value !== "string") return value
  const text = value.trim()
  if (text === "true" || text === "false") return text === "true"
  return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text) ? Number(text) : value
}

const decodeFile = Schema.decodeUnknownEither(ConfigFile, { errors: "all", onExcessProperty: "ignore" })

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

/** A document read in one pass: the config, when only warnings, unset variables and missing keys stand in its way, and every problem. */
export interface ConfigAnalysis {
  readonly config: Config | null
  readonly problems: ReadonlyArray<ConfigProblem>
}

/** The raw agent entries, with the path each is at (`agents[1]`, or `agent`). */
const rawAgents = (raw: Record<string, unknown>): ReadonlyArray<readonly [string, unknown]> =>
  Array.isArray(raw.agents) ? raw.agents.map((a, i) => [`agents[${i}]`, a] as const) : raw.agent !== undefined ? [["agent", raw.agent]] : []

const field = (value: unknown, key: string): unknown => (value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined)

/** Schema issues of a decode, one per path, none that a deeper one explains. */
const issuesOf = (error: ParseResult.ParseError): ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }> => {
  // A union reports one issue per member, and its parent the same failure again:
  // keep the first issue of each path, and no path that holds a deeper one.
  const byPath = new Map<string, { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const key = formatPath(issue.path)
    if (!byPath.has(key)) byPath.set(key, { path: issue.path, message: issue.message.replace(/, actual /, ", found ") })
  }
  const keys = [...byPath.keys()]
  return [...byPath].filter(([path]) => !keys.some((other) => other !== path && (path === "" || other.startsWith(`${path}.`) || other.startsWith(`${path}[`)))).map(([, issue]) => issue)
}

/** Where the agents of backends massgen does not support are (`agents[2]`, ...). */
const unsupportedAgentsOf = (doc: Record<string, unknown>): ReadonlyArray<string> =>
  rawAgents(doc).filter(([, a]) => UNSUPPORTED_BACKENDS[String(field(field(a, "backend"), "type"))] !== undefined).map(([at]) => at)

/**
 * Reads a parsed YAML document in one pass: every problem, errors and warnings
 * together. A value that fails its check is reported and left out, and the rest
 * is checked as if it were not there, so no problem waits for another to be
 * fixed. Unset `${VAR}`s are problems of kind `env` (whether they stop
 * anything is the caller's choice); a value that only fails because of one is
 * not reported again.
 */
export const analyzeConfig = (raw: unknown, env: Readonly<Record<string, string | undefined>>): ConfigAnalysis => {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return { config: null, problems: [{ path: "", message: `Expected a mapping with an agents list, found ${describe(raw)}` }] }
  }
  const doc = raw as Record<string, unknown>
  const problems: Array<ConfigProblem> = []
  const unset: Array<ConfigProblem> = []
  const expanded = withoutPythonTools(expandEnv(raw, env, unset), problems)
  problems.push(...unset.map((p) => ({ ...p, kind: "env" as const })))
  const unsetPaths = unset.map((p) => p.path)
  const unsupportedAgents = unsupportedAgentsOf(doc)
  let decoded = decodeFile(expanded)
  let typed = expanded
  // `max_tokens: ${MAX_TOKENS}`: a value that is one whole reference, found where a number or a
  // boolean was expected, is read as one when its text is one. Strings stay strings everywhere else.
  if (Either.isLeft(decoded)) {
    typed = ParseResult.ArrayFormatter.formatErrorSync(decoded.left).reduce<unknown>(
      (d, issue) => (isWholeReference(valueAt(raw, issue.path)) ? setAt(d, issue.path, scalarOf(valueAt(d, issue.path))) : d),
      expanded,
    )
    if (typed !== expanded) decoded = decodeFile(typed)
  }
  // Mappings that lost a value: what the later checks find in them may only follow from that.
  const damaged: Array<string> = []
  if (Either.isLeft(decoded)) {
    let rest = typed
    for (const issue of issuesOf(decoded.left)) {
      const path = formatPath(issue.path)
      rest = deleteAt(rest, issue.path)
      const under = (p: string) => path === p || path.startsWith(`${p}.`) || path.startsWith(`${p}[`)
      if (unsetPaths.some(under)) continue
      damaged.push(formatPath(issue.path.slice(0, -1)))
      const agentAt = unsupportedAgents.find((at) => path === `${at}.backend.type`)
      if (agentAt !== undefined) {
        problems.push({ path, message: UNSUPPORTED_BACKENDS[String(field(field(valueAt(raw, issue.path.slice(0, -2)), "backend"), "type"))]! })
        continue
      }
      problems.push({ path, message: shownMessage(issue.message, valueAt(raw, issue.path), env) })
    }
    // The rest is checked too; what still fails after that is already said.
    decoded = decodeFile(rest)
  }
  problems.push(...documentProblems(doc, unsupportedAgents))
  if (Either.isLeft(decoded)) return { config: null, problems }
  const checked = problems.length
  const file = decoded.right
  const entries = file.agents ?? (file.agent ? [file.agent] : [])
  if (entries.length === 0 && !problems.some((p) => p.path === "agents" || p.path.startsWith("agents["))) {
    problems.push({ path: "agents", message: "Expected a list of at least one agent, found none" })
  }
  if (file.agents && file.agent) problems.push({ path: "agent", message: "Expected either agents or agent, found both" })
  const agents = entries.map((entry, i): Agent => ({
    id: entry.id ?? `agent${i + 1}`,
    anonId: `agent${i + 1}`,
    systemMessage: entry.system_message ?? null,
    backend: entry.backend,
    ...(entry.voting_sensitivity !== undefined ? { votingSensitivity: entry.voting_sensitivity } : {}),
  }))
  const seen = new Set<string>()
  agents.forEach((agent, i) => {
    if (seen.has(agent.id)) problems.push({ path: `agents[${i}].id`, message: `Expected a unique id, found ${JSON.stringify(agent.id)} again` })
    seen.add(agent.id)
    const vote = agent.backend.vote
    if (vote !== undefined && Number(vote.slice(5)) > agents.length) {
      problems.push({
        path: `agents[${i}].backend.vote`,
        message: `Expected agent1..agent${agents.length}, found ${JSON.stringify(vote)}`,
      })
    }
    problems.push(...providerProblems(agent, i))
    problems.push(...mcpProblems(agent.backend.mcp_servers, `agents[${i}].backend.mcp_servers`))
    const toolNames = new Set<string>()
    agent.backend.custom_tools?.forEach((tool, j) => {
      const path = `agents[${i}].backend.custom_tools[${j}].name`
      if (tool.name === "new_answer" || tool.name === "vote") problems.push({ path, message: `Expected a name other than the workflow tool ${tool.name}` })
      else if (toolNames.has(tool.name)) problems.push({ path, message: `Expected a unique tool name, found ${JSON.stringify(tool.name)} again` })
      toolNames.add(tool.name)
    })
    const at = file.agents ? `agents[${i}]` : "agent"
    if (agent.backend.type === "chatcompletion" && field(field(valueAt(raw, at === "agent" ? ["agent"] : ["agents", i]), "backend"), "base_url") === undefined) {
      problems.push({ path: `${at}.backend.base_url`, message: "Expected a base_url for type chatcompletion, found none" })
    }
  })
  problems.push(...contextPathProblems(file.orchestrator?.context_paths))
  const within = (path: string, parent: string) => parent === "" || path === parent || path.startsWith(`${parent}.`) || path.startsWith(`${parent}[`)
  const found = [...problems.slice(0, checked), ...problems.slice(checked).filter((p) => !damaged.some((d) => within(p.path, d)))]
  if (damaged.length > 0 || found.some((p) => p.kind === undefined)) return { config: null, problems: found }
  return { config: configOf(file, agents), problems: found }
}

/** What MassGen's validator refuses that the schema lets through: an agent without `id`, a `chatcompletion` agent without `model`. */
const massgenProblems = (doc: Record<string, unknown>): ReadonlyArray<ConfigProblem> =>
  rawAgents(doc).flatMap(([at, entry]): ReadonlyArray<ConfigProblem> => {
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return []
    const out: Array<ConfigProblem> = []
    if (field(entry, "id") === undefined) out.push({ path: `${at}.id`, message: "Expected an id (MassGen requires one), found none", suggestion: `add id: "agent_a"` })
    const backend = field(entry, "backend")
    if (field(backend, "type") === "chatcompletion" && field(backend, "model") === undefined) {
      out.push({ path: `${at}.backend.model`, message: "Expected a model for type chatcompletion, found none", suggestion: `add model: "model-name"` })
    }
    return out
  })

type ConfigFile = typeof ConfigFile.Type

const configOf = (file: ConfigFile, agents: ReadonlyArray<Agent>): Config => {
  const o = file.orchestrator ?? {}
  const t = file.timeout_settings ?? {}
  // MassGen: only the default strategy turns into reuse; an explicit winner_present or synthesize still presents.
  const strategy = o.final_answer_strategy ?? (o.skip_final_presentation === true ? "winner_reuse" : DEFAULT_SETTINGS.final_answer_strategy)
  const displayType = file.ui?.display_type ?? file.display?.type
  const optional = {
    ...(o.skip_voting !== undefined ? { skip_voting: o.skip_voting } : {}),
    ...(o.defer_voting_until_all_answered !== undefined ? { defer_voting_until_all_answered: o.defer_voting_until_all_answered } : {}),
    ...(o.max_new_answers_global !== undefined ? { max_new_answers_global: o.max_new_answers_global } : {}),
    ...(o.answer_novelty_requirement !== undefined ? { answer_novelty_requirement: o.answer_novelty_requirement } : {}),
    ...(o.voting_sensitivity !== undefined ? { voting_sensitivity: o.voting_sensitivity } : {}),
    ...(t.initial_round_timeout_seconds !== undefined ? { initial_round_timeout_seconds: t.initial_round_timeout_seconds } : {}),
    ...(t.subsequent_round_timeout_seconds !== undefined ? { subsequent_round_timeout_seconds: t.subsequent_round_timeout_seconds } : {}),
    ...(t.round_timeout_grace_seconds !== undefined ? { round_timeout_grace_seconds: t.round_timeout_grace_seconds } : {}),
  }
  return {
    agents,
    settings: {
      max_new_answers_per_agent: o.max_new_answers_per_agent ?? DEFAULT_SETTINGS.max_new_answers_per_agent,
      skip_final_presentation: strategy === "winner_reuse",
      final_answer_strategy: strategy,
      orchestrator_timeout_seconds: t.orchestrator_timeout_seconds ?? DEFAULT_SETTINGS.orchestrator_timeout_seconds,
      agent_timeout_seconds: t.agent_timeout_seconds ?? DEFAULT_SETTINGS.agent_timeout_seconds,
      budget_usd: o.budget_usd ?? DEFAULT_SETTINGS.budget_usd,
      disable_injection: o.disable_injection ?? DEFAULT_SETTINGS.disable_injection,
      ...(o.context_paths?.length ? { context_paths: o.context_paths.map((c) => ({ path: c.path, permission: c.permission ?? "read", protected_paths: c.protected_paths ?? [] })) } : {}),
      ...optional,
    },
    pricing: file.pricing ?? {},
    ...(t.tool_timeout_seconds !== undefined ? { toolTimeoutSeconds: t.tool_timeout_seconds } : {}),
    ...(displayType !== undefined ? { display: displayType === "none" || displayType === "simple" ? ("plain" as const) : ("live" as const) } : {}),
    ...(typeof file.batch?.budget_usd === "number" ? { batchBudgetUsd: file.batch.budget_usd } : {}),
  }
}

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

/** Decodes a parsed YAML document into a `Config`, or every problem that stops a run (warnings are left to `unknownKeys`). */
export const decodeConfig = (
  raw: unknown,
  env: Readonly<Record<string, string | undefined>>,
): Either.Either<Config, ReadonlyArray<ConfigProblem>> => {
  const { config, problems } = analyzeConfig(raw, env)
  const stopping = problems.filter((p) => p.kind !== "warning")
  return config !== null && stopping.length === 0 ? Either.right(config) : Either.left(stopping)
}

const decodeStrict = Schema.decodeUnknownEither(ConfigFile, { errors: "all", onExcessProperty: "error" })

/** The keys the config schema does not know, each with the keys it knows there. Script steps are left out (their union would report the keys of the other step kinds). */
const unknownKeyList = (raw: unknown): ReadonlyArray<UnknownKey> => {
  const decoded = decodeStrict(raw)
  if (Either.isRight(decoded)) return []
  const seen = new Set<string>()
  return ParseResult.ArrayFormatter.formatErrorSync(decoded.left).flatMap((issue) => {
    const path = formatPath(issue.path)
    // MassGen's Python custom tools are a problem of their own (PYTHON_TOOL_PROBLEM), not a list of unknown keys.
    if (issue._tag !== "Unexpected" || seen.has(path) || /\.script\[/.test(path) || /\.custom_tools\[\d+\]\.(path|function|category|preset_args|default_params)$/.test(path)) return []
    seen.add(path)
    const expected = /expected: (.*)$/.exec(issue.message)?.[1]?.replace(/"/g, "").split(" | ") ?? []
    return [{ path, known: expected }]
  })
}

/** What `documentProblems` found of each document: a run asks twice (its config, then its warnings). */
const documentProblemsOf = new WeakMap<object, ReadonlyArray<ConfigProblem>>()

/**
 * The problems of the document as written, whatever the environment: its
 * unknown keys and MassGen features (but under the agents of `unsupported`
 * backends, which are problems of their own), and what it says of logging.
 * Every warning of `analyzeConfig` is one of these.
 */
const documentProblems = (doc: Record<string, unknown>, unsupported: ReadonlyArray<string>): ReadonlyArray<ConfigProblem> => {
  const known = documentProblemsOf.get(doc)
  if (known !== undefined) return known
  const unknown = unknownKeyList(doc).filter((k) => !unsupported.some((at) => k.path.startsWith(`${at}.`)))
  const problems: Array<ConfigProblem> = [...featureProblems(unknown), ...massgenProblems(doc)]
  for (const section of ["ui", "display"] as const) {
    if (field(doc[section], "logging_enabled") === false) {
      problems.push({
        path: `${section}.logging_enabled`,
        message: "false is not honoured: massgen always writes the run's log directory (events.jsonl is what status, resume and replay read)",
        kind: "warning",
      })
    }
  }
  documentProblemsOf.set(doc, problems)
  return problems
}

/**
 * The warnings a run prints and goes on: keys the config does not know, which
 * a run ignores (most often a typo, `skip_final_presentaton`: each names the
 * key it may stand for), and MassGen features that are ignored. MassGen
 * features that are refused are problems of `decodeConfig`. The same as the
 * warnings of `analyzeConfig(raw, env)`, whatever `env`; found once per
 * document, which `analyzeConfig` reads too.
 */
export const unknownKeys = (raw: unknown): ReadonlyArray<ConfigProblem> => {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return []
  const doc = raw as Record<string, unknown>
  return documentProblems(doc, unsupportedAgentsOf(doc)).filter((p) => p.kind === "warning")
}

const describe = (value: unknown): string =>
  value === null || value === undefined ? "an empty document" : Array.isArray(value) ? "a list" : `${typeof value} ${JSON.stringify(value)}`

const SECRET_KEY = /(api_?key|token|secret|password|authorization)/i
const ONLY_ENV_REF = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/

/** The raw config as it may be logged: literal secrets become `***`, and URL credentials too; `${VAR}` references stay. */
export const maskSecrets = (value: unknown, key = ""): unknown => {
  if (typeof value === "string") return SECRET_KEY.test(key) && !ONLY_ENV_REF.test(value) ? "***" : maskUrlCredentials(value)
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, key))
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, k)]))
  }
  return value
}
