/**
 * Injection: new answers reach a busy agent's round at its next step boundary
 * instead of cancelling it (MassGen's default; `disable_injection: true` keeps
 * the restart). The decider's rule (given → when → then), the round machine's
 * update, and whole runs in memory under the TestClock, replayed.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Fiber, Option, TestClock, TestContext } from "effect"
import { decide, updateFor } from "../src/domain/coordination/decide.ts"
import { roundRequest, STALE_VOTE_RESULT } from "../src/domain/coordination/prompts.ts"
import { onUpdate, startRound } from "../src/domain/coordination/round-machine.ts"
import type { Event } from "../src/domain/events/index.ts"
import type { LlmReply } from "../src/domain/llm.ts"
import { replayRun } from "../src/domain/replay/index.ts"
import { callsOf } from "./support/call-logs.ts"
import { answer, callEnded, given, roundCancelled, roundStarted, runStarted, updateInjected } from "./support/given.ts"
import { configOf, runInMemory } from "./support/harness.ts"

const L1 = ["agent1.1"]
const L12 = ["agent1.1", "agent2.1"]

/** a answered and is in round 2 (showing its answer) while b is still on its first. */
const aBusy = (settings: { readonly disable_injection?: boolean } = {}, steps = 1): ReadonlyArray<Event> => [
  runStarted(["a", "b"], settings),
  roundStarted("a", 1, []),
  roundStarted("b", 1, []),
  answer("a", 1, "agent1.1", "A"),
  roundStarted("a", 2, L1),
  ...Array.from({ length: steps }, (_, i) => callEnded("a", 2, 10 + i)),
]

describe("the decider with injection", () => {
  test("a new answer does not cancel a round that has work to keep (a call of it came back)", () => {
    const g = given(...aBusy(), answer("b", 1, "agent2.1", "B"))
    expect(decide(g.state).filter((c) => c._tag === "CancelRound")).toEqual([])
    expect(updateFor(g.state, "a", 2)).toEqual(L12)
  })

  test("a round whose first call is still out has nothing to keep: it is cancelled, as before", () => {
    given(...aBusy({}, 0), answer("b", 1, "agent2.1", "B"))
      .whenDecided()
      .then(roundCancelled("a", 2))
  })

  test("disable_injection: the busy round is cancelled and started again", () => {
    given(...aBusy({ disable_injection: true }), answer("b", 1, "agent2.1", "B"))
      .whenDecided()
      .then(roundCancelled("a", 2))
  })

  test("after the update is injected the round shows the latest answers: nothing more to inject", () => {
    const g = given(...aBusy(), answer("b", 1, "agent2.1", "B"), roundStarted("b", 2, L12), updateInjected("a", 2, L12))
    expect(updateFor(g.state, "a", 2)).toBeNull()
    expect(g.state.agents[0]!.inFlight?.shown).toEqual(L12)
  })

  test("first-answer protection: nothing is injected into an agent that has no answer yet", () => {
    const g = given(
      runStarted(["a", "b"]),
      roundStarted("a", 1, []),
      roundStarted("b", 1, []),
      callEnded("b", 1, 1),
      answer("a", 1, "agent1.1", "A"),
    )
    expect(updateFor(g.state, "b", 1)).toBeNull()
  })

  test("nothing is injected with disable_injection", () => {
    const g = given(...aBusy({ disable_injection: true }), answer("b", 1, "agent2.1", "B"))
    expect(updateFor(g.state, "a", 2)).toBeNull()
  })
})

describe("the round machine's update", () => {
  const shown1 = [{ label: "agent1.1", anonId: "agent1", content: "A" }]
  const shown12 = [...shown1, { label: "agent2.1", anonId: "agent2", content: "B" }]
  const request = roundRequest({ agentId: "a", selfAnonId: "agent1", systemMessage: null, question: "Q?", shown: shown1, voteOnly: false })
  const vote: LlmReply = {
    text: "voting",
    reasoning: "",
    toolCalls: [{ id: "c1", name: "vote", arguments: '{"agent_id":"agent1","reason":"mine"}' }],
    usage: { inputTokens: null, cachedInputTokens: null, outputTokens: null, reasoningTokens: null },
    truncated: null,
    raw: null,
  }

  test("an update after a vote answers the vote as not counted, then says what is new, and offers a vote for the new agent", () => {
    const t = onUpdate(startRound({ agent: "a", round: 2, role: "round", request }).machine, shown12, vote)
    expect(t.step._tag).toBe("call_model")
    if (t.step._tag !== "call_model") return
    const added = t.step.request.messages.slice(request.messages.length)
    expect(added.map((m) => m.role)).toEqual(["assistant", "tool", "user"])
    expect(added[1]).toEqual({ role: "tool", toolCallId: "c1", name: "vote", content: STALE_VOTE_RESULT })
    expect(added[2]!.content).toContain("<agent2.1>\nB\n<end of agent2.1>")
    expect(added[2]!.content).not.toContain("<agent1.1>")
    const voteTool = t.step.request.tools.find((x) => x.name === "vote")
    expect((voteTool?.parameters.properties.agent_id as { enum: Array<string> }).enum).toEqual(["agent1", "agent2"])
    expect(t.step.request.context).toMatchObject({ shown: shown12 })
  })

  test("a newer answer of an agent already shown names the one it replaces", () => {
    const shown2 = [{ label: "agent1.2", anonId: "agent1", content: "A2" }]
    const t = onUpdate(startRound({ agent: "a", round: 2, role: "round", request }).machine, shown2, null)
    if (t.step._tag !== "call_model") throw new Error("expected a call")
    expect(t.step.request.messages.at(-1)!.content).toContain("<agent1.2> (replaces agent1.1)")
  })
})

const isDone = <A, E>(fiber: Fiber.Fiber<A, E>) => Effect.map(Fiber.poll(fiber), Option.isSome)
const runToEnd = (doc: unknown) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(runInMemory(doc))
      for (let s = 0; s < 120 && !(yield* isDone(fiber)); s += 0.5) yield* TestClock.adjust("500 millis")
      return yield* Fiber.join(fiber)
    }).pipe(Effect.provide(TestContext.TestContext)),
  )
const ofTag = <T extends Event["_tag"]>(events: ReadonlyArray<Event>, tag: T) =>
  events.filter((e): e is Extract<Event, { _tag: T }> => e._tag === tag)

describe("whole runs", () => {
  /**
   * a answers at 1 s, then its round 2 replies with no tool call at 2 s (work to keep) and
   * calls again; b's first answer lands at 2.5 s, while a's second call is out.
   */
  const busyAgent = (aScript: ReadonlyArray<unknown>, orchestrator: Record<string, unknown> = {}) => ({
    agents: [
      { id: "a", backend: { type: "scripted", delay_seconds: 1, answer: "A", vote: "agent2", script: aScript } },
      { id: "b", backend: { type: "scripted", delay_seconds: 2.5, answer: "B", vote: "agent2" } },
    ],
    orchestrator,
  })

  test("an update injected before the next call: the round goes on and its vote sees the new answer", async () => {
    const doc = busyAgent([{ new_answer: "A" }, { text: "thinking" }, { text: "still thinking" }])
    const run = await runToEnd(doc)
    expect(run.reason).toBe("completed")
    expect(ofTag(run.events, "round_cancelled").filter((e) => e.agent === "a")).toEqual([])
    expect(ofTag(run.events, "update_injected")).toEqual([expect.objectContaining({ agent: "a", round: 2, shown: L12, after_vote: false })])
    expect(ofTag(run.events, "vote_cast").find((e) => e.agent === "a")).toMatchObject({ round: 2, target: "b", target_label: "agent2.1" })
    const last = ofTag(run.events, "call_end").findLast((e) => e.agent === "a" && e.role === "round")!
    expect(JSON.stringify(callsOf(run.files)(last.call)?.request?.messages)).toContain("UPDATE: While you were working")
    expect(replayRun(run.events, configOf(doc).agents, callsOf(run.files)).divergence).toBeNull()
  })

  test("a vote that did not see the new answer is not counted: the agent is asked again in the same round", async () => {
    const doc = busyAgent([{ new_answer: "A" }, { text: "thinking" }])
    const run = await runToEnd(doc)
    expect(run.reason).toBe("completed")
    expect(ofTag(run.events, "update_injected")).toEqual([expect.objectContaining({ agent: "a", round: 2, after_vote: true })])
    // The stale vote (for itself: b's answer was not shown) is never cast; the vote after the update is.
    expect(ofTag(run.events, "vote_cast").filter((e) => e.agent === "a")).toEqual([
      expect.objectContaining({ round: 2, target: "b", target_label: "agent2.1" }),
    ])
    expect(replayRun(run.events, configOf(doc).agents, callsOf(run.files)).divergence).toBeNull()
  })

  test("disable_injection: the same run cancels a's busy round and starts it again", async () => {
    const doc = busyAgent([{ new_answer: "A" }, { text: "thinking" }, { text: "still thinking" }], { disable_injection: true })
    const run = await runToEnd(doc)
    expect(run.reason).toBe("completed")
    expect(ofTag(run.events, "update_injected")).toEqual([])
    expect(ofTag(run.events, "round_cancelled")).toEqual([expect.objectContaining({ agent: "a", round: 2 })])
    expect(replayRun(run.events, configOf(doc).agents, callsOf(run.files)).divergence).toBeNull()
  })
})
