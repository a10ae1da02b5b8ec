/**
 * Everything a run needs before its first event: the environment, the config, the backends.
 *
 * `resolveRunConfig` loads `.env` from the working directory under the
 * environment (the environment wins), then the `--config` file, or builds a
 * config from `--model`/`--models` (one agent per model, the backend inferred
 * from the model name unless `--backend` names it). `makeBackends` builds every
 * agent's backend; a missing API key stops the run before any call, and every
 * missing key is named at once (`missingKeys`, which `--validate` reports too).
 * `priceOf` prices a call from the built-in table and the config's `pricing:`.
 */

import { existsSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either } from "effect"
import type { Config, ConfigProblem } from "../../domain/config/index.ts"
import {
  absoluteContextPaths,
  absolutePythonTools,
  BACKEND_TYPES,
  costOf,
  criteriaOf,
  inferBackendType,
  priceFor,
  quickSettings,
} from "../../domain/config/index.ts"
import type { ChecklistSettings, Event } from "../../domain/events/index.ts"
import type { TokenUsage } from "../../domain/llm.ts"
import { snapshotDir } from "../../domain/workspaces/facts.ts"
import type { Backend } from "../../services/backends/index.ts"
import { azureEndpoint, cliNotFoundProblems, type Env, loadDotEnv, makeBackend, resolveApiKey } from "../../services/backends/index.ts"
import { INPUT_LIMITS, readInputFile } from "../../services/input-file.ts"
import { SKILLS_DIR } from "../../services/skills/offer.ts"
import { combineProviders, commandLineProviders, commandToolProviders } from "../../services/tools/agent-tools.ts"
import { makeFileTools } from "../../services/tools/file-tools.ts"
import { withPlanningMode } from "../../services/tools/planning-mode.ts"
import { makePlanningTools } from "../../services/tools/planning-tools.ts"
import { pythonToolProviders, pythonToolStartProblems } from "../../services/tools/python-tools.ts"
import type { ToolProvider } from "../../services/tools/tool-provider.ts"
import { agentWorkspace } from "../../services/tools/workspace.ts"
import type { RunArgs } from "../args/index.ts"
import { ConfigError, decodeDocument, isFlag, loadConfigFile } from "./load-config.ts"

export interface RunConfig {
  readonly config: Config
  readonly raw: unknown
  readonly path: string | null
  readonly env: Env
  /** Where the config comes from, for messages: its file, or the flag its agents were built from (`--model`). */
  readonly where: string
}

/** The flag a quick-start config comes from, as typed. */
const flagOf = (args: RunArgs): string => args.modelsFlag ?? "--models"

const quickStartDocument = (args: RunArgs): Either.Either<unknown, ConfigError> => {
  const agents: Array<unknown> = []
  if (args.backend !== null && !(BACKEND_TYPES as ReadonlyArray<string>).includes(args.backend)) {
    const message = `expected one of ${BACKEND_TYPES.join(", ")}, found ${JSON.stringify(args.backend)}`
    return Either.left(new ConfigError({ reason: "invalid", path: "--backend", problems: [{ path: "", message }] }))
  }
  for (const [i, model] of args.models.entries()) {
    const type = args.backend ?? inferBackendType(model)
    if (type === null) {
      return Either.left(
        new ConfigError({
          reason: "invalid",
          path: flagOf(args),
          problems: [{ path: model, message: `cannot tell its backend from the name: add --backend (one of ${BACKEND_TYPES.join(", ")})` }],
        }),
      )
    }
    agents.push({
      id: args.models.length === 1 ? "agent_a" : `agent_${String.fromCharCode(97 + (i % 26))}${i >= 26 ? Math.floor(i / 26) : ""}`,
      ...(args.systemMessage !== null ? { system_message: args.systemMessage } : {}),
      backend: { type, model, ...(args.baseUrl !== null ? { base_url: args.baseUrl } : {}) },
    })
  }
  return Either.right({ agents })
}

/**
 * The config with its context paths made absolute from `cwd`, as the run
 * records them; a `read` context path that does not exist stops the run (a
 * `write` one is made by the presenter's first write).
 */
const withAbsoluteContextPaths = (config: Config, cwd: string, where: string) =>
  Effect.gen(function* () {
    const given = config.settings.context_paths
    if (given === undefined) return config
    const paths = absoluteContextPaths(given, cwd)
    const problems = paths.flatMap(
      (c, i): ReadonlyArray<ConfigProblem> =>
        c.permission === "read" && !existsSync(c.path)
          ? [{ path: `orchestrator.context_paths[${i}].path`, message: `context path ${c.path} does not exist` }]
          : [],
    )
    if (problems.length > 0) return yield* new ConfigError({ reason: "invalid", path: where, problems })
    return { ...config, settings: { ...config.settings, context_paths: paths } }
  })

/** `--eval-criteria FILE` over the config's checklist criteria (MassGen: no effect unless `checklist_gated`). */
const evalCriteria = (path: string | null, checklist: ChecklistSettings | undefined) =>
  Effect.suspend(() => {
    if (path === null) return Effect.succeed(checklist)
    const where = `--eval-criteria ${path}`
    const read = readInputFile(path, INPUT_LIMITS.config, "criteria file", "for a criteria file")
    if (read._tag === "refused")
      return Effect.fail(new ConfigError({ reason: "unreadable", path: where, problems: [{ path: "", message: read.problem }] }))
    let parsed: unknown
    try {
      parsed = JSON.parse(read.text)
    } catch {
      return Effect.fail(new ConfigError({ reason: "invalid", path: where, problems: [{ path: "", message: "not valid JSON" }] }))
    }
    const criteria = criteriaOf(parsed)
    if (typeof criteria === "string" || criteria.length === 0) {
      const message = typeof criteria === "string" ? criteria : "no criteria in the file"
      return Effect.fail(new ConfigError({ reason: "invalid", path: where, problems: [{ path: "", message }] }))
    }
    return Effect.succeed(checklist === undefined ? undefined : { ...checklist, criteria })
  })

export const resolveRunConfig = (args: RunArgs, baseEnv: Env, cwd: string) =>
  Effect.gen(function* () {
    const env = yield* loadDotEnv(cwd, baseEnv).pipe(
      Effect.mapError((e) => new ConfigError({ reason: "unreadable", path: e.path, problems: [{ path: "", message: e.detail }] })),
    )
    const loaded =
      args.configPath !== null
        ? yield* loadConfigFile(args.configPath, env)
        : yield* Effect.gen(function* () {
            const raw = yield* quickStartDocument(args)
            return { raw, path: null, config: yield* decodeDocument(raw, flagOf(args), env) }
          })
    const checklist = yield* evalCriteria(args.evalCriteria ?? null, loaded.config.settings.checklist)
    const settings = {
      ...(args.quick ? quickSettings(loaded.config.settings, loaded.config.agents.length) : loaded.config.settings),
      ...(args.orchestratorTimeout !== null ? { orchestrator_timeout_seconds: args.orchestratorTimeout } : {}),
      ...(checklist !== undefined ? { checklist } : {}),
    }
    const config = absolutePythonTools(
      yield* withAbsoluteContextPaths({ ...loaded.config, settings }, cwd, loaded.path ?? flagOf(args)),
      cwd,
    )
    // A Python tool's file that is not there, or no python3, stops the run before anything is written.
    const python = pythonToolStartProblems(config, env)
    if (python.length > 0) return yield* new ConfigError({ reason: "invalid", path: loaded.path ?? flagOf(args), problems: python })
    return { config, raw: loaded.raw, path: loaded.path, env, where: loaded.path ?? flagOf(args) } satisfies RunConfig
  })

/**
 * Every agent's missing API key, as config problems (one per agent), for `--validate` and a run alike:
 * under the key's config path, or for a config built from a flag (`fromFlag`), under the model's name.
 */
export const missingKeys = (config: Config, env: Env, fromFlag = false): ReadonlyArray<ConfigProblem> =>
  config.agents.flatMap((agent, i): ReadonlyArray<ConfigProblem> => {
    const endpoint: ReadonlyArray<ConfigProblem> =
      agent.backend.type === "azure_openai" && azureEndpoint(agent, env) === null
        ? [
            {
              path: fromFlag ? (agent.backend.model ?? agent.id) : `agents[${i}].backend.endpoint`,
              message: `missing Azure endpoint: set AZURE_OPENAI_ENDPOINT, or endpoint or base_url in the config (agent ${agent.id})`,
            },
          ]
        : []
    const key = resolveApiKey(agent, env)
    if (Either.isRight(key)) return endpoint
    return [
      ...endpoint,
      fromFlag
        ? {
            path: agent.backend.model ?? agent.id,
            message: `missing API key: set ${key.left.envVars.join(" or ")} in the environment or in .env`,
          }
        : { path: `agents[${i}].backend.api_key`, message: key.left.message },
    ]
  })

/** Every agent's backend; a run with any key missing stops here, naming every missing variable. `path`: the config file or flag. */
export const makeBackends = (config: Config, env: Env, path = "--models", history: ReadonlyArray<Event> = []) =>
  Effect.gen(function* () {
    const missing = [...missingKeys(config, env, isFlag(path)), ...cliNotFoundProblems(config.agents, env)]
    if (missing.length > 0) return yield* new ConfigError({ reason: "invalid", path, problems: missing })
    const backends = new Map<string, Backend>()
    for (const agent of config.agents) backends.set(agent.id, yield* makeBackend(agent, env, history))
    return backends
  })

/**
 * Every agent's own tools, one provider per agent: its file tools when its
 * backend sets `cwd` (`services/tools/file-tools.ts`), its command tools and
 * its `execute_command` tool (run in its workspace, else in `cwd`, the run's
 * log directory; the context paths readable in the sandbox), its task planning
 * tools (`enable_agent_task_planning`) and the providers of `extra` (its MCP
 * servers'), merged, each under planning mode when it is on; two tools of one agent with one name,
 * a command tool whose program cannot be run, or an execution mode that
 * cannot run here, fail it (the run records it: `tool_start_failed`).
 */
export const makeAgentTools = (
  config: Config,
  env: Env,
  cwd: string,
  path: string,
  extra: ReadonlyMap<string, ReadonlyArray<ToolProvider>> = new Map(),
) =>
  Effect.gen(function* () {
    const contextPaths = config.settings.context_paths ?? []
    const commands = yield* commandToolProviders(config, env, cwd)
    // The context paths, and the skills the run offers, are readable in the sandbox.
    const readable = [...contextPaths.map((c) => c.path), ...(config.skills ? [join(cwd, SKILLS_DIR)] : [])]
    const commandLines = yield* commandLineProviders(config, env, cwd, () => readable)
    const python = yield* pythonToolProviders(config, env, cwd)
    const out = new Map<string, ToolProvider>()
    const problems: Array<ConfigProblem> = [...python.problems]
    config.agents.forEach((agent, i) => {
      const workspace = agentWorkspace(cwd, agent)
      const files =
        workspace === null
          ? undefined
          : makeFileTools({
              workspace,
              snapshotPath: (label) => join(cwd, snapshotDir(label)),
              contextPaths,
              ...(config.skills ? { skillsRoot: join(cwd, SKILLS_DIR) } : {}),
            })
      const planning = config.taskPlanning
      const plans =
        planning === undefined
          ? undefined
          : makePlanningTools({ maxTasks: planning.maxTasks, planFileIn: planning.filesystemMode ? workspace : null })
      const runsCommands = new Set([commands.get(agent.id), commandLines.get(agent.id)])
      const own = [files, commands.get(agent.id), python.providers.get(agent.id), commandLines.get(agent.id), plans].filter(
        (p): p is ToolProvider => p !== undefined,
      )
      const mode = config.planningMode
      const providers = [...own, ...(extra.get(agent.id) ?? [])].map((p) =>
        mode === undefined ? p : withPlanningMode(p, runsCommands.has(p) ? "command" : "other", mode.blockedTools),
      )
      if (providers.length === 0) return
      const combined = combineProviders(providers)
      if (Either.isLeft(combined)) problems.push({ path: `agents[${i}].backend`, message: combined.left })
      else out.set(agent.id, combined.right)
    })
    if (problems.length > 0) return yield* new ConfigError({ reason: "invalid", path, problems })
    return out as ReadonlyMap<string, ToolProvider>
  })

/** The agents a budget cannot see: `budget_usd` is set, and their model has no price (`id (model)`). */
export const unpricedUnderBudget = (config: Config, backends: ReadonlyMap<string, Backend>): ReadonlyArray<string> =>
  config.settings.budget_usd === null
    ? []
    : config.agents.flatMap((agent) => {
        const model = backends.get(agent.id)?.model ?? null
        return model !== null && priceFor(model, config.pricing) !== null ? [] : [`${agent.id} (${model ?? "no model"})`]
      })

export const priceOf =
  (config: Config) =>
  (model: string | null, usage: TokenUsage): number | null => {
    if (model === null) return null
    const price = priceFor(model, config.pricing)
    return price === null ? null : costOf(usage, price)
  }
