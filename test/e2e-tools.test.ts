/**
 * Command tools end to end, with the compiled binary: a scripted agent calls a
 * command tool that appends to a counter file; massgen is killed (SIGKILL)
 * while the tool runs, and again between two tool calls; `massgen resume`
 * finishes the run, every tool call that finished ran exactly once (a call cut
 * off by the kill runs again, as the docs say), and `replay --check` passes,
 * and fails naming the event once a recorded tool result is changed. The
 * tool that was running when massgen was killed dies with it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, ensureBinary, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { waitFor } from "./support/poll.ts"
import { killAllWith, markerSeconds, waitUntilNoneWith } from "./support/processes.ts"
import { ENV, eventsPath, expectExit, readEvents } from "./support/run-dirs.ts"

beforeAll(async () => {
  await ensureBinary()
}, 180_000)
afterAll(() => cleanupSandboxes())

const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)

const eventOf = (dir: string, match: (e: any) => boolean) => (fs.existsSync(eventsPath(dir)) ? readEvents(dir).find(match) : undefined)

/**
 * A tool that appends `start N` and `end N` to the counter around its work; call
 * 2 holds (as a sleep of `HELD` seconds, a marker found from the host: the tool's
 * pids are its own namespace's) until the file `resumed` exists.
 */
const HELD = markerSeconds()
const BUMP = [
  "read -r args",
  'n=$(printf %s "$args" | tr -dc 0-9)',
  // The test kills massgen on the counter's line: the sleep follows at once.
  `if [ "$n" = 2 ] && [ ! -e "$0/resumed" ]; then echo "start $n" >> "$0/counter"; exec sleep ${HELD}; fi`,
  'echo "start $n" >> "$0/counter"',
  'echo "end $n" >> "$0/counter"',
  'echo "bumped $n"',
].join("\n")

const toolDoc = (cwd: string) => ({
  agents: [
    {
      id: "worker",
      backend: {
        type: "scripted",
        delay_seconds: 0.3,
        script: [{ tool: "bump", args: { n: 1 } }, { tool: "bump", args: { n: 2 } }, { new_answer: "bumped twice" }],
        vote: "agent1",
        final: "bumped twice",
        custom_tools: [
          {
            name: "bump",
            description: "Counts a step",
            parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
            command: ["sh", "-c", BUMP, cwd],
          },
        ],
      },
    },
  ],
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30, tool_timeout_seconds: 20 },
})

const counterOf = (cwd: string) =>
  fs.existsSync(nodePath.join(cwd, "counter")) ? fs.readFileSync(nodePath.join(cwd, "counter"), "utf8").trim().split("\n") : []

const killHeld = () => killAllWith(HELD)

/** Runs the tool council until `killAt` says so, kills massgen with SIGKILL, resumes it; the run's directory and events. */
const killAndResume = async (cwd: string, killAt: (dir: string) => unknown) => {
  const config = writeConfig(cwd, toolDoc(cwd))
  const first = await startCli("binary", ["--automation", "--config", config, "Count twice."], { cwd, env: ENV })
  const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
  await waitFor("the moment to kill", () => (killAt(dir) ? true : undefined))
  first.proc.kill("SIGKILL")
  expect((await first.done).signal).toBe("SIGKILL")
  const before = readEvents(dir)
  expect(ofType(before, "run_finished")).toEqual([])
  fs.writeFileSync(nodePath.join(cwd, "resumed"), "")
  const r = await runCli("binary", ["resume", "--automation", dir], { cwd, env: ENV })
  expectExit(r, 0)
  expect(r.lines).toContain("WINNER: worker")
  return { dir, before, events: readEvents(dir) }
}

/** Each tool call finished once, in order; the round went on from the record. */
const expectEachCallOnce = (events: ReadonlyArray<any>) => {
  const finished = ofType(events, "tool_call_finished")
  expect(finished.map((e) => [e.arguments, e.ok, e.result])).toEqual([
    ['{"n":1}', true, "bumped 1\n"],
    ['{"n":2}', true, "bumped 2\n"],
  ])
  expect(ofType(events, "round_started").map((e) => e.round)).toEqual([1, 2])
  expect(ofType(events, "answer_submitted").map((e) => e.content)).toEqual(["bumped twice"])
  expect(ofType(events, "run_finished")).toEqual([expect.objectContaining({ reason: "completed", winner: "worker" })])
}

describe("a command tool and kill -9", () => {
  test("killed while a tool call runs: resume runs that call again, and no finished call twice", async () => {
    const cwd = sandbox()
    try {
      const { dir, before, events } = await killAndResume(cwd, () => (counterOf(cwd).includes("start 2") ? true : undefined))
      // Call 1 finished before the kill; call 2 was cut off: started, not finished.
      expect(ofType(before, "tool_call_finished").map((e) => e.arguments)).toEqual(['{"n":1}'])
      expect(ofType(before, "tool_call_started").map((e) => e.arguments)).toEqual(['{"n":1}', '{"n":2}'])
      expect(counterOf(cwd)).toEqual(["start 1", "end 1", "start 2", "start 2", "end 2"])
      expectEachCallOnce(events)
      // The tool that was running when massgen was killed died with it: no orphan (its sleep never ends by itself).
      expect(await waitUntilNoneWith(HELD)).toEqual([])
      // The round went on: no model call with a recorded reply was made again.
      const resumed = events.slice(before.length)
      expect(resumed[0]).toMatchObject({
        type: "run_resumed",
        continued_rounds: [{ agent: "worker", round: 1, shown: [], vote_only: false }],
      })
      expect(ofType(resumed, "tool_call_started").map((e) => e.arguments)).toEqual(['{"n":2}'])
      expect(ofType(resumed, "call_start").filter((e) => e.round === 1)).toHaveLength(1)
      const check = await runCli("binary", ["replay", dir, "--check"], { cwd, env: ENV })
      expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
      const status = JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))
      expect(status.agents.worker.tool_calls).toEqual({ total: 2, errors: 0, hosted: 0 })
    } finally {
      killHeld()
    }
  }, 60_000)

  test("killed between two tool calls: resume makes the model call again and runs each tool once", async () => {
    const cwd = sandbox()
    fs.writeFileSync(nodePath.join(cwd, "resumed"), "")
    const { dir, before, events } = await killAndResume(
      cwd,
      (dir) => eventOf(dir, (e) => e.type === "tool_call_finished") && eventOf(dir, (e) => e.type === "call_start" && e.call === 2),
    )
    expect(ofType(before, "tool_call_started").map((e) => e.arguments)).toEqual(['{"n":1}'])
    expect(counterOf(cwd)).toEqual(["start 1", "end 1", "start 2", "end 2"])
    expectEachCallOnce(events)
    const check = await runCli("binary", ["replay", dir, "--check"], { cwd, env: ENV })
    expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })

    // A recorded tool result changed by hand: replay --check names the event.
    const lines = fs.readFileSync(eventsPath(dir), "utf8").split("\n")
    const at = lines.findIndex((l) => l.includes('"type":"tool_call_finished"'))
    lines[at] = lines[at]!.replace("bumped 1", "bumped 9")
    fs.writeFileSync(eventsPath(dir), lines.join("\n"))
    const changed = await runCli("binary", ["replay", dir, "--check"], { cwd, env: ENV })
    expect(changed.exitCode).toBe(2)
    expect(changed.stdout).toContain(
      `DIVERGED at event ${at + 1} (line ${at + 1} of events.jsonl): the recorded result of tool call 1 (bump) does not match its digest`,
    )
  }, 60_000)
})
