/**
 * Tool names the providers take, and error results Anthropic is told of.
 *
 * In memory: `modelToolNames` keeps a valid name as it is, replaces characters
 * outside `[A-Za-z0-9_-]`, and cuts a name over 64 characters with a hash of
 * the whole name, so no two tools share one; `withModelNames` runs a call of a
 * model name as the tool of its real name. End to end (the CLI from source,
 * a Claude agent on the loopback fake, an MCP server whose name makes its tools'
 * names too long): the tools are offered under valid names, a call of one runs
 * the real tool, a failed call's `tool_result` carries `is_error: true` (the
 * others none), and `replay --check` of the run passes, and passes again once
 * the flags are taken out of its recorded requests (a log older than the flag).
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import { mcpToolName } from "../src/domain/config/mcp.ts"
import { MAX_TOOL_NAME, modelToolNames, validToolName } from "../src/domain/tools/names.ts"
import { CALL_LOG_FILE } from "../src/services/run-files/call-logs.ts"
import { withModelNames } from "../src/services/tools/agent-tools.ts"
import type { ToolProvider } from "../src/services/tools/tool-provider.ts"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import {
  type Behaviour,
  type FakeRequest,
  loneCouncilReply,
  NO_PROXY_ENV,
  offeredTools,
  promptText,
  reply,
  startFakeLlm,
  toolCall,
} from "./support/fake-llm.ts"
import { faultServer } from "./support/mcp.ts"
import { eventsOf, logDirOf, shown } from "./support/run-output.ts"

afterAll(() => cleanupSandboxes())

describe("model tool names", () => {
  test("valid names stay exactly as they are", () => {
    const names = ["echo", "mcp__files__read-file", "a".repeat(64), "new_answer_helper"]
    expect(modelToolNames(names)).toEqual(names)
  })

  test("characters the providers refuse become _; a name that would then be taken is hashed instead", () => {
    expect(modelToolNames(["dotted.name", "with space", "ünïcode"])).toEqual(["dotted_name", "with_space", "_n_code"])
    const [a, b] = modelToolNames(["a_b", "a.b"])
    expect(a).toBe("a_b")
    expect(b).toMatch(/^a_b_[0-9a-f]{8}$/)
    expect(modelToolNames(["vote.", "new.answer"], new Set(["new_answer", "vote"]))).toEqual([
      "vote_",
      expect.stringMatching(/^new_answer_[0-9a-f]{8}$/),
    ])
  })

  test("names over 64 characters are cut and end with a hash of the whole name: valid, distinct, the same on every start", () => {
    const server = "s".repeat(60)
    const long = ["fails", "dotted.name", "whoami", "big"].map((t) => mcpToolName(server, t))
    const names = modelToolNames(long)
    for (const n of names) {
      expect(n.length).toBeLessThanOrEqual(MAX_TOOL_NAME)
      expect(validToolName(n)).toBe(true)
      expect(n.startsWith("mcp__sssss")).toBe(true)
    }
    expect(new Set(names).size).toBe(long.length)
    expect(modelToolNames(long)).toEqual(names)
    // A valid name keeps its name even when a long one would be cut to it.
    const x = "x".repeat(70)
    const cut = modelToolNames([x])[0]!
    expect(modelToolNames([x, cut])).toEqual([expect.not.stringMatching(new RegExp(`^${cut}$`)), cut])
  })
})

describe("an agent's tools under their model names", () => {
  const providerOf = (names: ReadonlyArray<string>): ToolProvider => ({
    tools: names.map((name) => ({
      spec: { name, description: name, parameters: { type: "object", properties: {}, required: [] } },
      server: null,
    })),
    run: (name) => Effect.succeed(`ran ${name}`),
  })

  test("a provider whose names are all valid is offered as it is", () => {
    const provider = providerOf(["echo", "mcp__s__get-sum"])
    expect(withModelNames(provider)).toBe(provider)
  })

  test("a call of a model name runs the tool of its real name; a real name that is not offered is no tool", async () => {
    const long = `mcp__${"s".repeat(60)}__dotted.name`
    const named = withModelNames(providerOf(["echo", long]))
    const [echo, cut] = named.tools.map((t) => t.spec.name)
    expect(echo).toBe("echo")
    expect(cut).toBe(modelToolNames(["echo", long])[1])
    expect(await Effect.runPromise(named.run(cut!, {}))).toBe(`ran ${long}`)
    expect(await Effect.runPromise(named.run("echo", {}))).toBe("ran echo")
    expect(await Effect.runPromise(Effect.either(named.run(long, {})))).toMatchObject({ left: { reason: "unknown_tool" } })
  })
})

const SERVER = "a_server_whose_name_is_long_enough_to_push_its_tools_past_64"

describe("a Claude agent with MCP tools whose names are too long", () => {
  test("offered under valid names, a call runs the real tool, a failed one is is_error: true, and replay --check passes", async () => {
    const [dotted, fails] = modelToolNames([mcpToolName(SERVER, "dotted.name"), mcpToolName(SERVER, "fails")])
    const toolResults = (req: FakeRequest): Array<any> =>
      (req.body?.messages ?? []).flatMap((m: any) =>
        Array.isArray(m.content) ? m.content.filter((b: any) => b.type === "tool_result") : [],
      )
    // Its first round calls the dotted tool, then the failing one, then answers; then it votes, and presents without a tool.
    const respond = (req: FakeRequest): Behaviour => {
      if (!offeredTools(req).includes("new_answer")) return reply({ text: "Four." })
      if (promptText(req).includes("<agent1.1>")) return loneCouncilReply(req)
      const done = toolResults(req).length
      return done === 0 ? toolCall(dotted!, {}) : done === 1 ? toolCall(fails!, {}) : toolCall("new_answer", { content: "draft" })
    }
    const fake = await startFakeLlm({ respond })
    try {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [
          {
            id: "claude",
            backend: {
              type: "claude",
              model: "m",
              base_url: fake.url,
              mcp_servers: [{ name: SERVER, ...faultServer("serve"), allowed_tools: ["dotted.name", "fails"] }],
            },
          },
        ],
        timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
      })
      const env = { ANTHROPIC_API_KEY: "opaque-test-1111", ...NO_PROXY_ENV }
      const result = await runCli("source", ["--automation", "--config", config, "What is 2+2?"], { cwd, env })
      expect({ code: result.exitCode, out: shown(result) }).toMatchObject({ code: 0 })

      const offered = offeredTools(fake.requests[0]!)
      expect(offered).toEqual(expect.arrayContaining([dotted, fails]))
      for (const name of offered) expect(validToolName(name)).toBe(true)
      expect(dotted!.length).toBe(MAX_TOOL_NAME)
      expect(dotted).not.toBe(fails)

      const afterBoth = fake.requests.find((r) => toolResults(r).length === 2)!
      expect(toolResults(afterBoth).map((b) => [b.content, b.is_error])).toEqual([
        ["ok", undefined],
        [expect.stringContaining("the database is locked"), true],
      ])

      const logDir = logDirOf(result)
      const finished = eventsOf(logDir).filter((e) => e.type === "tool_call_finished")
      expect(finished.map((e) => [e.tool, e.server, e.ok, e.result])).toEqual([
        [dotted, SERVER, true, "ok"],
        [fails, SERVER, false, expect.stringContaining("the database is locked")],
      ])

      const replay = await runCli("source", ["replay", "--check", logDir], { cwd, env })
      expect({ code: replay.exitCode, out: shown(replay) }).toEqual({ code: 0, out: expect.stringContaining("SAME") })

      // A log written before the flag existed (its requests without it) replays the same.
      const calls = nodePath.join(logDir, CALL_LOG_FILE)
      const text = fs.readFileSync(calls, "utf8")
      const flags = text.split(',"isError":true').length - 1
      fs.writeFileSync(calls, text.replaceAll(',"isError":true', ""))
      expect(flags).toBeGreaterThan(0)
      const old = await runCli("source", ["replay", "--check", logDir], { cwd, env })
      expect({ code: old.exitCode, out: shown(old) }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
    } finally {
      fake.stop()
    }
  }, 90_000)
})
