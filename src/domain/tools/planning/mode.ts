/**
 * Planning mode (`enable_planning_mode`): which of an agent's tools wait for the final presentation.
 *
 * During coordination (an agent's rounds) a tool with lasting effects is
 * refused, and the model is told so; the presenter, in the final presentation,
 * runs every tool. By default (MassGen's rule, made static) a tool is
 * irreversible when it is an MCP tool its server does not mark read-only
 * (the `readOnlyHint` annotation) or a tool that runs a command (a command
 * tool, `execute_command`). The file tools are not: writes to the agent's
 * own workspace are reversible (MassGen lets them through in isolated
 * workspaces), and context paths are written by the presenter alone anyway.
 * `planning_mode_blocked_tools` replaces the rule by a list of names (a
 * trailing `*` matches a prefix), as MassGen's selective blocking does. Pure.
 */

/** What kind of tool it is, for the default rule. */
export type ToolNature = "mcp" | "command" | "other"

export interface OfferedTool {
  readonly name: string
  readonly nature: ToolNature
  /** The MCP server marks it read-only (`annotations.readOnlyHint`). */
  readonly readOnly: boolean
}

const listed = (name: string, patterns: ReadonlyArray<string>): boolean =>
  patterns.some((p) => (p.endsWith("*") ? name.startsWith(p.slice(0, -1)) : name === p))

/** Why planning mode refuses `tool` during coordination, or null when it may run. `blocked`: `planning_mode_blocked_tools`. */
export const planningModeBlock = (tool: OfferedTool, blocked: ReadonlyArray<string> | null): string | null => {
  if (blocked !== null) return listed(tool.name, blocked) ? "it is listed in planning_mode_blocked_tools" : null
  if (tool.nature === "command") return "it runs a command"
  if (tool.nature === "mcp" && !tool.readOnly) return "its MCP server does not mark it read-only"
  return null
}

/** What the model is told of a call planning mode refused. */
export const planningModeRefusal = (tool: string, why: string): string =>
  `planning mode: ${tool} is not run during coordination (${why}); describe what you would do with it, and the presenter will run it in the final presentation`
