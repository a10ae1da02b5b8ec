/**
 * MassGen's Python custom tools end to end, through the CLI: a model (the
 * loopback fake, through the real OpenAI SDK) calls a Python function and sees
 * its result; a function that hangs is killed at the tool timeout, with what
 * it started; a flood of output is cut at the cap; a file that is not there
 * is a warning on `--validate` and stops a run at start (exit 1, naming it);
 * no `python3` is said at start; the built-in `two_num_tool` runs without
 * Python. The functions are `test/fixtures/python-tools/math_tools.py`.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { type FakeRequest, loneCouncilReply, NO_PROXY_ENV, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { killAllWith, markerSeconds, waitUntilNoneWith } from "./support/processes.ts"
import { ENV, expectExit, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const FIXTURE = nodePath.join(import.meta.dir, "fixtures", "python-tools", "math_tools.py")
const finished = (dir: string) => readEvents(dir).filter((e) => e.type === "tool_call_finished")

/** A sandbox with the fixture copied in as `tools/math_tools.py`: the config names it relative to the working directory, as MassGen does. */
const withTools = (): string => {
  const cwd = sandbox()
  fs.mkdirSync(nodePath.join(cwd, "tools"))
  fs.copyFileSync(FIXTURE, nodePath.join(cwd, "tools", "math_tools.py"))
  return cwd
}

const scriptedDoc = (script: ReadonlyArray<unknown>, custom_tools: ReadonlyArray<unknown>, toolTimeout = 60) => ({
  agents: [
    { id: "a", backend: { type: "scripted", script: [...script, { new_answer: "done" }], vote: "agent1", final: "done", custom_tools } },
  ],
  timeout_settings: { orchestrator_timeout_seconds: 120, agent_timeout_seconds: 100, tool_timeout_seconds: toolTimeout },
})

describe("a Python function called by a model", () => {
  test("the fake model is offered the function's schema, calls it, and its next request holds the result", async () => {
    const cwd = withTools()
    const respond = (req: FakeRequest) => {
      const toolMessages = ((req.body?.messages ?? []) as Array<{ role?: string }>).filter((m) => m.role === "tool")
      if (offeredTools(req).includes("new_answer") && !promptText(req).includes("<agent1.1>") && toolMessages.length === 0)
        return reply({ toolCalls: [{ name: "custom_tool__add", args: { a: 40 } }] })
      return loneCouncilReply(req)
    }
    const fake = await startFakeLlm({ respond })
    try {
      const doc = {
        agents: [
          {
            id: "solver",
            backend: {
              type: "chatcompletion",
              model: "m",
              base_url: fake.openAiBaseUrl,
              api_key: "sk-x",
              custom_tools: [{ name: ["add"], category: "math", path: "tools/math_tools.py", function: ["add_numbers"] }],
            },
          },
        ],
        orchestrator: { skip_final_presentation: true },
        timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90, tool_timeout_seconds: 60 },
      }
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Add 40 and 2.5."], {
        cwd,
        env: { ...ENV, ...NO_PROXY_ENV },
        timeoutMs: 110_000,
      })
      expectExit(r, 0)
      const dir = lineValue(r, "LOG_DIR")
      expect(finished(dir).map((e) => [e.tool, e.ok, e.result])).toEqual([
        ["custom_tool__add", true, "40 + 2.5 = 42.5 in " + nodePath.basename(dir)],
      ])
      const first = fake.requests[0]!
      const offered = (first.body.tools as Array<{ function: { name: string; description: string; parameters: unknown } }>).find(
        (t) => t.function.name === "custom_tool__add",
      )
      expect(offered?.function.description).toBe("Add two numbers.\n\nThe sum is given as text.")
      expect(offered?.function.parameters).toMatchObject({ properties: { a: { type: "integer" }, b: { type: "number", default: 2.5 } } })
      const second = fake.requests.find((q) => JSON.stringify(q.body?.messages ?? []).includes("42.5"))
      expect(second).toBeDefined()
    } finally {
      fake.stop()
    }
  }, 120_000)
})

describe("Python tools under the limits of every tool call", () => {
  test("a function that hangs is killed at tool_timeout_seconds with what it started; a flood is cut at the cap; a raise is an error result", async () => {
    const cwd = withTools()
    const marker = markerSeconds()
    try {
      const doc = scriptedDoc(
        [
          { tool: "custom_tool__hang", args: { marker } },
          { tool: "custom_tool__flood", args: { chars: 200_000 } },
          { tool: "custom_tool__explode", args: { reason: "it" } },
        ],
        [{ path: "tools/math_tools.py", function: ["hang", "flood", "explode"] }],
        3,
      )
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Go."], { cwd, env: ENV, timeoutMs: 110_000 })
      expectExit(r, 0)
      const dir = lineValue(r, "LOG_DIR")
      const [hung, flood, raised] = finished(dir)
      expect([hung.tool, hung.ok, hung.error]).toEqual([
        "custom_tool__hang",
        false,
        "failed: custom_tool__hang timed out after 3s (tool_timeout_seconds)",
      ])
      expect(await waitUntilNoneWith(marker)).toEqual([])
      expect([flood.tool, flood.ok, flood.error]).toEqual([
        "custom_tool__flood",
        false,
        "the result was 200000 characters, over the cap of 50000: cut",
      ])
      expect([raised.tool, raised.ok, raised.error]).toEqual(["custom_tool__explode", false, "failed: ValueError: cannot do it"])
    } finally {
      killAllWith(marker)
    }
  }, 120_000)
})

describe("a Python tool's file and python3, at start", () => {
  const missingDoc = scriptedDoc([], [{ name: "sum", path: "tools/absent.py", function: "add_numbers" }])

  test("a file that is not there: a warning naming it on --validate (exit 0), and a run stops before anything is written (exit 1)", async () => {
    const cwd = sandbox()
    const config = writeConfig(cwd, missingDoc)
    const [validated, run] = await Promise.all([
      runCli("source", ["--validate", config], { cwd, env: ENV }),
      runCli("source", ["--config", config, "Go."], { cwd, env: ENV }),
    ])
    const absent = nodePath.join(cwd, "tools", "absent.py")
    expectExit(validated, 0)
    expect(validated.stdout).toContain(
      `agents[0].backend.custom_tools[0].path: agent a: Python file not found: ${absent} (a run stops here)`,
    )
    expectExit(run, 1)
    expect(run.stderr).toContain(`agents[0].backend.custom_tools[0].path: agent a: Python file not found: ${absent}`)
    expect(fs.existsSync(nodePath.join(cwd, ".massgen"))).toBe(false)
  }, 60_000)

  test("no python3 on the PATH: a run stops at start saying so; the built-in two_num_tool still runs", async () => {
    const cwd = withTools()
    const noPython = { ...ENV, PATH: "/nonexistent" }
    const two = { name: ["two_num_tool"], category: "math", path: "massgen/tool/_basic/_two_num_tool.py", function: ["two_num_tool"] }
    const [python, builtin] = await Promise.all([
      runCli(
        "source",
        ["--config", writeConfig(cwd, scriptedDoc([], [{ path: "tools/math_tools.py", function: "scale" }]), "py.yaml"), "Go."],
        {
          cwd,
          env: noPython,
        },
      ),
      runCli(
        "source",
        [
          "--automation",
          "--config",
          writeConfig(cwd, scriptedDoc([{ tool: "custom_tool__two_num_tool", args: { x: 2, y: 3 } }], [two]), "two.yaml"),
          "Go.",
        ],
        { cwd, env: noPython, timeoutMs: 110_000 },
      ),
    ])
    expectExit(python, 1)
    expect(python.stderr).toContain("agent a: python3 is not on the PATH: MassGen's Python custom tools run with it (install Python 3)")
    expectExit(builtin, 0)
    expect(finished(lineValue(builtin, "LOG_DIR")).map((e) => [e.tool, e.ok, e.result])).toEqual([
      ["custom_tool__two_num_tool", true, "The sum of 2 and 3 is 5"],
    ])
  }, 120_000)
})
