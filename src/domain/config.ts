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
import { type ConfigProblem, FiniteNumber, NonNegativeInt, PositiveInt, PositiveNumber, formatPath, found, oneOf, opt, setAt, valueAt } from "./config-schema.ts"
import { CommandToolConfig, McpServers, ProviderFields, providerProblems, withoutPythonTools } from "./config-tools.ts"

export { type ConfigProblem, formatProblem } from "./config-schema.ts"
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
  custom_tools: opt(Schema.Array(CommandToolConfig)),
  input_tokens: opt(NonNegativeInt),
  output_tokens: opt(NonNegativeInt),
  mcp_servers: opt(McpServers),
}).annotations({ identifier: "a backend mapping" })
export type BackendConfig = typeof BackendConfig.Type

export const AgentConfig = Schema.Struct({
  id: opt(SafeName),
  system_message: opt(Schema.String),
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
}).annotations({ identifier: "an orchestrator mapping" })

const TimeoutSettings = Schema.Struct({
  orchestrator_timeout_seconds: opt(PositiveNumber),
  agent_timeout_seconds: opt(PositiveNumber),
  tool_timeout_seconds: opt(PositiveNumber),
}).annotations({ identifier: "a timeout_settings mapping" })

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
  batch: opt(BatchConfig),
})

export interface Agent {
  readonly id: string
  readonly anonId: string
  readonly systemMessage: string | null
  readonly backend: BackendConfig
}

export interface Config {
  readonly agents: ReadonlyArray<Agent>
  readonly settings: RunSettings
  readonly pricing: Readonly<Record<string, Price>>
  /** Seconds one tool call may run (`timeout_settings.tool_timeout_seconds`); absent: the default of `tool-calls.ts`. */
  readonly toolTimeoutSeconds?: number
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

/** Decodes a parsed YAML document into a `Config`, or every problem found in it. */
export const decodeConfig = (
  raw: unknown,
  env: Readonly<Record<string, string | undefined>>,
): Either.Either<Config, ReadonlyArray<ConfigProblem>> => {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return Either.left([{ path: "", message: `Expected a mapping with an agents list, found ${describe(raw)}` }])
  }
  const problems: Array<ConfigProblem> = []
  const expanded = withoutPythonTools(expandEnv(raw, env, problems), problems)
  let decoded = decodeFile(expanded)
  // `max_tokens: ${MAX_TOKENS}`: a value that is one whole reference, found where a number or a
  // boolean was expected, is read as one when its text is one. Strings stay strings everywhere else.
  if (Either.isLeft(decoded)) {
    const typed = ParseResult.ArrayFormatter.formatErrorSync(decoded.left).reduce<unknown>(
      (doc, issue) => (isWholeReference(valueAt(raw, issue.path)) ? setAt(doc, issue.path, scalarOf(valueAt(doc, issue.path))) : doc),
      expanded,
    )
    if (typed !== expanded) decoded = decodeFile(typed)
  }
  if (Either.isLeft(decoded)) {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left).map((issue) => ({
      path: formatPath(issue.path),
      message: shownMessage(issue.message.replace(/, actual /, ", found "), valueAt(raw, issue.path), env),
    }))
    // A union reports one issue per member, and its parent the same failure again:
    // keep the first issue of each path, and no path that holds a deeper one.
    const byPath = new Map<string, string>()
    for (const issue of issues) if (!byPath.has(issue.path)) byPath.set(issue.path, issue.message)
    const paths = [...byPath.keys()]
    for (const [path, message] of byPath) {
      const hasDeeper = paths.some((other) => other !== path && (path === "" || other.startsWith(`${path}.`) || other.startsWith(`${path}[`)))
      if (!hasDeeper) problems.push({ path, message })
    }
    return Either.left(problems)
  }
  const file = decoded.right
  const entries = file.agents ?? (file.agent ? [file.agent] : [])
  if (entries.length === 0) problems.push({ path: "agents", message: "Expected a list of at least one agent, found none" })
  if (file.agents && file.agent) problems.push({ path: "agent", message: "Expected either agents or agent, found both" })
  const agents = entries.map((entry, i): Agent => ({
    id: entry.id ?? `agent${i + 1}`,
    anonId: `agent${i + 1}`,
    systemMessage: entry.system_message ?? null,
    backend: entry.backend,
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
    if (agent.backend.type === "chatcompletion" && agent.backend.base_url === undefined) {
      problems.push({ path: `agents[${i}].backend.base_url`, message: "Expected a base_url for type chatcompletion, found none" })
    }
  })
  if (problems.length > 0) return Either.left(problems)
  const o = file.orchestrator ?? {}
  const skip = o.skip_final_presentation ?? DEFAULT_SETTINGS.skip_final_presentation
  return Either.right({
    agents,
    settings: {
      max_new_answers_per_agent: o.max_new_answers_per_agent ?? DEFAULT_SETTINGS.max_new_answers_per_agent,
      skip_final_presentation: skip,
      final_answer_strategy: o.final_answer_strategy ?? (skip ? "winner_reuse" : DEFAULT_SETTINGS.final_answer_strategy),
      orchestrator_timeout_seconds: file.timeout_settings?.orchestrator_timeout_seconds ?? DEFAULT_SETTINGS.orchestrator_timeout_seconds,
      agent_timeout_seconds: file.timeout_settings?.agent_timeout_seconds ?? DEFAULT_SETTINGS.agent_timeout_seconds,
      budget_usd: o.budget_usd ?? DEFAULT_SETTINGS.budget_usd,
      disable_injection: o.disable_injection ?? DEFAULT_SETTINGS.disable_injection,
    },
    pricing: file.pricing ?? {},
    ...(file.timeout_settings?.tool_timeout_seconds !== undefined ? { toolTimeoutSeconds: file.timeout_settings.tool_timeout_seconds } : {}),
    ...(typeof file.batch?.budget_usd === "number" ? { batchBudgetUsd: file.batch.budget_usd } : {}),
  })
}

const decodeStrict = Schema.decodeUnknownEither(ConfigFile, { errors: "all", onExcessProperty: "error" })

/**
 * Keys the config does not know, which a run ignores: most often a typo
 * (`skip_final_presentaton`). Warnings, not problems: MassGen configs carry
 * keys for features this tool does not have. Script steps are left out (their
 * union would report the keys of the other step kinds).
 */
export const unknownKeys = (raw: unknown): ReadonlyArray<ConfigProblem> => {
  const decoded = decodeStrict(raw)
  if (Either.isRight(decoded)) return []
  const seen = new Set<string>()
  return ParseResult.ArrayFormatter.formatErrorSync(decoded.left).flatMap((issue) => {
    const path = formatPath(issue.path)
    // MassGen's Python custom tools are a problem of their own (PYTHON_TOOL_PROBLEM), not a list of unknown keys.
    if (issue._tag !== "Unexpected" || seen.has(path) || /\.script\[/.test(path) || /\.custom_tools\[\d+\]\.(path|function|category)$/.test(path)) return []
    seen.add(path)
    const expected = /expected: (.*)$/.exec(issue.message)?.[1]?.replace(/"/g, "").split(" | ").join(", ")
    return [{ path, message: `unknown key, ignored${expected ? ` (known keys here: ${expected})` : ""}` }]
  })
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
