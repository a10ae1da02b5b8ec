/**
 * The provider tools and pass-through settings of a backend (`enable_web_search`,
 * `enable_code_interpreter`/`enable_code_execution`, `reasoning`, `text`, `top_p`,
 * `extra_body`): what the config accepts and refuses, and what `--validate` and a
 * run say of a provider tool on a protocol that has none.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import { Effect, Either } from "effect"
import { decodeConfig, unknownKeys } from "../src/domain/config/index.ts"
import { makeBackend } from "../src/services/backends/factory.ts"
import { collect } from "./support/backend-suite.ts"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { reply, startFakeLlm } from "./support/fake-llm.ts"
import { expectExit } from "./support/run-dirs.ts"

const ENV = { OPENAI_API_KEY: "sk-test", ANTHROPIC_API_KEY: "sk-ant-test", GROQ_API_KEY: "gsk-test" }

const doc = (backend: Record<string, unknown>, id = "a") => ({ agents: [{ id, backend }] })

const problemsOf = (raw: unknown) => {
  const decoded = decodeConfig(raw, ENV)
  return Either.isLeft(decoded) ? decoded.left.map((p) => `${p.path}: ${p.message}`) : []
}

describe("provider settings in the config", () => {
  test("every key is accepted where its protocol has it, and decoded as written", () => {
    const settings = {
      enable_web_search: true,
      enable_code_interpreter: true,
      reasoning: { effort: "high", summary: "auto" },
      text: { verbosity: "low" },
      top_p: 0.9,
      extra_body: { service_tier: "flex", metadata: { team: "x" } },
    }
    const decoded = decodeConfig(doc({ type: "openai", ...settings }), ENV)
    expect(Either.getOrThrow(decoded).agents[0]!.backend).toMatchObject(settings)
    expect(unknownKeys(doc({ type: "openai", ...settings }))).toEqual([])
    expect(
      problemsOf(doc({ type: "claude", enable_web_search: true, enable_code_execution: true, reasoning: { effort: "max" }, top_p: 0.5 })),
    ).toEqual([])
    expect(
      problemsOf(
        doc({
          type: "groq",
          reasoning: { effort: "low" },
          text: { verbosity: "high" },
          top_p: 1,
          extra_body: { x: 1 },
          enable_web_search: false,
        }),
      ),
    ).toEqual([])
  })

  test("wrong types are one-line problems naming the key and what was found", () => {
    expect(
      problemsOf(
        doc({
          type: "openai",
          enable_web_search: "yes",
          reasoning: { effort: "extreme", summary: "long" },
          text: { verbosity: 3 },
          top_p: 1.5,
          extra_body: ["a"],
        }),
      ),
    ).toEqual([
      'agents[0].backend.enable_web_search: Expected boolean, found "yes"',
      'agents[0].backend.reasoning.effort: Expected one of none, minimal, low, medium, high, xhigh, max, found "extreme"',
      'agents[0].backend.reasoning.summary: Expected one of auto, concise, detailed, found "long"',
      "agents[0].backend.text.verbosity: Expected one of low, medium, high, found 3",
      "agents[0].backend.top_p: Expected a number from 0 to 1, found 1.5",
      'agents[0].backend.extra_body: Expected a mapping, found ["a"]',
    ])
  })

  test("a provider tool on a Chat Completions type is a problem naming the agent and the key; false is not", () => {
    expect(
      problemsOf(doc({ type: "groq", enable_web_search: true, enable_code_interpreter: true, enable_code_execution: false }, "fast")),
    ).toEqual([
      "agents[0].backend.enable_web_search: agent fast: type groq speaks Chat Completions, which has no provider-side web search: remove enable_web_search, or use type openai or claude",
      "agents[0].backend.enable_code_interpreter: agent fast: type groq speaks Chat Completions, which has no provider-side code execution: remove enable_code_interpreter, or use type openai or claude",
    ])
  })

  test("claude takes only the effort levels it knows", () => {
    expect(problemsOf(doc({ type: "claude", reasoning: { effort: "minimal" } }, "c"))).toEqual([
      'agents[0].backend.reasoning.effort: agent c: type claude takes an effort of low, medium, high, xhigh, max, found "minimal"',
    ])
  })
})

test("from the config to the wire: each backend type sends the settings its protocol has", async () => {
  const fake = await startFakeLlm()
  try {
    const settings = {
      reasoning: { effort: "high", summary: "detailed" },
      text: { verbosity: "low" },
      top_p: 0.5,
      extra_body: { user: "massgen" },
    }
    const config = Either.getOrThrow(
      decodeConfig(
        {
          agents: [
            {
              id: "gpt",
              backend: { type: "openai", base_url: fake.openAiBaseUrl, enable_web_search: true, enable_code_execution: true, ...settings },
            },
            {
              id: "claude",
              backend: { type: "claude", base_url: fake.url, enable_web_search: true, enable_code_interpreter: true, ...settings },
            },
            { id: "local", backend: { type: "vllm", base_url: fake.openAiBaseUrl, ...settings } },
          ],
        },
        ENV,
      ),
    )
    fake.enqueue("responses", reply({ text: "a" }))
    fake.enqueue("anthropic", reply({ text: "b" }))
    fake.enqueue("chat", reply({ text: "c" }))
    for (const agent of config.agents) await collect(await Effect.runPromise(makeBackend(agent, ENV)))
    const [gpt, claude, local] = fake.requests.map((r) => r.body)
    expect(gpt).toMatchObject({
      reasoning: { effort: "high", summary: "detailed" },
      text: { verbosity: "low" },
      top_p: 0.5,
      user: "massgen",
    })
    expect(gpt.tools.slice(0, 2).map((t: { type: string }) => t.type)).toEqual(["web_search", "code_interpreter"])
    expect(claude).toMatchObject({ output_config: { effort: "high" }, top_p: 0.5, user: "massgen" })
    expect(claude.tools.slice(0, 2).map((t: { type: string }) => t.type)).toEqual(["web_search_20250305", "code_execution_20250825"])
    expect(local).toMatchObject({ reasoning_effort: "high", verbosity: "low", top_p: 0.5, user: "massgen" })
    expect(local.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["new_answer", "vote"])
  } finally {
    fake.stop()
  }
})

describe("a provider tool where the protocol has none, on the command line", () => {
  afterAll(cleanupSandboxes)

  test("--validate and a run refuse it with exit 1 and one line naming the agent and the key; nothing is written", async () => {
    const cwd = sandbox()
    const config = writeConfig(
      cwd,
      { agents: [{ id: "fast", backend: { type: "groq", api_key: "gsk-x", enable_web_search: true } }] },
      "team.yaml",
    )
    const [validated, run] = await Promise.all([
      runCli("source", ["--validate", config], { cwd }),
      runCli("source", ["--automation", "--config", config, "q"], { cwd }),
    ])
    const line =
      "agents[0].backend.enable_web_search: agent fast: type groq speaks Chat Completions, which has no provider-side web search: remove enable_web_search, or use type openai or claude"
    expectExit(validated, 1)
    expect(validated.stdout).toBe(`config ${config}: ${line}\n`)
    expectExit(run, 1)
    expect(run.stdout).toBe("")
    expect(run.stderr).toBe(`massgen: config ${config}: ${line}\n`)
    expect(fs.readdirSync(cwd)).toEqual(["team.yaml"])
  }, 30_000)
})
