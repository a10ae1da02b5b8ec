/**
 * A `claude_code` agent's own MCP servers (`mcp_servers`), given to the CLI, which starts and calls them.
 *
 * `cliMcpServers(config, env, cwd)` reads the agent's entries (`mcpEntries`),
 * expands each one's `${VAR}` from massgen's environment and `${cwd}` to the
 * agent's workspace (`resolveEntry`), and makes each the SDK's `mcpServers`
 * entry under its own name: a stdio server as its command, arguments,
 * environment and directory, an HTTP one (`streamable-http` as `http`, `sse`)
 * as its URL and headers. Massgen does not start these servers for the agent:
 * the CLI does, and its calls of their tools are its own tool uses. A stdio
 * server runs with exactly the environment massgen's own servers get (the
 * SDK's default few variables and the entry's `env`): it is started through
 * `sh` and `env -i`, so that none of the CLI's environment (its API key)
 * reaches it. Tools are offered at once, never behind the CLI's tool search.
 *
 * The entries' filters become the CLI's permission rules, as MassGen makes
 * them: an entry with `allowed_tools` lets only those tools run without
 * asking (`mcp__<server>__<tool>`), one without lets all of its server's
 * (`mcp__<server>`); `exclude_tools` are the CLI's disallowed tools. An
 * unset variable is the call's one-line error, naming server and variable.
 */
import type { McpServerConfig } from "@anthropic-ai/claude-agent-sdk"
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
import { type BackendConfig, mcpEntries, mcpToolName, type ResolvedServer, resolveEntry } from "../../domain/config/index.ts"
import type { Env } from "./keys.ts"

export interface CliMcpServers {
  readonly servers: Readonly<Record<string, McpServerConfig>>
  /** Permission rules the CLI runs these tools by without asking. */
  readonly allowed: ReadonlyArray<string>
  readonly disallowed: ReadonlyArray<string>
}

/** Runs `command args` in `cwd` with nothing but `env` (the shell's `$0` is the directory). */
const isolated = (command: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>>, cwd: string) => ({
  command: "/bin/sh",
  args: ["-c", 'cd -- "$0" && exec /usr/bin/env -i "$@"', cwd, ...Object.entries(env).map(([k, v]) => `${k}=${v}`), command, ...args],
})

const sdkEntry = (server: ResolvedServer): McpServerConfig =>
  server.type === "stdio"
    ? {
        type: "stdio",
        ...isolated(server.command, server.args, { ...getDefaultEnvironment(), ...server.env }, server.cwd),
        alwaysLoad: true,
      }
    : { type: server.type === "sse" ? "sse" : "http", url: server.url, headers: { ...server.headers }, alwaysLoad: true }

/** The agent's servers as the CLI's `mcpServers`, with their permission rules; or the unset variable's message. */
export const cliMcpServers = (config: BackendConfig, env: Env, cwd: string): CliMcpServers | string => {
  const servers: Record<string, McpServerConfig> = {}
  const allowed: Array<string> = []
  const disallowed: Array<string> = []
  for (const entry of mcpEntries(config.mcp_servers)) {
    const resolved = resolveEntry(entry, env, cwd)
    if ("_tag" in resolved) return `MCP server ${entry.name} did not start: \${${resolved.variable}} is not set`
    servers[entry.name] = sdkEntry(resolved)
    const prefixed = (tool: string) => (tool.startsWith(`mcp__${entry.name}__`) ? tool : mcpToolName(entry.name, tool))
    const only = entry.fields.allowed_tools
    allowed.push(...(only === undefined ? [`mcp__${entry.name}`] : only.map(prefixed)))
    disallowed.push(...(entry.fields.exclude_tools ?? []).map(prefixed))
  }
  return { servers, allowed, disallowed }
}
