/**
 * MassGen's Python custom tools: how `custom_tools` entries with a `path` and a
 * `function` are read (names and functions as a string or a list, preset
 * arguments, MassGen's own tools provided or refused), and how real Python
 * functions written for these tests (`test/fixtures/python-tools/math_tools.py`)
 * are described and called: the schema from the signature and docstring, the
 * result's text, an exception as a failed call, no API key in the environment.
 */
import { describe, expect, test } from "bun:test"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import { absolutePythonTools, analyzeConfig, type Config, decodeConfig } from "../src/domain/config/index.ts"
import { pythonToolProviders, pythonToolStartProblems } from "../src/services/tools/python-tools.ts"
import type { ToolProvider } from "../src/services/tools/tool-provider.ts"

const FIXTURES = nodePath.join(import.meta.dir, "fixtures", "python-tools")
const MATH = "math_tools.py"
const doc = (custom_tools: ReadonlyArray<unknown>) => ({ agents: [{ id: "a", backend: { type: "scripted", custom_tools } }] })
const problemsOf = (d: unknown) =>
  analyzeConfig(d, {}).problems.map((p) => `${p.path}: ${p.message}${p.kind === "warning" ? " (warning)" : ""}`)
const configOf = (d: unknown): Config => absolutePythonTools(Either.getOrThrow(decodeConfig(d, {})), FIXTURES)
const toolsOf = (d: unknown) => configOf(d).agents[0]!.pythonTools ?? []

const ENV = { PATH: process.env.PATH, OPENAI_API_KEY: "sk-test-secret", MY_SERVICE_TOKEN: "t0k3n", HOME: process.env.HOME }
const providerOf = async (d: unknown, env: Record<string, string | undefined> = ENV): Promise<ToolProvider> => {
  const made = await Effect.runPromise(pythonToolProviders(configOf(d), env, FIXTURES))
  expect(made.problems).toEqual([])
  return made.providers.get("a")!
}
const call = (provider: ToolProvider, name: string, args: Record<string, unknown>) =>
  Effect.runPromise(Effect.either(provider.run(name, args)))

describe("reading MassGen's custom_tools entries", () => {
  test("name and function as a string or a list, a shared or per-function description and preset_args; MassGen's prefix on each name", () => {
    const tools = toolsOf(
      doc([
        { path: MATH, function: "add_numbers", category: "math" },
        {
          name: ["times", "triple"],
          path: MATH,
          function: ["scale", "scale"],
          description: ["Scales.", "Triples."],
          preset_args: [{ factor: 2 }, { factor: 3 }],
        },
        { name: "custom_tool__blow", path: MATH, func: "explode" },
      ]),
    )
    expect(tools.map((t) => [t.name, t.function, t.description, t.presetArgs, t.category])).toEqual([
      ["custom_tool__add_numbers", "add_numbers", null, {}, "math"],
      ["custom_tool__times", "scale", "Scales.", { factor: 2 }, "default"],
      ["custom_tool__triple", "scale", "Triples.", { factor: 3 }, "default"],
      ["custom_tool__blow", "explode", null, {}, "default"],
    ])
    expect(tools[0]!.path).toBe(nodePath.join(FIXTURES, MATH))
  })

  test("a list of another length than the functions is refused; so is the same tool name twice", () => {
    expect(problemsOf(doc([{ name: ["one"], path: MATH, function: ["scale", "explode"] }]))).toEqual([
      "agents[0].backend.custom_tools[0].name: Expected one name or a list of 2, one for each function, found a list of another length",
    ])
    expect(problemsOf(doc([{ path: MATH, function: ["scale", "scale"] }]))).toEqual([
      "agents[0].backend.custom_tools[0]: Expected a unique tool name, found custom_tool__scale again",
    ])
  })

  test("MassGen's own tools: two_num_tool and the media tools are provided, the other generation tools and others are refused naming them, a function MassGen lacks is left out", () => {
    const two = { name: ["two_num_tool"], category: "math", path: "massgen/tool/_basic/_two_num_tool.py", function: ["two_num_tool"] }
    const image = { name: ["understand_image"], path: "massgen/tool/_multimodal_tools/understand_image.py", function: ["understand_image"] }
    expect(problemsOf(doc([two, image]))).toEqual([])
    expect(toolsOf(doc([two, image])).map((t) => [t.name, t.builtin])).toEqual([
      ["custom_tool__two_num_tool", "two_num_tool"],
      ["custom_tool__understand_image", "understand_image"],
    ])
    expect(
      problemsOf(
        doc([
          { path: "massgen/tool/_multimodal_tools/text_to_file_generation.py", function: ["text_to_file_generation"] },
          { path: "massgen/tool/_web_tools/crawl4ai_tool.py", function: "crawl4ai_md" },
          { name: "two_num_tool", function: "wrong_two_num_tool" },
          { path: "massgen/tool/_basic/_two_num_tool.py", function: "wrong_two_num_tool", default_params: { a: 1 } },
        ]),
      ),
    ).toEqual([
      "agents[0].backend.custom_tools[0].path: MassGen's multimodal tool text_to_file_generation (massgen/tool/_multimodal_tools/text_to_file_generation.py) is not supported: massgen makes images only, with generate_media on type openai",
      "agents[0].backend.custom_tools[1].path: MassGen's own tool crawl4ai_md (massgen/tool/_web_tools/crawl4ai_tool.py) is not provided by massgen: use a Python file of your own, a command tool or an MCP server",
      "agents[0].backend.custom_tools[2].function: MassGen has no built-in function wrong_two_num_tool: the tool is left out (warning)",
      "agents[0].backend.custom_tools[3].default_params: MassGen does not read default_params: ignored (warning)",
      "agents[0].backend.custom_tools[3].path: massgen/tool/_basic/_two_num_tool.py has no function wrong_two_num_tool (it has two_num_tool): the tool is left out (warning)",
    ])
  })

  test("command tools and Python tools side by side: each read by its own schema", () => {
    const command = { name: "count", command: ["wc", "-l"] as [string, ...Array<string>] }
    const config = configOf(doc([command, { path: MATH, function: "scale" }]))
    expect(config.agents[0]!.backend.custom_tools).toEqual([command])
    expect(config.agents[0]!.pythonTools?.map((t) => t.name)).toEqual(["custom_tool__scale"])
  })
})

describe("auto_discover_custom_tools and the code-based tool directories", () => {
  const backend = (extra: Record<string, unknown>) => ({
    agents: [{ id: "a", backend: { type: "scripted", auto_discover_custom_tools: true, ...extra } }],
  })
  const serversOf = (d: unknown, env: Record<string, string>) => Either.getOrThrow(decodeConfig(d, env)).agents[0]!.backend.mcp_servers

  test("adds MassGen's registry MCP servers: Context7 always, Brave and Exa search when their key is set (as a reference), none named twice", () => {
    expect(serversOf(backend({}), {})).toEqual([{ name: "context7", type: "stdio", command: "npx", args: ["-y", "@upstash/context7-mcp"] }])
    const own = { name: "context7", type: "stdio" as const, command: "my-context7" }
    expect(serversOf(backend({ mcp_servers: [own] }), { BRAVE_API_KEY: "brave-secret" })).toEqual([
      own,
      {
        name: "brave_search",
        type: "stdio",
        command: "npx",
        args: ["-y", "@brave/brave-search-mcp-server"],
        env: { BRAVE_API_KEY: "${BRAVE_API_KEY}" },
      },
    ])
    expect(serversOf({ agents: [{ id: "a", backend: { type: "scripted", auto_discover_custom_tools: false } }] }, {})).toBeUndefined()
  })

  test("shared_tools_directory, exclude_custom_tools and custom_tools_path are known keys: no warning", () => {
    expect(
      problemsOf(backend({ shared_tools_directory: "shared_tools", exclude_custom_tools: ["_computer_use"], custom_tools_path: "t" })),
    ).toEqual([])
  })
})

describe("a Python function as a tool", () => {
  test("its schema comes from its signature and docstring; preset and context arguments are not in it", async () => {
    const provider = await providerOf(
      doc([
        { path: MATH, function: "add_numbers" },
        { name: "double", path: MATH, function: "scale", preset_args: { factor: 2 } },
      ]),
    )
    expect(provider.tools.map((t) => t.spec)).toEqual([
      {
        name: "custom_tool__add_numbers",
        description: "Add two numbers.\n\nThe sum is given as text.",
        parameters: {
          type: "object",
          properties: {
            a: { type: "integer", description: "The first number" },
            b: { type: "number", description: "The second number,\ngiven as a float", default: 2.5 },
          },
          required: ["a"],
        },
      },
      {
        name: "custom_tool__double",
        description: "Multiply each value by a factor.",
        parameters: {
          type: "object",
          properties: {
            values: { type: "array", items: { type: "integer" }, description: "The values" },
            unit: { anyOf: [{ type: "string" }, { type: "null" }], description: "A unit to append", default: null },
          },
          required: ["values"],
        },
      },
    ])
  }, 60_000)

  test("a call gives the function's result as text (an ExecutionResult's blocks, a string, a generator's last item), its prints left out", async () => {
    const provider = await providerOf(
      doc([{ path: MATH, function: ["add_numbers", "scale", "gen_steps"], preset_args: [{}, { factor: 3 }, {}] }]),
    )
    const [added, scaled, stepped] = await Promise.all([
      call(provider, "custom_tool__add_numbers", { a: 1 }),
      call(provider, "custom_tool__scale", { values: [1, 2], unit: "m" }),
      call(provider, "custom_tool__gen_steps", { n: 3 }),
    ])
    expect(added).toEqual(Either.right(`1 + 2.5 = 3.5 in ${nodePath.basename(FIXTURES)}`))
    expect(scaled).toEqual(Either.right("3m 6m"))
    expect(stepped).toEqual(Either.right("step 3 of 3"))
  }, 60_000)

  test("an exception is a failed call with its one-line message; an argument the function does not take fails the call", async () => {
    const provider = await providerOf(doc([{ path: MATH, function: ["explode", "scale"] }]))
    const [exploded, wrong] = await Promise.all([
      call(provider, "custom_tool__explode", { reason: "that" }),
      call(provider, "custom_tool__scale", { values: [1], factor: 2, colour: "red" }),
    ])
    expect(Either.isLeft(exploded) && exploded.left.message).toBe("failed: ValueError: cannot do that")
    expect(Either.isLeft(wrong) && wrong.left.message).toBe("failed: scale takes no argument colour (it takes values, factor, unit)")
  }, 60_000)

  test("no API key, nor anything named like a secret, is in the function's environment", async () => {
    const provider = await providerOf(doc([{ path: MATH, function: "environment" }]))
    const result = await call(provider, "custom_tool__environment", {})
    const names: ReadonlyArray<string> = JSON.parse(Either.getOrThrow(result)).names
    expect(names).toContain("PATH")
    expect(names).not.toContain("OPENAI_API_KEY")
    expect(names).not.toContain("MY_SERVICE_TOKEN")
  }, 60_000)

  test("a path left relative by its caller (a served or batch run) is read from massgen's working directory, not the agent's", async () => {
    const relative = nodePath.relative(process.cwd(), nodePath.join(FIXTURES, MATH))
    const config = Either.getOrThrow(decodeConfig(doc([{ path: relative, function: "scale", preset_args: { factor: 2 } }]), {}))
    const made = await Effect.runPromise(pythonToolProviders(config, ENV, nodePath.join(FIXTURES, "..")))
    expect(made.problems).toEqual([])
    expect(await call(made.providers.get("a")!, "custom_tool__scale", { values: [4] })).toEqual(Either.right("8"))
  }, 60_000)

  test("the built-in two_num_tool runs without Python: MassGen's schema and text", async () => {
    const two = { name: ["two_num_tool"], path: "massgen/tool/_basic/_two_num_tool.py", function: ["two_num_tool"] }
    const provider = await providerOf(doc([two]), { PATH: "/nonexistent" })
    expect(provider.tools[0]!.spec).toEqual({
      name: "custom_tool__two_num_tool",
      description: "Add two numbers together.",
      parameters: {
        type: "object",
        properties: { x: { type: "integer", description: "First number" }, y: { type: "integer", description: "Second number" } },
        required: ["x", "y"],
      },
    })
    expect(await call(provider, "custom_tool__two_num_tool", { x: 2, y: 3 })).toEqual(Either.right("The sum of 2 and 3 is 5"))
    expect(await call(provider, "custom_tool__two_num_tool", { x: 1.5, y: 1.5 })).toEqual(Either.right("The sum of 1.5 and 1.5 is 3.0"))
  })

  test("at start: a file not there, and python3 not on the PATH, are said naming the tool", () => {
    const missing = configOf(doc([{ path: "nowhere.py", function: ["f", "g"] }]))
    expect(pythonToolStartProblems(missing, ENV)).toEqual([
      {
        path: "agents[0].backend.custom_tools[0].path",
        message: `agent a: Python file not found: ${nodePath.join(FIXTURES, "nowhere.py")}`,
      },
    ])
    expect(pythonToolStartProblems(configOf(doc([{ path: MATH, function: "scale" }])), { PATH: "/nonexistent" })).toEqual([
      {
        path: "agents[0].backend.custom_tools[0]",
        message: "agent a: python3 is not on the PATH: MassGen's Python custom tools run with it (install Python 3)",
      },
    ])
  })
})
