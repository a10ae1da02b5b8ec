/**
 * The config file's schema: every key MassGen's YAML may hold, as Effect Schema.
 *
 * `ConfigFile` is the document as a whole (`agents` or `agent`, `orchestrator`,
 * `timeout_settings`, `pricing`, `ui`/`display`, `batch`, `permissions`); `BackendConfig` an
 * agent's `backend:` mapping, made of its own keys and those of
 * `tools.ts`, `gemini.ts`, `workspaces.ts` and `permissions.ts`. Each check fails with a
 * one-line message that names what was expected and what was found
 * (`schema.ts`). `index.ts` decodes with these; they say nothing of
 * `${VAR}` references or of how problems are shown. Pure.
 *
 * Words: an *agent* entry has an `id` (a safe name, `run-paths.ts`), an optional
 * `system_message` and a `backend`; the `orchestrator` section holds the
 * coordination settings and `timeout_settings` the timeouts.
 */
import { Schema } from "effect"
import { hasMaskedCredential } from "../../lib/safe-url.ts"
import { SafeName } from "../run-paths.ts"
import { CliAgentFields } from "./cli-agents.ts"
import { CoordinationConfig, VotingOrchestratorFields } from "./coordination.ts"
import { GeminiFields } from "./gemini.ts"
import { MediaBackendFields, MediaOrchestratorFields } from "./media.ts"
import { PermissionsConfig } from "./permissions.ts"
import { BACKEND_TYPES } from "./presets.ts"
import { FiniteNumber, found, NonNegativeInt, oneOf, opt, PositiveInt, PositiveNumber } from "./schema.ts"
import { CommandLineFields, CommandToolConfig, McpServers, ProviderFields } from "./tools.ts"
import { WorkspaceBackendFields, WorkspaceOrchestratorFields } from "./workspaces.ts"

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

/** Seconds and the like: a finite number of 0 or more. */
const NonNegativeNumber = FiniteNumber.pipe(Schema.nonNegative({ message: (issue) => `Expected a number of 0 or more${found(issue)}` }))

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
  /** The most one call's reply may hold, in bytes (text, reasoning, tool calls); `backends/sdk-stream.ts` has the default. */
  max_reply_bytes: opt(PositiveInt),
  ...ProviderFields,
  ...GeminiFields,
  ...CliAgentFields,
  // scripted backend
  answer: opt(Schema.String),
  vote: opt(Schema.String.pipe(Schema.pattern(/^agent\d+$/, { message: () => "Expected agentN" }))),
  reason: opt(Schema.String),
  final: opt(Schema.String),
  delay_seconds: opt(NonNegativeNumber),
  fail_calls: opt(NonNegativeInt),
  hang: opt(Schema.Boolean),
  keep_answering: opt(Schema.Boolean),
  script: opt(Schema.Array(ScriptStep)),
  /** Tool steps the scripted presenter plays before its final answer. */
  presentation_script: opt(
    Schema.Array(Schema.Struct({ tool: Schema.String, args: opt(Schema.Record({ key: Schema.String, value: Schema.Unknown })) })),
  ),
  custom_tools: opt(Schema.Array(CommandToolConfig)),
  /** MassGen's: adds its registry's MCP servers (`python-tools.ts`, `withDiscoveredServers`). */
  auto_discover_custom_tools: opt(Schema.Boolean),
  /** MassGen's directories of code-based tools: they matter only with `enable_code_based_tools`, which massgen refuses. */
  shared_tools_directory: opt(Schema.String),
  custom_tools_path: opt(Schema.String),
  exclude_custom_tools: opt(Schema.Array(Schema.String)),
  input_tokens: opt(NonNegativeInt),
  output_tokens: opt(NonNegativeInt),
  mcp_servers: opt(McpServers),
  permissions: opt(PermissionsConfig),
  ...CommandLineFields,
  ...WorkspaceBackendFields,
  ...MediaBackendFields,
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

/** USD per million tokens (`pricing.ts`). */
const PriceAmount = FiniteNumber.pipe(Schema.nonNegative({ message: (issue) => `Expected a price of 0 or more${found(issue)}` }))

export const Price = Schema.Struct({
  input: PriceAmount,
  cached_input: opt(PriceAmount),
  output: PriceAmount,
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
  ...VotingOrchestratorFields,
  ...MediaOrchestratorFields,
  coordination: opt(CoordinationConfig),
}).annotations({ identifier: "an orchestrator mapping" })

const TimeoutSettings = Schema.Struct({
  orchestrator_timeout_seconds: opt(PositiveNumber),
  agent_timeout_seconds: opt(PositiveNumber),
  tool_timeout_seconds: opt(PositiveNumber),
  initial_round_timeout_seconds: opt(Schema.NullOr(PositiveNumber)),
  subsequent_round_timeout_seconds: opt(Schema.NullOr(PositiveNumber)),
  round_timeout_grace_seconds: opt(NonNegativeNumber),
}).annotations({ identifier: "a timeout_settings mapping" })

/** MassGen's display types: `none` and `simple` print plain lines (as `--no-display`), the others the live view. */
export const DISPLAY_TYPES = ["rich_terminal", "textual_terminal", "simple", "none"] as const
const DisplayType = oneOf(...DISPLAY_TYPES)
/** `ui:` (MassGen's `display:` before it: `type` for `display_type`). */
const UiConfig = Schema.Struct({ display_type: opt(DisplayType), logging_enabled: opt(Schema.Boolean) }).annotations({
  identifier: "a ui mapping",
})
const DisplayConfig = Schema.Struct({ type: opt(DisplayType), logging_enabled: opt(Schema.Boolean) }).annotations({
  identifier: "a display mapping",
})
/** `batch:` keys, read by `massgen batch` only (a single run ignores them). */
const BatchConfig = Schema.Struct({
  budget_usd: opt(Schema.NullOr(PositiveNumber)),
}).annotations({ identifier: "a batch mapping" })

export const ConfigFile = Schema.Struct({
  agents: opt(
    Schema.Array(AgentConfig)
      .annotations({ identifier: "a list of agents" })
      .pipe(Schema.minItems(1, { message: () => "Expected at least one agent" })),
  ),
  agent: opt(AgentConfig),
  orchestrator: opt(OrchestratorConfig),
  timeout_settings: opt(TimeoutSettings),
  pricing: opt(Schema.Record({ key: Schema.String, value: Price }).annotations({ identifier: "a pricing mapping of model names" })),
  ui: opt(UiConfig),
  display: opt(DisplayConfig),
  batch: opt(BatchConfig),
  permissions: opt(PermissionsConfig),
})
export type ConfigFile = typeof ConfigFile.Type
