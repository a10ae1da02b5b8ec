/**
 * The config keys of an agent's tools and provider settings, and their checks.
 *
 * In an agent's `backend:`: provider tools and pass-through settings
 * (`enable_web_search`, `enable_code_interpreter`/`enable_code_execution`,
 * `reasoning`, `text`, `top_p`, `extra_body`), checked against the agent's
 * protocol; MCP server entries (`mcp_servers`, read by `mcp.ts`); and
 * command tools (`custom_tools`; MassGen's Python tools among them are read by
 * `python-tools.ts`); and the `execute_command` tool's keys
 * (`CommandLineFields`: `enable_mcp_command_line`, `command_line_*`). `file.ts` puts them in its backend schema. Pure.
 */
import { Schema } from "effect"
import { PRESETS } from "./presets.ts"
import { FiniteNumber, found, oneOf, opt, PositiveNumber } from "./schema.ts"

// Provider-side tools and pass-through settings (docs/backends.md, "Provider tools and settings").
// `enable_code_interpreter` (MassGen's key for openai) and `enable_code_execution` (for claude) are one switch.
export const REASONING_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const
/** The effort levels Claude's `output_config.effort` takes. */
export const CLAUDE_EFFORTS: ReadonlyArray<string> = ["low", "medium", "high", "xhigh", "max"]
export const ProviderFields = {
  enable_web_search: opt(Schema.Boolean),
  enable_code_interpreter: opt(Schema.Boolean),
  enable_code_execution: opt(Schema.Boolean),
  reasoning: opt(
    Schema.Struct({
      effort: opt(oneOf(...REASONING_EFFORTS)),
      summary: opt(oneOf("auto", "concise", "detailed")),
    }).annotations({ identifier: "a reasoning mapping {effort, summary}" }),
  ),
  text: opt(Schema.Struct({ verbosity: opt(oneOf("low", "medium", "high")) }).annotations({ identifier: "a text mapping {verbosity}" })),
  top_p: opt(FiniteNumber.pipe(Schema.between(0, 1, { message: (issue) => `Expected a number from 0 to 1${found(issue)}` }))),
  extra_body: opt(Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ identifier: "a mapping" })),
}

/** The name of an MCP server: it is part of its tools' names (`mcp__<server>__<tool>`). */
const McpServerName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, {
    message: (issue) => `Expected a server name of 1 to 64 letters, digits, _ or -${found(issue)}`,
  }),
)
const McpScalar = Schema.Union(Schema.String, FiniteNumber, Schema.Boolean)
/**
 * One MCP server entry, MassGen's keys. Its strings keep their `${VAR}` (and `${cwd}`) references:
 * they are expanded when the server starts (`domain/config/mcp.ts`), not when the config is read.
 */
const mcpEntryFields = {
  type: opt(oneOf("stdio", "streamable-http", "sse")),
  command: opt(Schema.Union(Schema.String, Schema.Array(McpScalar))),
  args: opt(Schema.Array(McpScalar)),
  env: opt(Schema.Record({ key: Schema.String, value: McpScalar })),
  cwd: opt(Schema.String),
  url: opt(Schema.String),
  headers: opt(Schema.Record({ key: Schema.String, value: McpScalar })),
  allowed_tools: opt(Schema.Array(Schema.String)),
  exclude_tools: opt(Schema.Array(Schema.String)),
  timeout: opt(PositiveNumber),
}
export const McpServerEntry = Schema.Struct(mcpEntryFields)
export type McpServerEntry = typeof McpServerEntry.Type
/** `mcp_servers`: a list of entries with a `name`, or a mapping of names to entries. */
export const McpServers = Schema.Union(
  Schema.Array(
    Schema.Struct({
      name: Schema.propertySignature(McpServerName).annotations({ missingMessage: () => "Expected a server name, found none" }),
      ...mcpEntryFields,
    }),
  ).annotations({ identifier: "a list of MCP server entries (or a mapping of names to entries)" }),
  Schema.Record({ key: McpServerName, value: McpServerEntry }).annotations({ identifier: "a mapping of MCP server names to entries" }),
)
export type McpServers = typeof McpServers.Type
/**
 * A command tool (`custom_tools` entry): a program the agent may call. Its JSON
 * arguments arrive on stdin; what it prints on stdout is the result.
 */
export const CommandToolConfig = Schema.Struct({
  name: Schema.String.pipe(
    Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, { message: () => "Expected a tool name of 1 to 64 letters, digits, _ or -" }),
  ),
  description: opt(Schema.String),
  parameters: opt(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  command: Schema.NonEmptyArray(Schema.String).annotations({
    message: () => ({ message: "Expected a command: a list of the program and its arguments", override: true }),
  }),
}).annotations({ identifier: "a command tool {name, description, parameters, command}" })
export type CommandToolConfig = typeof CommandToolConfig.Type

/** A regular expression of `command_line_allowed_commands` / `command_line_blocked_commands`: one JavaScript can compile. */
const CommandPattern = Schema.String.pipe(
  Schema.filter((p) => {
    try {
      new RegExp(p)
      return true
    } catch (e) {
      return `Expected a regular expression, found ${JSON.stringify(p)} (${e instanceof Error ? e.message : String(e)})`
    }
  }),
)
/** A variable of `command_line_env` / `command_line_pass_env`: a shell name, and not a provider's key variable (no key reaches a command). */
const KEY_VARIABLES: ReadonlySet<string> = new Set(Object.values(PRESETS).flatMap((p) => p.keyEnv))
/** Why `name` cannot be a variable of a command's environment, or null. */
const envNameProblem = (name: string): string | null =>
  !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)
    ? `Expected a variable name (letters, digits, _), found ${JSON.stringify(name)}`
    : KEY_VARIABLES.has(name)
      ? `${name} is a provider's key variable: no key is passed to a command`
      : null
const CommandEnvName = Schema.String.pipe(Schema.filter((name) => envNameProblem(name) ?? true))
const CommandEnv = Schema.Record({ key: Schema.String, value: McpScalar }).pipe(
  Schema.filter(
    (env) =>
      Object.keys(env)
        .map(envNameProblem)
        .find((p) => p !== null) ?? true,
  ),
)
export const EXECUTION_MODES = ["local", "sandbox", "docker"] as const
export type ExecutionMode = (typeof EXECUTION_MODES)[number]
/** The keys of the `execute_command` tool (docs/commands.md), MassGen's names; `command_line_network`, `command_line_env`, `command_line_pass_env` and `sandbox` are massgen's own. */
export const CommandLineFields = {
  enable_mcp_command_line: opt(Schema.Boolean),
  command_line_execution_mode: opt(oneOf(...EXECUTION_MODES)),
  command_line_allowed_commands: opt(Schema.Array(CommandPattern).annotations({ identifier: "a list of regular expressions" })),
  command_line_blocked_commands: opt(Schema.Array(CommandPattern).annotations({ identifier: "a list of regular expressions" })),
  command_line_network: opt(Schema.Boolean),
  command_line_env: opt(CommandEnv.annotations({ identifier: "a mapping of variable names to values" })),
  command_line_pass_env: opt(Schema.Array(CommandEnvName).annotations({ identifier: "a list of variable names" })),
  command_line_docker_image: opt(Schema.String),
  command_line_docker_network_mode: opt(oneOf("none", "bridge", "host")),
  command_line_docker_memory_limit: opt(Schema.String),
  command_line_docker_cpu_limit: opt(PositiveNumber),
}
