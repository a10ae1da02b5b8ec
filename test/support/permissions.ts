/**
 * Configs for the permission engine's end-to-end tests: `scriptedCommandsDoc(commands, permissions)` is one
 * scripted agent (`worker`, with a workspace) that runs `commands` with `execute_command` (local mode)
 * under the `permissions:` block given, then answers; `markerIn(dir, name)` is a file of its workspace.
 */
import * as nodePath from "node:path"

export const scriptedCommandsDoc = (commands: ReadonlyArray<string>, permissions: unknown) => ({
  agents: [
    {
      id: "worker",
      backend: {
        type: "scripted",
        cwd: "workspace",
        enable_mcp_command_line: true,
        command_line_execution_mode: "local",
        script: [...commands.map((command) => ({ tool: "execute_command", args: { command } })), { new_answer: "done" }],
        vote: "agent1",
        final: "done",
        permissions,
      },
    },
  ],
  timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90, tool_timeout_seconds: 60 },
})

/** A file of the scripted agent's workspace in the log directory `dir`. */
export const markerIn = (dir: string, name: string): string => nodePath.join(dir, "workspaces", "agent1", name)
