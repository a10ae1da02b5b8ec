/**
 * Whole runs in memory: scripted backends, the memory event log, status writer and files.
 * Runs with delays, hangs or timeouts go under the TestClock (`effect`), forked, with the
 * clock moved by hand; runs without any go under `live`.
 */
import { describe, expect } from "bun:test"
import { Deferred, Effect, Fiber, Option, Queue, TestClock } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import { foldEvents } from "../src/domain/state/index.ts"
import type { Backend as LlmBackend } from "../src/services/backends/index.ts"
import { effect, live } from "./support/effect-test.ts"
import { runInMemory } from "./support/harness.ts"

type Backend = Record<string, unknown>
const scripted = (backend: Backend = {}) => ({ type: "scripted", ...backend })
const agents = (...backends: ReadonlyArray<Backend>) => backends.map((b, i) => ({ id: `agent_${"abcdef"[i]}`, backend: scripted(b) }))

const ofTag = <T extends Event["_tag"]>(events: ReadonlyArray<Event>, tag: T) =>
  events.filter((e): e is Extract<Event, { _tag: T }> => e._tag === tag)
const by = (agent: string) => (e: { readonly agent: string }) => e.agent === agent
/**
 * Round calls that came back. A call of a round cancelled before the call got going is
 * interrupted and has no call_end (see `unfinishedCallsWereCancelled`).
 */
/** Round calls that came back (a call cut off by a cancellation ends with error "cancelled"). */
const roundCalls = (events: ReadonlyArray<Event>, agent: string) =>
  ofTag(events, "call_end").filter((e) => e.agent === agent && e.role === "round" && e.error !== "cancelled").length
const presentationCalls = (events: ReadonlyArray<Event>, agent: string) =>
  ofTag(events, "call_end").filter((e) => e.agent === agent && e.role === "presentation").length
/**
 * Every call_start has its call_end; a call cut off ends with error "cancelled",
 * before the round_cancelled of its round, and no call event of a round follows its cancellation.
 */
const unfinishedCallsWereCancelled = (events: ReadonlyArray<Event>) => {
  const ended = new Set(ofTag(events, "call_end").map((e) => e.call))
  expect(ofTag(events, "call_start").filter((e) => !ended.has(e.call))).toEqual([])
  const cancelledAt = new Map(events.flatMap((e, i) => (e._tag === "round_cancelled" ? [[`${e.agent}#${e.round}`, i] as const] : [])))
  events.forEach((e, i) => {
    if (e._tag === "call_start" || e._tag === "call_end") {
      const at = cancelledAt.get(`${e.agent}#${e.round}`)
      expect({ call: e.call, type: e._tag, afterCancel: at !== undefined && i > at }).toEqual({
        call: e.call,
        type: e._tag,
        afterCancel: false,
      })
    }
  })
  expect(foldEvents(events).openCalls).toBe(0)
}
const isDone = <A, E>(fiber: Fiber.Fiber<A, E>) => Effect.map(Fiber.poll(fiber), Option.isSome)

/** Every run's log folds back to the state the run ended with, and ends with run_finished. */
const expectConsistent = (run: { readonly events: ReadonlyArray<Event>; readonly state: unknown; readonly reason: string }) => {
  expect(foldEvents(run.events)).toEqual(run.state as never)
  if (run.reason === "completed") unfinishedCallsWereCancelled(run.events)
  expect(run.events.at(-1)?._tag).toBe("run_finished")
  expect(ofTag(run.events, "run_finished")).toHaveLength(1)
}

describe("runCoordination", () => {
  live("unanimous consensus: two round calls each, one presentation call, the final answer written", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory({
        agents: agents(
          { answer: "Four.", vote: "agent1", final: "The answer is 4." },
          { answer: "4", vote: "agent1" },
          { answer: "2+2=4", vote: "agent1" },
        ),
      })
      expect(run.reason).toBe("completed")
      for (const id of ["agent_a", "agent_b", "agent_c"]) expect(roundCalls(run.events, id)).toBe(2)
      expect(presentationCalls(run.events, "agent_a")).toBe(1)
      expect(presentationCalls(run.events, "agent_b") + presentationCalls(run.events, "agent_c")).toBe(0)
      expect(ofTag(run.events, "vote_cast").map((e) => [e.agent, e.target, e.target_label])).toEqual(
        expect.arrayContaining([
          ["agent_a", "agent_a", "agent1.1"],
          ["agent_b", "agent_a", "agent1.1"],
          ["agent_c", "agent_a", "agent1.1"],
        ]),
      )
      expect(ofTag(run.events, "presentation_started")).toEqual([
        expect.objectContaining({
          agent: "agent_a",
          label: "agent1.1",
          votes: { "agent1.1": 3, "agent2.1": 0, "agent3.1": 0 },
          is_tie: false,
          calls_model: true,
        }),
      ])
      expect(ofTag(run.events, "final_answer")).toEqual([
        expect.objectContaining({ agent: "agent_a", label: "agent1.1", source: "presentation", content: "The answer is 4." }),
      ])
      expect(run.files.get("final/agent_a/answer.txt")).toBe("The answer is 4.")
      expect(run.files.get("final/agent_a/context.txt")).toContain("You were selected")
      expect(ofTag(run.events, "run_finished")).toEqual([expect.objectContaining({ reason: "completed", winner: "agent_a" })])
      expectConsistent(run)
    }),
  )

  live("a tie between two agents voting for themselves goes to the first in config order", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory({ agents: agents({ answer: "A" }, { answer: "B" }), orchestrator: { skip_final_presentation: true } })
      expect(run.reason).toBe("completed")
      expect(ofTag(run.events, "presentation_started")).toEqual([
        expect.objectContaining({ agent: "agent_a", votes: { "agent1.1": 1, "agent2.1": 1 }, is_tie: true, calls_model: false }),
      ])
      expect(ofTag(run.events, "final_answer")).toEqual([
        expect.objectContaining({ agent: "agent_a", source: "stored_answer", content: "A" }),
      ])
      expect(run.files.get("final/agent_a/answer.txt")).toBe("A")
      expect(run.statuses.at(-1)).toMatchObject({ results: { winner: "agent_a", votes: { "agent1.1": 1, "agent2.1": 1 } } })
      expectConsistent(run)
    }),
  )

  effect("a late new answer clears the votes: the voters restart and vote again", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        runInMemory({
          agents: agents(
            { answer: "A", vote: "agent1" },
            { answer: "B", vote: "agent1" },
            { answer: "C", vote: "agent1", delay_seconds: 10 },
          ),
        }),
      )
      yield* TestClock.adjust("5 seconds")
      expect(yield* isDone(fiber)).toBe(false)
      yield* TestClock.adjust("30 seconds")
      const run = yield* Fiber.join(fiber)
      expect(run.reason).toBe("completed")
      const events = run.events
      const late = events.findIndex((e) => e._tag === "answer_submitted" && e.agent === "agent_c")
      expect(late).toBeGreaterThan(0)
      for (const id of ["agent_a", "agent_b"]) {
        expect(events.slice(0, late).some((e) => e._tag === "vote_cast" && e.agent === id)).toBe(true)
        expect(events.slice(late).some((e) => e._tag === "round_started" && e.agent === id && e.restart)).toBe(true)
        expect(events.slice(late).filter((e) => e._tag === "vote_cast" && e.agent === id)).toEqual([
          expect.objectContaining({ target: "agent_a", target_label: "agent1.1" }),
        ])
      }
      const status: any = run.statuses.at(-1)
      expect(status.agents.agent_a.times_restarted).toBeGreaterThanOrEqual(1)
      expect(status.agents.agent_b.times_restarted).toBeGreaterThanOrEqual(1)
      expect(status.results.votes).toEqual({ "agent1.1": 3, "agent2.1": 0, "agent3.1": 0 })
      expectConsistent(run)
    }),
  )

  /**
   * Four agents: a and b answer at once, and their rounds that show fewer than
   * four answers never reply (they are cancelled); c and d answer when the test
   * opens their gates, while every other round is out. `together` opens both
   * gates in one step; otherwise c's, then d's once the rounds c's answer made are out.
   */
  const lateAnswers = (together: boolean) =>
    Effect.gen(function* () {
      const gates = { agent_c: yield* Deferred.make<void>(), agent_d: yield* Deferred.make<void>() }
      /** Rounds that showed fewer than four answers and now wait for ever. */
      const out = yield* Queue.unbounded<string>()
      const wrap = (id: string, backend: LlmBackend): LlmBackend => ({
        ...backend,
        call: (request, onChunk) => {
          const shown = request.context?.kind === "round" ? request.context.shown.length : 4
          const held =
            id === "agent_c" || id === "agent_d"
              ? shown === 0
                ? Deferred.await(gates[id])
                : shown < 4
                  ? Effect.zipRight(Queue.offer(out, id), Effect.never)
                  : Effect.void
              : shown > 0 && shown < 4
                ? Effect.zipRight(Queue.offer(out, id), Effect.never)
                : Effect.void
          return Effect.zipRight(held, backend.call(request, onChunk))
        },
      })
      const waitOut = (n: number) => Effect.forEach(Array.from({ length: n }), () => Queue.take(out), { discard: true })
      const fiber = yield* Effect.fork(
        runInMemory(
          {
            agents: agents({ answer: "A" }, { answer: "B" }, { answer: "C" }, { answer: "D" }).map((a) => ({
              ...a,
              backend: { ...a.backend, vote: "agent1" },
            })),
          },
          { wrap },
        ),
      )
      yield* waitOut(2)
      if (together) {
        yield* Effect.all([Deferred.succeed(gates.agent_c, undefined), Deferred.succeed(gates.agent_d, undefined)])
      } else {
        yield* Deferred.succeed(gates.agent_c, undefined)
        yield* waitOut(3)
        yield* Deferred.succeed(gates.agent_d, undefined)
      }
      const run = yield* Fiber.join(fiber)
      expect(run.reason).toBe("completed")
      expectConsistent(run)
      const cancelled = (agent: string) => ofTag(run.events, "round_cancelled").filter(by(agent)).length
      return { run, cancelled: ["agent_a", "agent_b", "agent_c", "agent_d"].map(cancelled) }
    })

  live("two answers that arrive together are judged as one batch: the vote rounds they undo are cancelled once, not once per answer", () =>
    Effect.gen(function* () {
      const { run, cancelled } = yield* lateAnswers(true)
      expect(cancelled).toEqual([1, 1, 0, 0])
      // Both answers are in the log before any round is cancelled or started again.
      const types = run.events.map((e) => `${e._tag}:${"agent" in e ? e.agent : ""}`)
      const c = types.indexOf("answer_submitted:agent_c")
      const d = types.indexOf("answer_submitted:agent_d")
      const next = types.findIndex((t, i) => i > Math.min(c, d) && (t.startsWith("round_cancelled") || t.startsWith("round_started")))
      expect(next).toBeGreaterThan(Math.max(c, d))
      // Every round started after them shows all four answers.
      for (const e of ofTag(run.events.slice(Math.max(c, d)), "round_started"))
        expect(e.shown).toEqual(["agent1.1", "agent2.1", "agent3.1", "agent4.1"])
    }),
  )

  live("two answers that arrive apart each undo the vote rounds out at the time", () =>
    Effect.gen(function* () {
      const { cancelled } = yield* lateAnswers(false)
      // c's answer cancels a's and b's votes; d's cancels their second rounds, and c's vote round.
      expect(cancelled).toEqual([2, 2, 1, 0])
    }),
  )

  live("the answer cap: a keep_answering agent gives exactly max_new_answers_per_agent answers, then only votes", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory({
        agents: agents({ answer: "A", keep_answering: true }, { answer: "B", vote: "agent1" }, { answer: "C", vote: "agent1" }),
        orchestrator: { max_new_answers_per_agent: 2 },
      })
      expect(run.reason).toBe("completed")
      expect(
        ofTag(run.events, "answer_submitted")
          .filter(by("agent_a"))
          .map((e) => e.label),
      ).toEqual(["agent1.1", "agent1.2"])
      expect(ofTag(run.events, "answer_submitted").filter(by("agent_a"))[1]!.content).toBe("A (revision 2)")
      const second = run.events.findIndex((e) => e._tag === "answer_submitted" && e.label === "agent1.2")
      const laterRounds = ofTag(run.events.slice(second), "round_started").filter(by("agent_a"))
      expect(laterRounds.length).toBeGreaterThan(0)
      expect(laterRounds.every((e) => e.vote_only)).toBe(true)
      expect(ofTag(run.events, "reply_rejected")).toEqual([])
      expect(ofTag(run.events, "final_answer")).toEqual([expect.objectContaining({ agent: "agent_a", label: "agent1.2" })])
      expectConsistent(run)
    }),
  )

  live("one failing agent is reported as an error and the others complete", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory({
        agents: agents({ answer: "A", vote: "agent2" }, { answer: "B", vote: "agent2" }, { answer: "C", fail_calls: 99 }),
      })
      expect(run.reason).toBe("completed")
      expect(ofTag(run.events, "agent_failed")).toEqual([expect.objectContaining({ agent: "agent_c", round: 1, kind: "error" })])
      const status: any = run.statuses.at(-1)
      expect(status.agents.agent_c.status).toBe("error")
      expect(status.agents.agent_c.error).toEqual({
        type: "error",
        message: expect.stringContaining("scripted failure"),
        timestamp: expect.any(Number),
      })
      expect(status.results.winner).toBe("agent_b")
      expect(status.agents.agent_b.status).toBe("completed")
      expect(run.files.has("final/agent_b/answer.txt")).toBe(true)
      expectConsistent(run)
    }),
  )

  live("when every agent fails the run finishes with reason error and no final answer", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory({ agents: agents({ fail_calls: 99 }, { fail_calls: 99 }) })
      expect(run.reason).toBe("error")
      expect(ofTag(run.events, "final_answer")).toEqual([])
      expect(ofTag(run.events, "run_finished")).toEqual([expect.objectContaining({ reason: "error", winner: null })])
      expect(run.statuses.at(-1)).toMatchObject({ is_complete: true, finish_reason: "error", results: { winner: null } })
      expect([...run.files.keys()].some((k) => k.startsWith("final/"))).toBe(false)
      expectConsistent(run)
    }),
  )

  effect("an orchestrator timeout salvages the answer there is and finishes with timeout", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        runInMemory({
          agents: agents({ answer: "A" }, { hang: true }, { hang: true }),
          timeout_settings: { orchestrator_timeout_seconds: 60 },
        }),
      )
      yield* TestClock.adjust("59 seconds")
      expect(yield* isDone(fiber)).toBe(false)
      yield* TestClock.adjust("1 second")
      const run = yield* Fiber.join(fiber)
      expect(run.reason).toBe("timeout")
      expect(ofTag(run.events, "final_answer")).toEqual([
        expect.objectContaining({ agent: "agent_a", label: "agent1.1", source: "salvaged", content: "A" }),
      ])
      expect(ofTag(run.events, "run_finished")).toEqual([
        expect.objectContaining({ reason: "timeout", winner: "agent_a", message: "orchestrator timeout after 60s" }),
      ])
      expect(run.files.get("final/agent_a/answer.txt")).toBe("A")
      expect(run.statuses.at(-1)).toMatchObject({ is_complete: true, finish_reason: "timeout", results: { winner: "agent_a" } })
      expectConsistent(run)
    }),
  )

  effect("work past agent_timeout_seconds is ended at its deadline: its cut-off call recorded, then the agent failed with timeout", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        runInMemory({
          agents: agents({ answer: "A", vote: "agent1" }, { hang: true }),
          timeout_settings: { orchestrator_timeout_seconds: 300, agent_timeout_seconds: 30 },
        }),
      )
      yield* TestClock.adjust("29 seconds")
      expect(yield* isDone(fiber)).toBe(false)
      yield* TestClock.adjust("1 second")
      const run = yield* Fiber.join(fiber)
      expect(run.reason).toBe("completed")
      const failed = ofTag(run.events, "agent_failed")
      expect(failed).toEqual([expect.objectContaining({ agent: "agent_b", round: 1, kind: "timeout", message: "Agent timeout after 30s" })])
      const cutOff = run.events.findIndex((e) => e._tag === "call_end" && e.agent === "agent_b" && e.error === "cancelled")
      expect(cutOff).toBeGreaterThan(-1)
      expect(cutOff).toBeLessThan(run.events.indexOf(failed[0]!))
      expect(ofTag(run.events, "final_answer")).toEqual([expect.objectContaining({ agent: "agent_a", content: "A" })])
      expectConsistent(run)
    }),
  )

  effect("an interrupt finishes the run as interrupted, with the answer there is salvaged", () =>
    Effect.gen(function* () {
      const stop = yield* Deferred.make<string>()
      const fiber = yield* Effect.fork(
        runInMemory({ agents: agents({ answer: "A" }, { hang: true }) }, { interrupt: Deferred.await(stop) }),
      )
      yield* TestClock.adjust("3 seconds")
      expect(yield* isDone(fiber)).toBe(false)
      yield* Deferred.succeed(stop, "interrupted by SIGINT")
      const run = yield* Fiber.join(fiber)
      expect(run.reason).toBe("interrupted")
      expect(ofTag(run.events, "final_answer")).toEqual([expect.objectContaining({ agent: "agent_a", source: "salvaged", content: "A" })])
      expect(ofTag(run.events, "run_finished")).toEqual([
        expect.objectContaining({ reason: "interrupted", winner: "agent_a", message: "interrupted by SIGINT" }),
      ])
      expectConsistent(run)
    }),
  )

  effect("status.json is written at the start, every 2 s of the clock, and at the end", () =>
    Effect.gen(function* () {
      const statuses: Array<any> = []
      // Each call takes 5 s: answer at 5 s, vote at 10 s, presentation at 15 s.
      const fiber = yield* Effect.fork(runInMemory({ agents: agents({ answer: "Four.", final: "4", delay_seconds: 5 }) }, { statuses }))
      yield* TestClock.adjust("0 seconds")
      expect(statuses).toHaveLength(1)
      expect(statuses[0]).toMatchObject({ is_complete: false, coordination: { completion_percentage: 0 } })
      yield* TestClock.adjust("2 seconds")
      expect(statuses).toHaveLength(2)
      yield* TestClock.adjust("3 seconds")
      expect(statuses).toHaveLength(3)
      // Its call is out and nothing has come back (a scripted reply arrives whole at its delay's end): waiting.
      expect(statuses.at(-1)).toMatchObject({ agents: { agent_a: { status: "waiting" } } })
      yield* TestClock.adjust("1 second")
      expect(statuses).toHaveLength(4)
      expect(statuses.at(-1)).toMatchObject({
        agents: { agent_a: { status: "waiting", answer_count: 1 } },
        coordination: { completion_percentage: 50 },
      })
      yield* TestClock.adjust("10 seconds")
      const run = yield* Fiber.join(fiber)
      expect(run.statuses).toBe(statuses)
      // Start, t = 2, 4, ..., 14, end (t = 15).
      expect(statuses).toHaveLength(1 + 7 + 1)
      expect(statuses.map((s) => s.meta.last_updated)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 15])
      const last = statuses.at(-1)
      expect(last).toMatchObject({
        is_complete: true,
        finish_reason: "completed",
        coordination: { completion_percentage: 100, phase: "presentation", is_final_presentation: true },
        results: { votes: { "agent1.1": 1 }, winner: "agent_a", final_answer_preview: "4" },
        agents: { agent_a: { status: "completed", vote_cast: { voted_for_agent: "agent_a", voted_for_label: "agent1.1" } } },
      })
      expect(last.meta.elapsed_seconds).toBe(15)
      expect(statuses.slice(0, -1).every((s) => s.is_complete === false && s.coordination.completion_percentage < 100)).toBe(true)
      expectConsistent(run)
    }),
  )

  live("with three agents the final status has every vote and the winner", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory({
        agents: agents({ answer: "A", vote: "agent2" }, { answer: "B", vote: "agent2", final: "B final" }, { answer: "C", vote: "agent1" }),
      })
      const last: any = run.statuses.at(-1)
      expect(last).toMatchObject({
        is_complete: true,
        finish_reason: "completed",
        coordination: { completion_percentage: 100 },
        results: { votes: { "agent1.1": 1, "agent2.1": 2, "agent3.1": 0 }, winner: "agent_b", final_answer_preview: "B final" },
      })
      expect(Object.values(last.agents).map((a: any) => a.vote_cast?.voted_for_agent)).toEqual(["agent_b", "agent_b", "agent_a"])
      expectConsistent(run)
    }),
  )
})
