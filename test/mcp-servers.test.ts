/**
 * MCP servers as the agents' tool providers: the reference server over stdio and
 * streamable HTTP, shared and filtered entries, `${VAR}` and `${cwd}`, and the
 * faults (no handshake, a failed start, a crash mid-call, a large result, an
 * error answer, a malformed result, structured content against an output
 * schema, an interrupted call).
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Cause, Effect, Either, Exit, Scope } from "effect"
import { type Agent, decodeConfig } from "../src/domain/config/index.ts"
import { McpStartError, startMcpServers } from "../src/services/tools/mcp-servers.ts"
import type { ToolProvider } from "../src/services/tools/tool-provider.ts"
import { everythingStdio, faultServer, isGone, startEverythingHttp, startsOf, waitForText, waitUntilGone } from "./support/mcp.ts"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})
const tempDir = (): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-mcp-")))
  dirs.push(dir)
  return dir
}

/** The agents of a config whose agents have these `mcp_servers` (in order). */
const agentsWith = (...servers: ReadonlyArray<unknown>): ReadonlyArray<Agent> =>
  Either.getOrThrow(
    decodeConfig({ agents: servers.map((mcp_servers, i) => ({ id: `agent_${i + 1}`, backend: { type: "scripted", mcp_servers } })) }, {}),
  ).agents

interface Started {
  readonly providers: ReadonlyMap<string, ToolProvider>
  readonly stop: () => Promise<void>
}

/** Starts the servers in a scope of their own; `stop` closes it. */
const start = async (agents: ReadonlyArray<Agent>, env: Record<string, string | undefined> = {}, cwd = tempDir()): Promise<Started> => {
  const scope = Effect.runSync(Scope.make())
  const exit = await Effect.runPromiseExit(startMcpServers(agents, { cwd, env }).pipe(Scope.extend(scope)))
  if (Exit.isFailure(exit)) {
    await Effect.runPromise(Scope.close(scope, exit))
    throw Cause.squash(exit.cause)
  }
  return { providers: exit.value, stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** The start's failure (after its scope closed). */
const startFailure = async (agents: ReadonlyArray<Agent>, env: Record<string, string | undefined> = {}): Promise<McpStartError> => {
  const error = await start(agents, env).then(
    (s) => (s.stop(), null),
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(McpStartError)
  return error as McpStartError
}

const call = (provider: ToolProvider, name: string, args: Record<string, unknown> = {}) =>
  Effect.runPromise(Effect.either(provider.run(name, args)))
const names = (provider: ToolProvider) => provider.tools.map((t) => t.spec.name)

describe("the reference server over stdio", () => {
  test("its tools reach the model as mcp__<server>__<tool>, with their descriptions and input schemas; echo and get-sum answer", async () => {
    const { providers, stop } = await start(agentsWith([{ name: "everything", ...everythingStdio() }]))
    try {
      const tools = providers.get("agent_1")!
      expect(names(tools)).toContain("mcp__everything__echo")
      expect(names(tools)).toContain("mcp__everything__get-sum")
      expect(tools.tools.every((t) => t.server === "everything")).toBe(true)
      const sum = tools.tools.find((t) => t.spec.name === "mcp__everything__get-sum")!.spec
      expect(sum.description).toBe("Returns the sum of two numbers")
      expect(sum.parameters).toEqual({
        type: "object",
        properties: { a: { type: "number", description: "First number" }, b: { type: "number", description: "Second number" } },
        required: ["a", "b"],
      })
      expect(await call(tools, "mcp__everything__echo", { message: "hello" })).toEqual(Either.right("Echo: hello"))
      expect(await call(tools, "mcp__everything__get-sum", { a: 2, b: 40 })).toEqual(Either.right("The sum of 2 and 40 is 42."))
      // A tool with an output schema: its structured content checked against it.
      const weather = await call(tools, "mcp__everything__get-structured-content", { location: "Chicago" })
      expect(Either.isRight(weather) && JSON.parse(weather.right)).toEqual({
        temperature: 36,
        conditions: "Light rain / drizzle",
        humidity: 82,
      })
      const unknown = await call(tools, "mcp__everything__nope")
      expect(Either.isLeft(unknown) && unknown.left.reason).toBe("unknown_tool")
    } finally {
      await stop()
    }
  }, 30_000)

  test("allowed_tools and exclude_tools filter by the tool's name on the server or as the model sees it; exclude wins", async () => {
    const { providers, stop } = await start(
      agentsWith({ ev: everythingStdio({ allowed_tools: ["echo", "mcp__ev__get-sum", "get-env"], exclude_tools: ["get-env"] }) }, [
        { name: "all_but_echo", ...everythingStdio({ exclude_tools: ["echo"] }) },
      ]),
    )
    try {
      expect(names(providers.get("agent_1")!)).toEqual(["mcp__ev__echo", "mcp__ev__get-sum"])
      const second = names(providers.get("agent_2")!)
      expect(second).toContain("mcp__all_but_echo__get-sum")
      expect(second).not.toContain("mcp__all_but_echo__echo")
      const refused = await call(providers.get("agent_2")!, "mcp__all_but_echo__echo", { message: "x" })
      expect(Either.isLeft(refused) && refused.left.reason).toBe("unknown_tool")
    } finally {
      await stop()
    }
  }, 30_000)
})

describe("the reference server over streamable HTTP and SSE", () => {
  test("lists and calls its tools at its URL; once it is gone, a call fails with server_down", async () => {
    const http = await startEverythingHttp()
    const { providers, stop } = await start(
      agentsWith([{ name: "remote", type: "streamable-http", url: http.url, headers: { "X-Test": "1" } }]),
    )
    try {
      const tools = providers.get("agent_1")!
      expect(names(tools)).toContain("mcp__remote__echo")
      expect(await call(tools, "mcp__remote__echo", { message: "over http" })).toEqual(Either.right("Echo: over http"))
      expect(await call(tools, "mcp__remote__get-sum", { a: 1, b: 2 })).toEqual(Either.right("The sum of 1 and 2 is 3."))
      await http.stop()
      const down = await call(tools, "mcp__remote__echo", { message: "anyone?" })
      expect(Either.isLeft(down) && down.left.reason).toBe("server_down")
      expect(Either.isLeft(down) && down.left.detail).toContain("MCP server remote cannot be reached")
    } finally {
      await stop()
      await http.stop()
    }
  }, 30_000)

  test("over SSE too", async () => {
    const sse = await startEverythingHttp("sse")
    const { providers, stop } = await start(agentsWith([{ name: "old", type: "sse", url: sse.url }]))
    try {
      expect(await call(providers.get("agent_1")!, "mcp__old__get-sum", { a: 20, b: 22 })).toEqual(
        Either.right("The sum of 20 and 22 is 42."),
      )
    } finally {
      await stop()
      await sse.stop()
    }
  }, 30_000)

  test("a URL where no server listens fails the start, naming the server and the URL as written", async () => {
    const error = await startFailure(agentsWith([{ name: "nowhere", type: "streamable-http", url: "http://127.0.0.1:${PORT}/mcp" }]), {
      PORT: "9",
    })
    expect(error.reason).toBe("failed")
    expect(error.message).toStartWith("MCP server nowhere did not start: ")
    expect(error.message).toContain("at http://127.0.0.1:${PORT}/mcp")
  })
})

describe("entries", () => {
  test("identical entries start one server, shared under each agent's names; a different environment is another server", async () => {
    const starts = nodePath.join(tempDir(), "starts")
    const env = { STARTS_FILE: starts }
    const { providers, stop } = await start(
      agentsWith([{ name: "a", ...faultServer("serve", { env }) }], { b: faultServer("serve", { env }) }, [
        { name: "c", ...faultServer("serve", { env: { ...env, TOKEN: "other" } }) },
      ]),
    )
    try {
      expect(startsOf(starts)).toHaveLength(2)
      const pidOf = async (agent: string, tool: string) => JSON.parse(Either.getOrThrow(await call(providers.get(agent)!, tool))).pid
      expect(await pidOf("agent_1", "mcp__a__whoami")).toBe(await pidOf("agent_2", "mcp__b__whoami"))
      expect(await pidOf("agent_3", "mcp__c__whoami")).not.toBe(await pidOf("agent_1", "mcp__a__whoami"))
    } finally {
      await stop()
    }
    for (const pid of startsOf(starts)) await waitUntilGone(pid)
  }, 30_000)

  test("${VAR} comes from the environment and ${cwd} is the agents' directory, where the server runs; no API key reaches it", async () => {
    const cwd = tempDir()
    fs.mkdirSync(nodePath.join(cwd, "sub"))
    const { providers, stop } = await start(
      agentsWith([
        { name: "here", ...faultServer("serve", { args: ["--out=${cwd}/files", "--token=${TOKEN}"], env: { TOKEN: "${TOKEN}" } }) },
        { name: "there", ...faultServer("serve", { cwd: "sub" }) },
      ]),
      { TOKEN: "tok-123", OPENAI_API_KEY: "sk-never-passed" },
      cwd,
    )
    try {
      const whoami = async (tool: string) => JSON.parse(Either.getOrThrow(await call(providers.get("agent_1")!, tool)))
      expect(await whoami("mcp__here__whoami")).toMatchObject({
        argv: [`--out=${cwd}/files`, "--token=tok-123"],
        cwd,
        TOKEN: "tok-123",
        OPENAI_API_KEY: null,
      })
      expect(await whoami("mcp__there__whoami")).toMatchObject({ cwd: nodePath.join(cwd, "sub"), TOKEN: null })
    } finally {
      await stop()
    }
  }, 30_000)

  test("an unset variable stops the start before any server runs, naming the server and the variable; entries of other agents are not read", async () => {
    const starts = nodePath.join(tempDir(), "starts")
    const agents = agentsWith(
      [
        { name: "fine", ...faultServer("serve", { env: { STARTS_FILE: starts } }) },
        { name: "needs_token", ...faultServer("serve", { env: { TOKEN: "${MISSING_TOKEN}" } }) },
      ],
      [{ name: "other", ...faultServer("serve", { args: ["${ALSO_MISSING}"] }) }],
    )
    const error = await startFailure(agents)
    expect(error.reason).toBe("unset_variable")
    expect(error.message).toBe("MCP server needs_token did not start: environment variable MISSING_TOKEN is not set (agent agent_1)")
    expect(startsOf(starts)).toEqual([])
    const { stop } = await start(
      agents.slice(0, 1).map((a) => ({ ...a, backend: { ...a.backend, mcp_servers: [{ name: "fine", ...faultServer("serve") }] } })),
    )
    await stop()
    const other = await startFailure(agents.slice(1))
    expect(other.message).toContain("environment variable ALSO_MISSING is not set (agent agent_2)")
  }, 30_000)
})

describe("faults", () => {
  test("a server that never answers the handshake fails the start at its timeout, with its stderr; it is stopped", async () => {
    const starts = nodePath.join(tempDir(), "starts")
    const error = await startFailure(
      agentsWith([{ name: "slow", ...faultServer("never-starts", { timeout: 2, env: { STARTS_FILE: starts } }) }]),
    )
    expect(error.reason).toBe("timeout")
    expect(error.message).toBe(
      "MCP server slow did not start: no handshake within 2 s (its timeout); its stderr ends: fault server: starting very slowly",
    )
    for (const pid of startsOf(starts)) expect(isGone(pid)).toBe(true)
  }, 30_000)

  test("a server that exits before its handshake fails the start with its exit code and stderr; the servers started with it are stopped", async () => {
    const starts = nodePath.join(tempDir(), "starts")
    const error = await startFailure(
      agentsWith([
        { name: "db", ...faultServer("fails-to-start") },
        { name: "good", ...faultServer("serve", { env: { STARTS_FILE: starts } }) },
      ]),
    )
    expect(error.reason).toBe("failed")
    expect(error.message).toBe(
      "MCP server db did not start: exited with code 1 before its handshake; its stderr ends: fault server: loading settings | fault server: cannot open the database",
    )
    for (const pid of startsOf(starts)) await waitUntilGone(pid)
  }, 30_000)

  test("a command that does not exist fails the start, naming the server", async () => {
    const error = await startFailure(agentsWith([{ name: "ghost", command: "/nonexistent/mcp-server" }]))
    expect(error.reason).toBe("failed")
    expect(error.message).toStartWith("MCP server ghost did not start: ")
    expect(error.message).toContain("/nonexistent/mcp-server")
  }, 30_000)

  test("a server that crashes mid-call: that call and every later one fail with server_down and why; other servers still answer", async () => {
    const { providers, stop } = await start(
      agentsWith([
        { name: "fragile", ...faultServer("serve") },
        { name: "steady", ...everythingStdio() },
      ]),
    )
    try {
      const tools = providers.get("agent_1")!
      const crashed = await call(tools, "mcp__fragile__crash")
      expect(crashed).toEqual(
        Either.left(
          expect.objectContaining({
            reason: "server_down",
            detail: "MCP server fragile exited with code 3; its stderr ends: fault server: crashing on purpose",
          }),
        ),
      )
      const later = await call(tools, "mcp__fragile__whoami")
      expect(Either.isLeft(later) && later.left.reason).toBe("server_down")
      expect(await call(tools, "mcp__steady__echo", { message: "still here" })).toEqual(Either.right("Echo: still here"))
    } finally {
      await stop()
    }
  }, 30_000)

  test("a 1 MB result comes back whole; an error result fails with the server's text; a dotted tool name is made safe", async () => {
    const { providers, stop } = await start(agentsWith([{ name: "fault", ...faultServer("serve") }]))
    try {
      const tools = providers.get("agent_1")!
      const big = await call(tools, "mcp__fault__big", { bytes: 1_048_576 })
      expect(Either.isRight(big) && big.right.length).toBe(1_048_576)
      expect(await call(tools, "mcp__fault__fails")).toEqual(
        Either.left(expect.objectContaining({ reason: "failed", detail: "the database is locked" })),
      )
      expect(names(tools)).toContain("mcp__fault__dotted_name")
      expect(await call(tools, "mcp__fault__dotted_name")).toEqual(Either.right("ok"))
    } finally {
      await stop()
    }
  }, 30_000)

  test("an invalid-params answer fails with bad_arguments; a malformed result fails with failed, naming what is wrong; the server still answers", async () => {
    const { providers, stop } = await start(agentsWith([{ name: "fault", ...faultServer("serve") }]))
    try {
      const tools = providers.get("agent_1")!
      // The SDK server's message names the code, and so does the client's.
      expect(await call(tools, "mcp__fault__rejects")).toEqual(
        Either.left(
          expect.objectContaining({ reason: "bad_arguments", detail: "MCP error -32602: MCP error -32602: bytes must be a number" }),
        ),
      )
      expect(await call(tools, "mcp__fault__malformed")).toEqual(
        Either.left(
          expect.objectContaining({
            reason: "failed",
            detail: "MCP server fault sent a malformed result: its content part 1 (text) lacks a field its text needs",
          }),
        ),
      )
      expect(await call(tools, "mcp__fault__dotted_name")).toEqual(Either.right("ok"))
    } finally {
      await stop()
    }
  }, 30_000)

  test("a tool's output schema is checked: structured content that does not match it, or none, fails the call", async () => {
    const { providers, stop } = await start(agentsWith([{ name: "fault", ...faultServer("serve") }]))
    try {
      const tools = providers.get("agent_1")!
      expect(await call(tools, "mcp__fault__shaped", { give: "right" })).toEqual(Either.right("structured"))
      const wrong = await call(tools, "mcp__fault__shaped", { give: "wrong" })
      expect(Either.isLeft(wrong) && wrong.left.reason).toBe("failed")
      expect(Either.isLeft(wrong) && wrong.left.detail).toStartWith(
        "MCP error -32602: Structured content does not match the tool's output schema: ",
      )
      expect(await call(tools, "mcp__fault__shaped", { give: "none" })).toEqual(
        Either.left(
          expect.objectContaining({
            reason: "failed",
            detail: "MCP error -32600: Tool shaped has an output schema but did not return structured content",
          }),
        ),
      )
    } finally {
      await stop()
    }
  }, 30_000)

  test("an interrupted call (its timeout) cancels its request on the server, which goes on answering", async () => {
    const cancels = nodePath.join(tempDir(), "cancels")
    const { providers, stop } = await start(agentsWith([{ name: "fault", ...faultServer("serve", { env: { CANCELS_FILE: cancels } }) }]))
    try {
      const tools = providers.get("agent_1")!
      const timedOut = await Effect.runPromise(Effect.either(Effect.timeout(tools.run("mcp__fault__waits", {}), "100 millis")))
      expect(Either.isLeft(timedOut) && timedOut.left._tag).toBe("TimeoutException")
      await waitForText(cancels, "cancelled massgen-")
      expect(await call(tools, "mcp__fault__dotted_name")).toEqual(Either.right("ok"))
    } finally {
      await stop()
    }
  }, 30_000)

  test("closing the scope stops the servers", async () => {
    const starts = nodePath.join(tempDir(), "starts")
    const { stop } = await start(agentsWith([{ name: "a", ...faultServer("serve", { env: { STARTS_FILE: starts } }) }]))
    const [pid] = startsOf(starts)
    expect(isGone(pid!)).toBe(false)
    await stop()
    expect(isGone(pid!)).toBe(true)
  }, 30_000)
})
