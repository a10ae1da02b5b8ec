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
import { type CliResult, type Mode, cleanupSandboxes, ensureBinary, runCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const IN_PROGRESS = "[Coordination in progress - monitor status.json for real-time updates]"
const TEST_TIMEOUT_MS = 90_000

const scripted = (id: string, backend: Record<string, unknown> = {}) => ({ id, backend: { type: "scripted", ...backend } })
const team = (...agents: ReadonlyArray<unknown>) => ({ agents, timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 } })

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
  test("a warning raised during an automation run is one `massgen: warning:` line on stderr, never on stdout", async () => {
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
    expect(warnings[0]).toStartWith("massgen: warning: coordination_events.json: ")
    expect(warnings[0]).not.toContain("level=")
  }, TEST_TIMEOUT_MS)
})
