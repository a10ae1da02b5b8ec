/**
 * MassGen's shipped configs (issues 27 and 28): how many `--validate` accepts with no keys set, and a
 * fixed sample of those, rewritten to a loopback fake model server, run to completion.
 *
 * The configs are MassGen v0.1.91's `massgen/configs/` (`../shared/massgen-configs/v0.1.91/` beside the
 * repository, or `MASSGEN_CONFIGS_DIR`); they are read where they are, not copied. `VALID` is the count
 * `bun scripts/measure-massgen-configs.ts` prints: raise it as features land, so that a config that
 * stops validating is noticed. The *rewrite* of a sample config changes only what reaches outside
 * the machine: each agent's `base_url` goes to the fake, its MCP servers become the reference server
 * run locally (`support/mcp.ts`, under their own names, with no tool filter), context paths become
 * temporary folders. The fake
 * plays a council: it votes for the first answer a round shows, answers when none is shown, and
 * presents with text.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import { parse as parseYaml } from "yaml"
import { massgenConfigFiles } from "../scripts/massgen-config-files.ts"
import { validateConfig } from "../src/cli/commands/validate.ts"
import { ROOT, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeLlm, type FakeRequest, NO_PROXY_ENV, reply, startFakeLlm, toolCall } from "./support/fake-llm.ts"
import { everythingStdio } from "./support/mcp.ts"

const CONFIGS = process.env.MASSGEN_CONFIGS_DIR ?? nodePath.resolve(ROOT, "..", "shared", "massgen-configs", "v0.1.91")
const VALID = 173
const TIMEOUT_MS = 120_000

/** The sample: configs that validate and reach nothing but their models, run whole against the fake. */
const SAMPLE: ReadonlyArray<string> = [
  "basic/multi/three_agents_opensource.yaml",
  "basic/multi/gpt5nano_glm_qwen.yaml",
  "basic/multi/three_agents_vllm.yaml",
  "basic/multi/fast_timeout_example.yaml",
  "basic/multi/two_agents_gpt5.yaml",
  "basic/multi/two_agents_opensource_lmstudio.yaml",
  "basic/single/single_gptoss120b.yaml",
  "basic/single/single_gpt5nano.yaml",
  "providers/azure/azure_openai_single.yaml",
  "providers/claude/claude.yaml",
  "providers/local/lmstudio.yaml",
  "providers/openai/gpt5.yaml",
  "providers/openai/gpt5_nano.yaml",
  "providers/others/zai_coding_team.yaml",
  "providers/others/zai_glm45.yaml",
  "teams/creative/creative_team.yaml",
  "teams/creative/travel_planning.yaml",
  "teams/research/news_analysis.yaml",
  "teams/research/technical_analysis.yaml",
  "tools/custom_tools/claude_custom_tool_example.yaml",
  "tools/custom_tools/gpt_oss_custom_tool_example.yaml",
  "tools/custom_tools/qwen_api_custom_tool_example.yaml",
  "tools/custom_tools/grok3_mini_custom_tool_example.yaml",
  "tools/custom_tools/gpt5_nano_custom_tool_example.yaml",
  "tools/custom_tools/qwen_local_custom_tool_example.yaml",
  "tools/custom_tools/claude_custom_tool_example_no_path.yaml",
  "tools/custom_tools/gpt_oss_custom_tool_example_no_path.yaml",
  "tools/custom_tools/gpt5_nano_custom_tool_with_mcp_example.yaml",
  "tools/custom_tools/claude_custom_tool_with_mcp_example.yaml",
  "tools/custom_tools/grok3_mini_custom_tool_with_mcp_example.yaml",
  "tools/mcp/gpt5_nano_mcp_example.yaml",
  "tools/mcp/claude_mcp_example.yaml",
  "tools/mcp/gpt_oss_mcp_example.yaml",
  "tools/mcp/qwen_api_mcp_example.yaml",
  "tools/mcp/grok3_mini_mcp_example.yaml",
  "tools/mcp/qwen_local_mcp_example.yaml",
  "tools/web-search/gpt5_mini_streamable_http_test.yaml",
  "tools/web-search/claude_streamable_http_test.yaml",
  "tools/web-search/gpt_oss_streamable_http_test.yaml",
  "tools/code-execution/basic_command_execution.yaml",
  "debug/code_execution/command_filtering_whitelist.yaml",
  "tools/filesystem/fs_permissions_test.yaml",
  "tools/planning/gpt5_mini_case_study_mcp_planning_mode.yaml",
  // Gemini on its own API (web search, code execution) beside OpenAI and Claude.
  "basic/multi/gemini_gpt5_claude.yaml",
  // MassGen's headline config: Gemini, GPT and Grok with web search, restarts, task planning.
  "basic/multi/three_agents_default.yaml",
  "basic/multi/geminicode_gpt5nano_claude.yaml",
]

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v)

/** The config at `file` with its models on the fake and its context paths in `dir`. */
const rewrite = (file: string, fake: FakeLlm, dir: string): unknown => {
  const doc = parseYaml(fs.readFileSync(file, "utf8")) as Record<string, unknown>
  const agents = Array.isArray(doc.agents) ? doc.agents : isObject(doc.agent) ? [doc.agent] : []
  for (const agent of agents) {
    const backend = isObject(agent) && isObject(agent.backend) ? agent.backend : undefined
    if (backend === undefined) continue
    const hostOnly =
      backend.type === "claude" || backend.type === "azure_openai" || (backend.type === "gemini" && backend.api !== "chat_completions")
    backend.base_url = hostOnly ? fake.url : fake.openAiBaseUrl
    if (Array.isArray(backend.mcp_servers))
      backend.mcp_servers = backend.mcp_servers.map((server) => everythingStdio(isObject(server) ? { name: server.name } : {}))
  }
  const orchestrator = isObject(doc.orchestrator) ? doc.orchestrator : undefined
  if (orchestrator !== undefined && Array.isArray(orchestrator.context_paths))
    orchestrator.context_paths = orchestrator.context_paths.map((entry, i) => {
      const path = nodePath.join(dir, `context-${i}`)
      fs.mkdirSync(path, { recursive: true })
      return isObject(entry) ? { ...entry, path } : entry
    })
  return doc
}

/** All the text of a request, whatever its wire. */
const textOf = (request: FakeRequest): string =>
  JSON.stringify(request.body?.messages ?? request.body?.input ?? request.body?.contents ?? "")
const toolsOf = (request: FakeRequest): ReadonlyArray<{ name: string; enum?: ReadonlyArray<string> }> =>
  (request.body?.tools ?? [])
    .flatMap((t: Record<string, any>) => t.functionDeclarations ?? [t])
    .map((t: Record<string, any>) => {
      const fn = t.function ?? t
      const schema = fn.parameters ?? fn.input_schema ?? fn.parametersJsonSchema ?? {}
      return { name: fn.name, enum: schema.properties?.agent_id?.enum }
    })

/** A council member: votes for the first answer shown, else answers, else (a presentation) writes the final text. */
const council = (request: FakeRequest): Behaviour => {
  const tools = toolsOf(request)
  const vote = tools.find((t) => t.name === "vote")
  const shown = textOf(request).match(/agent\d+\.\d+/)
  if (vote !== undefined && shown !== null) {
    const anon = shown[0].split(".")[0]!
    return toolCall("vote", { agent_id: vote.enum?.includes(anon) === false ? vote.enum[0] : anon, reason: "It is complete." })
  }
  if (tools.some((t) => t.name === "new_answer")) return toolCall("new_answer", { content: "A sample answer from the fake." })
  return reply({ text: "The final answer, presented." })
}

const PLACEHOLDER_KEYS = Object.fromEntries(
  ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "XAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ZAI_API_KEY", "AZURE_OPENAI_API_KEY"].map(
    (k) => [k, "placeholder-key-0123456789"],
  ),
)

describe("MassGen's shipped configs", () => {
  test("the configs are where the test reads them", () => {
    expect(fs.existsSync(CONFIGS) ? CONFIGS : `missing: ${CONFIGS} (set MASSGEN_CONFIGS_DIR)`).toBe(CONFIGS)
  })

  test(
    `${VALID} validate with no keys set, and every refused one names its reasons`,
    async () => {
      let valid = 0
      for (const file of massgenConfigFiles(CONFIGS)) {
        const { errors } = await Effect.runPromise(validateConfig({ path: file, strict: false, checkKeys: false }, {}))
        if (errors.length === 0) valid++
        for (const e of errors) expect(e.message.length).toBeGreaterThan(0)
      }
      expect(valid).toBe(VALID)
    },
    TIMEOUT_MS,
  )

  describe("a sample of those that validate runs to completion against a fake model server", () => {
    let fake: FakeLlm
    beforeAll(async () => {
      fake = await startFakeLlm({ respond: council })
    })
    afterAll(() => fake.stop())

    test.concurrent.each(SAMPLE.map((s) => [s]))(
      "%s",
      async (name) => {
        const dir = sandbox()
        const config = writeConfig(dir, rewrite(nodePath.join(CONFIGS, name), fake, dir))
        const validated = await runCli("source", ["--validate", config], { cwd: dir, env: { ...NO_PROXY_ENV, ...PLACEHOLDER_KEYS } })
        expect(validated.stderr).toBe("")
        const run = await runCli("source", ["--automation", "--config", config, "Name three primary colours."], {
          cwd: dir,
          env: { ...NO_PROXY_ENV, ...PLACEHOLDER_KEYS },
        })
        expect({ exit: run.exitCode, stderr: run.stderr.split("\n").slice(0, 3) }).toMatchObject({ exit: 0 })
        expect(run.lines.some((l) => l.startsWith("WINNER: "))).toBe(true)
        const answer = run.lines.find((l) => l.startsWith("ANSWER_FILE: "))!.slice("ANSWER_FILE: ".length)
        expect(fs.readFileSync(answer, "utf8").length).toBeGreaterThan(0)
      },
      TIMEOUT_MS,
    )
  })
})
