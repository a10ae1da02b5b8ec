/**
 * What the Claude Code CLI child is given: its environment and its program.
 *
 * `cliEnv(env, key)` builds the child's environment from an allow-list of
 * massgen's (the system's basics, proxies, Claude Code's own settings), never
 * the whole of it: another provider's key never reaches the CLI. The API key,
 * when there is one, goes in `ANTHROPIC_API_KEY` there and nowhere else (no
 * file, no argument). Massgen adds `DISABLE_AUTOUPDATER=1`: a run never
 * updates the CLI under it. `findClaudeExecutable(agent, env)` is where the
 * CLI is: `path_to_claude_code_executable`, else the SDK's own native package
 * (`@anthropic-ai/claude-agent-sdk-<platform>`), else `claude` on PATH; null
 * when none is there. The compiled `dist/massgen` does not hold the CLI (it is
 * hundreds of MB): there it is found on PATH or by the key. A run whose CLI is
 * not found stops before it starts (`cliNotFoundProblems`); `--validate`, which
 * checks a config's shape and not the machine, does not look.
 */
import { accessSync, constants, existsSync } from "node:fs"
import { createRequire } from "node:module"
import { delimiter, dirname, join } from "node:path"
import type { ConfigProblem } from "../../domain/config/index.ts"
import type { Env } from "./keys.ts"

/** Variables the CLI takes from massgen's environment, as they are. */
const PASSED = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "TMPDIR",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "TERM",
  "TZ",
  "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME",
  "XDG_DATA_HOME",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "NODE_EXTRA_CA_CERTS",
  "ANTHROPIC_BASE_URL",
  "CLAUDE_CONFIG_DIR",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
  "DISABLE_TELEMETRY",
  "DISABLE_ERROR_REPORTING",
  "DISABLE_COST_WARNINGS",
  "MCP_TOOL_TIMEOUT",
] as const

/** The child's environment: the allow-listed variables massgen has, the key, and no auto-update. */
export const cliEnv = (env: Env, apiKey: string | null): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name of PASSED) {
    const value = env[name]
    if (value !== undefined && value !== "") out[name] = value
  }
  if (apiKey !== null) out.ANTHROPIC_API_KEY = apiKey
  out.DISABLE_AUTOUPDATER = "1"
  out.CLAUDE_AGENT_SDK_CLIENT_APP = "massgen"
  return out
}

const isExecutable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The SDK's native CLI package for this machine, as the SDK itself looks for it; null when not installed. */
const sdkNativeCli = (): string | null => {
  const name = `@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}`
  try {
    const pkg = createRequire(import.meta.url).resolve(`${name}/package.json`)
    const cli = join(dirname(pkg), process.platform === "win32" ? "claude.exe" : "claude")
    return existsSync(cli) ? cli : null
  } catch {
    return null
  }
}

const onPath = (env: Env, program: string): string | null => {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue
    const candidate = join(dir, program)
    if (isExecutable(candidate)) return candidate
  }
  return null
}

/** Where the CLI is, and how it was found; null when it is nowhere massgen looks. */
export const findClaudeExecutable = (configured: string | undefined, env: Env): string | null => {
  if (configured !== undefined) return isExecutable(configured) ? configured : null
  return sdkNativeCli() ?? onPath(env, "claude")
}

/** The one line said when the CLI is not found. */
export const claudeNotFound = (agentId: string, configured: string | undefined): string =>
  configured !== undefined
    ? `agent ${agentId}: the Claude Code CLI was not found: path_to_claude_code_executable ${JSON.stringify(configured)} is not an executable file`
    : `agent ${agentId}: the Claude Code CLI was not found (not in @anthropic-ai/claude-agent-sdk's native package, not as claude on PATH): install it (npm install -g @anthropic-ai/claude-code) or set path_to_claude_code_executable`

/** A problem for each `claude_code` agent whose CLI is not found: a run stops on them before it starts. */
export const cliNotFoundProblems = (
  agents: ReadonlyArray<{
    readonly id: string
    readonly backend: { readonly type: string; readonly path_to_claude_code_executable?: string }
  }>,
  env: Env,
): ReadonlyArray<ConfigProblem> =>
  agents.flatMap((a, i) =>
    a.backend.type === "claude_code" && findClaudeExecutable(a.backend.path_to_claude_code_executable, env) === null
      ? [{ path: `agents[${i}].backend.type`, message: claudeNotFound(a.id, a.backend.path_to_claude_code_executable) }]
      : [],
  )
