/**
 * Issue 15: sessions. A run with `--session-id ID` (or `--continue`) is the
 * next turn of a session: `.massgen/sessions/ID/turns.jsonl` lists it, its
 * `run_started` records the earlier turns' questions and final answers, and
 * `--automation` prints `SESSION: ID` after the header. Each turn is an
 * ordinary run: an interrupted turn is resumed with `massgen resume` and then
 * counts for the next one, and `replay --check` of a turn with history agrees.
 * `massgen sessions` lists id, turns, cost and last question.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { readEventsText } from "../src/domain/log/index.ts"
import { callLogCount } from "./support/call-logs.ts"
import { cleanupSandboxes, runCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"
import { hang, loneCouncilReply, startFakeLlm } from "./support/fake-llm.ts"

afterAll(cleanupSandboxes)

const TIMEOUT = 90_000

const team = (delay = 0) => ({
  agents: [
    { id: "agent_a", backend: { type: "scripted", answer: "Four.", vote: "agent1", final: "The answer is 4.", delay_seconds: delay } },
    { id: "agent_b", backend: { type: "scripted", answer: "4", vote: "agent1" } },
  ],
})

const lineOf = (lines: ReadonlyArray<string>, prefix: string) => lines.find((l) => l.startsWith(prefix))?.slice(prefix.length)
const startedOf = (logDir: string) => readEventsText(fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")).events[0]!

describe("sessions", () => {
  test(
    "--session-id across two automation runs: SESSION line, the turns listed, the second turn's agents see the first; replay --check of it agrees",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, team())
      const first = await runCli("source", ["--automation", "--config", config, "--session-id", "ci-job", "What is 2+2?"], { cwd })
      expect(first.exitCode).toBe(0)
      // The existing lines keep their order; SESSION: comes right after the header.
      expect(first.lines.slice(0, 5).map((l) => l.split(":")[0])).toEqual([
        "LOG_DIR",
        "STATUS",
        "QUESTION",
        "[Coordination in progress - monitor status.json for real-time updates]",
        "SESSION",
      ])
      expect(lineOf(first.lines, "SESSION: ")).toBe("ci-job")
      const second = await runCli("source", ["--automation", "--config", config, "--session-id", "ci-job", "And doubled?"], { cwd })
      expect(second.exitCode).toBe(0)
      const turns = fs
        .readFileSync(nodePath.join(cwd, ".massgen", "sessions", "ci-job", "turns.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
      expect(turns.map((t) => [t.turn, t.log_dir])).toEqual([
        [1, lineOf(first.lines, "LOG_DIR: ")],
        [2, lineOf(second.lines, "LOG_DIR: ")],
      ])
      const secondDir = lineOf(second.lines, "LOG_DIR: ")!
      expect(startedOf(secondDir)).toMatchObject({
        question: "And doubled?",
        conversation: [
          { role: "user", content: "What is 2+2?" },
          { role: "assistant", content: "The answer is 4." },
        ],
      })
      expect(callLogCount(secondDir)).toBeGreaterThan(0)
      expect(fs.readFileSync(nodePath.join(secondDir, "final", "agent_a", "context.txt"), "utf8")).toContain(
        "<CONVERSATION_HISTORY>\nUser: What is 2+2?\nAssistant: The answer is 4.\n<END OF CONVERSATION_HISTORY>",
      )
      const replay = await runCli("source", ["replay", secondDir, "--check"], { cwd })
      expect(replay.exitCode).toBe(0)
      const listed = await runCli("source", ["sessions"], { cwd })
      expect(listed.lines).toEqual(["ID      TURNS  COST      LAST QUESTION", "ci-job      2  $—        And doubled?"])
      const json = JSON.parse((await runCli("source", ["sessions", "--json"], { cwd })).stdout)
      expect(json).toEqual([{ id: "ci-job", turns: 2, cost_usd: null, last_question: "And doubled?", last_log_dir: secondDir }])
    },
    TIMEOUT,
  )

  test(
    "a turn interrupted and resumed counts for the next turn, which --continue takes up; --continue with no session is exit 1",
    async () => {
      const cwd = sandbox()
      const none = await runCli("source", ["--automation", "--config", writeConfig(cwd, team()), "--continue", "q"], { cwd })
      expect(none.exitCode).toBe(1)
      expect(none.stderr).toStartWith("massgen: --continue: no session to continue under ")
      // One agent on the fake LLM: its first call hangs until the turn is stopped; then it answers.
      const fake = await startFakeLlm({ respond: loneCouncilReply })
      try {
        fake.enqueue("chat", hang())
        const config = writeConfig(cwd, {
          agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl } }],
        })
        const running = await startUntilLine(
          "source",
          ["--automation", "--config", config, "--session-id", "s1", "What is 2+2?"],
          "SESSION: ",
          { cwd, timeoutMs: TIMEOUT },
        )
        await fake.waitForRequest(1)
        const logDir = lineOf(running.lines, "LOG_DIR: ")!
        running.proc.kill("SIGINT")
        expect((await running.done).exitCode).toBe(4)
        const resumed = await runCli("source", ["resume", logDir, "--automation"], { cwd })
        expect(resumed.exitCode).toBe(0)
        const next = await runCli("source", ["--automation", "--config", config, "--continue", "And doubled?"], { cwd })
        expect(next.exitCode).toBe(0)
        expect(lineOf(next.lines, "SESSION: ")).toBe("s1")
        expect(startedOf(lineOf(next.lines, "LOG_DIR: ")!)).toMatchObject({
          conversation: [
            { role: "user", content: "What is 2+2?" },
            { role: "assistant", content: "Four." },
          ],
        })
        expect(lineOf(next.lines, "ANSWER_PREVIEW: ")).toBe("Eight.")
      } finally {
        fake.stop()
      }
    },
    TIMEOUT,
  )
})
