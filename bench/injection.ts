/**
 * Injection against restart (issue 11): a staggered 10-agent run whose agents
 * work with tools, once with injection (the default) and once with
 * `disable_injection: true`, on the same scripts and the same virtual clock.
 *
 * Agent i replies after 0.6 + 0.23·i s a call; in its first two rounds it
 * calls a tool twice before it answers (then votes), so its rounds have work
 * to keep when the others' answers arrive. Counted from each run's events:
 * - model calls, and the wasted ones: calls cut off by a cancelled round, plus
 *   calls whose vote did not see the newest answers (not counted);
 * - wasted tokens: the input tokens of those calls, each as its request's
 *   length / 4 (a cut-off call's count is never reported, but it is billed);
 * - tool calls run, and those thrown away with a cancelled round.
 * Runs under a test clock: the counts are exact and the same every run.
 */
import { Effect, Fiber, Option, TestClock, TestContext } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import { AgentTools } from "../src/services/tools/agent-tools.ts"
import { callsOf } from "../test/support/call-logs.ts"
import { runInMemory } from "../test/support/harness.ts"
import { fmt, line } from "./support.ts"

const AGENTS = 10

const doc = (disableInjection: boolean) => ({
  agents: Array.from({ length: AGENTS }, (_, i) => ({
    id: `agent_${i + 1}`,
    backend: {
      type: "scripted",
      delay_seconds: Number((0.6 + 0.23 * i).toFixed(2)),
      answer: `Answer ${i + 1}`,
      vote: "agent1",
      script: [
        { tool: "lookup", args: { q: `a${i}` } },
        { tool: "lookup", args: { q: `b${i}` } },
        { new_answer: `Answer ${i + 1}, researched` },
        { tool: "lookup", args: { q: `c${i}` } },
        { tool: "lookup", args: { q: `d${i}` } },
      ],
    },
  })),
  orchestrator: { disable_injection: disableInjection },
})

const tools = AgentTools.fake(Object.fromEntries(Array.from({ length: AGENTS }, (_, i) => [`agent_${i + 1}`, { lookup: () => "a fact" }])))

const isDone = <A, E>(fiber: Fiber.Fiber<A, E>) => Effect.map(Fiber.poll(fiber), Option.isSome)

const run = (disableInjection: boolean) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(runInMemory(doc(disableInjection), { tools }))
      for (let ms = 0; ms < 600_000 && !(yield* isDone(fiber)); ms += 50) yield* TestClock.adjust("50 millis")
      return yield* Fiber.join(fiber)
    }).pipe(Effect.provide(TestContext.TestContext)),
  )

const ofTag = <T extends Event["_tag"]>(events: ReadonlyArray<Event>, tag: T) =>
  events.filter((e): e is Extract<Event, { _tag: T }> => e._tag === tag)

interface Counts {
  readonly reason: string
  readonly calls: number
  readonly cutCalls: number
  readonly staleVotes: number
  readonly wastedTokens: number
  readonly tools: number
  readonly wastedTools: number
  readonly seconds: number
}

const count = (events: ReadonlyArray<Event>, files: ReadonlyMap<string, string>, reason: string): Counts => {
  const calls = callsOf(files)
  const ends = ofTag(events, "call_end")
  const cut = ends.filter((e) => e.error === "cancelled")
  const cancelled = new Set(ofTag(events, "round_cancelled").map((e) => `${e.agent}#${e.round}`))
  // A vote an update came right after: the call before each update_injected with after_vote.
  const staleVotes = events.flatMap((e, i) =>
    e._tag === "update_injected" && e.after_vote
      ? events
          .slice(0, i)
          .filter((c) => c._tag === "call_end" && c.agent === e.agent)
          .slice(-1)
      : [],
  ) as ReadonlyArray<Extract<Event, { _tag: "call_end" }>>
  const inputOf = (e: Extract<Event, { _tag: "call_end" }>) => {
    const request = calls(e.call)?.request
    return Math.ceil(((request?.system.length ?? 0) + JSON.stringify(request?.messages ?? []).length) / 4)
  }
  const toolRuns = ofTag(events, "tool_call_finished")
  const times = events.map((e) => Date.parse(e.time))
  return {
    reason,
    calls: ends.length,
    cutCalls: cut.length,
    staleVotes: staleVotes.length,
    wastedTokens: [...cut, ...staleVotes].reduce((n, e) => n + inputOf(e), 0),
    tools: toolRuns.length,
    wastedTools: toolRuns.filter((e) => cancelled.has(`${e.agent}#${e.round}`)).length,
    seconds: (times[times.length - 1]! - times[0]!) / 1000,
  }
}

export const injectionBench = async (): Promise<void> => {
  console.log(`# 9. Injection against restart: ${AGENTS} staggered agents with tool steps (virtual clock, exact counts)`)
  const results: Array<readonly [string, Counts]> = []
  for (const [label, disable] of [
    ["injection (default)", false],
    ["restart (disable_injection)", true],
  ] as const) {
    const outcome = await run(disable)
    results.push([label, count(outcome.events, outcome.files, outcome.reason)])
  }
  for (const [label, c] of results) {
    line(
      `${label}: model calls (cut off + stale votes) / wasted input tokens / tool calls (thrown away)`,
      `${c.calls} (${c.cutCalls} + ${c.staleVotes}) / ${c.wastedTokens} / ${c.tools} (${c.wastedTools})   run ${fmt(c.seconds, 1)} s virtual, ${c.reason}`,
    )
  }
  const [inj, res] = [results[0]![1], results[1]![1]]
  const wasted = (c: Counts) => c.cutCalls + c.staleVotes
  line(
    "injection vs restart: wasted calls, wasted input tokens, tool calls thrown away",
    `${wasted(inj)} vs ${wasted(res)}; ${inj.wastedTokens} vs ${res.wastedTokens}; ${inj.wastedTools} vs ${res.wastedTools}`,
  )
}

if (import.meta.main) await injectionBench()
