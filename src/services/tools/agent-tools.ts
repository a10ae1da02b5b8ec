/**
 * The `AgentTools` service: each agent's own tools, as one `ToolProvider` per agent.
 *
 * An agent's tools come from several providers (its command tools, its MCP
 * servers' tools, ...); `combineProviders` merges them into one, and refuses
 * (at start-up, before any event) two tools of one agent with the same name,
 * or a tool named like a workflow tool (`new_answer`, `vote`). The live layer
 * (`AgentTools.fromProviders`) serves a map of agent id to provider; an agent
 * missing from it has no tools. `AgentTools.fake` is the test layer: tools
 * given as plain functions of their arguments.
 * `commandToolProviders` makes every agent's command tools from the config.
 */
import { Context, Effect, Either, Layer } from "effect"
import type { Agent, Config } from "../../domain/config.ts"
import { WORKFLOW_TOOLS } from "../../domain/round-machine.ts"
import { type Env, resolveApiKey } from "../backends/keys.ts"
import { makeCommandTools, toolEnvironment } from "./command-tools.ts"
import { type ProvidedTool, ToolRunError, type ToolProvider, noTools } from "./tool-provider.ts"

export class AgentTools extends Context.Tag("massgen/AgentTools")<AgentTools, { readonly forAgent: (agentId: string) => ToolProvider }>() {
  static fromProviders(providers: ReadonlyMap<string, ToolProvider>): Layer.Layer<AgentTools> {
    return Layer.succeed(AgentTools, { forAgent: (id) => providers.get(id) ?? noTools })
  }

  /** Tools as functions of their arguments (a thrown error is a failed call), by agent, then by tool name. */
  static fake(tools: Readonly<Record<string, Readonly<Record<string, (args: Record<string, unknown>) => string>>>>): Layer.Layer<AgentTools> {
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
            return Effect.try({ try: () => fn(args), catch: (e) => new ToolRunError({ reason: "failed", detail: e instanceof Error ? e.message : String(e) }) })
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
      if (owner.has(name)) return Either.left(`two tools are named ${name}${tool.server === null ? "" : ` (one of MCP server ${tool.server})`}`)
      owner.set(name, provider)
      tools.push(tool)
    }
  }
  if (providers.length === 1) return Either.right(providers[0]!)
  return Either.right({
    tools,
    run: (name, args, context) => owner.get(name)?.run(name, args, context) ?? noTools.run(name, args),
  })
}

/**
 * Every agent's command tools, run in `cwd` (or the agent's own, when `cwd` is
 * a function: its workspace) with `env` cleared of every key (the run's own
 * keys included, found by `resolveApiKey`).
 */
export const commandToolProviders = (config: Config, env: Env, cwd: string | ((agent: Agent) => string)): ReadonlyMap<string, ToolProvider> => {
  const secrets = config.agents.flatMap((a) => {
    const key = resolveApiKey(a, env)
    return Either.isRight(key) && key.right !== null ? [key.right] : []
  })
  const clean = toolEnvironment(env, secrets)
  return new Map(
    config.agents.flatMap((a) => (a.backend.custom_tools?.length ? [[a.id, makeCommandTools(a.backend.custom_tools, typeof cwd === "string" ? cwd : cwd(a), clean)] as const] : [])),
  )
}
