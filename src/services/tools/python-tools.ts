/**
 * Python tools: an agent's MassGen Python custom tools (and MassGen's built-in tools massgen provides), as a `ToolProvider`.
 *
 * `pythonToolProviders(config, env, cwd)` is called at a run's start, once:
 * every Python tool's file must be there and `python3` on the `PATH`, and each
 * function is described once by the runner (`python-runner.ts`: its schema
 * from its signature and docstring, as MassGen makes it), in the agent's
 * working directory; what fails is a problem naming the tool and why, and
 * the run stops (exit 1) before its first event. A call runs the runner with
 * `python3 -c` as a command tool runs (`runCommand` in `command-tools.ts`):
 * contained, in the agent's working directory, the JSON request on stdin, no
 * API key in its environment, its output held up to the cap, killed with
 * everything it started when the tool runner's timeout or the round stops
 * it. An exception of the function is a failed call with its one-line
 * message. A built-in tool (`domain/tools/builtin-tools.ts`) runs in massgen.
 * The tool runner records every call as events, as it records every tool's.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { type Agent, absolutePythonTools, type Config, type ConfigProblem, type PythonTool } from "../../domain/config/index.ts"
import type { ToolSpec } from "../../domain/llm.ts"
import { builtinSchema, runBuiltin } from "../../domain/tools/builtin-tools.ts"
import { DEFAULT_TOOL_TIMEOUT_SECONDS } from "../../domain/tools/calls.ts"
import { GENERATE_MEDIA, generateMediaSchema } from "../../domain/tools/media-generation.ts"
import { isMediaTool, mediaToolSchema } from "../../domain/tools/media-tools.ts"
import { snapshotDir } from "../../domain/workspaces/facts.ts"
import { type Backend, type Env, makeBackend } from "../backends/index.ts"
import { cleanToolEnvironment, workspaceOf } from "./agent-tools.ts"
import { runCommand } from "./command-tools.ts"
import { runGenerateMedia } from "./media-generation.ts"
import { type MediaToolsInput, runMediaTool } from "./media-tools.ts"
import { ERROR_MARK, PYTHON_RUNNER } from "./python-runner.ts"
import { type ToolProvider, ToolRunError } from "./tool-provider.ts"
import { agentWorkspace } from "./workspace.ts"

interface Described {
  readonly description: string
  readonly parameters: { readonly properties?: Record<string, unknown>; readonly required?: ReadonlyArray<string> }
}

/** The runner's one-line reason, from the last line of stderr that carries its mark. */
const explain = (stderr: string): string | null => {
  const line = stderr
    .split("\n")
    .reverse()
    .find((l) => l.startsWith(ERROR_MARK))
  return line === undefined ? null : line.slice(ERROR_MARK.length).trim()
}

interface Runner {
  readonly python: string
  readonly cwd: string
  readonly env: Record<string, string>
  readonly context: Readonly<Record<string, unknown>>
}

const request = (runner: Runner, tool: PythonTool, op: "describe" | "call", args: Record<string, unknown> = {}) =>
  runCommand(
    [runner.python, "-c", PYTHON_RUNNER],
    JSON.stringify({ op, path: tool.path, function: tool.function, preset: tool.presetArgs, context: runner.context, arguments: args }),
    runner.cwd,
    runner.env,
    explain,
  )

const specOf = (tool: PythonTool, own: { readonly description: string; readonly parameters: Described["parameters"] }): ToolSpec => ({
  name: tool.name,
  description: tool.description ?? (own.description !== "" ? own.description : `Calls the Python function ${tool.function}`),
  parameters: {
    type: "object",
    properties: Object.fromEntries(Object.entries(own.parameters.properties ?? {}).filter(([k]) => !(k in tool.presetArgs))),
    required: (own.parameters.required ?? []).filter((k) => !(k in tool.presetArgs)),
  },
})

/**
 * What stops a run's Python tools before anything is described: each file
 * that is not there (once per entry), and for each agent with a Python
 * function, `python3` not on the `PATH` of `env`. `--validate` says the first as warnings.
 */
export const pythonToolStartProblems = (config: Config, env: Env): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const python = Bun.which("python3", { PATH: env.PATH ?? "" })
  for (const agent of absolutePythonTools(config, process.cwd()).agents) {
    const tools = (agent.pythonTools ?? []).filter((t) => t.builtin === null)
    if (tools.length > 0 && python === null)
      problems.push({
        path: tools[0]!.at,
        message: `agent ${agent.id}: python3 is not on the PATH: MassGen's Python custom tools run with it (install Python 3)`,
      })
    const said = new Set<string>()
    for (const tool of tools) {
      if (tool.path === null || !tool.path.endsWith(".py") || existsSync(tool.path) || said.has(tool.at)) continue
      said.add(tool.at)
      problems.push({ path: `${tool.at}.path`, message: `agent ${agent.id}: Python file not found: ${tool.path}` })
    }
  }
  return problems
}

/** One agent's Python tools: described now, or the problems that stop the run. */
const agentProvider = (
  agent: Agent,
  tools: ReadonlyArray<PythonTool>,
  runner: Omit<Runner, "python"> & { readonly python: string | null },
  startDir: string,
  timeoutSeconds: number,
  media: MediaToolsInput,
): Effect.Effect<{ readonly provider: ToolProvider | null; readonly problems: ReadonlyArray<ConfigProblem> }> =>
  Effect.gen(function* () {
    const problems: Array<ConfigProblem> = []
    const specs = new Map<string, { readonly spec: ToolSpec; readonly tool: PythonTool }>()
    const python = runner.python
    for (const tool of tools) {
      if (tool.builtin !== null) {
        const own =
          tool.builtin === GENERATE_MEDIA
            ? generateMediaSchema
            : isMediaTool(tool.builtin)
              ? mediaToolSchema(tool.builtin)
              : builtinSchema(tool.builtin)
        specs.set(tool.name, { spec: specOf(tool, own), tool })
        continue
      }
      if (python === null) continue
      // Described in the run's directory: the agent's workspace may not be made yet.
      const described = yield* request({ ...runner, python, cwd: startDir }, tool, "describe").pipe(
        Effect.timeoutFail({
          duration: `${timeoutSeconds} seconds`,
          onTimeout: () => new ToolRunError({ reason: "failed", detail: `did not load in ${timeoutSeconds} s` }),
        }),
        Effect.flatMap((text) =>
          Effect.try({
            try: () => JSON.parse(text) as Described,
            catch: () => new ToolRunError({ reason: "failed", detail: "the runner's answer is not JSON" }),
          }),
        ),
        Effect.either,
      )
      if (described._tag === "Left") {
        problems.push({
          path: tool.at,
          message: `agent ${agent.id}: cannot load ${tool.function} from ${tool.path}: ${described.left.detail}`,
        })
        continue
      }
      specs.set(tool.name, { spec: specOf(tool, described.right), tool })
    }
    if (problems.length > 0 || specs.size === 0) return { provider: null, problems }
    const provider: ToolProvider = {
      tools: [...specs.values()].map(({ spec }) => ({ spec, server: null })),
      run: (name, args, context) => {
        const found = specs.get(name)
        if (found === undefined) return Effect.fail(new ToolRunError({ reason: "unknown_tool", detail: `no Python tool named ${name}` }))
        const { tool } = found
        if (tool.builtin === GENERATE_MEDIA) return runGenerateMedia(media, { ...tool.presetArgs, ...args }, context)
        if (tool.builtin !== null && isMediaTool(tool.builtin))
          return runMediaTool(media, tool.builtin, { ...tool.presetArgs, ...args }, context)
        if (tool.builtin !== null) {
          const result = runBuiltin(tool.builtin, { ...tool.presetArgs, ...args })
          return result.ok ? Effect.succeed(result.text) : Effect.fail(new ToolRunError({ reason: "failed", detail: result.error }))
        }
        return request({ ...runner, python: python! }, tool, "call", args)
      },
    }
    return { provider, problems }
  })

/** What an agent's media tools read and ask: its reach as its file tools have it, and its own backend, made on first use. */
const mediaInput = (config: Config, agent: Agent, env: Env, cwd: string): MediaToolsInput => {
  let made: Backend | undefined
  return {
    agent,
    files: {
      workspace: agentWorkspace(cwd, agent),
      snapshotPath: (label) => join(cwd, snapshotDir(label)),
      contextPaths: config.settings.context_paths ?? [],
    },
    backend: Effect.suspend(() =>
      made !== undefined
        ? Effect.succeed(made)
        : makeBackend(agent, env).pipe(
            Effect.map((b) => (made = b)),
            Effect.mapError((e) => e.message),
          ),
    ),
  }
}

/**
 * Every agent's Python tools, by agent id, run in its working directory (given
 * the run's `cwd`) with `env` cleared of every key; or, in `problems`, why they
 * cannot run here (a file not there, no `python3`, a function that does not load).
 */
export const pythonToolProviders = (
  config: Config,
  env: Env,
  cwd: string,
): Effect.Effect<{ readonly providers: ReadonlyMap<string, ToolProvider>; readonly problems: ReadonlyArray<ConfigProblem> }> =>
  Effect.gen(function* () {
    const providers = new Map<string, ToolProvider>()
    const problems: Array<ConfigProblem> = []
    // Paths a caller has not made absolute yet are read from massgen's working directory, as MassGen reads them.
    const agents = absolutePythonTools(config, process.cwd()).agents.filter((a) => (a.pythonTools?.length ?? 0) > 0)
    if (agents.length === 0) return { providers, problems }
    const clean: Record<string, string> = { ...cleanToolEnvironment(config, env), PYTHONIOENCODING: "utf-8", PYTHONDONTWRITEBYTECODE: "1" }
    const python = Bun.which("python3", { PATH: clean.PATH ?? "" })
    const start = pythonToolStartProblems(config, env)
    if (start.length > 0) return { providers, problems: [...start] }
    for (const agent of agents) {
      const workspace = workspaceOf(agent, cwd)
      const runner = { python, cwd: workspace, env: clean, context: { agent_cwd: workspace, agent_id: agent.id } }
      const media = mediaInput(config, agent, env, cwd)
      const timeout = config.toolTimeoutSeconds ?? DEFAULT_TOOL_TIMEOUT_SECONDS
      const made = yield* agentProvider(agent, agent.pythonTools!, runner, cwd, timeout, media)
      problems.push(...made.problems)
      if (made.provider !== null) providers.set(agent.id, made.provider)
    }
    return { providers, problems }
  })
