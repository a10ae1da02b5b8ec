/**
 * MassGen's Python custom tools: `custom_tools` entries with a `path` and a `function`, read into `PythonTool`s.
 *
 * An entry names a Python file (`path`, resolved at run start against the
 * working directory, as MassGen does) and one function or a list of them
 * (`function`, or MassGen's `func`); `name`, `description` and `preset_args`
 * are one value shared by every function or a list with one per function.
 * `category` is kept (MassGen groups its tools by it; every category is on).
 * Each function becomes one tool the model calls as `custom_tool__<name>`
 * (MassGen's prefix; the name is the function's unless `name` gives another).
 * MassGen's own tools inside its package are not Python files here: the ones
 * massgen provides itself (`BUILTIN_TOOLS`) run in massgen, and the others are
 * refused with a reason naming them (the multimodal ones among them).
 * `takePythonTools(doc, problems)` takes the entries out of the document (the
 * command tools stay for the schema) and gives each agent's tools. Pure.
 *
 * Words: a *Python tool* is one function of such an entry; a *built-in tool*
 * is one of MassGen's own that massgen provides written anew.
 */
import * as nodePath from "node:path"
import { Either, ParseResult, Schema } from "effect"
import { MEDIA_TOOLS, type MediaTool } from "../tools/media-tools.ts"
import { type ConfigProblem, formatPath, opt, setAt, valueAt } from "./schema.ts"

/** MassGen's prefix of a custom tool's name. */
export const PYTHON_TOOL_PREFIX = "custom_tool__"

/** MassGen's tools that massgen provides itself, by the file of MassGen's package they are in and their function. */
export const BUILTIN_TOOLS: Readonly<Record<string, ReadonlyArray<string>>> = {
  "massgen/tool/_basic/_two_num_tool.py": ["two_num_tool"],
  ...Object.fromEntries(MEDIA_TOOLS.map((t) => [`massgen/tool/_multimodal_tools/${t}.py`, [t]])),
  "massgen/tool/_multimodal_tools/generation/generate_media.py": ["generate_media"],
}
/**
 * A built-in tool: MassGen's sample math tool, one of its media understanding tools
 * (`domain/tools/media-tools.ts`), or its image generation (`domain/tools/media-generation.ts`).
 */
export type BuiltinTool = "two_num_tool" | MediaTool | "generate_media"

export interface PythonTool {
  /** The name the model calls: `custom_tool__<name>`. */
  readonly name: string
  readonly function: string
  /** The file as written (or a module name, with no `.py`); null for a built-in tool named without one. */
  readonly path: string | null
  /** Where in the config the entry is (`agents[0].backend.custom_tools[1]`). */
  readonly at: string
  readonly description: string | null
  readonly category: string
  /** Arguments the tool always gets; they are not in its schema. */
  readonly presetArgs: Readonly<Record<string, unknown>>
  /** The built-in tool it is, run in massgen; null for a Python function. */
  readonly builtin: BuiltinTool | null
}

const Text = Schema.String
const OneOrMore = Schema.Union(Text, Schema.NonEmptyArray(Text)).annotations({ identifier: "a string or a list of strings" })
const Args = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ identifier: "a mapping of arguments" })
const PythonToolEntry = Schema.Struct({
  path: opt(Text),
  function: opt(OneOrMore),
  func: opt(OneOrMore),
  name: opt(OneOrMore),
  description: opt(OneOrMore),
  category: opt(Text),
  preset_args: opt(Schema.Union(Args, Schema.Array(Args)).annotations({ identifier: "a mapping of arguments or a list of them" })),
  default_params: opt(Args),
  defer_loading: opt(Schema.Boolean),
  strict: opt(Schema.Boolean),
})
const decodeEntry = Schema.decodeUnknownEither(PythonToolEntry, { errors: "all", onExcessProperty: "ignore" })
const ENTRY_KEYS: ReadonlySet<string> = new Set(Object.keys(PythonToolEntry.fields))

/** Whether a `custom_tools` entry is one of MassGen's Python tools (not a command tool). */
export const isPythonToolEntry = (t: unknown): boolean =>
  t !== null && typeof t === "object" && !Array.isArray(t) && !("command" in t) && ("path" in t || "function" in t || "func" in t)

/** A path as MassGen's package names it (`massgen/tool/...`), or null for a path outside it. */
const packagePath = (path: string): string | null => {
  const p = path.replace(/\\/g, "/").replace(/^(\.\/)+/, "")
  if (p.startsWith("massgen/tool/")) return p
  const i = p.lastIndexOf("/massgen/tool/")
  return i >= 0 && p.startsWith("/") ? p.slice(i + 1) : null
}

/** Why MassGen's own tool `fn` at `path` is not provided (refused, or only left out as MassGen leaves it out), or null when it is. */
const packageProblem = (path: string, fn: string): { readonly message: string; readonly refused: boolean } | null => {
  const provided = BUILTIN_TOOLS[path]
  if (provided?.includes(fn)) return null
  if (provided !== undefined)
    return { message: `${path} has no function ${fn} (it has ${provided.join(", ")}): the tool is left out`, refused: false }
  if (path.startsWith("massgen/tool/_multimodal_tools/"))
    return {
      message: /generat/.test(path)
        ? `MassGen's multimodal tool ${fn} (${path}) is not supported: massgen makes images only, with generate_media on type openai`
        : `MassGen's multimodal tool ${fn} (${path}) is not supported: massgen provides understand_image, understand_audio, understand_video, understand_file, read_media and generate_media`,
      refused: true,
    }
  return {
    message: `MassGen's own tool ${fn} (${path}) is not provided by massgen: use a Python file of your own, a command tool or an MCP server`,
    refused: true,
  }
}

/** One value per function: a shared value, or a list as long as the functions. */
const perFunction = <A>(value: A | ReadonlyArray<A> | undefined, n: number): ReadonlyArray<A | undefined> | null =>
  value === undefined ? Array(n).fill(undefined) : Array.isArray(value) ? (value.length === n ? value : null) : Array(n).fill(value)

/** The tools of one entry at `at`, with its problems. */
const entryTools = (entry: unknown, at: ReadonlyArray<PropertyKey>, problems: Array<ConfigProblem>): ReadonlyArray<PythonTool> => {
  const where = formatPath(at)
  const decoded = decodeEntry(entry)
  if (Either.isLeft(decoded)) {
    for (const issue of ParseResult.ArrayFormatter.formatErrorSync(decoded.left))
      problems.push({ path: formatPath([...at, ...issue.path]), message: issue.message.replace(/, actual /, ", found ") })
    return []
  }
  for (const key of Object.keys(entry as object)) {
    if (!ENTRY_KEYS.has(key))
      problems.push({
        path: `${where}.${key}`,
        message: `unknown key, ignored (known keys here: ${[...ENTRY_KEYS].join(", ")})`,
        kind: "warning",
      })
  }
  const e = decoded.right
  if (e.default_params !== undefined)
    problems.push({
      path: `${where}.default_params`,
      message: "MassGen does not read default_params: ignored",
      suggestion: "use preset_args",
      kind: "warning",
    })
  for (const key of ["defer_loading", "strict"] as const)
    if (e[key] !== undefined)
      problems.push({ path: `${where}.${key}`, message: "a Claude tool-search setting massgen does not have: ignored", kind: "warning" })
  const fns = e.function ?? e.func
  if (fns === undefined) {
    problems.push({ path: `${where}.function`, message: "Expected the name of a function in the file, or a list of them, found none" })
    return []
  }
  const functions: ReadonlyArray<string> = typeof fns === "string" ? [fns] : fns
  const n = functions.length
  const names = perFunction(e.name, n)
  const descriptions = perFunction(e.description, n)
  const presets = perFunction(e.preset_args, n)
  const lists: ReadonlyArray<readonly [string, unknown]> = [
    ["name", names],
    ["description", descriptions],
    ["preset_args", presets],
  ]
  const wrong = lists.filter(([, v]) => v === null)
  for (const [key] of wrong)
    problems.push({
      path: `${where}.${key}`,
      message: `Expected one ${key} or a list of ${n}, one for each function, found a list of another length`,
    })
  if (wrong.length > 0) return []
  const pkg = e.path === undefined ? null : packagePath(e.path)
  const tools: Array<PythonTool> = []
  functions.forEach((fn, i) => {
    const builtinPath = pkg ?? (e.path === undefined ? Object.keys(BUILTIN_TOOLS).find((p) => BUILTIN_TOOLS[p]!.includes(fn)) : undefined)
    // A function MassGen does not find is left out with a message, and its run goes on: so here.
    if (e.path === undefined && builtinPath === undefined) {
      problems.push({ path: `${where}.function`, message: `MassGen has no built-in function ${fn}: the tool is left out`, kind: "warning" })
      return
    }
    const why = builtinPath === undefined ? null : packageProblem(builtinPath, fn)
    if (why !== null) {
      problems.push({ path: `${where}.path`, message: why.message, ...(why.refused ? {} : { kind: "warning" as const }) })
      return
    }
    const name = names![i] ?? fn
    tools.push({
      name: name.startsWith(PYTHON_TOOL_PREFIX) ? name : `${PYTHON_TOOL_PREFIX}${name}`,
      function: fn,
      path: e.path ?? null,
      at: where,
      description: descriptions![i] ?? null,
      category: e.category ?? "default",
      presetArgs: presets![i] ?? {},
      builtin: builtinPath === undefined ? null : (fn as BuiltinTool),
    })
  })
  return tools
}

/**
 * `doc` without MassGen's Python tools (what its schema decodes), and each
 * agent's Python tools by its place in the config (0 for a lone `agent:`);
 * every problem of theirs is added to `problems`.
 */
export const takePythonTools = (
  doc: unknown,
  problems: Array<ConfigProblem>,
): { readonly doc: unknown; readonly tools: ReadonlyMap<number, ReadonlyArray<PythonTool>> } => {
  const agents = valueAt(doc, ["agents"])
  const paths: Array<readonly [number, ReadonlyArray<PropertyKey>]> = Array.isArray(agents)
    ? agents.map((_, i) => [i, ["agents", i, "backend", "custom_tools"]] as const)
    : [[0, ["agent", "backend", "custom_tools"]]]
  let out = doc
  const byAgent = new Map<number, ReadonlyArray<PythonTool>>()
  for (const [i, path] of paths) {
    const entries = valueAt(out, path)
    if (!Array.isArray(entries) || !entries.some(isPythonToolEntry)) continue
    const tools = entries.flatMap((t, j) => (isPythonToolEntry(t) ? entryTools(t, [...path, j], problems) : []))
    const seen = new Set<string>()
    for (const tool of tools) {
      if (seen.has(tool.name)) problems.push({ path: tool.at, message: `Expected a unique tool name, found ${tool.name} again` })
      seen.add(tool.name)
    }
    byAgent.set(i, tools)
    out = setAt(
      out,
      path,
      entries.filter((t) => !isPythonToolEntry(t)),
    )
  }
  return { doc: out, tools: byAgent }
}

/** The config with every Python tool's file made absolute from `cwd` (MassGen reads them from its working directory); a module name stays as it is. */
export const absolutePythonTools = <C extends { readonly agents: ReadonlyArray<{ readonly pythonTools?: ReadonlyArray<PythonTool> }> }>(
  config: C,
  cwd: string,
): C => ({
  ...config,
  agents: config.agents.map((a) =>
    a.pythonTools === undefined
      ? a
      : {
          ...a,
          pythonTools: a.pythonTools.map((t) =>
            t.path !== null && t.builtin === null && t.path.endsWith(".py") ? { ...t, path: nodePath.resolve(cwd, t.path) } : t,
          ),
        },
  ),
})

/**
 * MassGen's registry of MCP servers that `auto_discover_custom_tools: true`
 * adds to an agent's (by name, unless it names one so itself): Context7 always
 * (without its optional key), Brave and Exa search when their key is set. Each
 * key reaches only its server, as a `${VAR}` expanded when the server starts.
 */
const REGISTRY: ReadonlyArray<{ readonly key: string | null; readonly entry: Readonly<Record<string, unknown>> }> = [
  { key: null, entry: { name: "context7", type: "stdio", command: "npx", args: ["-y", "@upstash/context7-mcp"] } },
  {
    key: "BRAVE_API_KEY",
    entry: {
      name: "brave_search",
      type: "stdio",
      command: "npx",
      args: ["-y", "@brave/brave-search-mcp-server"],
      env: { BRAVE_API_KEY: "${BRAVE_API_KEY}" },
    },
  },
  {
    key: "EXA_API_KEY",
    entry: { name: "exa_search", type: "stdio", command: "npx", args: ["-y", "exa-mcp-server"], env: { EXA_API_KEY: "${EXA_API_KEY}" } },
  },
]

/** `doc` with MassGen's registry servers added to each backend that sets `auto_discover_custom_tools: true`, given the environment. */
export const withDiscoveredServers = (doc: unknown, env: Readonly<Record<string, string | undefined>>): unknown => {
  const agents = valueAt(doc, ["agents"])
  const backends: ReadonlyArray<ReadonlyArray<PropertyKey>> = Array.isArray(agents)
    ? agents.map((_, i) => ["agents", i, "backend"])
    : [["agent", "backend"]]
  let out = doc
  for (const at of backends) {
    if (valueAt(out, [...at, "auto_discover_custom_tools"]) !== true) continue
    const servers = valueAt(out, [...at, "mcp_servers"])
    const found = REGISTRY.filter((r) => r.key === null || (env[r.key] ?? "").trim() !== "").map((r) => r.entry)
    if (Array.isArray(servers)) {
      const names = new Set(servers.map((s) => (s !== null && typeof s === "object" ? (s as { name?: unknown }).name : undefined)))
      out = setAt(out, [...at, "mcp_servers"], [...servers, ...found.filter((e) => !names.has(e.name))])
    } else if (servers !== null && typeof servers === "object") {
      const added = Object.fromEntries(found.filter((e) => !(String(e.name) in servers)).map(({ name, ...rest }) => [String(name), rest]))
      out = setAt(out, [...at, "mcp_servers"], { ...servers, ...added })
    } else if (servers === undefined) out = setAt(out, [...at, "mcp_servers"], found)
  }
  return out
}
