/**
 * MassGen's `orchestrator.coordination` sub-keys and the voting keys beside it, each read on its
 * own (issue 27): `--validate --json` names every refused key once, with its reason and how to
 * run without it; a wrong type is one line naming the key; a config whose keys are all off,
 * settings of a feature that is off, or ignored (logs and UI only) validates and runs to the
 * end against a loopback fake model; `docs/coordination.md` lists every key massgen reads.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { COORDINATION_KEYS, VOTING_KEYS } from "../src/domain/config/index.ts"
import { cleanupSandboxes, ROOT, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { loneCouncilReply, NO_PROXY_ENV, startFakeLlm } from "./support/fake-llm.ts"
import { ENV, expectExit, lineValue } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

interface Entry {
  readonly location: string
  readonly message: string
  readonly suggestion: string | null
}

const AGENTS = [{ id: "agent_a", backend: { type: "scripted", answer: "Four.", vote: "agent1" } }]

const validateJson = async (orchestrator: unknown) => {
  const cwd = sandbox()
  const r = await runCli("source", ["--validate", writeConfig(cwd, { agents: AGENTS, orchestrator }), "--json"], { cwd, env: ENV })
  const result = JSON.parse(r.stdout) as { valid: boolean; errors: ReadonlyArray<Entry>; warnings: ReadonlyArray<Entry> }
  return { code: r.exitCode, ...result }
}

describe("--validate reads each coordination sub-key and voting key on its own", () => {
  test("several refused keys: one error per key, naming it, each with its own reason and a suggestion", async () => {
    const { code, valid, errors } = await validateJson({
      voting_sensitivity: "checklist_gated",
      voting_threshold: 3,
      fairness_enabled: true,
      fairness_lead_cap_answers: 2,
      max_midstream_injections_per_round: 2,
      defer_peer_updates_until_restart: true,
      // A context path the presenter writes: write_mode would isolate those writes, so it is refused.
      context_paths: [{ path: ROOT, permission: "write" }],
      coordination: {
        enable_planning_mode: true,
        planning_mode_instruction: "Plan only.",
        max_orchestration_restarts: 2,
        enable_agent_task_planning: true,
        task_planning_filesystem_mode: true,
        use_skills: true,
        skills_directory: ".agent/skills",
        write_mode: "auto",
        persona_generator: { enabled: true, diversity_mode: "implementation" },
        checklist_criteria_preset: "evaluation",
      },
    })
    expect({ code, valid }).toEqual({ code: 1, valid: false })
    const at = (key: string) => `orchestrator.coordination.${key}`
    // The settings of a refused feature (skills_directory, ...) are not problems of their own; planning mode, task planning and skills are supported.
    expect(errors.map((e) => e.location).sort()).toEqual(
      [
        // checklist_gated, voting_threshold, the fairness keys and defer_peer_updates_until_restart are supported (issue 27).
        at("checklist_criteria_preset"),
        at("write_mode"),
        at("persona_generator"),
      ].sort(),
    )
    const byKey = Object.fromEntries(errors.map((e) => [e.location, e]))
    expect(byKey[at("persona_generator")]).toEqual({
      location: at("persona_generator"),
      message: "persona generation is not supported yet (issue 27)",
      suggestion: "remove it to run without it",
    })
    // Supported (orchestration restarts): set among refused keys, it is none of them.
    expect(byKey[at("max_orchestration_restarts")]).toBeUndefined()
    expect(byKey[at("write_mode")]!.suggestion).toBe("set write_mode: legacy, which is how massgen writes")
    expect(byKey[at("checklist_criteria_preset")]).toEqual({
      location: at("checklist_criteria_preset"),
      message: "MassGen's preset checklist criteria is not supported yet (issue 27)",
      suggestion: "give the criteria in checklist_criteria_inline, or remove it for massgen's default criteria",
    })
    // Every reason is its own.
    expect(new Set(errors.map((e) => e.message)).size).toBe(errors.length)
  }, 60_000)

  test("write_mode with no context path written: a warning (nothing to isolate), not an error", async () => {
    const { code, valid, errors, warnings } = await validateJson({
      context_paths: [{ path: ROOT, permission: "read" }],
      coordination: { write_mode: "auto" },
    })
    expect({ code, valid, errors }).toEqual({ code: 0, valid: true, errors: [] })
    expect(warnings.find((w) => w.location === "orchestrator.coordination.write_mode")?.message).toStartWith(
      "ignored: no context path is written, so there is nothing to isolate",
    )
  }, 60_000)

  test("a wrongly typed value is one line naming the key", async () => {
    const { code, errors } = await validateJson({
      voting_threshold: "high",
      fairness_enabled: "yes",
      coordination: { enable_planning_mode: "no", max_orchestration_restarts: -1, broadcast: true, persona_generator: 3 },
    })
    expect(code).toBe(1)
    expect(errors.map((e) => [e.location, e.message])).toEqual(
      expect.arrayContaining([
        ["orchestrator.voting_threshold", 'Expected a whole number of 1 or more or null, found "high"'],
        ["orchestrator.fairness_enabled", expect.stringMatching(/^Expected boolean, found "yes"$/)],
        ["orchestrator.coordination.enable_planning_mode", expect.stringMatching(/^Expected boolean, found "no"$/)],
        ["orchestrator.coordination.max_orchestration_restarts", "Expected a number of 0 or more, found -1"],
        ["orchestrator.coordination.broadcast", 'Expected false, "agents" or "human" or null, found true'],
        ["orchestrator.coordination.persona_generator", "Expected a mapping or null, found 3"],
      ]),
    )
    expect(errors).toHaveLength(6)
    expect(errors.every((e) => !e.message.includes("\n"))).toBe(true)
  }, 60_000)

  test("an unknown sub-key is a warning with the key it may stand for", async () => {
    const { code, warnings } = await validateJson({ coordination: { enable_planing_mode: false } })
    expect(code).toBe(0)
    expect(warnings).toEqual([
      {
        location: "orchestrator.coordination.enable_planing_mode",
        message: "unknown key, ignored",
        suggestion: "did you mean enable_planning_mode?",
      },
    ])
  }, 60_000)
})

describe("a config with only supported sub-keys", () => {
  test("validates (an ignored key is a warning) and runs to the end on a fake model", async () => {
    const fake = await startFakeLlm({ respond: loneCouncilReply })
    try {
      const cwd = sandbox()
      const doc = {
        agents: [{ id: "solo", backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl, api_key: "sk-x" } }],
        orchestrator: {
          voting_sensitivity: "balanced",
          // MassGen's defaults said out loud are accepted and recorded (issue 27).
          fairness_enabled: true,
          fairness_lead_cap_answers: 2,
          max_midstream_injections_per_round: 2,
          defer_peer_updates_until_restart: true,
          voting_threshold: 3,
          coordination: {
            enable_planning_mode: false,
            planning_mode_instruction: "Plan only.",
            max_orchestration_restarts: 0,
            enable_agent_task_planning: false,
            max_tasks_per_plan: 10,
            use_skills: false,
            skills_directory: ".agent/skills",
            learning_capture_mode: "verification_and_final_only",
            enable_memory_filesystem_mode: false,
            enable_subagents: false,
            subagent_default_timeout: 300,
            broadcast: false,
            write_mode: "legacy",
            enable_changedoc: false,
            persona_generator: { enabled: false },
            compression_target_ratio: 0.2,
          },
        },
        timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90 },
      }
      const config = writeConfig(cwd, doc)
      const checked = await runCli("source", ["--validate", config, "--json"], { cwd, env: ENV })
      const result = JSON.parse(checked.stdout)
      expect({ code: checked.exitCode, valid: result.valid, errors: result.errors }).toEqual({ code: 0, valid: true, errors: [] })
      expect(result.warnings).toEqual([
        expect.objectContaining({
          location: "orchestrator.coordination.compression_target_ratio",
          message: expect.stringMatching(/^ignored: massgen does not compress/),
        }),
      ])
      const run = await runCli("source", ["--automation", "--config", config, "What is 2 + 2?"], {
        cwd,
        env: { ...ENV, ...NO_PROXY_ENV },
        timeoutMs: 110_000,
      })
      expectExit(run, 0)
      expect(fs.readFileSync(nodePath.join(lineValue(run, "LOG_DIR"), "final", "solo", "answer.txt"), "utf8")).toContain("Four.")
      const first = JSON.parse(fs.readFileSync(nodePath.join(lineValue(run, "LOG_DIR"), "events.jsonl"), "utf8").split("\n")[0]!)
      expect(first.settings).toMatchObject({
        fairness_lead_cap_answers: 2,
        max_midstream_injections_per_round: 2,
        defer_peer_updates_until_restart: true,
      })
    } finally {
      fake.stop()
    }
  }, 120_000)
})

test("docs/coordination.md has a row for every sub-key and voting key massgen reads", () => {
  const docs = fs.readFileSync(nodePath.join(ROOT, "docs", "coordination.md"), "utf8")
  const missing = [...Object.keys(COORDINATION_KEYS), ...Object.keys(VOTING_KEYS)].filter((key) => !docs.includes(`| \`${key}\` |`))
  expect(missing).toEqual([])
})
