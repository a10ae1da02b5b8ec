/**
 * MassGen configs under `massgen --validate` and a run (issue 13): keyless validation,
 * one pass, `--strict`, `--check-keys`, MassGen's JSON shape, unsupported features by
 * feature, MassGen's validator errors, `ui`/`display`, and how `skip_final_presentation`
 * meets an explicit strategy. The fixtures (`test/fixtures/massgen/`) are written in
 * MassGen's config style.
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import { parse as parseYaml } from "yaml"
import { validateCommand } from "../src/cli/commands/validate.ts"
import { decodeConfig } from "../src/domain/config/index.ts"
import { runCli } from "./support/cli.ts"

const FIXTURES = nodePath.join(import.meta.dir, "fixtures", "massgen")
const fixture = (name: string) => nodePath.join(FIXTURES, name)
const emptyDir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-compat-"))

const validate = async (name: string, flags: { strict?: boolean; checkKeys?: boolean } = {}, env: Record<string, string> = {}) => {
  const printed: Array<string> = []
  const code = await Effect.runPromise(
    validateCommand(
      { path: fixture(name), json: true, strict: flags.strict ?? false, checkKeys: flags.checkKeys ?? false },
      env,
      emptyDir,
      (l) => printed.push(l),
    ),
  )
  return { code, result: JSON.parse(printed.join("\n")) }
}
const locations = (entries: ReadonlyArray<{ location: string }>) => entries.map((e) => e.location)

describe("--validate with no secrets (MassGen's validator passes configs whose keys are not set)", () => {
  test("an unset ${VAR} and a missing API key are warnings: the config is valid, in MassGen's JSON shape", async () => {
    const { code, result } = await validate("two_agents_keyless.yaml")
    expect(code).toBe(0)
    expect(result).toEqual({
      valid: true,
      error_count: 0,
      warning_count: 2,
      errors: [],
      warnings: [
        { location: "agents[0].backend.api_key", message: "environment variable OPENAI_API_KEY is not set", suggestion: null },
        {
          location: "agents[1].backend.api_key",
          message: "missing API key: set ANTHROPIC_API_KEY (agent claude_agent, backend claude)",
          suggestion: null,
        },
      ],
    })
  })

  test("--check-keys makes them errors, as a run does; with the keys set there is nothing to say", async () => {
    const checked = await validate("two_agents_keyless.yaml", { checkKeys: true })
    expect({ code: checked.code, valid: checked.result.valid, errors: checked.result.error_count }).toEqual({
      code: 1,
      valid: false,
      errors: 2,
    })
    const withKeys = await validate(
      "two_agents_keyless.yaml",
      { checkKeys: true },
      { OPENAI_API_KEY: "sk-dummy", ANTHROPIC_API_KEY: "sk-ant-dummy" },
    )
    expect(withKeys.result).toEqual({ valid: true, error_count: 0, warning_count: 0, errors: [], warnings: [] })
  })

  test("--strict turns warnings into errors (MassGen's --strict)", async () => {
    const { code, result } = await validate("two_agents_keyless.yaml", { strict: true })
    expect({ code, valid: result.valid, error_count: result.error_count, warning_count: result.warning_count }).toEqual({
      code: 1,
      valid: false,
      error_count: 2,
      warning_count: 0,
    })
  })

  test("a run of the same config stops before anything is written, naming both keys (exit 1)", async () => {
    const cwd = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-compat-run-"))
    const run = await runCli("source", ["--automation", "--config", fixture("two_agents_keyless.yaml"), "q"], { cwd, env: {} })
    expect(run.exitCode).toBe(1)
    expect(run.stderr).toContain("environment variable OPENAI_API_KEY is not set")
    expect(fs.readdirSync(cwd)).toEqual([])
  }, 30_000)
})

describe("unsupported MassGen features, by feature, in one pass", () => {
  test("each feature is one error naming it, agent frameworks say what to use instead, a typo is a warning with a suggestion", async () => {
    const { code, result } = await validate("unsupported_features.yaml")
    expect(code).toBe(1)
    const byLocation = Object.fromEntries(
      result.errors.map((e: { location: string; message: string; suggestion: string | null }) => [e.location, e]),
    )
    expect(byLocation.memory).toEqual({ location: "memory", message: "memory: not supported", suggestion: "remove the memory section" })
    expect(byLocation["orchestrator.coordination.enable_subagents"].message).toBe("starting subagents is not supported yet (issue 27)")
    // Orchestration restarts are supported (docs/coordination.md): no problem for the key.
    expect(byLocation["orchestrator.coordination.max_orchestration_restarts"]).toBeUndefined()
    // upload_files is read: its files go with the question.
    expect(locations(result.errors).some((l: string) => l.startsWith("agents[0].backend.upload_files"))).toBe(false)
    expect(byLocation["agents[0].backend.enable_audio_generation"].message).toBe("audio, video and file generation: not supported")
    // enable_image_generation is read (generate_media on type openai): the fixture's agent is of that type.
    expect(locations(result.errors).some((l: string) => l.startsWith("agents[0].backend.enable_image_generation"))).toBe(false)
    expect(byLocation["agents[1].backend.type"].message).toContain("use type openai")
    expect(byLocation["agents[2].backend.type"].message).toContain(
      "type ag2 (AG2/AutoGen agents) is not supported: use an LLM backend type",
    )
    // The keys of an agent whose type is refused are not listed again.
    expect(
      locations(result.errors).some(
        (l: string) => l.startsWith("agents[1].backend.permission_mode") || l.startsWith("agents[2].backend.agent_config"),
      ),
    ).toBe(false)
    expect(result.warnings).toEqual([
      expect.objectContaining({ location: "orchestrator.skip_final_presentaton", suggestion: "did you mean skip_final_presentation?" }),
      expect.objectContaining({ location: "ui.logging_enabled", message: expect.stringContaining("false is not honoured") }),
    ])
    expect(result.error_count).toBe(result.errors.length)
  })

  test("MassGen's validator errors: agent without id, chatcompletion without model, bad voting_sensitivity and display_type, all at once", async () => {
    const { code, result } = await validate("validator_errors.yaml")
    expect(code).toBe(1)
    expect(locations(result.errors).sort()).toEqual(
      [
        "agents[0].id",
        "agents[1].backend.model",
        "agents[1].voting_sensitivity",
        "orchestrator.max_new_answers_per_agent",
        "orchestrator.voting_sensitivity",
        "ui.display_type",
      ].sort(),
    )
    expect(result.errors.find((e: { location: string }) => e.location === "agents[0].id").suggestion).toBe('add id: "agent_a"')
  })

  test("the text form prints warnings first, then one line per error", async () => {
    const result = await runCli("source", ["--validate", fixture("unsupported_features.yaml")], { cwd: emptyDir, env: {} })
    expect(result.exitCode).toBe(1)
    expect(result.lines[0]).toStartWith(
      `warning: config ${fixture("unsupported_features.yaml")}: orchestrator.skip_final_presentaton: unknown key, ignored`,
    )
    expect(result.lines[0]).toEndWith("; did you mean skip_final_presentation?")
    expect(result.lines).toContain(
      `config ${fixture("unsupported_features.yaml")}: memory: memory: not supported; remove the memory section`,
    )
  }, 30_000)
})

describe("ui and display (MassGen: display_type none/simple are plain, rich/textual the live view)", () => {
  const settingsOf = (doc: unknown) => {
    const decoded = decodeConfig(doc, {})
    if (Either.isLeft(decoded)) throw new Error(JSON.stringify(decoded.left))
    return decoded.right
  }
  const solo = { agents: [{ id: "a", backend: { type: "scripted" } }] }

  test("display_type and display.type choose plain lines or the live view", () => {
    expect(settingsOf({ ...solo, ui: { display_type: "simple" } }).display).toBe("plain")
    expect(settingsOf({ ...solo, ui: { display_type: "none" } }).display).toBe("plain")
    expect(settingsOf({ ...solo, ui: { display_type: "rich_terminal" } }).display).toBe("live")
    expect(settingsOf({ ...solo, ui: { display_type: "textual_terminal" } }).display).toBe("live")
    expect(settingsOf(parseYaml(fs.readFileSync(fixture("old_display.yaml"), "utf8"))).display).toBe("plain")
    expect(settingsOf(solo).display).toBeUndefined()
  })

  test("skip_final_presentation alone becomes winner_reuse; with an explicit winner_present or synthesize the winner still presents (MassGen's final-presentation matrix)", () => {
    const orchestrated = (orchestrator: object) => settingsOf({ ...solo, orchestrator }).settings
    expect(orchestrated({ skip_final_presentation: true })).toMatchObject({
      skip_final_presentation: true,
      final_answer_strategy: "winner_reuse",
    })
    expect(orchestrated({ skip_final_presentation: true, final_answer_strategy: "winner_present" })).toMatchObject({
      skip_final_presentation: false,
      final_answer_strategy: "winner_present",
    })
    expect(orchestrated({ skip_final_presentation: true, final_answer_strategy: "synthesize" })).toMatchObject({
      skip_final_presentation: false,
      final_answer_strategy: "synthesize",
    })
    expect(orchestrated({})).toMatchObject({ skip_final_presentation: false, final_answer_strategy: "winner_present" })
  })

  test("the coordination options reach the run's settings", () => {
    const config = settingsOf({
      ...solo,
      orchestrator: {
        skip_voting: true,
        defer_voting_until_all_answered: true,
        max_new_answers_global: 3,
        answer_novelty_requirement: "strict",
        voting_sensitivity: "balanced",
      },
    })
    expect(config.settings).toMatchObject({
      skip_voting: true,
      defer_voting_until_all_answered: true,
      max_new_answers_global: 3,
      answer_novelty_requirement: "strict",
      voting_sensitivity: "balanced",
    })
  })

  test("MassGen's round timeouts reach the run's settings; they are off unless set", () => {
    const config = settingsOf({
      ...solo,
      timeout_settings: { initial_round_timeout_seconds: 60, subsequent_round_timeout_seconds: 30, round_timeout_grace_seconds: 10 },
    })
    expect(config.settings).toMatchObject({
      initial_round_timeout_seconds: 60,
      subsequent_round_timeout_seconds: 30,
      round_timeout_grace_seconds: 10,
    })
    expect(settingsOf(solo).settings).not.toHaveProperty("initial_round_timeout_seconds")
  })
})

describe("A permissions: block of a form massgen does not read is refused, never ignored", () => {
  const config = (dir: string) => {
    const file = nodePath.join(dir, "team.yaml")
    fs.writeFileSync(
      file,
      [
        "agents:",
        "  - id: a1",
        "    backend:",
        "      type: scripted",
        "      cwd: workspace",
        "      enable_mcp_command_line: true",
        "      script:",
        "        - tool: execute_command",
        '          args: { command: "touch ran.txt" }',
        "        - new_answer: done",
        "      vote: agent1",
        "permissions:",
        "  rules:",
        '    - { action: "execute_command(*)", decision: deny }',
      ].join("\n"),
    )
    return file
  }

  test("--validate names the key and the form it expects, and a run of it stops before any command or file (exit 1)", async () => {
    const cwd = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-permissions-"))
    const file = config(cwd)
    const validated = await runCli("source", ["--validate", file, "--json"], { cwd, env: {} })
    expect(validated.exitCode).toBe(1)
    const errors = JSON.parse(validated.stdout).errors
    expect(errors).toEqual([
      expect.objectContaining({
        location: "permissions.rules",
        message: 'Expected a rules mapping {allow, ask, deny}, found [{"action":"execute_command(*)","decision":"deny"}]',
      }),
    ])
    const run = await runCli("source", ["--automation", "--config", file, "q"], { cwd, env: {} })
    expect(run.exitCode).toBe(1)
    expect(run.stderr).toContain("permissions.rules: Expected a rules mapping {allow, ask, deny}")
    expect(fs.readdirSync(cwd)).toEqual(["team.yaml"])
  }, 30_000)
})
