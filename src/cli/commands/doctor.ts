/**
 * `massgen doctor [--config FILE]`: a self-check a user runs right after
 * installing. It prints one line per finding (`doctor-checks.ts`):
 *
 *   ok    identity: 0.1.0 (commit ..., built ..., bun 1.4.4, bun-linux-x64)
 *   ok    log root: /home/me/.massgen/massgen_logs is writable
 *   info  .env: none in /home/me (keys come from the environment)
 *   ok    OPENAI_API_KEY: set: sk-…wxyz (51 characters)
 *   fail  agent_b base URL: http://127.0.0.1:9 does not answer: connection refused
 *
 * and exits 0 when nothing needed is missing, else 1 with one stderr line
 * naming what failed. Needed: a writable log root, a readable `.env` when
 * there is one, and then, with `--config`: a valid config, each agent's API
 * key, an answer from each agent's base URL (`BASE_URL_TIMEOUT_MS`), each MCP
 * server started (in a scratch directory, within its `timeout`; its tools are
 * listed) and stopped, each command tool's program found and executable, and
 * bubblewrap or docker when the config's execution mode asks for them.
 * Without a config no key is needed (a local or OpenAI-compatible server
 * needs none): no provider key at all is an `info` finding, and exit 0 when
 * the install itself is fine. A finding of several lines (a config's
 * problems) keeps its verdict and subject on each line. Keys are only ever
 * shown masked, and never sent anywhere.
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import { PRESETS, presetFor } from "../../domain/config/index.ts"
import { type Env, parseDotEnv, resolveApiKey } from "../../services/backends/index.ts"
import { INPUT_LIMITS, readInputFile } from "../../services/input-file.ts"
import { logBaseDir } from "../../services/log-dir/create.ts"
import { identityLine } from "../process/identity.ts"
import { loadConfigFile } from "../run/load-config.ts"
import {
  commandToolFindings,
  executionModes,
  type Finding,
  finding,
  keyFindings,
  logRootFinding,
  mcpFindings,
  probeBaseUrl,
  sandboxFindings,
} from "./doctor-checks.ts"

/** How long a base URL has to answer. */
export const BASE_URL_TIMEOUT_MS = 5000

/** Every provider key variable a preset reads, in preset order. */
const PROVIDER_KEYS = [...new Set(Object.values(PRESETS).flatMap((p) => p.keyEnv))]

interface DoctorContext {
  readonly env: Env
  readonly cwd: string
  readonly print: (line: string) => void
  readonly printError: (line: string) => void
}

/** `.env` in `cwd`: its finding, and the variables it adds to `env` (the environment wins, as in a run). */
const dotEnv = (cwd: string, env: Env): { found: Finding; env: Env; fromFile: Set<string> } => {
  const path = nodePath.join(cwd, ".env")
  const read = readInputFile(path, INPUT_LIMITS.dotEnv, "file", "for a .env file")
  if (read._tag === "refused") {
    const found =
      read.reason === "missing"
        ? finding("info", ".env", `none in ${cwd} (keys come from the environment)`)
        : finding("fail", ".env", `${path} ${read.problem}`)
    return { found, env, fromFile: new Set() }
  }
  const parsed = parseDotEnv(read.text)
  // Also those the environment holds with the .env value: `bun src/main.ts` loads .env into it by itself.
  const fromFile = new Set(Object.keys(parsed).filter((k) => (env[k] ?? "") === "" || env[k] === parsed[k]))
  const merged: Record<string, string | undefined> = { ...env }
  for (const k of fromFile) merged[k] = parsed[k]!
  return { found: finding("ok", ".env", `${path} (${Object.keys(parsed).length} variables)`), env: merged, fromFile }
}

/** The findings for a config: its validity, its agents' keys and base URLs, its sandbox tools. */
const configFindings = async (path: string, env: Env, fromDotEnv: ReadonlySet<string>): Promise<Array<Finding>> => {
  const loaded = await Effect.runPromise(Effect.either(loadConfigFile(path, env)))
  if (Either.isLeft(loaded)) return [finding("fail", "config", loaded.left.message)]
  const { config, raw } = loaded.right
  const out: Array<Finding> = [finding("ok", "config", `${path}: ${config.agents.length} agent${config.agents.length === 1 ? "" : "s"}`)]
  const used = new Set<string>()
  const probes: Array<Promise<Finding>> = []
  for (const agent of config.agents) {
    const b = agent.backend
    if (b.type === "scripted") continue
    const key = resolveApiKey(agent, env)
    if (Either.isLeft(key))
      out.push(finding("fail", `${agent.id} API key`, `missing: set ${key.left.envVars.join(" or ")} in the environment or in .env`))
    const vars = presetFor(b.type).keyEnv.filter((v) => (env[v] ?? "") !== "")
    for (const v of vars) used.add(v)
    const url = b.base_url ?? presetFor(b.type).baseURL
    if (url !== null) probes.push(probeBaseUrl(`${agent.id} base URL`, url, BASE_URL_TIMEOUT_MS))
  }
  out.push(...keyFindings([...used], env, fromDotEnv).filter((f) => f.verdict === "ok"))
  // The tools run where a run's would, in a directory standing for its log directory.
  const scratch = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-doctor-"))
  try {
    const servers = mcpFindings(config, env, scratch)
    out.push(...(await Promise.all(probes)))
    out.push(...(await servers))
    out.push(...commandToolFindings(config, scratch, env.PATH ?? ""))
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true })
  }
  out.push(...sandboxFindings(executionModes(raw)))
  return out
}

export const doctorCommand = (configPath: string | null, ctx: DoctorContext) =>
  Effect.promise(async () => {
    const dot = dotEnv(ctx.cwd, ctx.env)
    const findings: Array<Finding> = [
      finding("ok", "identity", `massgen ${identityLine()}`),
      logRootFinding(logBaseDir(dot.env, ctx.cwd)),
      dot.found,
    ]
    if (configPath !== null) findings.push(...(await configFindings(configPath, dot.env, dot.fromFile)))
    else {
      const keys = keyFindings(PROVIDER_KEYS, dot.env, dot.fromFile)
      findings.push(...keys)
      if (!keys.some((f) => f.verdict === "ok")) {
        findings.push(
          finding(
            "info",
            "API keys",
            "no provider key is set: a cloud provider's agents need one (in the environment or in .env), a local server's need none; check a config with --config FILE",
          ),
        )
      }
      findings.push(...sandboxFindings(new Set()))
    }
    for (const f of findings) for (const text of f.detail.split("\n")) ctx.print(`${f.verdict.padEnd(5)} ${f.subject}: ${text}`)
    const failed = findings.filter((f) => f.verdict === "fail")
    if (failed.length === 0) {
      ctx.print("everything massgen needs is there")
      return 0
    }
    ctx.printError(`massgen: doctor: ${failed.length} problem${failed.length === 1 ? "" : "s"}: ${failed.map((f) => f.subject).join(", ")}`)
    return 1
  })
