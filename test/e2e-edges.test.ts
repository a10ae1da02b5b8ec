/**
 * What the user is told at the edges of the command line, end to end: where
 * warnings go, mistyped flags and commands, the question from standard input
 * or a file, a missing API key of a `--model` run, how an unpriced cost reads,
 * config files that are not YAML or not files. Every agent is scripted (no
 * network); the runs go from source, and the ones that read standard input
 * also as the compiled binary.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { type CliResult, cleanupSandboxes, ensureBinary, type Mode, runCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const IN_PROGRESS = "[Coordination in progress - monitor status.json for real-time updates]"
const TEST_TIMEOUT_MS = 90_000

const scripted = (id: string, backend: Record<string, unknown> = {}) => ({ id, backend: { type: "scripted", ...backend } })
const team = (...agents: ReadonlyArray<unknown>) => ({
  agents,
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
})

const expectExit = (result: CliResult, code: number) => {
  expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toMatchObject({ exitCode: code })
}

const valueOf = (result: CliResult, key: string): string | undefined =>
  result.lines.find((l) => l.startsWith(`${key}: `))?.slice(key.length + 2)

const eventsOf = (logDir: string): Array<any> =>
  fs
    .readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l))

describe.concurrent("warnings and errors go to stderr", () => {
  test(
    "a warning raised during an automation run is one `massgen: warning:` line on stderr, never on stdout",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, team(scripted("agent_a", { answer: "Done." }), scripted("agent_b", { hang: true })))
      const run = await startUntilLine("source", ["--automation", "--config", config, "Will you finish?"], IN_PROGRESS, { cwd })
      const logDir = run.lines.find((l) => l.startsWith("LOG_DIR: "))!.slice("LOG_DIR: ".length)
      // A directory where the run will write coordination_events.json at its end: that write fails, with a warning.
      fs.mkdirSync(nodePath.join(logDir, "coordination_events.json"))
      run.proc.kill("SIGINT")
      const result = await run.done
      expectExit(result, 4)
      expect(result.stdout).not.toContain("WARN")
      expect(result.stdout).not.toContain("coordination_events.json")
      const warnings = result.stderr.split("\n").filter((l) => l.includes("coordination_events.json"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/^massgen: warning: cannot write .*coordination_events\.json: is a directory \(EISDIR\)/)
      expect(warnings[0]).not.toContain("level=")
    },
    TEST_TIMEOUT_MS,
  )
})

describe.concurrent("mistyped flags and commands", () => {
  test(
    "an unknown flag: one line naming it, the closest known flag, a pointer to --help; exit 1, nothing created",
    async () => {
      const cwd = sandbox()
      const [run, viewer, status, far] = await Promise.all([
        runCli("source", ["--automaton", "--config", "x.yaml", "q"], { cwd }),
        runCli("source", ["viewer", "--pik"], { cwd }),
        runCli("source", ["status", "some/dir", "--jsn"], { cwd }),
        runCli("source", ["--frobnicate", "--config", "x.yaml", "q"], { cwd }),
      ])
      for (const result of [run, viewer, status, far]) {
        expectExit(result, 1)
        expect(result.stdout).toBe("")
      }
      expect(run.stderr).toBe("massgen: unknown option --automaton; did you mean --automation? (see massgen --help)\n")
      expect(viewer.stderr).toBe("massgen: unknown option --pik for massgen viewer; did you mean --pick? (see massgen --help)\n")
      expect(status.stderr).toBe("massgen: unknown option --jsn for massgen status; did you mean --json? (see massgen --help)\n")
      expect(far.stderr).toBe("massgen: unknown option --frobnicate (see massgen --help)\n")
      expect(fs.readdirSync(cwd)).toEqual([])
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a mistyped command followed by a path, a flag or nothing: did you mean, exit 1; a question is still a question",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, team(scripted("agent_a", { answer: "A statue." })))
      const [status, resume, viewer, question] = await Promise.all([
        runCli("source", ["stauts", ".massgen/massgen_logs/log_20261201_000000_000000"], { cwd }),
        runCli("source", ["resme", "log_20261201_000000_000000", "--automation"], { cwd }),
        runCli("source", ["veiwer"], { cwd }),
        runCli("source", ["statue", "of", "liberty", "--automation", "--config", config], { cwd }),
      ])
      const hint = "(a one-word question goes after the options; see massgen --help)"
      expectExit(status, 1)
      expect(status.stderr).toBe(`massgen: unknown command stauts; did you mean massgen status? ${hint}\n`)
      expectExit(resume, 1)
      expect(resume.stderr).toBe(`massgen: unknown command resme; did you mean massgen resume? ${hint}\n`)
      expectExit(viewer, 1)
      expect(viewer.stderr).toBe(`massgen: unknown command veiwer; did you mean massgen viewer? ${hint}\n`)
      for (const result of [status, resume, viewer]) expect(result.stdout).toBe("")
      expectExit(question, 0)
      expect(valueOf(question, "QUESTION")).toBe("statue of liberty")
    },
    TEST_TIMEOUT_MS,
  )
})

const QUESTION_MODES: ReadonlyArray<Mode> = ["source", "binary"]

describe.concurrent.each(QUESTION_MODES)("the question from standard input or a file (%s)", (mode) => {
  beforeAll(async () => {
    if (mode === "binary") await ensureBinary()
  }, 120_000)

  const oneAgent = () => {
    const cwd = sandbox()
    return { cwd, config: writeConfig(cwd, team(scripted("agent_a", { answer: "Four." }))) }
  }

  test(
    "piped with no question, `-`, and --question-file: the whole question in the events, one line in QUESTION:",
    async () => {
      const { cwd, config } = oneAgent()
      const text = "What is\n   2+2?\n\tAnswer briefly."
      fs.writeFileSync(nodePath.join(cwd, "q.txt"), `${text}\n`)
      const results = await Promise.all([
        runCli(mode, ["--automation", "--config", config], { cwd, stdin: `${text}\n` }),
        runCli(mode, ["--automation", "--config", config, "-"], { cwd, stdin: text }),
        runCli(mode, ["--automation", "--config", config, "--question-file", "q.txt"], { cwd }),
      ])
      for (const result of results) {
        expectExit(result, 0)
        expect(valueOf(result, "QUESTION")).toBe("What is 2+2? Answer briefly.")
        const logDir = valueOf(result, "LOG_DIR")!
        expect(eventsOf(logDir)[0]).toMatchObject({ type: "run_started", question: text })
        expect(JSON.parse(fs.readFileSync(nodePath.join(logDir, "status.json"), "utf8")).meta.question).toBe(text)
      }
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a long question: QUESTION: shows its first 200 characters and ..., status.json keeps it whole",
    async () => {
      const { cwd, config } = oneAgent()
      const long = `${"word ".repeat(100)}end?`
      const result = await runCli(mode, ["--automation", "--config", config, "-"], { cwd, stdin: long })
      expectExit(result, 0)
      expect(valueOf(result, "QUESTION")).toBe(`${long.slice(0, 200)}...`)
      expect(JSON.parse(fs.readFileSync(nodePath.join(valueOf(result, "LOG_DIR")!, "status.json"), "utf8")).meta.question).toBe(long)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "no question: a missing or empty file, empty standard input, `-` with nothing on it are exit 1, nothing created",
    async () => {
      const { cwd, config } = oneAgent()
      fs.writeFileSync(nodePath.join(cwd, "empty.txt"), " \n\n")
      const [missingFile, directory, emptyFile, nothing, dash, both] = await Promise.all([
        runCli(mode, ["--automation", "--config", config, "--question-file", "nowhere.txt"], { cwd }),
        runCli(mode, ["--automation", "--config", config, "--question-file", "."], { cwd }),
        runCli(mode, ["--automation", "--config", config, "--question-file", "empty.txt"], { cwd }),
        runCli(mode, ["--automation", "--config", config], { cwd }),
        runCli(mode, ["--automation", "--config", config, "-"], { cwd, stdin: "  \n" }),
        runCli(mode, ["--automation", "--config", config, "--question-file", "empty.txt", "and words"], { cwd }),
      ])
      for (const result of [missingFile, directory, emptyFile, nothing, dash, both]) {
        expectExit(result, 1)
        expect(result.stdout).toBe("")
        expect(result.stderr.trimEnd().split("\n")).toHaveLength(1)
      }
      expect(missingFile.stderr).toBe("massgen: --question-file nowhere.txt: no such file\n")
      expect(directory.stderr).toBe("massgen: --question-file .: is a directory, not a file\n")
      expect(emptyFile.stderr).toBe("massgen: --question-file empty.txt: the file is empty, no question in it\n")
      expect(nothing.stderr).toStartWith('massgen: a question is required, e.g. massgen --config team.yaml "What is 2+2?"')
      expect(dash.stderr).toBe("massgen: the question read from standard input is empty\n")
      expect(both.stderr).toBe("massgen: give the question either as words or with --question-file, not both\n")
      expect(fs.readdirSync(cwd).sort()).toEqual(["config.yaml", "empty.txt"])
    },
    TEST_TIMEOUT_MS,
  )
})

describe.concurrent("messages in the user's terms", () => {
  test(
    "a --model run without its key names the flag, the model and the variable to set, not a config path",
    async () => {
      const cwd = sandbox()
      const noKeys = { OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined }
      const [one, many] = await Promise.all([
        runCli("source", ["--automation", "--model", "gpt-6-luna", "q"], { cwd, env: noKeys }),
        runCli("source", ["--automation", "--models", "gpt-6-luna,claude-sonnet-5-5", "q"], { cwd, env: noKeys }),
      ])
      expectExit(one, 1)
      expect(one.stderr).toBe("massgen: --model gpt-6-luna: missing API key: set OPENAI_API_KEY in the environment or in .env\n")
      expectExit(many, 1)
      expect(many.stderr).toBe(
        "massgen: --models gpt-6-luna: missing API key: set OPENAI_API_KEY in the environment or in .env\n" +
          "massgen: --models claude-sonnet-5-5: missing API key: set ANTHROPIC_API_KEY in the environment or in .env\n",
      )
      for (const result of [one, many]) {
        expect(result.stdout).toBe("")
        expect(result.stderr).not.toContain("agents[")
      }
      expect(fs.readdirSync(cwd)).toEqual([])
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "invalid YAML says where, with no dangling colon; a directory as --config is said plainly",
    async () => {
      const cwd = sandbox()
      const bad = writeConfig(cwd, "agents:\n  - id: a\n    backend: {type: scripted\n", "bad.yaml")
      fs.mkdirSync(nodePath.join(cwd, "team"))
      const [yaml, validated, directory] = await Promise.all([
        runCli("source", ["--automation", "--config", bad, "q"], { cwd }),
        runCli("source", ["--validate", bad], { cwd }),
        runCli("source", ["--automation", "--config", "team", "q"], { cwd }),
      ])
      const reason = "invalid YAML at line 4, column 1: Flow map in block collection must be sufficiently indented and end with a }"
      expectExit(yaml, 1)
      expect(yaml.stderr).toBe(`massgen: config ${bad}: ${reason}\n`)
      expectExit(validated, 1)
      expect(validated.stdout).toBe(`config ${bad}: ${reason}\n`)
      expectExit(directory, 1)
      expect(directory.stderr).toBe("massgen: config team: is a directory, not a config file\n")
    },
    TEST_TIMEOUT_MS,
  )
})

describe.concurrent("cost and counts read the same everywhere", () => {
  const run = async (agents: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => {
    const cwd = sandbox()
    const config = writeConfig(cwd, { ...team(...agents), ...extra })
    const plain = await runCli("source", ["--no-display", "--config", config, "What is 2+2?"], { cwd })
    expectExit(plain, 0)
    const logDir = fs
      .readdirSync(nodePath.join(cwd, ".massgen", "massgen_logs"))
      .map((d) => nodePath.join(cwd, ".massgen", "massgen_logs", d))[0]!
    const [summary, json] = await Promise.all([
      runCli("source", ["status", logDir], { cwd }),
      runCli("source", ["status", logDir, "--json"], { cwd }),
    ])
    expectExit(summary, 0)
    expectExit(json, 0)
    return { plain, summary, json: JSON.parse(json.stdout) }
  }

  test(
    "a model without a price: `$—` in the plain lines and the status summary, never $0.0000; null per agent in the JSON",
    async () => {
      const { plain, summary, json } = await run([scripted("agent_a", { answer: "Four." })], {
        orchestrator: { skip_final_presentation: true },
      })
      expect(plain.lines.at(-1)).toMatch(/^Run completed in \d+\.\ds: .* \(\d+ tokens, cost \$—\)$/)
      expect(summary.lines.at(-1)).toMatch(/^Tokens: \d+ in, \d+ out; cost \$—$/)
      for (const out of [plain.stdout, summary.stdout]) expect(out).not.toContain("$0.0")
      expect(json.agents.agent_a.token_usage.estimated_cost).toBeNull()
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a priced model: the same dollars in the plain lines and the status summary",
    async () => {
      const priced = { model: "gpt-5-pro", input_tokens: 100_000, output_tokens: 10_000 }
      const { plain, summary, json } = await run([scripted("agent_a", { answer: "Four.", ...priced })], {
        orchestrator: { skip_final_presentation: true },
      })
      // Two calls (an answer, a vote) of 100,000 tokens in at $15/M and 10,000 out at $120/M.
      expect(json.costs.total_estimated_cost).toBeCloseTo(5.4, 6)
      expect(plain.lines.at(-1)).toEndWith("(220,000 tokens, cost $5.40)")
      expect(summary.lines.at(-1)).toBe("Tokens: 200000 in, 20000 out; cost $5.40")
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "one agent, one answer: singular words in the plain lines and the status summary",
    async () => {
      const { plain, summary } = await run([scripted("agent_a", { answer: "Four." })], { orchestrator: { skip_final_presentation: true } })
      expect(plain.lines[0]).toMatch(/^Run log_\S+: 1 agent on "What is 2\+2\?"/)
      expect(plain.lines).toContain("[agent_a] round 1: 0 answers shown")
      expect(plain.lines).toContain("[agent_a] round 2: 1 answer shown")
      expect(summary.lines).toContain("  agent_a: completed, 1 answer, votes for agent_a (agent1.1)")
      for (const out of [plain.stdout, summary.stdout]) expect(out).not.toMatch(/\(s\)|\b1 agents\b/)
    },
    TEST_TIMEOUT_MS,
  )
})
