/**
 * Issue 28: a `claude_code` agent's config keys, its child environment and a CLI that is not there.
 *
 * MassGen's keys for Claude Code are taken (`permission_mode`, `append_system_prompt`, ...),
 * the ones it cannot honour are refused one by one with their reason, as is a CLI
 * key on another type and a `claude_code` agent without `cwd`. Its `mcp_servers`
 * become the CLI's `mcpServers` (an environment of their own, filters as rules). The CLI's
 * environment is built from an allow-list: another provider's key never reaches
 * it, the key goes in `ANTHROPIC_API_KEY` only. A CLI that is not found stops a run
 * before it starts, with one line (and fails a call made anyway, not tried again).
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import { analyzeConfig, decodeConfig } from "../src/domain/config/index.ts"
import { findClaudeExecutable } from "../src/services/backends/claude-code-env.ts"
import { cliMcpServers } from "../src/services/backends/claude-code-mcp.ts"
import { makeBackend } from "../src/services/backends/index.ts"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"

afterAll(() => cleanupSandboxes())

const agentWith = (backend: Record<string, unknown>) => ({
  agents: [{ id: "coder", backend: { type: "claude_code", cwd: "ws", ...backend } }],
})
const errorsOf = (doc: unknown) => analyzeConfig(doc, {}).problems.filter((p) => p.kind === undefined)

describe("claude_code config keys", () => {
  test("MassGen's Claude Code keys are taken", () => {
    const decoded = decodeConfig(
      agentWith({
        model: "claude-sonnet-4-5",
        permission_mode: "bypassPermissions",
        system_prompt: "You code.",
        append_system_prompt: "Be brief.",
        allowed_tools: ["Read", "Bash"],
        disallowed_tools: ["WebFetch"],
        max_thinking_tokens: 4000,
        max_turns: 20,
        enable_web_search: true,
      }),
      {},
    )
    expect(Either.isRight(decoded)).toBe(true)
  })

  test("what a CLI agent cannot honour is refused, one key at a time, with its reason", () => {
    expect(errorsOf(agentWith({ custom_tools: [{ name: "x", path: "x.py", function: "x" }], temperature: 0.5 }))).toEqual([
      {
        path: "agents[0].backend.temperature",
        message: "agent coder: type claude_code does not take temperature: the CLI sets its own sampling",
      },
      {
        path: "agents[0].backend.custom_tools",
        message:
          "agent coder: type claude_code does not take custom_tools: massgen's tools other than new_answer and vote do not reach a CLI agent: it has its own",
      },
    ])
  })

  test("mcp_servers are taken, and checked as any agent's", () => {
    expect(errorsOf(agentWith({ mcp_servers: [{ name: "x", type: "stdio", command: "x" }] }))).toEqual([])
    expect(errorsOf(agentWith({ mcp_servers: { web: { type: "streamable-http", url: "ftp://x" } } }))).toEqual([
      { path: "agents[0].backend.mcp_servers.web.url", message: 'Expected an http or https URL, found "ftp://x"' },
    ])
  })

  test("the servers reach the CLI as its mcpServers: env only the entry's, filters as permission rules", () => {
    const config = agentWith({
      mcp_servers: [
        { name: "fs", command: "npx srv --flag", env: { TOKEN: "${MY_TOKEN}" }, cwd: "sub", allowed_tools: ["read", "mcp__fs__list"] },
        {
          name: "web",
          type: "streamable-http",
          url: "https://h/mcp",
          headers: { Authorization: "Bearer ${MY_TOKEN}" },
          exclude_tools: ["del"],
        },
        { name: "old", type: "sse", url: "http://127.0.0.1:9/sse" },
      ],
    }).agents[0]!.backend as never
    const env = { MY_TOKEN: "t-1", ANTHROPIC_API_KEY: "sk-ant-x", PATH: "/bin" }
    const out = cliMcpServers(config, env, "/ws")
    if (typeof out === "string") throw new Error(out)
    const fs = out.servers.fs as { command: string; args: Array<string> }
    expect(fs.command).toBe("/bin/sh")
    expect(fs.args.slice(1, 3)).toEqual(['cd -- "$0" && exec /usr/bin/env -i "$@"', "/ws/sub"])
    expect(fs.args).toContain("TOKEN=t-1")
    expect(fs.args.slice(-3)).toEqual(["npx", "srv", "--flag"])
    expect(fs.args.some((a) => a.includes("sk-ant-x"))).toBe(false)
    expect(out.servers.web).toEqual({ type: "http", url: "https://h/mcp", headers: { Authorization: "Bearer t-1" }, alwaysLoad: true })
    expect(out.servers.old).toEqual({ type: "sse", url: "http://127.0.0.1:9/sse", headers: {}, alwaysLoad: true })
    expect(out.allowed).toEqual(["mcp__fs__read", "mcp__fs__list", "mcp__web", "mcp__old"])
    expect(out.disallowed).toEqual(["mcp__web__del"])
    expect(cliMcpServers(config, { PATH: "/bin" }, "/ws")).toBe("MCP server fs did not start: ${MY_TOKEN} is not set")
  })

  test("a claude_code agent needs cwd; a CLI key on another type is refused", () => {
    expect(errorsOf({ agents: [{ id: "coder", backend: { type: "claude_code" } }] })).toEqual([
      {
        path: "agents[0].backend.cwd",
        message: "agent coder: type claude_code needs cwd: the CLI runs in the agent's workspace (MassGen requires it too)",
      },
    ])
    expect(errorsOf({ agents: [{ id: "a", backend: { type: "openai", permission_mode: "plan" } }] })).toEqual([
      { path: "agents[0].backend.permission_mode", message: "agent a: permission_mode is a key of type claude_code, not of type openai" },
    ])
  })

  test("a permission mode Claude Code does not have is named", () => {
    const [problem] = errorsOf(agentWith({ permission_mode: "yolo" }))
    expect(problem?.path).toBe("agents[0].backend.permission_mode")
    expect(problem?.message).toContain("acceptEdits")
  })
})

describe("the CLI's program", () => {
  test("the SDK's native package is found; a configured path that is not there is not", () => {
    expect(findClaudeExecutable(undefined, { PATH: "" })).toMatch(/claude-agent-sdk-linux-x64\/claude$/)
    expect(findClaudeExecutable("/nonexistent/claude", {})).toBeNull()
  })

  test("a CLI that is not found fails the call with one line, not tried again", async () => {
    const config = decodeConfig(agentWith({ path_to_claude_code_executable: "/nonexistent/claude" }), {})
    if (Either.isLeft(config)) throw new Error(JSON.stringify(config.left))
    const agent = config.right.agents[0]!
    const backend = (await Effect.runPromise(makeBackend(agent, { ANTHROPIC_API_KEY: "sk-ant-SECRET" }))).inRun!("/tmp/none")
    const request = {
      agentId: "coder",
      system: "",
      messages: [{ role: "user" as const, content: "q" }],
      tools: [],
      context: { kind: "round" as const, selfAnonId: "agent1", shown: [], voteOnly: false },
    }
    const failed = await Effect.runPromise(Effect.flip(backend.call(request, () => Effect.void)))
    expect(failed.retryable).toBe(false)
    expect(failed.message).toBe(
      'bad request: agent coder: the Claude Code CLI was not found: path_to_claude_code_executable "/nonexistent/claude" is not an executable file',
    )
  })
})

describe("the CLI's environment", () => {
  test("built from an allow-list: the key as ANTHROPIC_API_KEY, no other provider's key, no auto-update", async () => {
    const { cliEnv } = await import("../src/services/backends/claude-code-env.ts")
    const env = cliEnv(
      { PATH: "/bin", HOME: "/h", OPENAI_API_KEY: "sk-OTHER", GEMINI_API_KEY: "g", ANTHROPIC_BASE_URL: "http://127.0.0.1:1" },
      "sk-ant-1",
    )
    expect(env).toEqual({
      PATH: "/bin",
      HOME: "/h",
      ANTHROPIC_BASE_URL: "http://127.0.0.1:1",
      ANTHROPIC_API_KEY: "sk-ant-1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_AGENT_SDK_CLIENT_APP: "massgen",
    })
  })
})

describe("a run whose CLI is not found", () => {
  test("stops before it starts, exit 1, with one line naming the agent and the key", async () => {
    const cwd = sandbox()
    const config = writeConfig(cwd, agentWith({ path_to_claude_code_executable: "/nonexistent/claude" }))
    const r = await runCli("source", ["--automation", "--config", config, "q"], { cwd, env: { MASSGEN_LOG_BASE_DIR: undefined } })
    expect(r.exitCode).toBe(1)
    expect(r.stderr).toContain(
      'agents[0].backend.type: agent coder: the Claude Code CLI was not found: path_to_claude_code_executable "/nonexistent/claude" is not an executable file',
    )
    expect(fs.existsSync(nodePath.join(cwd, ".massgen"))).toBe(false)
  }, 60_000)
})
