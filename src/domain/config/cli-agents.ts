/**
 * The config keys of the CLI-agent backends (`claude_code`), and their checks.
 *
 * A CLI agent is a coding agent's own program (Claude Code), run by massgen as
 * a child process in the agent's workspace (`services/backends/claude-code.ts`).
 * `CliAgentFields` are MassGen's keys for it, honoured as the CLI's options:
 * `permission_mode`, `system_prompt`, `append_system_prompt`, `allowed_tools`,
 * `disallowed_tools`, `max_thinking_tokens`, `max_turns`, and massgen's own
 * `path_to_claude_code_executable` (where the CLI is, when the SDK's package
 * and PATH do not have it). `cliAgentProblems` refuses what a CLI agent cannot
 * honour, one key at a time with its reason, and these keys on other types.
 * Its `mcp_servers` are the CLI's own to start and call. Pure.
 *
 * Words: a *CLI agent* is an agent whose backend is such a program; its *own
 * tools* (Read, Write, Bash, ...) are the CLI's, not massgen's.
 */
import { Schema } from "effect"
import type { ConfigProblem } from "./schema.ts"
import { oneOf, opt, PositiveInt } from "./schema.ts"

/** Backend types run as a CLI agent. */
export const CLI_AGENT_TYPES: ReadonlyArray<string> = ["claude_code"]

export const isCliAgent = (type: string): boolean => CLI_AGENT_TYPES.includes(type)

/** Claude Code's permission modes (the SDK's `PermissionMode`). */
export const PERMISSION_MODES = ["default", "acceptEdits", "bypassPermissions", "plan", "dontAsk"] as const

export const CliAgentFields = {
  permission_mode: opt(oneOf(...PERMISSION_MODES)),
  system_prompt: opt(Schema.String),
  append_system_prompt: opt(Schema.String),
  allowed_tools: opt(Schema.Array(Schema.String)),
  disallowed_tools: opt(Schema.Array(Schema.String)),
  max_thinking_tokens: opt(PositiveInt),
  max_turns: opt(PositiveInt),
  path_to_claude_code_executable: opt(Schema.String),
}

/** The keys above: each is a CLI agent's alone. */
const CLI_KEYS = Object.keys(CliAgentFields) as ReadonlyArray<keyof typeof CliAgentFields>

/** What a CLI agent cannot take, by key, and why (the rest of a backend's keys apply to it as to any agent). */
const REFUSED_ON_CLI: ReadonlyArray<readonly [string, string]> = [
  ["base_url", "the CLI reads its endpoint from ANTHROPIC_BASE_URL in massgen's environment"],
  ["temperature", "the CLI sets its own sampling"],
  ["top_p", "the CLI sets its own sampling"],
  ["max_tokens", "the CLI sets its own output limit"],
  ["extra_body", "the CLI builds its own requests"],
  ["reasoning", "give the CLI's thinking budget with max_thinking_tokens"],
  ["enable_code_execution", "the CLI runs code with its own Bash tool"],
  ["enable_code_interpreter", "the CLI runs code with its own Bash tool"],
  ["custom_tools", "massgen's tools other than new_answer and vote do not reach a CLI agent: it has its own"],
  ["script", "a scripted backend's key"],
]

/** A CLI agent's keys that it cannot honour, and CLI-agent keys on another type: one problem each. */
export const cliAgentProblems = (
  agent: { readonly id: string; readonly backend: { readonly type: string } },
  i: number,
): ReadonlyArray<ConfigProblem> => {
  const b = agent.backend as Readonly<Record<string, unknown>> & { readonly type: string }
  const at = (key: string) => `agents[${i}].backend.${key}`
  if (!isCliAgent(b.type)) {
    return CLI_KEYS.filter((k) => b[k] !== undefined).map((k) => ({
      path: at(k),
      message: `agent ${agent.id}: ${k} is a key of type claude_code, not of type ${b.type}${k.endsWith("allowed_tools") ? " (for MCP tools, set it on each MCP server entry)" : ""}`,
    }))
  }
  const problems: Array<ConfigProblem> = REFUSED_ON_CLI.filter(([k]) => b[k] !== undefined).map(([k, why]) => ({
    path: at(k),
    message: `agent ${agent.id}: type ${b.type} does not take ${k}: ${why}`,
  }))
  if (b.cwd === undefined) {
    problems.push({
      path: at("cwd"),
      message: `agent ${agent.id}: type ${b.type} needs cwd: the CLI runs in the agent's workspace (MassGen requires it too)`,
    })
  }
  return problems
}
