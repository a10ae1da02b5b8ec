/**
 * The `massgen` command line end to end, as a user or a script sees it: the
 * automation lines on stdout, the exit codes, the files of the log directory,
 * `status.json` read with jq. Every agent is scripted (no network). The same
 * suite runs twice: from source (`bun src/main.ts`) and as the compiled
 * binary (`dist/massgen`, built first when missing or stale).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { parse as parseYaml } from "yaml"
import pkg from "../package.json" with { type: "json" }
import {
  type CliResult,
  cleanupSandboxes,
  ensureBinary,
  type Mode,
  ROOT,
  runCli,
  runTogether,
  sandbox,
  startCli,
  startUntilLine,
  waitForSignalHandler,
  withSlots,
  writeConfig,
} from "./support/cli.ts"

afterAll(cleanupSandboxes)

const IN_PROGRESS = "[Coordination in progress - monitor status.json for real-time updates]"
const FOOTER_KEYS = ["WINNER", "ANSWER_FILE", "DURATION", "ANSWER_PREVIEW", "COMPLETED", "FAILED"] as const
const HEADER_KEYS = ["LOG_DIR", "STATUS", "QUESTION"] as const

type Backend = Record<string, unknown>
const agent = (id: string, backend: Backend = {}) => ({ id, backend: { type: "scripted", ...backend } })

/** A config of scripted agents with the given orchestrator and timeout settings. */
const team = (agents: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => ({
  agents,
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
  ...extra,
})

/** Whether a stdout line is one of the automation guide's lines. */
const isAutomationLine = (line: string): boolean =>
  line === IN_PROGRESS || [...HEADER_KEYS, ...FOOTER_KEYS].some((key) => line.startsWith(`${key}: `))

const valueOf = (result: CliResult, key: string): string => {
  const line = result.lines.find((l) => l.startsWith(`${key}: `))
  if (line === undefined) throw new Error(`no ${key}: line in stdout:\n${result.stdout}\nstderr:\n${result.stderr}`)
  return line.slice(key.length + 2)
}

const logDirOf = (result: CliResult): string => valueOf(result, "LOG_DIR")
const readJson = (path: string): any => JSON.parse(fs.readFileSync(path, "utf8"))
const statusOf = (logDir: string): any => readJson(nodePath.join(logDir, "status.json"))
const eventsOf = (logDir: string): Array<any> =>
  fs
    .readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l))
const finalAnswer = (logDir: string, winner: string): string =>
  fs.readFileSync(nodePath.join(logDir, "final", winner, "answer.txt"), "utf8")

/** Asserts the exit code, showing what the run printed when it is not the one expected. */
const expectExit = (result: CliResult, code: number) => {
  expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toMatchObject({ exitCode: code })
}

/**
 * A run in automation mode of `doc` in a fresh directory. `exclusive` for a
 * run whose outcome depends on the order its agents' delays give their
 * replies: nothing else runs meanwhile to starve it.
 */
const automation = (mode: Mode, doc: unknown, options: { readonly exclusive?: boolean } = {}) => {
  const cwd = sandbox()
  const config = writeConfig(cwd, doc)
  return runCli(mode, ["--automation", "--config", config, "What is 2+2?"], { cwd, exclusive: options.exclusive === true })
}

/** Per test: runs queue for slots, so a test may wait for others before its own starts. */
const TEST_TIMEOUT_MS = 90_000

const FINAL_TEXT = "The answer is 4.\nTwo plus two makes four."

const suite = (mode: Mode) =>
  describe.concurrent(`massgen CLI (${mode})`, () => {
    if (mode === "binary") beforeAll(() => ensureBinary().then(() => undefined), 120_000)

    test(
      "unanimous consensus: exit 0, exactly the 9 automation lines, the answer file and every log file",
      async () => {
        const doc = team([
          agent("agent_a", { answer: "Four.", vote: "agent2", delay_seconds: 0.05 }),
          agent("agent_b", { answer: "4, since 2+2=4.", vote: "agent2", final: FINAL_TEXT, delay_seconds: 0.1 }),
          agent("agent_c", { answer: "It is 4.", vote: "agent2", delay_seconds: 0.15 }),
        ])
        const cwd = sandbox()
        const config = writeConfig(cwd, doc)
        const result = await runCli(mode, ["--automation", "--config", config, "What is  2+2?\n(briefly)"], { cwd })
        expectExit(result, 0)
        expect(result.stderr).toBe("")

        const logDir = logDirOf(result)
        expect(logDir).toMatch(
          new RegExp(`^${cwd.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/\\.massgen/massgen_logs/log_\\d{8}_\\d{6}_\\d{6}$`),
        )
        const lines = result.lines
        expect(lines).toHaveLength(9)
        expect(lines.slice(0, 5)).toEqual([
          `LOG_DIR: ${logDir}`,
          `STATUS: ${logDir}/status.json`,
          "QUESTION: What is 2+2? (briefly)",
          IN_PROGRESS,
          "WINNER: agent_b",
        ])
        expect(lines[5]).toBe(`ANSWER_FILE: ${logDir}/final/agent_b/answer.txt`)
        expect(lines[6]).toMatch(/^DURATION: \d+\.\ds$/)
        expect(lines[7]).toBe("ANSWER_PREVIEW: The answer is 4. Two plus two makes four.")
        expect(lines[8]).toMatch(/^COMPLETED: 3 agents, \d+\.\ds total$/)
        expect(lines[8]).toBe(`COMPLETED: 3 agents, ${valueOf(result, "DURATION")} total`)

        expect(fs.readFileSync(valueOf(result, "ANSWER_FILE"), "utf8")).toBe(FINAL_TEXT)

        const status = statusOf(logDir)
        expect(status.is_complete).toBe(true)
        expect(status.finish_reason).toBe("completed")
        expect(status.coordination.completion_percentage).toBe(100)
        expect(status.coordination.is_final_presentation).toBe(true)
        expect(status.results.winner).toBe("agent_b")
        expect(status.results.votes).toEqual({ "agent1.1": 0, "agent2.1": 3, "agent3.1": 0 })
        expect(status.results.final_answer_preview).toBe(FINAL_TEXT)
        expect(status.meta.log_dir).toBe(logDir)
        expect(status.meta.session_id).toBe(nodePath.basename(logDir))
        expect(status.meta.question).toBe("What is  2+2?\n(briefly)")
        for (const id of ["agent_a", "agent_b", "agent_c"]) {
          expect(status.agents[id].error).toBeNull()
          expect(status.agents[id].vote_cast).toMatchObject({ voted_for_agent: "agent_b", voted_for_label: "agent2.1" })
        }

        const events = eventsOf(logDir)
        for (const event of events) {
          expect(event.schema).toBe(2)
          expect(typeof event.type).toBe("string")
          expect(event.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
          if (event.type !== "run_started") expect(event).not.toHaveProperty("meta")
        }
        expect(events[0].type).toBe("run_started")
        expect(events[0].meta).toEqual({ log_dir: logDir, pid: expect.any(Number), host: os.hostname(), version: expect.any(String) })
        expect(events.at(-1)).toMatchObject({ type: "run_finished", reason: "completed", winner: "agent_b" })

        const metadata = parseYaml(fs.readFileSync(nodePath.join(logDir, "execution_metadata.yaml"), "utf8"))
        expect(metadata.question).toBe("What is  2+2?\n(briefly)")
        expect(metadata.log_dir).toBe(logDir)
        expect(metadata.config.agents).toHaveLength(3)
        const coordination = readJson(nodePath.join(logDir, "coordination_events.json"))
        expect(coordination.session_metadata).toMatchObject({ agent_ids: ["agent_a", "agent_b", "agent_c"], final_winner: "agent_b" })
        expect(coordination.events.length).toBeGreaterThan(0)
        const mappings = readJson(nodePath.join(logDir, "snapshot_mappings.json"))
        expect(mappings["agent2.1"]).toMatchObject({ type: "answer", agent_id: "agent_b" })
        for (const id of ["agent_a", "agent_b", "agent_c"]) {
          expect(fs.existsSync(nodePath.join(logDir, "agent_outputs", `${id}.txt`))).toBe(true)
        }
        // Nothing of the run lands outside its log directory.
        expect(fs.readdirSync(cwd).sort()).toEqual([".massgen", "config.yaml"])
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "a tie goes to the first agent in config order",
      async () => {
        // Each agent votes for itself; alpha answers and votes first, zeta comes first in the config.
        const doc = team([
          agent("zeta", { answer: "Zeta says 4.", delay_seconds: 0.15 }),
          agent("alpha", { answer: "Alpha says 4.", delay_seconds: 0.05 }),
        ])
        const result = await automation(mode, doc)
        expectExit(result, 0)
        expect(valueOf(result, "WINNER")).toBe("zeta")
        const logDir = logDirOf(result)
        const status = statusOf(logDir)
        expect(status.results.winner).toBe("zeta")
        expect(status.results.votes).toEqual({ "agent1.1": 1, "agent2.1": 1 })
        expect(eventsOf(logDir).find((e) => e.type === "presentation_started")).toMatchObject({ agent: "zeta", is_tie: true })
        expect(finalAnswer(logDir, "zeta")).toBe("Zeta says 4.")
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "a late new answer restarts an agent that had already voted",
      async () => {
        const doc = team([
          agent("early", { answer: "Early answer.", vote: "agent2", delay_seconds: 0.05 }),
          agent("late", { answer: "Late but better answer.", vote: "agent2", delay_seconds: 1 }),
        ])
        const result = await automation(mode, doc, { exclusive: true })
        expectExit(result, 0)
        const logDir = logDirOf(result)
        const events = eventsOf(logDir)
        const earlyVote = events.findIndex((e) => e.type === "vote_cast" && e.agent === "early")
        const lateAnswer = events.findIndex((e) => e.type === "answer_submitted" && e.agent === "late")
        expect(earlyVote).toBeGreaterThan(-1)
        expect(earlyVote).toBeLessThan(lateAnswer)
        expect(events.slice(lateAnswer).some((e) => e.type === "round_started" && e.agent === "early" && e.restart === true)).toBe(true)
        const status = statusOf(logDir)
        expect(status.agents.early.times_restarted).toBeGreaterThanOrEqual(1)
        expect(status.agents.early.vote_cast).toMatchObject({ voted_for_agent: "late", voted_for_label: "agent2.1" })
        expect(status.results.winner).toBe("late")
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "the answer cap turns later rounds into vote-only rounds",
      async () => {
        const doc = team(
          [
            agent("agent_a", { answer: "A", keep_answering: true, delay_seconds: 0.05 }),
            agent("agent_b", { answer: "B", keep_answering: true, vote: "agent1", delay_seconds: 0.08 }),
          ],
          { orchestrator: { max_new_answers_per_agent: 2 } },
        )
        const result = await automation(mode, doc)
        expectExit(result, 0)
        const logDir = logDirOf(result)
        const events = eventsOf(logDir)
        const answered = new Map<string, number>()
        let voteOnlyRounds = 0
        for (const e of events) {
          if (e.type === "answer_submitted") answered.set(e.agent, (answered.get(e.agent) ?? 0) + 1)
          if (e.type === "round_started" && e.vote_only === true) {
            voteOnlyRounds += 1
            // Vote-only only once this agent has used its two answers.
            expect({ agent: e.agent, answers: answered.get(e.agent) ?? 0 }).toEqual({ agent: e.agent, answers: 2 })
          }
          if (e.type === "round_started" && e.vote_only === false) expect(answered.get(e.agent) ?? 0).toBeLessThan(2)
        }
        expect(voteOnlyRounds).toBeGreaterThan(0)
        expect(Object.fromEntries(answered)).toEqual({ agent_a: 2, agent_b: 2 })
        const status = statusOf(logDir)
        for (const id of ["agent_a", "agent_b"]) expect(status.agents[id].answer_count).toBeLessThanOrEqual(2)
        expect(status.finish_reason).toBe("completed")
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "one failing agent: its status is error with {type, message, timestamp}, the run still succeeds",
      async () => {
        const doc = team([agent("agent_a", { answer: "Four.", delay_seconds: 0.05 }), agent("agent_b", { fail_calls: 99 })])
        const result = await automation(mode, doc)
        expectExit(result, 0)
        expect(result.lines.every(isAutomationLine)).toBe(true)
        expect(valueOf(result, "WINNER")).toBe("agent_a")
        const status = statusOf(logDirOf(result))
        expect(status.finish_reason).toBe("completed")
        expect(status.agents.agent_b.status).toBe("error")
        const error = status.agents.agent_b.error
        expect(Object.keys(error).sort()).toEqual(["message", "timestamp", "type"])
        expect(error.type).toBe("error")
        expect(error.message).toContain("scripted failure")
        expect(typeof error.timestamp).toBe("number")
        expect(error.timestamp).toBeGreaterThanOrEqual(status.meta.start_time)
        expect(status.agents.agent_a.error).toBeNull()
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "every agent failing: exit 2, finish_reason error, the reason on stderr, stdout only automation lines",
      async () => {
        const doc = team([agent("agent_a", { fail_calls: 99 }), agent("agent_b", { fail_calls: 99, delay_seconds: 0.05 })])
        const result = await automation(mode, doc)
        expectExit(result, 2)
        expect(result.lines.every(isAutomationLine)).toBe(true)
        expect(result.lines.slice(0, 4).map((l) => l.split(":")[0])).toEqual(["LOG_DIR", "STATUS", "QUESTION", IN_PROGRESS.split(":")[0]])
        // MassGen's COMPLETED: line only ends a run that completed.
        expect(result.lines.at(-1)).toMatch(/^FAILED: error: every agent failed \(agent_a: .+; agent_b: .+\)$/)
        expect(result.lines.some((l) => l.startsWith("WINNER: ") || l.startsWith("COMPLETED: "))).toBe(false)
        expect(result.stderr).toMatch(/^massgen: run error: .*every agent failed/m)
        const status = statusOf(logDirOf(result))
        expect(status.is_complete).toBe(true)
        expect(status.finish_reason).toBe("error")
        expect(status.results.winner).toBeNull()
        expect(status.agents.agent_a.status).toBe("error")
        expect(status.agents.agent_b.status).toBe("error")
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "orchestrator timeout: exit 3, finish_reason timeout, the best answer so far salvaged",
      async () => {
        const doc = {
          ...team([agent("agent_a", { answer: "Salvage me." }), agent("agent_b", { hang: true })]),
          timeout_settings: { orchestrator_timeout_seconds: 1, agent_timeout_seconds: 30 },
        }
        const result = await automation(mode, doc, { exclusive: true })
        expectExit(result, 3)
        expect(result.lines.every(isAutomationLine)).toBe(true)
        expect(result.stderr).toContain("massgen: run timeout")
        const logDir = logDirOf(result)
        const status = statusOf(logDir)
        expect(status.is_complete).toBe(true)
        expect(status.finish_reason).toBe("timeout")
        expect(status.results.winner).toBe("agent_a")
        expect(finalAnswer(logDir, "agent_a")).toBe("Salvage me.")
        expect(valueOf(result, "ANSWER_FILE")).toBe(`${logDir}/final/agent_a/answer.txt`)
        const events = eventsOf(logDir)
        expect(events.find((e) => e.type === "final_answer")).toMatchObject({ agent: "agent_a", source: "salvaged" })
        expect(events.at(-1)).toMatchObject({ type: "run_finished", reason: "timeout" })
      },
      TEST_TIMEOUT_MS,
    )

    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      test(
        `${signal} during a run: exit 4, finish_reason interrupted, events end with run_finished`,
        async () => {
          const cwd = sandbox()
          const config = writeConfig(
            cwd,
            team([agent("agent_a", { answer: "Done.", delay_seconds: 0.05 }), agent("agent_b", { hang: true })]),
          )
          const run = await startUntilLine(mode, ["--automation", "--config", config, "Will you finish?"], IN_PROGRESS, { cwd })
          run.proc.kill(signal)
          const result = await run.done
          expectExit(result, 4)
          expect(result.lines.every(isAutomationLine)).toBe(true)
          expect(result.stderr).toContain(`stopped by ${signal}`)
          const logDir = logDirOf(result)
          const status = statusOf(logDir)
          expect(status.is_complete).toBe(true)
          expect(status.finish_reason).toBe("interrupted")
          expect(eventsOf(logDir).at(-1)).toMatchObject({ type: "run_finished", reason: "interrupted" })
        },
        TEST_TIMEOUT_MS,
      )
    }

    test(
      "a second signal during the stop: exit 4 at once, and still status.json complete, the stop in the log, no lock",
      async () => {
        const cwd = sandbox()
        const config = writeConfig(
          cwd,
          team([agent("agent_a", { answer: "Done.", delay_seconds: 0.05 }), agent("agent_b", { hang: true })]),
        )
        const run = await startUntilLine(mode, ["--automation", "--config", config, "Will you finish?"], IN_PROGRESS, { cwd })
        // Two signals back to back: the second comes while the first one's clean stop is under way, or before it began.
        run.proc.kill("SIGINT")
        run.proc.kill("SIGTERM")
        const result = await run.done
        expectExit(result, 4)
        expect(result.lines.every(isAutomationLine)).toBe(true)
        const logDir = logDirOf(result)
        expect(statusOf(logDir)).toMatchObject({ is_complete: true, finish_reason: "interrupted" })
        const events = eventsOf(logDir)
        expect(events.at(-1)).toMatchObject({ type: "run_finished", reason: "interrupted" })
        expect(events.filter((e) => e.type === "run_finished")).toHaveLength(1)
        expect(fs.existsSync(nodePath.join(logDir, "run.lock"))).toBe(false)
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "budget_usd with an unpriced model: the run says on stderr which agents the budget cannot see",
      async () => {
        const doc = team([agent("agent_a", { answer: "Four." }), agent("agent_b", { model: "gpt-5-mini" })], {
          orchestrator: { budget_usd: 1 },
        })
        const result = await automation(mode, doc)
        expectExit(result, 0)
        expect(result.lines.every(isAutomationLine)).toBe(true)
        expect(result.stderr).toContain(
          "massgen: warning: budget_usd is set, but these agents' models have no price, so their calls add nothing to it: agent_a (no model); give them a price under pricing:",
        )
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "SIGTERM during start-up, before the run has printed anything: still a clean stop, exit 4",
      async () => {
        const cwd = sandbox()
        const config = writeConfig(cwd, team([agent("agent_a", { hang: true }), agent("agent_b", { hang: true })]))
        const run = await startCli(mode, ["--automation", "--config", config, "Will you finish?"], { cwd })
        await waitForSignalHandler(run.proc.pid, "SIGTERM")
        const printedBefore = [...run.lines]
        run.proc.kill("SIGTERM")
        const result = await run.done
        expect(printedBefore).toEqual([])
        expectExit(result, 4)
        expect(result.stderr).toContain("stopped by SIGTERM")
        const logDir = logDirOf(result)
        expect(statusOf(logDir)).toMatchObject({ is_complete: true, finish_reason: "interrupted" })
        expect(eventsOf(logDir).at(-1)).toMatchObject({ type: "run_finished", reason: "interrupted" })
        // The handlers come first: src/main.ts loads the rest of the program only after installing them.
        expect(fs.readFileSync(nodePath.join(ROOT, "src", "main.ts"), "utf8")).not.toMatch(/^import\b/m)
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "a bad config: exit 1, one stderr line per problem naming its key, nothing created",
      async () => {
        const cwd = sandbox()
        const base = nodePath.join(cwd, "logs")
        const config = writeConfig(
          cwd,
          {
            agents: [
              { id: "a", backend: { type: "nope" } },
              { id: "b", backend: { type: "scripted", temperature: 9 } },
            ],
          },
          "bad.yaml",
        )
        const result = await runCli(mode, ["--automation", "--config", config, "q"], { cwd, env: { MASSGEN_LOG_BASE_DIR: base } })
        expectExit(result, 1)
        expect(result.stdout).toBe("")
        const lines = result.stderr.trimEnd().split("\n")
        expect(lines).toHaveLength(2)
        expect(lines[0]).toStartWith(`massgen: config ${config}: agents[0].backend.type: `)
        expect(lines[0]).toContain('"nope"')
        expect(lines[1]).toStartWith(`massgen: config ${config}: agents[1].backend.temperature: `)
        expect(fs.existsSync(base)).toBe(false)
        expect(fs.readdirSync(cwd)).toEqual(["bad.yaml"])
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "an agent id that is not a safe name: --validate and a run refuse it (exit 1), naming the id and the rule",
      async () => {
        const cwd = sandbox()
        const long = "x".repeat(65)
        const config = writeConfig(cwd, team([agent("../escape"), agent(long), agent("x".repeat(64))]), "ids.yaml")
        const [validated, run] = await Promise.all([
          runCli(mode, ["--validate", config], { cwd }),
          runCli(mode, ["--automation", "--config", config, "q"], { cwd }),
        ])
        for (const [result, prefix] of [
          [validated, "config"],
          [run, "massgen: config"],
        ] as const) {
          expectExit(result, 1)
          const lines = (result === run ? result.stderr : result.stdout).trimEnd().split("\n")
          expect(lines).toEqual([
            `${prefix} ${config}: agents[0].id: Expected an id that does not start with '.', found "../escape"`,
            `${prefix} ${config}: agents[1].id: Expected an id of at most 64 characters, found "${long.slice(0, 64)}"... (65 characters)`,
          ])
        }
        expect(run.stdout).toBe("")
        expect(fs.readdirSync(cwd)).toEqual(["ids.yaml"])
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "a missing config file: exit 1, the file named on stderr",
      async () => {
        const cwd = sandbox()
        const result = await runCli(mode, ["--automation", "--config", "nowhere.yaml", "q"], { cwd })
        expectExit(result, 1)
        expect(result.stdout).toBe("")
        expect(result.stderr).toContain("nowhere.yaml")
        expect(fs.readdirSync(cwd)).toEqual([])
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "an unknown flag: exit 1, the flag named on stderr",
      async () => {
        const cwd = sandbox()
        const result = await runCli(mode, ["--frobnicate", "--config", "x.yaml", "q"], { cwd })
        expectExit(result, 1)
        expect(result.stdout).toBe("")
        expect(result.stderr).toStartWith("massgen: ")
        expect(result.stderr).toContain("--frobnicate")
        expect(fs.readdirSync(cwd)).toEqual([])
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "--validate: valid prints valid (0), invalid prints its problems (1), --json prints one object",
      async () => {
        const cwd = sandbox()
        const good = writeConfig(cwd, team([agent("agent_a"), agent("agent_b", { vote: "agent1" })]), "good.yaml")
        const bad = writeConfig(
          cwd,
          { agents: [{ id: "a", backend: { type: "scripted", delay_seconds: -1 } }], orchestrator: { max_new_answers_per_agent: 0 } },
          "bad.yaml",
        )
        const [valid, invalid, validJson, invalidJson] = await Promise.all([
          runCli(mode, ["--validate", good], { cwd }),
          runCli(mode, ["--validate", bad], { cwd }),
          runCli(mode, ["--validate", good, "--json"], { cwd }),
          runCli(mode, ["--validate", bad, "--json"], { cwd }),
        ])
        expectExit(valid, 0)
        expect(valid.stdout).toBe("valid\n")
        expectExit(invalid, 1)
        expect(invalid.lines).toHaveLength(2)
        expect(invalid.lines.some((l) => l.includes("agents[0].backend.delay_seconds"))).toBe(true)
        expect(invalid.lines.some((l) => l.includes("orchestrator.max_new_answers_per_agent"))).toBe(true)
        expectExit(validJson, 0)
        expect(JSON.parse(validJson.stdout)).toEqual({ valid: true, error_count: 0, warning_count: 0, errors: [], warnings: [] })
        expectExit(invalidJson, 1)
        const parsed = JSON.parse(invalidJson.stdout)
        expect(parsed.valid).toBe(false)
        expect(parsed.error_count).toBe(2)
        expect(parsed.errors.map((p: { location: string }) => p.location).sort()).toEqual([
          "agents[0].backend.delay_seconds",
          "orchestrator.max_new_answers_per_agent",
        ])
        for (const p of parsed.errors) expect(typeof p.message).toBe("string")
        // Validation runs nothing.
        expect(fs.readdirSync(cwd).sort()).toEqual(["bad.yaml", "good.yaml"])
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "a misspelled key is a warning: --validate names it and the key it may stand for, a run says so on stderr",
      async () => {
        const cwd = sandbox()
        const config = writeConfig(cwd, {
          agents: [{ id: "a", backend: { type: "scripted", answr: "typo" } }],
          orchestrator: { skip_final_presentaton: true },
        })
        const validated = await runCli(mode, ["--validate", config, "--json"], { cwd })
        expectExit(validated, 0)
        const parsed = JSON.parse(validated.stdout)
        expect(parsed.valid).toBe(true)
        expect(parsed.warnings.map((w: { location: string }) => w.location)).toEqual([
          "agents[0].backend.answr",
          "orchestrator.skip_final_presentaton",
        ])
        expect(parsed.warnings.map((w: { suggestion: string }) => w.suggestion)).toEqual([
          "did you mean answer?",
          "did you mean skip_final_presentation?",
        ])
        const run = await runCli(mode, ["--automation", "--config", config, "q"], { cwd })
        expectExit(run, 0)
        expect(run.lines.every(isAutomationLine)).toBe(true)
        expect(run.stderr).toContain(`massgen: warning: config ${config}: orchestrator.skip_final_presentaton: unknown key, ignored`)
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "--version prints the package version, then the commit, build date, Bun version and target",
      async () => {
        const result = await runCli(mode, ["--version"])
        expectExit(result, 0)
        const [first, commit, built, bun, target] = result.lines
        expect({ first, bun }).toEqual({ first: `massgen ${pkg.version}`, bun: `bun: ${Bun.version}` })
        expect(commit).toMatch(/^commit: ([0-9a-f]{12}(-dirty)?|unknown)$/)
        expect({ built, target }).toEqual(
          mode === "binary"
            ? {
                built: expect.stringMatching(/^built: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
                target: `target: bun-${process.platform}-${process.arch}`,
              }
            : { built: "built: not built: run from source", target: `target: source, on bun-${process.platform}-${process.arch}` },
        )
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "five runs started at once in one directory each get their own complete log directory",
      async () => {
        const cwd = sandbox()
        const config = writeConfig(
          cwd,
          team([
            agent("agent_a", { answer: "A.", vote: "agent2", delay_seconds: 0.05 }),
            agent("agent_b", { answer: "B.", vote: "agent2", delay_seconds: 0.05 }),
          ]),
        )
        const results = await runTogether(
          mode,
          [1, 2, 3, 4, 5].map((i) => ({ args: ["--automation", "--config", config, `Task ${i}`], options: { cwd } })),
        )
        const dirs = results.map((r) => {
          expectExit(r, 0)
          return logDirOf(r)
        })
        expect(new Set(dirs).size).toBe(5)
        expect(fs.readdirSync(nodePath.join(cwd, ".massgen", "massgen_logs")).sort()).toEqual(dirs.map((d) => nodePath.basename(d)).sort())
        results.forEach((r, i) => {
          const logDir = dirs[i]!
          const status = statusOf(logDir)
          expect(status.is_complete).toBe(true)
          expect(status.finish_reason).toBe("completed")
          expect(status.meta.log_dir).toBe(logDir)
          expect(status.meta.question).toBe(`Task ${i + 1}`)
          expect(valueOf(r, "QUESTION")).toBe(`Task ${i + 1}`)
          expect(fs.readFileSync(valueOf(r, "ANSWER_FILE"), "utf8")).toBe("B.")
          expect(eventsOf(logDir)[0]).toMatchObject({ type: "run_started", question: `Task ${i + 1}` })
        })
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "status.json is never unreadable: every read while the run goes on parses",
      async () => {
        const cwd = sandbox()
        const config = writeConfig(
          cwd,
          team(
            ["agent_a", "agent_b", "agent_c"].map((id, i) =>
              agent(id, { answer: `Answer ${id}`, keep_answering: true, delay_seconds: 0.2 + i * 0.05 }),
            ),
            { orchestrator: { max_new_answers_per_agent: 3 } },
          ),
        )
        // Alone: the reader loop keeps a CPU busy, which would starve runs whose timing matters.
        const run = await startCli(mode, ["--automation", "--config", config, "Keep going"], { cwd, exclusive: true })
        const statusPath = (await run.waitForLine("STATUS: ")).slice("STATUS: ".length)
        let exited = false
        void run.done.finally(() => (exited = true))
        let parsed = 0
        let inProgress = 0
        const failures: Array<string> = []
        while (!exited) {
          let text: string
          try {
            text = await fs.promises.readFile(statusPath, "utf8")
          } catch (e) {
            // Not there yet is fine; gone once it was there is not.
            if ((e as { code?: string }).code === "ENOENT" && parsed === 0 && failures.length === 0) continue
            throw e
          }
          try {
            const status = JSON.parse(text)
            parsed += 1
            if (status.is_complete === false) inProgress += 1
          } catch (e) {
            failures.push(`${String(e)}: ${JSON.stringify(text.slice(0, 200))}`)
          }
        }
        const result = await run.done
        expectExit(result, 0)
        expect(failures).toEqual([])
        expect(parsed).toBeGreaterThan(10)
        expect(inProgress).toBeGreaterThan(0)
        expect(statusOf(logDirOf(result)).is_complete).toBe(true)
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "the status file reference's jq recipes work unchanged",
      async () => {
        const jq = Bun.which("jq")
        expect(jq === null ? "jq is not installed (.ci/run installs it)" : "jq found").toBe("jq found")
        const cwd = sandbox()
        const config = writeConfig(
          cwd,
          team([agent("agent_a", { answer: "Read me with jq.", delay_seconds: 0.05 }), agent("agent_b", { fail_calls: 99 })]),
        )
        const result = await runCli(mode, ["--automation", "--config", config, "jq?"], { cwd })
        expectExit(result, 0)
        const STATUS_FILE = valueOf(result, "STATUS")
        const sh = async (script: string) => {
          const proc = Bun.spawn(["bash", "-c", script], { cwd, env: { ...process.env, STATUS_FILE }, stdout: "pipe", stderr: "pipe" })
          const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
          expect({ script, code, err }).toEqual({ script, code: 0, err: "" })
          return out
        }
        expect(await sh(`jq '.coordination.completion_percentage' $STATUS_FILE`)).toBe("100\n")
        expect(await sh(`jq '.results.winner' $STATUS_FILE`)).toBe('"agent_a"\n')
        expect(await sh(`jq -r '.results.winner' $STATUS_FILE`)).toBe("agent_a\n")
        expect(await sh(`jq '.coordination.is_final_presentation' $STATUS_FILE`)).toBe("true\n")
        expect(await sh(`cat .massgen/massgen_logs/log_*/status.json | jq ".coordination.completion_percentage"`)).toBe("100\n")
        expect(await sh(`cat .massgen/massgen_logs/log_*/status.json | jq ".coordination.active_agent"`)).toBe("null\n")
        expect(await sh(`jq '[.agents[] | select(.error != null)] | length' $STATUS_FILE`)).toBe("1\n")
        expect(JSON.parse(await sh(`jq '.agents | to_entries[] | select(.value.error != null)' $STATUS_FILE`))).toMatchObject({
          key: "agent_b",
          value: { status: "error", error: { type: "error" } },
        })
        // "Detecting Completion", methods 1 and 2.
        expect(
          await sh(`WINNER=$(jq -r '.results.winner' $STATUS_FILE)
if [ "$WINNER" != "null" ]; then
  echo "Coordination complete! Winner: $WINNER"
fi
COMPLETION=$(jq '.coordination.completion_percentage' $STATUS_FILE)
if [ "$COMPLETION" -eq 100 ]; then
  echo "Coordination complete!"
fi`),
        ).toBe("Coordination complete! Winner: agent_a\nCoordination complete!\n")
        // "Detecting Errors".
        const errors = await sh(`ERRORS=$(jq '[.agents[] | select(.error != null)] | length' $STATUS_FILE)
if [ "$ERRORS" -gt 0 ]; then
  echo "Found $ERRORS agent(s) with errors:"
  jq '.agents | to_entries[] | select(.value.error != null) | {agent: .key, error: .value.error}' $STATUS_FILE
fi`)
        expect(errors.split("\n")[0]).toBe("Found 1 agent(s) with errors:")
        expect(JSON.parse(errors.split("\n").slice(1).join("\n"))).toMatchObject({ agent: "agent_b", error: { type: "error" } })
        // "Reading Final Answer".
        expect(
          await sh(`WINNER=$(jq -r '.results.winner' $STATUS_FILE)
LOG_DIR=$(jq -r '.meta.log_dir' $STATUS_FILE)
cat "$LOG_DIR/final/$WINNER/answer.txt"`),
        ).toBe("Read me with jq.")
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "without --automation: a readable line per event and the final answer",
      async () => {
        const cwd = sandbox()
        const config = writeConfig(
          cwd,
          team([
            agent("agent_a", { answer: "Four.", vote: "agent2", delay_seconds: 0.05 }),
            agent("agent_b", { answer: "4.", vote: "agent2", final: FINAL_TEXT, delay_seconds: 0.1 }),
          ]),
        )
        const result = await runCli(mode, ["--config", config, "What is 2+2?"], { cwd })
        expectExit(result, 0)
        const out = result.stdout
        expect(result.lines[0]).toMatch(
          /^Run log_\d{8}_\d{6}_\d{6}: 2 agents on "What is 2\+2\?" \(logs: .*\.massgen\/massgen_logs\/log_\d{8}_\d{6}_\d{6}\)$/,
        )
        expect(result.lines).toContain("[agent_a] round 1: 0 answers shown")
        expect(result.lines).toContain("[agent_a] answer agent1.1: Four.")
        expect(result.lines).toContain("[agent_b] answer agent2.1: 4.")
        expect(out).toMatch(/^\[agent_a\] votes for agent_b \(agent2\.1\): /m)
        expect(out).toMatch(/^Winner: agent_b \(/m)
        expect(out).toContain(`Final answer (agent_b, presentation):\n${FINAL_TEXT}\n`)
        expect(result.lines.at(-1)).toMatch(/^Run completed in \d+\.\ds: /)
        expect(result.lines.some((l) => l.startsWith("LOG_DIR: ") || l === IN_PROGRESS)).toBe(false)
      },
      TEST_TIMEOUT_MS,
    )
  })

suite("source")
suite("binary")

describe("bun run demo", () => {
  test(
    "the offline demo runs to the end with exit 0",
    async () => {
      const base = sandbox()
      const [code, out, err] = await withSlots(1, () => {
        const proc = Bun.spawn([process.execPath, "run", "demo"], {
          cwd: ROOT,
          env: { ...process.env, MASSGEN_LOG_BASE_DIR: base },
          stdout: "pipe",
          stderr: "pipe",
        })
        return Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      })
      expect({ code, err }).toMatchObject({ code: 0 })
      expect(out).toContain("Final answer (researcher, presentation):")
      expect(out).toMatch(/^Run completed in /m)
      expect(fs.readdirSync(base)).toHaveLength(1)
    },
    TEST_TIMEOUT_MS,
  )
})
