/**
 * The run configuration: MassGen's YAML keys, decoded with Effect Schema.
 *
 * `decodeConfig(raw, env)` takes the parsed YAML document and the environment,
 * expands `${VAR}` in every string (a value that is one whole `${VAR}` where a
 * number or a boolean is expected is read as one), and returns either a `Config` or the list of
 * `ConfigProblem`s, each naming the key's path (`agents[1].backend.type`), what
 * was expected and what was found. It is pure: the environment comes in as a map.
 * A problem never shows what a `${VAR}` expanded to (`env.ts`).
 * `analyzeConfig` is the same read with every problem, warnings too.
 *
 * This file is the reading; the parts live beside it and are re-exported here:
 * the schema (`file.ts`), references and masking (`env.ts`), the
 * settings a config makes (`settings.ts`), the problems of the document
 * as written (`document.ts`), and the keys of tools, workspaces and
 * MassGen's unsupported features (`tools.ts`, `workspaces.ts`,
 * `compat.ts`).
 */
import { Either, ParseResult, Schema } from "effect"
import { cliAgentProblems } from "./cli-agents.ts"
import { UNSUPPORTED_BACKENDS } from "./compat.ts"
import { coordinationProblems } from "./coordination.ts"
import { documentProblems, field, unsupportedAgentsOf } from "./document.ts"
import { expandEnv, isWholeReference, scalarOf, shownMessage } from "./env.ts"
import { ConfigFile } from "./file.ts"
import { geminiProblems } from "./gemini.ts"
import { mcpProblems } from "./mcp.ts"
import { withMultimodalTools } from "./media.ts"
import { presetOf } from "./presets.ts"
import { takePythonTools, withDiscoveredServers } from "./python-tools.ts"
import { type ConfigProblem, deleteAt, formatPath, setAt, valueAt } from "./schema.ts"
import { type Agent, type Config, configOf } from "./settings.ts"
import { CLAUDE_EFFORTS } from "./tools.ts"
import { contextPathProblems } from "./workspaces.ts"

const decodeFile = Schema.decodeUnknownEither(ConfigFile, { errors: "all", onExcessProperty: "ignore" })

/** A document read in one pass: the config, when only warnings, unset variables and missing keys stand in its way, and every problem. */
/** An agent's provider tools and settings its protocol cannot honour, as problems naming the agent and the key. */
export const providerProblems = (agent: Agent, i: number): ReadonlyArray<ConfigProblem> => {
  const b = agent.backend
  const problems: Array<ConfigProblem> = [...geminiProblems(b, agent.id, i)]
  if (b.type === "scripted") return problems
  const family = presetOf({ ...b, type: b.type }).family
  const at = (key: string) => `agents[${i}].backend.${key}`
  if (family === "chat") {
    const tools: ReadonlyArray<readonly [string, boolean | undefined, string]> = [
      ["enable_web_search", b.enable_web_search, "web search"],
      ["enable_code_interpreter", b.enable_code_interpreter, "code execution"],
      ["enable_code_execution", b.enable_code_execution, "code execution"],
    ]
    for (const [key, on, what] of tools) {
      // OpenRouter searches with its web plugin (`plugins: [{id: "web"}]`).
      if (on === true && !(b.type === "openrouter" && key === "enable_web_search")) {
        problems.push({
          path: at(key),
          message: `agent ${agent.id}: type ${b.type} speaks Chat Completions, which has no provider-side ${what}: remove ${key}, or use type openai or claude`,
        })
      }
    }
  }
  const effort = b.reasoning?.effort
  if (family === "anthropic" && effort !== undefined && !CLAUDE_EFFORTS.includes(effort)) {
    problems.push({
      path: at("reasoning.effort"),
      message: `agent ${agent.id}: type claude takes an effort of ${CLAUDE_EFFORTS.join(", ")}, found ${JSON.stringify(effort)}`,
    })
  }
  return problems
}

export interface ConfigAnalysis {
  readonly config: Config | null
  readonly problems: ReadonlyArray<ConfigProblem>
}

/** Whether the key at `path` is `parent` or within it (`""` is the whole document). */
const atOrUnder = (path: string, parent: string): boolean =>
  parent === "" || path === parent || path.startsWith(`${parent}.`) || path.startsWith(`${parent}[`)

/** Schema issues of a decode, one per path, none that a deeper one explains. */
const issuesOf = (
  error: ParseResult.ParseError,
): ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }> => {
  // A union reports one issue per member, and its parent the same failure again:
  // keep the first issue of each path, and no path that holds a deeper one.
  const byPath = new Map<string, { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const key = formatPath(issue.path)
    if (!byPath.has(key)) byPath.set(key, { path: issue.path, message: issue.message.replace(/, actual /, ", found ") })
  }
  const keys = [...byPath.keys()]
  return [...byPath].filter(([path]) => !keys.some((other) => other !== path && atOrUnder(other, path))).map(([, issue]) => issue)
}

/**
 * Reads a parsed YAML document in one pass: every problem, errors and warnings
 * together. A value that fails its check is reported and left out, and the rest
 * is checked as if it were not there, so no problem waits for another to be
 * fixed. Unset `${VAR}`s are problems of kind `env` (whether they stop
 * anything is the caller's choice); a value that only fails because of one is
 * not reported again.
 */
export const analyzeConfig = (raw: unknown, env: Readonly<Record<string, string | undefined>>): ConfigAnalysis => {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return { config: null, problems: [{ path: "", message: `Expected a mapping with an agents list, found ${describe(raw)}` }] }
  }
  const doc = raw as Record<string, unknown>
  const problems: Array<ConfigProblem> = []
  const unset: Array<ConfigProblem> = []
  const { doc: expanded, tools: pythonTools } = takePythonTools(
    withMultimodalTools(withDiscoveredServers(expandEnv(raw, env, unset), env), problems),
    problems,
  )
  problems.push(...unset.map((p) => ({ ...p, kind: "env" as const })))
  const unsetPaths = unset.map((p) => p.path)
  const unsupportedAgents = unsupportedAgentsOf(doc)
  let decoded = decodeFile(expanded)
  let typed = expanded
  // `max_tokens: ${MAX_TOKENS}`: a value that is one whole reference, found where a number or a
  // boolean was expected, is read as one when its text is one. Strings stay strings everywhere else.
  if (Either.isLeft(decoded)) {
    typed = ParseResult.ArrayFormatter.formatErrorSync(decoded.left).reduce<unknown>(
      (d, issue) => (isWholeReference(valueAt(raw, issue.path)) ? setAt(d, issue.path, scalarOf(valueAt(d, issue.path))) : d),
      expanded,
    )
    if (typed !== expanded) decoded = decodeFile(typed)
  }
  // Mappings that lost a value: what the later checks find in them may only follow from that.
  const damaged: Array<string> = []
  // The document without its values of a wrong type: what is read key by key after the decode.
  let rest = typed
  if (Either.isLeft(decoded)) {
    for (const issue of issuesOf(decoded.left)) {
      const path = formatPath(issue.path)
      rest = deleteAt(rest, issue.path)
      if (unsetPaths.some((unsetPath) => atOrUnder(path, unsetPath))) continue
      damaged.push(formatPath(issue.path.slice(0, -1)))
      const agentAt = unsupportedAgents.find((at) => path === `${at}.backend.type`)
      if (agentAt !== undefined) {
        problems.push({
          path,
          message: UNSUPPORTED_BACKENDS[String(field(field(valueAt(raw, issue.path.slice(0, -2)), "backend"), "type"))]!,
        })
        continue
      }
      problems.push({ path, message: shownMessage(issue.message, valueAt(raw, issue.path), env) })
    }
    // The rest is checked too; what still fails after that is already said.
    decoded = decodeFile(rest)
  }
  problems.push(...documentProblems(doc, unsupportedAgents))
  problems.push(...coordinationProblems(field(rest, "orchestrator")))
  if (Either.isLeft(decoded)) return { config: null, problems }
  const checked = problems.length
  const file = decoded.right
  const entries = file.agents ?? (file.agent ? [file.agent] : [])
  if (entries.length === 0 && !problems.some((p) => p.path === "agents" || p.path.startsWith("agents["))) {
    problems.push({ path: "agents", message: "Expected a list of at least one agent, found none" })
  }
  if (file.agents && file.agent) problems.push({ path: "agent", message: "Expected either agents or agent, found both" })
  const agents = entries.map(
    (entry, i): Agent => ({
      id: entry.id ?? `agent${i + 1}`,
      anonId: `agent${i + 1}`,
      systemMessage: entry.system_message ?? null,
      backend: entry.backend,
      ...(pythonTools.has(i) ? { pythonTools: pythonTools.get(i)! } : {}),
      ...(entry.voting_sensitivity !== undefined ? { votingSensitivity: entry.voting_sensitivity } : {}),
    }),
  )
  const seen = new Set<string>()
  agents.forEach((agent, i) => {
    if (seen.has(agent.id))
      problems.push({ path: `agents[${i}].id`, message: `Expected a unique id, found ${JSON.stringify(agent.id)} again` })
    seen.add(agent.id)
    const vote = agent.backend.vote
    if (vote !== undefined && Number(vote.slice(5)) > agents.length) {
      problems.push({
        path: `agents[${i}].backend.vote`,
        message: `Expected agent1..agent${agents.length}, found ${JSON.stringify(vote)}`,
      })
    }
    problems.push(...providerProblems(agent, i))
    problems.push(...cliAgentProblems(agent, i))
    problems.push(...mcpProblems(agent.backend.mcp_servers, `agents[${i}].backend.mcp_servers`))
    const toolNames = new Set<string>()
    agent.backend.custom_tools?.forEach((tool, j) => {
      const path = `agents[${i}].backend.custom_tools[${j}].name`
      if (tool.name === "new_answer" || tool.name === "vote")
        problems.push({ path, message: `Expected a name other than the workflow tool ${tool.name}` })
      else if (toolNames.has(tool.name))
        problems.push({ path, message: `Expected a unique tool name, found ${JSON.stringify(tool.name)} again` })
      toolNames.add(tool.name)
    })
    const at = file.agents ? `agents[${i}]` : "agent"
    if (
      agent.backend.type === "chatcompletion" &&
      field(field(valueAt(raw, at === "agent" ? ["agent"] : ["agents", i]), "backend"), "base_url") === undefined
    ) {
      problems.push({ path: `${at}.backend.base_url`, message: "Expected a base_url for type chatcompletion, found none" })
    }
  })
  problems.push(...contextPathProblems(file.orchestrator?.context_paths))
  const found = [...problems.slice(0, checked), ...problems.slice(checked).filter((p) => !damaged.some((d) => atOrUnder(p.path, d)))]
  if (damaged.length > 0 || found.some((p) => p.kind === undefined)) return { config: null, problems: found }
  return { config: configOf(file, agents), problems: found }
}

/** Decodes a parsed YAML document into a `Config`, or every problem that stops a run (warnings are left to `unknownKeys`). */
export const decodeConfig = (
  raw: unknown,
  env: Readonly<Record<string, string | undefined>>,
): Either.Either<Config, ReadonlyArray<ConfigProblem>> => {
  const { config, problems } = analyzeConfig(raw, env)
  const stopping = problems.filter((p) => p.kind !== "warning")
  return config !== null && stopping.length === 0 ? Either.right(config) : Either.left(stopping)
}

const describe = (value: unknown): string =>
  value === null || value === undefined ? "an empty document" : Array.isArray(value) ? "a list" : `${typeof value} ${JSON.stringify(value)}`
