/**
 * MCP server entries: from `backend.mcp_servers` as written to what a server is started with.
 *
 * `mcpEntries(servers)` reads MassGen's two shapes (a list of entries with a
 * `name`, or a mapping of names to entries) into one list, in order.
 * `mcpProblems` is what `--validate` and a run check without starting anything
 * and without the environment: a stdio entry has a command, an HTTP one an
 * http(s) URL (unless a `${VAR}` makes it up), and an agent's server names are
 * unique. `resolveEntry(entry, env, cwd)` expands `${VAR}` from the environment
 * and `${cwd}` to the agent's working directory, when the server starts, and
 * names the first variable that is not set. `entryKey` is a resolved entry's
 * identity: entries with the same key are one server, started once.
 *
 * Words: an *entry* is one server as one agent's config names it; a *server* is
 * what runs (a process for `stdio`, an endpoint for `streamable-http` and
 * `sse`). A server's tools reach the model as `mcp__<server>__<tool>`
 * (`mcpToolName`), where `<server>` is the entry's name.
 */
import type { ConfigProblem } from "./schema.ts"
import type { McpServerEntry, McpServers } from "./tools.ts"

export type McpTransport = "stdio" | "streamable-http" | "sse"

export interface McpEntry {
  readonly name: string
  readonly type: McpTransport
  readonly fields: McpServerEntry
}

/** The handshake timeout of an entry with no `timeout` key, in seconds (MassGen waits as long). */
export const DEFAULT_MCP_TIMEOUT_SECONDS = 30

export const mcpEntries = (servers: McpServers | undefined): ReadonlyArray<McpEntry> => {
  if (servers === undefined) return []
  const named: ReadonlyArray<readonly [string, McpServerEntry]> = Array.isArray(servers)
    ? servers.map(({ name, ...fields }) => [name, fields] as const)
    : Object.entries(servers as Readonly<Record<string, McpServerEntry>>)
  return named.map(([name, fields]) => ({ name, type: fields.type ?? "stdio", fields }))
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g
const holdsReference = (text: string): boolean => new RegExp(ENV_REF.source).test(text)

const isHttpUrl = (text: string): boolean => {
  try {
    return ["http:", "https:"].includes(new URL(text).protocol)
  } catch {
    return false
  }
}

/** What is wrong with an agent's entries, under `path` (`agents[0].backend.mcp_servers`), found without the environment. */
export const mcpProblems = (servers: McpServers | undefined, path: string): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const seen = new Set<string>()
  const list = Array.isArray(servers)
  mcpEntries(servers).forEach((entry, i) => {
    const at = list ? `${path}[${i}]` : `${path}.${entry.name}`
    if (seen.has(entry.name))
      problems.push({ path: `${at}.name`, message: `Expected a unique server name, found ${JSON.stringify(entry.name)} again` })
    seen.add(entry.name)
    const { command, args, url } = entry.fields
    if (entry.type === "stdio") {
      const argv = commandLine(entry.fields)
      if (argv.length === 0 || argv[0] === "") {
        problems.push({
          path: `${at}.command`,
          message: `Expected a command for a stdio server, found ${command === undefined && args === undefined ? "none" : JSON.stringify(command ?? args)}`,
        })
      }
    } else if (url === undefined) problems.push({ path: `${at}.url`, message: `Expected a url for a ${entry.type} server, found none` })
    else if (!holdsReference(url) && !isHttpUrl(url))
      problems.push({ path: `${at}.url`, message: `Expected an http or https URL, found ${JSON.stringify(url)}` })
  })
  return problems
}

/** A command string split as a shell would split words: spaces separate, quotes and backslashes keep. */
export const splitCommand = (text: string): ReadonlyArray<string> => {
  const words: Array<string> = []
  let word: string | null = null
  let quote: "'" | '"' | null = null
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quote !== null) {
      if (c === quote) quote = null
      else if (c === "\\" && quote === '"' && i + 1 < text.length) word += text[++i]!
      else word += c
    } else if (c === "'" || c === '"') {
      quote = c
      word ??= ""
    } else if (c === "\\" && i + 1 < text.length) word = (word ?? "") + text[++i]!
    else if (/\s/.test(c)) {
      if (word !== null) words.push(word)
      word = null
    } else word = (word ?? "") + c
  }
  if (word !== null) words.push(word)
  return words
}

/** The program and its arguments as written: `command` (a string is split into words, or a list), then `args`. */
const commandLine = (fields: McpServerEntry): ReadonlyArray<string> => {
  const command =
    fields.command === undefined ? [] : typeof fields.command === "string" ? splitCommand(fields.command) : fields.command.map(String)
  return [...command, ...(fields.args ?? []).map(String)]
}

export interface ResolvedStdio {
  readonly type: "stdio"
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
}

export interface ResolvedHttp {
  readonly type: "streamable-http" | "sse"
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
}

/** An entry whose references are expanded: what its server is started with. */
export type ResolvedServer = ResolvedStdio | ResolvedHttp

export interface UnsetVariable {
  readonly _tag: "UnsetVariable"
  readonly variable: string
}

/**
 * The server an entry names, with `${VAR}` taken from `env` and `${cwd}` the
 * agent's working directory (also the stdio default cwd; a relative `cwd` is
 * taken from it); or the first variable that is not set.
 */
export const resolveEntry = (
  entry: McpEntry,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): ResolvedServer | UnsetVariable => {
  let unset: string | null = null
  const expand = (value: string | number | boolean): string =>
    String(value).replace(ENV_REF, (_, name: string) => {
      const found = name === "cwd" ? cwd : env[name]
      if (found === undefined) unset ??= name
      return found ?? ""
    })
  const expandAll = (record: Readonly<Record<string, string | number | boolean>> | undefined) =>
    Object.fromEntries(Object.entries(record ?? {}).map(([k, v]) => [k, expand(v)]))
  const fields = entry.fields
  const resolved: ResolvedServer =
    entry.type === "stdio"
      ? (() => {
          const [command = "", ...args] = commandLine(fields).map(expand)
          const dir = fields.cwd === undefined ? cwd : expand(fields.cwd)
          return { type: "stdio", command, args, env: expandAll(fields.env), cwd: dir.startsWith("/") ? dir : `${cwd}/${dir}` }
        })()
      : { type: entry.type, url: expand(fields.url ?? ""), headers: expandAll(fields.headers) }
  return unset === null ? resolved : { _tag: "UnsetVariable", variable: unset }
}

/** A resolved server's identity: what makes two entries the same server. */
export const entryKey = (server: ResolvedServer): string =>
  server.type === "stdio"
    ? JSON.stringify([server.type, server.command, server.args, Object.entries(server.env).sort(), server.cwd])
    : JSON.stringify([server.type, server.url, Object.entries(server.headers).sort()])

/** The name a tool reaches the model under: `mcp__<server>__<tool>`, with what model APIs refuse in a name (`.`, spaces) as `_`. */
export const mcpToolName = (server: string, tool: string): string => `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`

/** Whether an entry's filters let its server's tool through: `exclude_tools` wins; `allowed_tools`, when given, lists every tool let through. Either names a tool as the server does or as the model sees it. */
export const toolAllowed = (entry: McpEntry, tool: string): boolean => {
  const names = [tool, mcpToolName(entry.name, tool)]
  const { allowed_tools: allowed, exclude_tools: exclude } = entry.fields
  if (exclude?.some((n) => names.includes(n))) return false
  return allowed === undefined || allowed.some((n) => names.includes(n))
}
