/**
 * MassGen's coordination options in whole scripted runs through the command line (issue 13):
 * what `events.jsonl`, `status.json` and the automation lines show. Fixtures are in
 * MassGen's config style (`test/fixtures/massgen/`).
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { readCallLog } from "./support/call-logs.ts"
import { runCli, sandbox, writeConfig } from "./support/cli.ts"

const FIXTURES = nodePath.join(import.meta.dir, "fixtures", "massgen")
const TIMEOUT_MS = 60_000

const eventsOf = (lines: ReadonlyArray<string>) => {
  const dir = lines.find((l) => l.startsWith("LOG_DIR: "))!.slice("LOG_DIR: ".length)
  const events = fs
    .readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
  const status = JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))
  return { dir, events, status, types: events.map((e: { type: string }) => e.type) }
}
const calls = (events: ReadonlyArray<{ type: string; agent?: string; role?: string }>, role: string) =>
  events.filter((e) => e.type === "call_start" && e.role === role).map((e) => e.agent)

describe.concurrent("MassGen's options in a scripted run", () => {
  test(
    "skip_voting (MassGen consensus test): each agent answers once, no vote is cast, the first agent presents",
    async () => {
      const cwd = sandbox()
      const result = await runCli(
        "source",
        ["--automation", "--config", nodePath.join(FIXTURES, "skip_voting.yaml"), "What is the capital of France?"],
        { cwd },
      )
      expect(result.exitCode).toBe(0)
      expect(result.lines).toContain("WINNER: agent_a")
      const { events, status, types } = eventsOf(result.lines)
      expect(calls(events, "round").sort()).toEqual(["agent_a", "agent_b"])
      expect(types).not.toContain("vote_cast")
      expect(status.results.votes).toEqual({ "agent1.1": 0, "agent2.1": 0 })
      expect(events.find((e: { type: string }) => e.type === "final_answer").content).toBe("The capital of France is Paris.")
    },
    TIMEOUT_MS,
  )

  test(
    "--quick with several agents (MassGen quick synthesize): one call each, no vote round, the first agent synthesizes",
    async () => {
      const cwd = sandbox()
      const result = await runCli(
        "source",
        ["--automation", "--quick", "--config", nodePath.join(FIXTURES, "quick_team.yaml"), "How do I count duplicates?"],
        { cwd },
      )
      expect(result.exitCode).toBe(0)
      expect(result.lines).toContain("WINNER: agent_a")
      const { events, types } = eventsOf(result.lines)
      expect(calls(events, "round").sort()).toEqual(["agent_a", "agent_b", "agent_c"])
      expect(calls(events, "presentation")).toEqual(["agent_a"])
      expect(types).not.toContain("vote_cast")
      expect(events.find((e: { type: string }) => e.type === "presentation_started")).toMatchObject({
        strategy: "synthesize",
        calls_model: true,
      })
    },
    TIMEOUT_MS,
  )

  test(
    "--quick with one agent (MassGen quick mode: skip_voting): one call in all, its answer is final",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, { agents: [{ id: "solo", backend: { type: "scripted", answer: "Forty-two." } }] })
      const result = await runCli("source", ["--automation", "--quick", "--config", config, "What is the answer?"], { cwd })
      expect(result.exitCode).toBe(0)
      const { events } = eventsOf(result.lines)
      expect(events.filter((e: { type: string }) => e.type === "call_start")).toHaveLength(1)
      expect(events.find((e: { type: string }) => e.type === "final_answer")).toMatchObject({
        source: "stored_answer",
        content: "Forty-two.",
      })
    },
    TIMEOUT_MS,
  )

  test(
    "max_new_answers_global (MassGen vote-only mode test): at the cap every agent only votes",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [
          { id: "a", backend: { type: "scripted", answer: "A.", keep_answering: true } },
          { id: "b", backend: { type: "scripted", answer: "B.", keep_answering: true, delay_seconds: 0.05 } },
        ],
        orchestrator: { max_new_answers_global: 2, defer_voting_until_all_answered: true },
      })
      const result = await runCli("source", ["--automation", "--config", config, "q"], { cwd })
      expect(result.exitCode).toBe(0)
      const { events } = eventsOf(result.lines)
      expect(events.filter((e: { type: string }) => e.type === "answer_submitted")).toHaveLength(2)
      expect(events.filter((e: { type: string }) => e.type === "vote_cast")).toHaveLength(2)
    },
    TIMEOUT_MS,
  )

  test(
    "a duplicate answer is refused with MassGen's message and counts as an enforcement retry",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [
          { id: "a", backend: { type: "scripted", answer: "Same text." } },
          {
            id: "b",
            backend: {
              type: "scripted",
              delay_seconds: 0.05,
              script: [{ new_answer: "B first." }, { new_answer: "Same text." }, { new_answer: "Other text." }],
            },
          },
        ],
      })
      const result = await runCli("source", ["--automation", "--config", config, "q"], { cwd })
      expect(result.exitCode).toBe(0)
      const { events } = eventsOf(result.lines)
      expect(events.filter((e: { type: string }) => e.type === "reply_rejected")).toEqual([
        expect.objectContaining({
          agent: "b",
          attempt: 1,
          reason: "duplicate_answer",
          message: "Answer already provided by agent1.1. Provide different answer or vote for existing one.",
        }),
      ])
      expect(events.filter((e: { type: string }) => e.type === "answer_submitted").map((e: { content: string }) => e.content)).toEqual([
        "Same text.",
        "B first.",
        "Other text.",
      ])
    },
    TIMEOUT_MS,
  )
})

describe("round timeouts (MassGen v0.1.97: a soft warning first, then every tool but vote and new_answer blocked)", () => {
  test(
    "past the soft limit the round is told to wrap up; past soft + grace only the workflow tools are offered; replay --check agrees",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [
          {
            id: "worker",
            backend: {
              type: "scripted",
              delay_seconds: 0.3,
              custom_tools: [{ name: "count_words", description: "Counts words", parameters: { type: "object" }, command: ["wc", "-w"] }],
              script: [
                { tool: "count_words", args: { text: "one two" } },
                { tool: "count_words", args: { text: "three" } },
                { new_answer: "Three words." },
              ],
            },
          },
        ],
        timeout_settings: { initial_round_timeout_seconds: 0.1, round_timeout_grace_seconds: 0.4 },
      })
      const result = await runCli("source", ["--automation", "--config", config, "Count the words."], { cwd })
      expect(result.exitCode).toBe(0)
      const { dir, events } = eventsOf(result.lines)
      expect(
        events
          .filter((e: { type: string }) => e.type === "round_time_warned")
          .map((e: { stage: string; round: number }) => [e.round, e.stage]),
      ).toEqual([
        [1, "soft"],
        [1, "hard"],
      ])
      const log = (n: number) => readCallLog(dir, n)
      const lastRoundCall = events
        .filter((e: { type: string; role: string; round: number }) => e.type === "call_start" && e.role === "round" && e.round === 1)
        .at(-1).call
      const request = log(lastRoundCall).request
      // No answer is shown yet, so no vote is offered either.
      expect(request.tools.map((t: { name: string }) => t.name)).toEqual(["new_answer"])
      const replayed = await runCli("source", ["replay", dir, "--check"], { cwd })
      expect(replayed.exitCode).toBe(0)
    },
    TIMEOUT_MS,
  )
})
