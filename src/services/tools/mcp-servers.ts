/**
 * MCP servers: started with the run, one `ToolProvider` per agent, stopped with the run.
 *
 * `startMcpServers(agents, { cwd, env })` reads every agent's `mcp_servers`,
 * expands each entry's `${VAR}` from `env` and `${cwd}` to `cwd` (an unset
 * variable stops the start before any server runs, naming the server and the
 * variable; entries of no agent are never read), starts each distinct server
 * once (entries that resolve to the same command, arguments, environment and
 * directory, or URL and headers, share one server), all in parallel, and waits
 * for each handshake and tool list within the entry's `timeout` (seconds,
 * `DEFAULT_MCP_TIMEOUT_SECONDS` by default). A server that does not start fails
 * the whole start with an `McpStartError` naming it, with how it ended and the
 * tail of its stderr. The servers live as long as the scope: closing it stops
 * them (`mcp-stdio.ts` says how a process is stopped, and how it dies with
 * massgen).
 *
 * Each agent's provider offers its entries' tools that pass the entry's
 * filters, as `mcp__<server>__<tool>` with the tool's description and input
 * schema, and runs a call on the server with no time limit of its own (the
 * caller bounds it; interrupting the call cancels the request). A call's
 * result is its text content (`domain/tools/mcp-result.ts`: other content is
 * described in brackets); a result the server marks as an error fails with
 * `failed`, and so does a malformed one; invalid arguments with
 * `bad_arguments`; a server that has exited, or that cannot be reached, with
 * `server_down` and why. A server that exits mid-run is said once on stderr,
 * as a warning. A call to a stdio server goes straight on massgen's transport
 * (`StdioServerTransport.request`: the result is read once, by that check, and
 * a tool's output schema checked as the SDK client checks it), unless the tool
 * must run as a task: that, and every call over HTTP, goes through the SDK
 * client's `callTool`.
 *
 * `probeMcpServers` (for `massgen doctor --config`) starts each server the
 * same way, lists its tools and stops it, saying of each what it found.
 *
 * No message shows the value a `${VAR}` expanded to: the references stand in.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js"
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv"
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js"
import { Cause, Duration, Effect, Runtime, Schema, type Scope } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import type { Agent } from "../../domain/config/index.ts"
import {
  DEFAULT_MCP_TIMEOUT_SECONDS,
  entryKey,
  type McpEntry,
  mcpEntries,
  mcpToolName,
  type ResolvedServer,
  resolveEntry,
  toolAllowed,
} from "../../domain/config/index.ts"
import type { ToolSpec } from "../../domain/llm.ts"
import { toolResult } from "../../domain/tools/mcp-result.ts"
import { maskUrlCredentials } from "../../lib/safe-url.ts"
import { StdioServerTransport } from "./mcp-stdio.ts"
import { type ProvidedTool, type ToolProvider, ToolRunError } from "./tool-provider.ts"

export class McpStartError extends Schema.TaggedError<McpStartError>()("McpStartError", {
  reason: Schema.Literal("unset_variable", "failed", "timeout"),
  /** The server's name, as the (first) entry that names it. */
  server: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `MCP server ${this.server} did not start: ${this.detail}`
  }
}

export interface McpStartOptions {
  /** The agents' working directory: `${cwd}`, and where a stdio server runs unless its entry says otherwise. */
  readonly cwd: string
  /** An agent's own working directory (its workspace), when it has one: its entries' `${cwd}` and stdio servers run there. */
  readonly cwdOf?: (agent: Agent) => string | null
  /** Where `${VAR}` comes from. */
  readonly env: Readonly<Record<string, string | undefined>>
}

/** A request the caller bounds: longer than any run (the SDK's default would end a call at 60 s). */
const UNBOUNDED_MS = 2 ** 31 - 1

/** One started server, shared by the entries that resolve to it. */
interface RunningServer {
  readonly client: Client
  readonly tools: ReadonlyArray<Tool>
  /** The stdio transport, which takes tool calls of its own; null over HTTP. */
  readonly stdio: StdioServerTransport | null
  /** The tools whose calls go through the client: a task to run. */
  readonly viaClient: ReadonlySet<string>
  /** Each tool's output schema check, for the tools that have one. */
  readonly outputChecks: ReadonlyMap<string, JsonSchemaValidator<unknown>>
  /** Why the server can no longer be called, or null while it can. */
  readonly down: () => string | null
  /** A text with the values of the entry's variables replaced by their references, and URL credentials masked. */
  readonly scrub: (text: string) => string
}

/** Output schemas compiled once each, for the clients and for massgen's own calls. */
const outputSchemas: jsonSchemaValidator = (() => {
  const ajv = new AjvJsonSchemaValidator()
  const compiled = new WeakMap<object, JsonSchemaValidator<unknown>>()
  return {
    getValidator: <T>(schema: object) => {
      let check = compiled.get(schema)
      if (check === undefined) compiled.set(schema, (check = ajv.getValidator(schema)))
      return check as JsonSchemaValidator<T>
    },
  }
})()

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** The values the entry's `${VAR}` references expand to (4 characters or more), with the reference that stands for each. */
const referencedValues = (entry: McpEntry, env: McpStartOptions["env"]): ReadonlyArray<readonly [string, string]> =>
  [...JSON.stringify(entry.fields).matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)]
    .flatMap(([ref, name]) => {
      const value = name === "cwd" ? undefined : env[name!]
      return value !== undefined && value.length >= 4 ? [[value, ref] as const] : []
    })
    .sort((a, b) => b[0].length - a[0].length)

const scrubber =
  (pairs: ReadonlyArray<readonly [string, string]>) =>
  (text: string): string =>
    maskUrlCredentials(pairs.reduce((out, [value, ref]) => out.split(value).join(ref), text))

const transportOf = (server: ResolvedServer): Transport =>
  server.type === "stdio"
    ? new StdioServerTransport(server)
    : server.type === "sse"
      ? new SSEClientTransport(new URL(server.url), { requestInit: { headers: server.headers } })
      : new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } })

const listAllTools = async (client: Client, signal: AbortSignal): Promise<ReadonlyArray<Tool>> => {
  const tools: Array<Tool> = []
  let cursor: string | undefined
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: UNBOUNDED_MS })
    tools.push(...page.tools)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  return tools
}

/** Starts one server and lists its tools, within `timeoutSeconds`; the scope stops it. */
const startServer = (
  entry: McpEntry,
  server: ResolvedServer,
  timeoutSeconds: number,
  scrub: (text: string) => string,
  warn: (line: string) => void,
): Effect.Effect<RunningServer, McpStartError, Scope.Scope> =>
  Effect.gen(function* () {
    const transport = transportOf(server)
    const stdio = transport instanceof StdioServerTransport ? transport : null
    const where = server.type === "stdio" ? "" : ` at ${maskUrlCredentials(entry.fields.url ?? "")}`
    let started = false
    let stopping = false
    const client = new Client({ name: "massgen", version: pkg.version }, { jsonSchemaValidator: outputSchemas })
    const tail = (): string => {
      const text = stdio?.stderrTail() ?? ""
      return text === "" ? "" : `; its stderr ends: ${text}`
    }
    /** How the server ended (`when`) and what its stderr said last, for a message. */
    const ending = (when = ""): string => scrub(`${stdio?.exitDescription ?? "closed the connection"}${when}${tail()}`)
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        stopping = true
        return transport.close().catch(() => undefined)
      }),
    )
    const stopThen = (error: () => McpStartError) =>
      Effect.flatMap(
        Effect.promise(() => transport.close().catch(() => undefined)),
        () => Effect.fail(error()),
      )
    // A server that fails to start is stopped first, so that the message has how it ended and all it said on stderr.
    const tools = yield* Effect.tryPromise({
      try: async (signal) => {
        await client.connect(transport, { signal, timeout: UNBOUNDED_MS })
        return listAllTools(client, signal)
      },
      catch: (e) => e,
    }).pipe(
      Effect.timeout(Duration.seconds(timeoutSeconds)),
      Effect.catchAll((e) =>
        e instanceof Cause.TimeoutException
          ? stopThen(
              () =>
                new McpStartError({
                  reason: "timeout",
                  server: entry.name,
                  detail: scrub(`no handshake within ${timeoutSeconds} s${where} (its timeout)${tail()}`),
                }),
            )
          : stopThen(
              () =>
                new McpStartError({
                  reason: "failed",
                  server: entry.name,
                  detail: stdio?.exitedOnItsOwn === true ? ending(" before its handshake") : scrub(`${messageOf(e)}${where}${tail()}`),
                }),
            ),
      ),
    )
    started = true
    if (stdio !== null) {
      const previous = transport.onclose
      transport.onclose = () => {
        previous?.()
        if (started && !stopping) warn(`MCP server ${entry.name} ${ending()}; calls to its tools fail from now on`)
      }
    }
    return {
      client,
      tools,
      stdio,
      viaClient: new Set(tools.filter((t) => t.execution?.taskSupport === "required").map((t) => t.name)),
      outputChecks: new Map(
        tools.flatMap((t) =>
          t.outputSchema === undefined ? [] : [[t.name, outputSchemas.getValidator(t.outputSchema as JsonSchemaType)] as const],
        ),
      ),
      down: () => (stdio?.exitDescription != null ? ending() : null),
      scrub,
    } satisfies RunningServer
  })

const serverDown = (server: string, why: string) => new ToolRunError({ reason: "server_down", detail: `MCP server ${server} ${why}` })

/** A call's failure from what went wrong: the server has ended, it answered with an error, or it cannot be reached. */
const failure = (running: RunningServer, server: string, e: unknown): ToolRunError => {
  const gone = running.down()
  if (gone !== null) return serverDown(server, gone)
  if (e instanceof McpError) {
    return new ToolRunError({ reason: e.code === ErrorCode.InvalidParams ? "bad_arguments" : "failed", detail: running.scrub(e.message) })
  }
  return new ToolRunError({ reason: "server_down", detail: running.scrub(`MCP server ${server} cannot be reached: ${messageOf(e)}`) })
}

/** A call's outcome from the result the server sent. */
const outcome = (running: RunningServer, server: string, value: unknown): Effect.Effect<string, ToolRunError> => {
  const result = toolResult(value)
  if ("problem" in result)
    return Effect.fail(
      new ToolRunError({ reason: "failed", detail: running.scrub(`MCP server ${server} sent a malformed result: ${result.problem}`) }),
    )
  return result.isError ? Effect.fail(new ToolRunError({ reason: "failed", detail: result.text })) : Effect.succeed(result.text)
}

/** The outcome of one of massgen's own calls: its structured content checked against the tool's output schema first, as `callTool` checks it. */
const ownOutcome = (running: RunningServer, server: string, tool: string, value: unknown): Effect.Effect<string, ToolRunError> => {
  const check = running.outputChecks.get(tool)
  if (check !== undefined && typeof value === "object" && value !== null) {
    const { structuredContent, isError } = value as { structuredContent?: unknown; isError?: unknown }
    if (!structuredContent && !isError) {
      return Effect.fail(
        failure(
          running,
          server,
          new McpError(ErrorCode.InvalidRequest, `Tool ${tool} has an output schema but did not return structured content`),
        ),
      )
    }
    const checked = structuredContent ? check(structuredContent) : null
    if (checked?.valid === false) {
      const why = failure(
        running,
        server,
        new McpError(ErrorCode.InvalidParams, `Structured content does not match the tool's output schema: ${checked.errorMessage}`),
      )
      // The server's answer is at fault here, not the model's arguments (the SDK words it as invalid params).
      return Effect.fail(why.reason === "bad_arguments" ? new ToolRunError({ reason: "failed", detail: why.detail }) : why)
    }
  }
  return outcome(running, server, value)
}

const unreachable = new Error("its stdin cannot be written to")

// Effect.async with a canceler of its own, not Effect.tryPromise nor async's own signal: each cost
// 0.01 to 0.05 ms more a call (measured side by side, on calls of 0.13 ms); an interrupted call still cancels its request.
const runOn = (
  running: RunningServer,
  server: string,
  tool: string,
  args: Record<string, unknown>,
): Effect.Effect<string, ToolRunError> => {
  const stdio = running.stdio
  if (stdio !== null && !running.viaClient.has(tool)) {
    return Effect.async<string, ToolRunError>((resume) => {
      const down = running.down()
      if (down !== null) return resume(Effect.fail(serverDown(server, down)))
      const cancel = stdio.request("tools/call", { name: tool, arguments: args }, (reply) =>
        resume(
          reply === null
            ? Effect.fail(failure(running, server, unreachable))
            : "error" in reply
              ? Effect.fail(failure(running, server, new McpError(reply.error.code, reply.error.message, reply.error.data)))
              : ownOutcome(running, server, tool, reply.result),
        ),
      )
      return Effect.sync(cancel)
    })
  }
  return Effect.async<string, ToolRunError>((resume) => {
    const down = running.down()
    if (down !== null) return resume(Effect.fail(serverDown(server, down)))
    const abort = new AbortController()
    running.client.callTool({ name: tool, arguments: args }, undefined, { signal: abort.signal, timeout: UNBOUNDED_MS }).then(
      (result) => resume(outcome(running, server, result)),
      (e: unknown) => resume(Effect.fail(failure(running, server, e))),
    )
    return Effect.sync(() => abort.abort())
  })
}

/** A tool as the model sees it: the server's description and input schema, under its `mcp__` name. */
const specOf = (name: string, tool: Tool): ToolSpec => {
  const { $schema: _, ...schema } = tool.inputSchema as Tool["inputSchema"] & { $schema?: unknown }
  return {
    name,
    description: tool.description ?? tool.title ?? "",
    parameters: { ...schema, type: "object", properties: schema.properties ?? {}, required: schema.required ?? [] },
  }
}

const providerOf = (entries: ReadonlyArray<readonly [McpEntry, RunningServer]>): ToolProvider => {
  const byName = new Map<string, { readonly running: RunningServer; readonly server: string; readonly tool: string }>()
  const tools: Array<ProvidedTool> = []
  for (const [entry, running] of entries) {
    for (const tool of running.tools) {
      const name = mcpToolName(entry.name, tool.name)
      if (!toolAllowed(entry, tool.name) || byName.has(name)) continue
      byName.set(name, { running, server: entry.name, tool: tool.name })
      tools.push({ spec: specOf(name, tool), server: entry.name, ...(tool.annotations?.readOnlyHint === true ? { readOnly: true } : {}) })
    }
  }
  return {
    tools,
    run: (name, args) => {
      const target = byName.get(name)
      return target === undefined
        ? Effect.fail(new ToolRunError({ reason: "unknown_tool", detail: `no MCP tool named ${name}` }))
        : runOn(target.running, target.server, target.tool, args)
    },
  }
}

/** A distinct server of the agents' entries: the first entry that names it, how it resolved, its timeout, its scrubber. */
interface DistinctServer {
  readonly entry: McpEntry
  readonly server: ResolvedServer
  timeout: number
  readonly scrub: (text: string) => string
}

/**
 * The agents' entries, each resolved (`uses`: which agent's entry is which server, by key), and the
 * distinct servers they name; an entry with an unset variable is an `McpStartError` in `unset`, in order.
 */
const serversOf = (agents: ReadonlyArray<Agent>, options: McpStartOptions) => {
  const uses: Array<{ readonly agent: string; readonly entry: McpEntry; readonly key: string }> = []
  const distinct = new Map<string, DistinctServer>()
  const unset: Array<McpStartError> = []
  for (const agent of agents) {
    for (const entry of mcpEntries(agent.backend.mcp_servers)) {
      const server = resolveEntry(entry, options.env, options.cwdOf?.(agent) ?? options.cwd)
      if ("_tag" in server) {
        unset.push(
          new McpStartError({
            reason: "unset_variable",
            server: entry.name,
            detail: `environment variable ${server.variable} is not set (agent ${agent.id})`,
          }),
        )
        continue
      }
      const key = entryKey(server)
      const timeout = entry.fields.timeout ?? DEFAULT_MCP_TIMEOUT_SECONDS
      const known = distinct.get(key)
      if (known === undefined) distinct.set(key, { entry, server, timeout, scrub: scrubber(referencedValues(entry, options.env)) })
      else known.timeout = Math.max(known.timeout, timeout)
      uses.push({ agent: agent.id, entry, key })
    }
  }
  return { uses, distinct, unset }
}

/** What `probeMcpServers` found of one server: the names of its tools, or why it did not start. */
export type McpProbe =
  | { readonly server: string; readonly tools: ReadonlyArray<string> }
  | { readonly server: string; readonly problem: string }

/**
 * Starts every distinct server of the agents' entries as a run would (in
 * parallel, each within its timeout), lists its tools and stops it again: one
 * `McpProbe` per server, an entry with an unset variable among them. For
 * `massgen doctor --config`.
 */
export const probeMcpServers = (agents: ReadonlyArray<Agent>, options: McpStartOptions): Effect.Effect<ReadonlyArray<McpProbe>> =>
  Effect.gen(function* () {
    const { distinct, unset } = serversOf(agents, options)
    const started = yield* Effect.forEach(
      [...distinct.values()],
      ({ entry, server, timeout, scrub }) =>
        Effect.scoped(startServer(entry, server, timeout, scrub, () => undefined)).pipe(
          Effect.match({
            onSuccess: (running): McpProbe => ({ server: entry.name, tools: running.tools.map((t) => t.name) }),
            onFailure: (e): McpProbe => ({ server: entry.name, problem: e.detail }),
          }),
        ),
      { concurrency: "unbounded" },
    )
    return [...unset.map((e): McpProbe => ({ server: e.server, problem: e.detail })), ...started]
  })

/** Starts every agent's MCP servers (each distinct server once, in parallel); each agent's provider of their tools, by agent id. */
export const startMcpServers = (
  agents: ReadonlyArray<Agent>,
  options: McpStartOptions,
): Effect.Effect<ReadonlyMap<string, ToolProvider>, McpStartError, Scope.Scope> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const warn = (line: string) => Runtime.runFork(runtime)(Effect.logWarning(line))
    const { uses, distinct, unset } = serversOf(agents, options)
    if (unset.length > 0) return yield* unset[0]!
    const started = new Map(
      yield* Effect.forEach(
        [...distinct],
        ([key, { entry, server, timeout, scrub }]) =>
          Effect.map(startServer(entry, server, timeout, scrub, warn), (running) => [key, running] as const),
        { concurrency: "unbounded" },
      ),
    )
    return new Map(
      agents.map((agent) => [
        agent.id,
        providerOf(uses.filter((u) => u.agent === agent.id).map((u) => [u.entry, started.get(u.key)!] as const)),
      ]),
    )
  })
