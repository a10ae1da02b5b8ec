/**
 * Issue 9: under every fault, `--automation`'s stdout holds only the contract's lines.
 *
 * A CI pipeline parses stdout; diagnostics (warnings, errors, hints) belong on
 * stderr in every mode. Each case below runs the command line as a script
 * would, with one fault, and checks: every stdout line is one of the
 * automation guide's lines (`LOG_DIR:`, `STATUS:`, `QUESTION:`, the
 * in-progress line, `WINNER:`, `ANSWER_FILE:`, `DURATION:`, `ANSWER_PREVIEW:`,
 * `COMPLETED:` or `FAILED:`), the exit code is the one the guide gives the fault, stderr
 * says something, and an `ANSWER_FILE:` line names a file that exists.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as net from "node:net"
import * as nodePath from "node:path"
import { type CliResult, cleanupSandboxes, runCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"

afterAll(() => cleanupSandboxes())

const IN_PROGRESS = "[Coordination in progress - monitor status.json for real-time updates]"
const CONTRACT = /^(LOG_DIR|STATUS|QUESTION|WINNER|ANSWER_FILE|DURATION|ANSWER_PREVIEW|COMPLETED|FAILED): /
const QUESTION = "What is 2+2?"

/** Resolves once `ready()` holds, looking every 10 ms; fails after 20 s. */
const until = async (ready: () => boolean): Promise<void> => {
  for (const deadline = Date.now() + 20_000; !ready(); ) {
    if (Date.now() > deadline) throw new Error("the condition never held")
    await Bun.sleep(10)
  }
}

const scripted = (id: string, backend: Record<string, unknown> = {}) => ({ id, backend: { type: "scripted", ...backend } })

const expectContract = (result: CliResult, code: number) => {
  expect({ code: result.exitCode, stderr: result.stderr.length > 0 || code === 0 }).toEqual({ code, stderr: true })
  for (const line of result.lines) expect(line === IN_PROGRESS || CONTRACT.test(line)).toBe(true)
  const answer = result.lines.find((l) => l.startsWith("ANSWER_FILE: "))
  if (answer !== undefined) expect(fs.existsSync(answer.slice("ANSWER_FILE: ".length))).toBe(true)
}

/** A loopback port that refuses connections: one that was just free. */
const closedPort = async (): Promise<number> =>
  new Promise((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

const run = (cwd: string, doc: unknown, extra: ReadonlyArray<string> = [], env: Record<string, string | undefined> = {}) =>
  runCli("source", ["--automation", "--config", writeConfig(cwd, doc), ...extra, QUESTION], { cwd, env, timeoutMs: 60_000 })

describe.concurrent("--automation under faults: stdout holds only the contract's lines", () => {
  test("a bad config (exit 1)", async () => {
    const cwd = sandbox()
    expectContract(await run(cwd, { agents: [{ id: "../x", backend: { type: "scripted" } }] }), 1)
  }, 60_000)

  test("an unknown flag (exit 1)", async () => {
    const cwd = sandbox()
    expectContract(await run(cwd, { agents: [scripted("a")] }, ["--automaton"]), 1)
  }, 60_000)

  test("a missing API key (exit 1)", async () => {
    const cwd = sandbox()
    const doc = { agents: [{ id: "a", backend: { type: "openai", model: "gpt-6-luna" } }] }
    expectContract(await run(cwd, doc, [], { OPENAI_API_KEY: undefined }), 1)
  }, 60_000)

  test("a provider that refuses connections: every agent fails (exit 2)", async () => {
    const cwd = sandbox()
    const port = await closedPort()
    const doc = {
      agents: [
        { id: "a", backend: { type: "chatcompletion", model: "m", base_url: `http://127.0.0.1:${port}/v1`, api_key: "k", max_retries: 0 } },
      ],
    }
    const result = await run(cwd, doc)
    expectContract(result, 2)
    expect(result.stderr).toContain(`127.0.0.1:${port}`)
  }, 60_000)

  test("agents whose replies stay invalid and one that fails: the rest still decide (exit 0)", async () => {
    const cwd = sandbox()
    const doc = {
      agents: [
        scripted("a", { answer: "4", vote: "agent1" }),
        scripted("b", { script: [{ text: "x" }, { text: "y" }, { text: "z" }] }),
        scripted("c", { fail_calls: 9 }),
      ],
    }
    expectContract(await run(cwd, doc), 0)
  }, 60_000)

  test("the orchestrator timeout (exit 3)", async () => {
    const cwd = sandbox()
    const doc = {
      agents: [scripted("a", { answer: "4" }), scripted("b", { hang: true })],
      timeout_settings: { orchestrator_timeout_seconds: 1 },
    }
    expectContract(await run(cwd, doc), 3)
  }, 60_000)

  test("a spent budget (exit 3)", async () => {
    const cwd = sandbox()
    const doc = {
      agents: [
        scripted("a", { model: "m", input_tokens: 1000, answer: "4" }),
        scripted("b", { model: "m", input_tokens: 1000, answer: "5" }),
      ],
      pricing: { m: { input: 1000, output: 0 } },
      orchestrator: { budget_usd: 0.5 },
    }
    expectContract(await run(cwd, doc), 3)
  }, 60_000)

  test("a derived file that cannot be written: a warning on stderr, the run completes (exit 0)", async () => {
    const cwd = sandbox()
    const base = nodePath.join(cwd, "logs")
    const running = await startUntilLine(
      "source",
      ["--automation", "--config", writeConfig(cwd, { agents: [scripted("a", { answer: "4", delay_seconds: 0.3 })] }), QUESTION],
      "LOG_DIR: ",
      {
        cwd,
        env: { MASSGEN_LOG_BASE_DIR: base },
      },
    )
    const logDir = running.lines.find((l) => l.startsWith("LOG_DIR: "))!.slice("LOG_DIR: ".length)
    fs.mkdirSync(nodePath.join(logDir, "coordination_events.json"), { recursive: true })
    const result = await running.done
    expectContract(result, 0)
    expect(result.stderr).toContain("massgen: warning: ")
  }, 60_000)

  test("SIGINT (exit 4)", async () => {
    const cwd = sandbox()
    const running = await startUntilLine(
      "source",
      ["--automation", "--config", writeConfig(cwd, { agents: [scripted("a", { hang: true })] }), QUESTION],
      IN_PROGRESS,
      { cwd },
    )
    running.proc.kill("SIGINT")
    expectContract(await running.done, 4)
  }, 60_000)

  test("resume of a log whose last line a crash cut (exit 0)", async () => {
    const cwd = sandbox()
    const doc = {
      agents: [scripted("a", { answer: "4", vote: "agent1" }), scripted("b", { answer: "5", vote: "agent1", delay_seconds: 1 })],
    }
    const running = await startUntilLine("source", ["--automation", "--config", writeConfig(cwd, doc), QUESTION], IN_PROGRESS, { cwd })
    const logDir = running.lines.find((l) => l.startsWith("LOG_DIR: "))!.slice("LOG_DIR: ".length)
    // Killed once the first answer is in the log, while the other agent still works.
    await until(
      () =>
        fs.existsSync(nodePath.join(logDir, "events.jsonl")) &&
        fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8").includes('"type":"answer_submitted"'),
    )
    running.proc.kill("SIGKILL")
    await running.done
    fs.appendFileSync(nodePath.join(logDir, "events.jsonl"), '{"schema":2,"type":"vote_c')
    const result = await runCli("source", ["resume", logDir, "--automation"], { cwd, timeoutMs: 60_000 })
    expectContract(result, 0)
    // What was skipped is said on stderr, not stdout.
    expect(result.stderr).not.toBe("")
  }, 60_000)

  test("a directory that is not a run (exit 1)", async () => {
    const cwd = sandbox()
    const result = await runCli("source", ["resume", cwd, "--automation"], { cwd })
    expectContract(result, 1)
  }, 60_000)
})
