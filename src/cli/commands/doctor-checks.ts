/**
 * The checks of `massgen doctor`, each one **finding**: a verdict (`ok`,
 * `info`: worth knowing, nothing missing, `fail`: something a run needs is
 * missing), what was checked, and what was found.
 *
 * - `logRootFinding`: the log root (`MASSGEN_LOG_BASE_DIR` or
 *   `.massgen/massgen_logs`) is writable, or can be created. It writes and
 *   removes a scratch directory in it when it exists, and creates nothing
 *   when it does not.
 * - `keyFindings`: each provider key variable, set (shown masked: `maskKey`
 *   never shows more than the first 3 and last 4 characters of a key of 16 or
 *   more, nothing of a shorter one) or not.
 * - `probeBaseUrl`: whether a server answers at a base URL: any HTTP reply
 *   counts (a 401 or 404 too); nothing is sent but a GET of the URL without
 *   its credentials and query (so no key goes with it), and the URL is named
 *   by its endpoint only (`scheme://host:port`).
 * - `sandboxFindings`: bubblewrap and docker on PATH; required, and tried,
 *   when the raw config asks for their mode (`command_line_execution_mode`
 *   anywhere in it: `docker`, or `sandbox`/`bubblewrap`/`bwrap`).
 * - `mcpFindings`: each MCP server of the config, started as a run starts it
 *   (in `cwd`, a scratch directory standing for the log directory, within its
 *   `timeout`) and stopped: its tools, or why it did not start.
 * - `commandToolFindings`: each command tool's program, found as a call finds
 *   it (on the `PATH`, or from `cwd`) and executable.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { Config } from "../../domain/config/index.ts"
import { endpointOf } from "../../lib/safe-url.ts"
import { count } from "../../lib/text.ts"
import { commandToolProblem } from "../../services/tools/command-tools.ts"

export type Verdict = "ok" | "info" | "fail"

export interface Finding {
  readonly verdict: Verdict
  readonly subject: string
  readonly detail: string
}

export const finding = (verdict: Verdict, subject: string, detail: string): Finding => ({ verdict, subject, detail })

const reason = (e: unknown): string => {
  const code = (e as { code?: string }).code
  if (code === "EACCES" || code === "EPERM") return "permission denied"
  if (code === "EROFS") return "read-only file system"
  if (code === "ENOTDIR") return "a file is in the way"
  return e instanceof Error ? e.message : String(e)
}

/** Whether runs can write under `root`. */
export const logRootFinding = (root: string): Finding => {
  const subject = "log root"
  let existing = root
  while (!fs.existsSync(existing) && nodePath.dirname(existing) !== existing) existing = nodePath.dirname(existing)
  try {
    if (existing === root) {
      if (!fs.statSync(root).isDirectory()) return finding("fail", subject, `${root} is not a directory`)
      fs.rmSync(fs.mkdtempSync(nodePath.join(root, ".doctor-")), { recursive: true })
      return finding("ok", subject, `${root} is writable`)
    }
    if (!fs.statSync(existing).isDirectory()) return finding("fail", subject, `${root} cannot be created: ${existing} is not a directory`)
    fs.accessSync(existing, fs.constants.W_OK | fs.constants.X_OK)
    return finding("ok", subject, `${root} does not exist yet; the first run creates it (in ${existing}, writable)`)
  } catch (e) {
    return finding("fail", subject, `${root} is not writable: ${reason(e)}`)
  }
}

/** A key as doctor shows it: never the key, at most its first 3 and last 4 characters and its length. */
export const maskKey = (key: string): string =>
  key.length >= 16 ? `${key.slice(0, 3)}…${key.slice(-4)} (${key.length} characters)` : `*** (${key.length} characters)`

/**
 * A finding per key variable that is set (`ok`, masked, and where it came
 * from), and one `info` naming those that are not.
 */
export const keyFindings = (
  names: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>,
  fromDotEnv: ReadonlySet<string>,
): Array<Finding> => {
  const set = names.filter((n) => (env[n] ?? "") !== "")
  const unset = names.filter((n) => (env[n] ?? "") === "")
  return [
    ...set.map((n) => finding("ok", n, `set${fromDotEnv.has(n) ? " in .env" : ""}: ${maskKey(env[n]!)}`)),
    ...(unset.length > 0 ? [finding("info", "not set", unset.join(", "))] : []),
  ]
}

/** Whether anything answers HTTP at `url` within `timeoutMs`; `subject` names who uses it. */
export const probeBaseUrl = async (subject: string, url: string, timeoutMs: number): Promise<Finding> => {
  const endpoint = endpointOf(url)
  const started = performance.now()
  try {
    // Without the URL's credentials and query: a key in them would go with the probe.
    const u = new URL(url)
    const reply = await fetch(`${u.protocol}//${u.host}${u.pathname}`, {
      method: "GET",
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    })
    await reply.body?.cancel()
    return finding("ok", subject, `${endpoint} answers (HTTP ${reply.status} in ${Math.round(performance.now() - started)} ms)`)
  } catch (e) {
    const name = (e as { name?: string }).name
    const code = (e as { code?: string }).code
    const why =
      name === "TimeoutError" || name === "AbortError"
        ? `no answer within ${timeoutMs / 1000} s`
        : code === "ConnectionRefused" || code === "ECONNREFUSED"
          ? "connection refused"
          : `${code ?? name ?? "error"}${e instanceof Error && e.message !== "" ? `: ${e.message}` : ""}`
    return finding("fail", subject, `${endpoint} does not answer: ${why}`)
  }
}

/** Every `command_line_execution_mode` value anywhere in the raw config. */
export const executionModes = (raw: unknown): Set<string> => {
  const modes = new Set<string>()
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) for (const v of value) walk(v)
    else if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) {
        if (k === "command_line_execution_mode" && typeof v === "string") modes.add(v.toLowerCase())
        else walk(v)
      }
    }
  }
  walk(raw)
  return modes
}

const runs = (argv: ReadonlyArray<string>): { ok: boolean; detail: string } => {
  try {
    const r = Bun.spawnSync([...argv], { stdout: "ignore", stderr: "pipe", timeout: 10_000 })
    return { ok: r.exitCode === 0, detail: r.stderr.toString().trim().split("\n")[0] ?? "" }
  } catch (e) {
    return { ok: false, detail: reason(e) }
  }
}

/** bubblewrap and docker: where they are; required and tried when the config's modes ask for them. */
export const sandboxFindings = (modes: ReadonlySet<string>, which: (name: string) => string | null = Bun.which): Array<Finding> => {
  const tools = [
    {
      name: "bubblewrap",
      bin: "bwrap",
      needed: ["sandbox", "bubblewrap", "bwrap"].some((m) => modes.has(m)),
      trial: ["--ro-bind", "/", "/", "true"],
    },
    { name: "docker", bin: "docker", needed: modes.has("docker"), trial: ["info"] },
  ]
  return tools.map(({ name, bin, needed, trial }) => {
    const path = which(bin)
    const why = needed ? "the config's command_line_execution_mode needs it" : "for the sandbox modes of command_line_execution_mode"
    if (path === null) return finding(needed ? "fail" : "info", name, `not found on PATH (${why})`)
    if (!needed) return finding("info", name, `${path}`)
    const trial_ = runs([path, ...trial])
    return trial_.ok
      ? finding("ok", name, `${path} works`)
      : finding("fail", name, `${path} is there but \`${bin} ${trial.join(" ")}\` failed: ${trial_.detail} (${why})`)
  })
}

/** Names shown of a server's tools; the rest are counted. */
const TOOLS_SHOWN = 20

/** Each MCP server of `config`'s agents, started in `cwd` with `env` and stopped again: its tools, or why it did not start. */
export const mcpFindings = async (
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): Promise<Array<Finding>> => {
  if (!config.agents.some((a) => a.backend.mcp_servers !== undefined)) return []
  const { probeMcpServers } = await import("../../services/tools/mcp-servers.ts")
  const probes = await Effect.runPromise(probeMcpServers(config.agents, { cwd, env }))
  return probes.map((p) => {
    const subject = `MCP server ${p.server}`
    if ("problem" in p) return finding("fail", subject, `did not start: ${p.problem}`)
    const shown = p.tools.slice(0, TOOLS_SHOWN).join(", ")
    const more = p.tools.length > TOOLS_SHOWN ? `, and ${p.tools.length - TOOLS_SHOWN} more` : ""
    return finding("ok", subject, `${count(p.tools.length, "tool")}${p.tools.length === 0 ? "" : ` (${shown}${more})`}`)
  })
}

/** Each command tool of `config`'s agents: its program, found from `cwd` on `path`, or why a call could not run it. */
export const commandToolFindings = (config: Config, cwd: string, path: string): Array<Finding> =>
  config.agents.flatMap((agent) =>
    (agent.backend.custom_tools ?? []).map((tool) => {
      const subject = `command tool ${agent.id}/${tool.name}`
      const problem = commandToolProblem(tool, cwd, path)
      return problem === null
        ? finding("ok", subject, `${Bun.which(tool.command[0]!, { PATH: path, cwd })}`)
        : finding("fail", subject, `cannot start: ${problem}`)
    }),
  )
