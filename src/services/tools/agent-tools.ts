/**
 * The `AgentTools` service: each agent's own tools, as one `ToolProvider` per agent.
 *
 * An agent's tools come from several providers (its command tools, its MCP
 * servers' tools, ...); `combineProviders` merges them into one, and refuses
 * (at start-up, before any event) two tools of one agent with the same name,
 * or a tool named like a workflow tool (`new_answer`, `vote`).
 * The merged provider offers each tool under its model name (`withModelNames`:
 * valid for every provider's API, and one per tool; `domain/tools/names.ts`) and
 * runs a call of that name by the tool's own name. The live layer
 * (`AgentTools.fromProviders`) serves a map of agent id to provider; an agent
 * missing from it has no tools. `AgentTools.fake` is the test layer: tools
 * given as plain functions of their arguments.
 * `commandToolProviders` makes every agent's command tools from the config
 * (a program that cannot be run stops the start: `ToolStartError`),
 * `commandLineProviders` every `execute_command` tool, each mode checked once
 * (a mode that cannot run here stops the run at start: `sandbox.ts`).
 * `workspaceOf` is where an agent's commands and tools run.
 */
import { Context, Effect, Either, Layer } from "effect"
import type { Agent, Config } from "../../domain/config/index.ts"
import { WORKFLOW_TOOLS } from "../../domain/coordination/round-machine.ts"
import type { CallRole } from "../../domain/events/index.ts"
import { commandLineSettings } from "../../domain/tools/command-line.ts"
import { modelToolNames } from "../../domain/tools/names.ts"
import { type Env, resolveApiKey } from "../backends/index.ts"
import { makeCommandLine } from "./command-line.ts"
import { commandToolProblem, makeCommandTools, toolEnvironment } from "./command-tools.ts"
import { type CommandLineStartError, type Executor, startExecutor } from "./sandbox.ts"
import { noTools, type ProvidedTool, type ToolProvider, ToolRunError, ToolStartError } from "./tool-provider.ts"
import { agentWorkspace } from "./workspace.ts"

export class AgentTools extends Context.Tag("massgen/AgentTools")<AgentTools, { readonly forAgent: (agentId: string) => ToolProvider }>() {
  static fromProviders(providers: ReadonlyMap<string, ToolProvider>): Layer.Layer<AgentTools> {
    return Layer.succeed(AgentTools, { forAgent: (id) => providers.get(id) ?? noTools })
  }

  /** Tools as functions of their arguments (a thrown error is a failed call), by agent, then by tool name. */
  static fake(
    tools: Readonly<Record<string, Readonly<Record<string, (args: Record<string, unknown>) => string>>>>,
  ): Layer.Layer<AgentTools> {
    const providers = new Map(
      Object.entries(tools).map(([agent, fns]): [string, ToolProvider] => [
        agent,
        {
          tools: Object.keys(fns).map((name) => ({
            spec: { name, description: `the ${name} tool`, parameters: { type: "object", properties: {}, required: [] } },
            server: null,
          })),
          run: (name, args) => {
            const fn = fns[name]
            if (fn === undefined) return Effect.fail(new ToolRunError({ reason: "unknown_tool", detail: `no tool named ${name}` }))
            return Effect.try({
              try: () => fn(args),
              catch: (e) => new ToolRunError({ reason: "failed", detail: e instanceof Error ? e.message : String(e) }),
            })
          },
        },
      ]),
    )
    return AgentTools.fromProviders(providers)
  }
}

/** One provider for all of `providers`' tools, or why not: a name offered twice, or a workflow tool's name. */
export const combineProviders = (providers: ReadonlyArray<ToolProvider>): Either.Either<ToolProvider, string> => {
  const owner = new Map<string, ToolProvider>()
  const tools: Array<ProvidedTool> = []
  for (const provider of providers) {
    for (const tool of provider.tools) {
      const name = tool.spec.name
      if (WORKFLOW_TOOLS.has(name)) return Either.left(`a tool may not be named ${name}: it is a workflow tool`)
      if (owner.has(name))
        return Either.left(`two tools are named ${name}${tool.server === null ? "" : ` (one of MCP server ${tool.server})`}`)
      owner.set(name, provider)
      tools.push(tool)
    }
  }
  const combined: ToolProvider =
    providers.length === 1
      ? providers[0]!
      : {
          tools,
          run: (name, args, context) => owner.get(name)?.run(name, args, context) ?? noTools.run(name, args),
          ...(providers.some((p) => p.refuses !== undefined)
            ? { refuses: (name: string, role: CallRole) => owner.get(name)?.refuses?.(name, role) ?? null }
            : {}),
        }
  return Either.right(withModelNames(combined))
}

/**
 * `provider` with its tools offered under their model names (`domain/tools/names.ts`):
 * a call of a model name runs the tool of that name. A provider whose names are all valid is itself.
 */
export const withModelNames = (provider: ToolProvider): ToolProvider => {
  const real = provider.tools.map((t) => t.spec.name)
  const names = modelToolNames(real, WORKFLOW_TOOLS)
  if (names.every((n, i) => n === real[i])) return provider
  const realOf = new Map(names.map((n, i) => [n, real[i]!]))
  return {
    tools: provider.tools.map((t, i) => ({ ...t, spec: { ...t.spec, name: names[i]! } })),
    run: (name, args, context) => {
      const target = realOf.get(name)
      return target === undefined ? noTools.run(name, args) : provider.run(target, args, context)
    },
    ...(provider.refuses === undefined
      ? {}
      : {
          refuses: (name: string, role: CallRole) => {
            const target = realOf.get(name)
            return target === undefined ? null : (provider.refuses?.(target, role) ?? null)
          },
        }),
  }
}

/** The run's own keys (found by `resolveApiKey`). */
const runKeys = (config: Config, env: Env): ReadonlyArray<string> =>
  config.agents.flatMap((a) => {
    const key = resolveApiKey(a, env)
    return Either.isRight(key) && key.right !== null ? [key.right] : []
  })

/** `env` cleared of every key, the run's own keys included: the environment of every tool process. */
export const cleanToolEnvironment = (config: Config, env: Env): Record<string, string> => toolEnvironment(env, runKeys(config, env))

/**
 * The directory an agent's commands and tools run in, given the run's working
 * directory `cwd` (its log directory): its workspace when its backend sets
 * `cwd`, else `cwd` itself.
 */
export const workspaceOf = (agent: Agent, cwd: string): string => agentWorkspace(cwd, agent) ?? cwd

/**
 * Every agent's command tools, run in its workspace with `env` cleared of every
 * key; a tool whose program cannot be run there fails the start, naming it.
 */
export const commandToolProviders = (
  config: Config,
  env: Env,
  cwd: string,
): Effect.Effect<ReadonlyMap<string, ToolProvider>, ToolStartError> =>
  Effect.gen(function* () {
    const clean = cleanToolEnvironment(config, env)
    const out = new Map<string, ToolProvider>()
    for (const a of config.agents) {
      const tools = a.backend.custom_tools ?? []
      if (tools.length === 0) continue
      const dir = workspaceOf(a, cwd)
      for (const tool of tools) {
        const problem = commandToolProblem(tool, dir, clean.PATH ?? "")
        if (problem !== null)
          return yield* new ToolStartError({
            kind: "command_tool",
            name: `${a.id}/${tool.name}`,
            problem: `command tool ${tool.name} of agent ${a.id} cannot start: ${problem}`,
          })
      }
      out.set(a.id, makeCommandTools(tools, dir, clean))
    }
    return out as ReadonlyMap<string, ToolProvider>
  })

/**
 * Every `execute_command` tool (agents with `enable_mcp_command_line: true`),
 * run in the agent's workspace with `env` cleared of every key; each execution
 * mode is checked once, and one that cannot run here fails the start.
 * `readOnlyPaths` are the paths the agent may read in the sandbox besides the root filesystem's.
 */
export const commandLineProviders = (
  config: Config,
  env: Env,
  cwd: string,
  readOnlyPaths: (agent: Config["agents"][number]) => ReadonlyArray<string> = () => [],
): Effect.Effect<ReadonlyMap<string, ToolProvider>, CommandLineStartError> =>
  Effect.gen(function* () {
    const clean = cleanToolEnvironment(config, env)
    const executors = new Map<string, Executor>()
    const out = new Map<string, ToolProvider>()
    for (const agent of config.agents) {
      const settings = commandLineSettings(agent.backend)
      if (settings === null) continue
      const key = JSON.stringify([settings.mode, settings.network, settings.docker])
      const executor = executors.get(key) ?? (yield* startExecutor(settings, clean, agent.id))
      executors.set(key, executor)
      out.set(
        agent.id,
        makeCommandLine(workspaceOf(agent, cwd), readOnlyPaths(agent), settings, { env: clean, executor, secrets: runKeys(config, env) }),
      )
    }
    return out as ReadonlyMap<string, ToolProvider>
  })
