/**
 * What a tool call does, in the rules' words: its action and its target(s).
 *
 * `actionOf(call)` reads a call as MassGen does: a tool whose name says it
 * runs commands (`execute_command`, `bash`, `shell`, ...) is `command` of its
 * `command` (or `cmd`) argument; an MCP tool (one with a server) is
 * `read_url` of its `url` when its name says it fetches, else
 * `mcp(server/tool)`; any other tool is `read_url`, `write_file` or
 * `read_file` by what its name says (`write`, `move`, `delete`, ... and
 * `read`, `list`, ...), of its path arguments, else `mcp(tool)`. A call that
 * names several paths (`move_file`'s source and destination) has a target
 * for each. Pure.
 */
import type { Action } from "./rules.ts"

export interface CallFacts {
  /** The tool's name as the model called it. */
  readonly tool: string
  /** The MCP server the tool belongs to; null for a command tool, a file tool, `execute_command`. */
  readonly server: string | null
  readonly args: Readonly<Record<string, unknown>>
}

export interface ActionOf {
  readonly action: Action
  /** What the rules' patterns are matched against (at least one). */
  readonly targets: ReadonlyArray<string>
}

const COMMAND_HINTS = ["execute_command", "bash", "shell", "exec", "run_command", "terminal"]
const NETWORK_HINTS = ["fetch", "read_url", "websearch", "web_search", "browse"]
const WRITE_HINTS = ["write", "edit", "create", "move", "copy", "apply_patch", "notebook", "delete", "remove"]
const READ_HINTS = ["read", "grep", "glob", "list", "view", "search", "cat"]
const PATH_KEYS = ["path", "file_path", "source", "destination", "destination_path", "target", "notebook_path"]

const has = (name: string, hints: ReadonlyArray<string>) => hints.some((h) => name.includes(h))
const text = (value: unknown): string => (typeof value === "string" ? value : "")

const paths = (args: Readonly<Record<string, unknown>>): ReadonlyArray<string> => {
  const found = PATH_KEYS.map((k) => args[k]).filter((v): v is string => typeof v === "string" && v !== "")
  return found.length > 0 ? found : [""]
}

/** The name of an MCP tool without its `mcp__<server>__` prefix. */
const ownName = (tool: string, server: string): string => {
  const prefix = `mcp__${server}__`
  return tool.startsWith(prefix) ? tool.slice(prefix.length) : tool
}

export const actionOf = (call: CallFacts): ActionOf => {
  const name = call.tool.toLowerCase()
  const url = () => [text(call.args.url) || text(call.args.domain)]
  if (has(name, COMMAND_HINTS)) return { action: "command", targets: [text(call.args.command) || text(call.args.cmd)] }
  if (call.server !== null) {
    const own = ownName(call.tool, call.server)
    if (has(own.toLowerCase(), NETWORK_HINTS)) return { action: "read_url", targets: url() }
    return { action: "mcp", targets: [`${call.server}/${own}`] }
  }
  if (has(name, NETWORK_HINTS)) return { action: "read_url", targets: url() }
  if (has(name, WRITE_HINTS)) return { action: "write_file", targets: paths(call.args) }
  if (has(name, READ_HINTS)) return { action: "read_file", targets: paths(call.args) }
  return { action: "mcp", targets: [call.tool] }
}

/**
 * The shell command texts a call carries, whatever its tool: its `command`, `cmd` or `script` arguments
 * (MassGen reads `code` too; a program's code is not a shell command, and read as one it would be denied for a line such as `dd = 1`).
 */
export const commandTexts = (args: Readonly<Record<string, unknown>>): ReadonlyArray<string> =>
  ["command", "cmd", "script"].map((k) => args[k]).filter((v): v is string => typeof v === "string" && v !== "")
