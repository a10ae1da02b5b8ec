/**
 * Issue 4: deterministic replay of recorded runs (`domain/replay/index.ts`, `massgen replay`).
 *
 * In memory: scripted runs (consensus, a restart after a late answer, a reply
 * with no tool call, a failing agent, a retried call, an agent timeout, an
 * orchestrator timeout, the answer cap, a signal, a skipped presentation, a
 * crash and a resume) are replayed from their events and `llm_log/` files: no
 * divergence, the same events (wall-clock fields aside), the same final answer.
 * A changed recorded reply, a missing one, or a request built differently is a
 * divergence naming the event, never a crash. `sameDecision` says what
 * comparing the events' JSON texts (wall-clock fields left out) says. What a
 * resume continues (`continuationsOf`, `roundsInFlight`), replayed from the
 * last point where nothing was under way, is what the whole replay rebuilds,
 * on every cut of random runs.
 *
 * Through the command line: `massgen replay LOG_DIR --check` on real run
 * directories (scripted, and each real-backend protocol through the fake
 * server) exits 0; after a recorded reply is edited it exits 2 and prints the
 * diverging event.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Arbitrary, Deferred, Effect, FastCheck, Fiber, Layer, Option, TestClock, TestContext } from "effect"
import fc from "fast-check"
import { recordedCall } from "../src/cli/run/run-dir.ts"
import { retryMessages } from "../src/domain/coordination/prompts.ts"
import type { Event } from "../src/domain/events/index.ts"
import { Event as EventSchema } from "../src/domain/events/index.ts"
import { encodeEventLine, readEventsText } from "../src/domain/log/index.ts"
import { continuationsOf, type ReplayResult, replayRun, roundsInFlight, sameDecision } from "../src/domain/replay/index.ts"
import { foldWithStart, quietPoint } from "../src/domain/replay/start.ts"
import { evolve, foldEvents, initialState, latestLabels } from "../src/domain/state/index.ts"
import { Backends } from "../src/services/backends/index.ts"
import { makeScriptedBackend } from "../src/services/backends/scripted.ts"
import { EventStore } from "../src/services/event-store/index.ts"
import { runCoordination } from "../src/services/orchestrator/index.ts"
import { CALL_LOG_FILE, callLogTexts } from "../src/services/run-files/call-logs.ts"
import { memoryRunFiles } from "../src/services/run-files/index.ts"
import { StatusWriter } from "../src/services/run-files/status-writer.ts"
import { callLogOf, callsOf } from "./support/call-logs.ts"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { effect, live } from "./support/effect-test.ts"
import { type FakeLlm, type FakeRequest, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { configOf, runInMemory } from "./support/harness.ts"

afterAll(() => cleanupSandboxes())

type Backend = Record<string, unknown>
const scripted = (backend: Backend = {}) => ({ type: "scripted", ...backend })
const agents = (...backends: ReadonlyArray<Backend>) => backends.map((b, i) => ({ id: `agent_${"abcdef"[i]}`, backend: scripted(b) }))

const ofTag = <T extends Event["_tag"]>(events: ReadonlyArray<Event>, tag: T) =>
  events.filter((e): e is Extract<Event, { _tag: T }> => e._tag === tag)

const replayOf = (doc: unknown, events: ReadonlyArray<Event>, files: ReadonlyMap<string, string>): ReplayResult =>
  replayRun(events, configOf(doc).agents, callsOf(files))

/** Fields that say when and where, not what. */
const WALL_CLOCK = new Set(["time", "seconds", "run_id"])
const decisions = (events: ReadonlyArray<Event>) =>
  events.map((e) => Object.fromEntries(Object.entries(e).filter(([k]) => !WALL_CLOCK.has(k))))

/** Replay gives back the recorded run: no divergence, the same events, the same final answer. */
const expectSameRun = (doc: unknown, run: { readonly events: ReadonlyArray<Event>; readonly files: ReadonlyMap<string, string> }) => {
  const result = replayOf(doc, run.events, run.files)
  expect(result.divergence).toBeNull()
  expect(decisions(result.events)).toEqual(decisions(run.events))
  expect(result.events.every((e, i) => sameDecision(e, run.events[i]!))).toBe(true)
  const recordedFinal = ofTag(run.events, "final_answer")[0] ?? null
  expect(result.state.final?.content ?? null).toBe(recordedFinal?.content ?? null)
  expect(result.state.finished?.reason).toBe(ofTag(run.events, "run_finished").at(-1)!.reason)
  return result
}

const isDone = <A, E>(fiber: Fiber.Fiber<A, E>) => Effect.map(Fiber.poll(fiber), Option.isSome)

/** Moves the TestClock a second at a time until the forked run ends (bounded). */
const untilDone = <A, E>(fiber: Fiber.Fiber<A, E>, maxSeconds = 600) =>
  Effect.gen(function* () {
    for (let s = 0; s < maxSeconds && !(yield* isDone(fiber)); s += 5) yield* TestClock.adjust("5 seconds")
    return yield* Fiber.join(fiber)
  })

const CONSENSUS = {
  agents: agents(
    { answer: "Four.", vote: "agent1", final: "The answer is 4." },
    { answer: "4", vote: "agent1" },
    { answer: "2+2=4", vote: "agent1" },
  ),
}

describe("replay of recorded in-memory runs", () => {
  live("consensus", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory(CONSENSUS)
      expect(run.reason).toBe("completed")
      const result = expectSameRun(CONSENSUS, run)
      expect(result.state.final?.content).toBe("The answer is 4.")
    }),
  )

  effect("a budget spent between two attempts of a round: no agent is charged with a failure, and replay agrees", () =>
    Effect.gen(function* () {
      const doc = {
        agents: agents(
          { model: "m", input_tokens: 1000, output_tokens: 0, script: [{ text: "Let me think." }] },
          { answer: "B", vote: "agent2", delay_seconds: 5 },
        ),
        pricing: { m: { input: 1000, output: 0 } },
        orchestrator: { budget_usd: 0.5 },
      }
      const run = yield* runInMemory(doc)
      expect(run.reason).toBe("budget")
      expect(ofTag(run.events, "reply_rejected")).toHaveLength(1)
      expect(ofTag(run.events, "agent_failed")).toEqual([])
      // The second attempt's call never started.
      expect(ofTag(run.events, "call_start").filter((e) => e.agent === "agent_a")).toHaveLength(1)
      expect(run.events.at(-1)).toMatchObject({ _tag: "run_finished", reason: "budget", winner: null, message: "budget of $0.5 spent" })
      expectSameRun(doc, run)
    }),
  )

  live("the log alone rebuilds a round in flight: its transcript and its next request are what the live round sent", () =>
    Effect.gen(function* () {
      const doc = {
        agents: agents({ script: [{ text: "no tool here" }, { new_answer: "A" }], vote: "agent1" }, { answer: "B", vote: "agent1" }),
      }
      const run = yield* runInMemory(doc)
      const at = run.events.findIndex((e) => e._tag === "reply_rejected" && e.agent === "agent_a")
      // The process died right after the rejection: the log is all there is.
      const machine = roundsInFlight(run.events.slice(0, at + 1), configOf(doc).agents).get("agent_a")!
      expect(machine).toMatchObject({ round: 1, role: "round", attempt: 2 })
      expect(machine.transcript).toEqual(retryMessages("no tool here", "Your reply called no tool."))
      const next = run.events.slice(at).find((e) => e._tag === "call_start" && e.agent === "agent_a") as Extract<
        Event,
        { _tag: "call_start" }
      >
      const sent = callLogOf(run.files)(next.call).request
      expect({
        system: machine.request.system,
        messages: [...machine.request.messages, ...machine.transcript],
        tools: machine.request.tools,
      }).toEqual({
        system: sent.system,
        messages: sent.messages,
        tools: sent.tools,
      })
    }),
  )

  effect("a restart after a late answer (delays under the TestClock)", () =>
    Effect.gen(function* () {
      const doc = {
        agents: agents(
          { answer: "A", vote: "agent1", delay_seconds: 1 },
          { answer: "B", vote: "agent1", delay_seconds: 2 },
          { answer: "C", vote: "agent1", delay_seconds: 10 },
        ),
      }
      const run = yield* untilDone(yield* Effect.fork(runInMemory(doc)))
      expect(run.reason).toBe("completed")
      expect(
        ofTag(run.events, "round_cancelled").length + ofTag(run.events, "round_started").filter((e) => e.restart).length,
      ).toBeGreaterThan(0)
      expectSameRun(doc, run)
    }),
  )

  live("a restart after a late answer (scripted order)", () =>
    Effect.gen(function* () {
      const doc = {
        agents: agents(
          { script: [{ new_answer: "A1" }, { vote: "agent1" }, { new_answer: "A2" }], vote: "agent1" },
          { answer: "B", vote: "agent1" },
        ),
      }
      const run = yield* runInMemory(doc)
      expect(run.reason).toBe("completed")
      expectSameRun(doc, run)
    }),
  )

  live("a reply with no tool call, then a valid one (reply_rejected)", () =>
    Effect.gen(function* () {
      const doc = {
        agents: agents({ script: [{ text: "Hmm, let me think." }, { new_answer: "A" }], vote: "agent1" }, { answer: "B", vote: "agent1" }),
      }
      const run = yield* runInMemory(doc)
      expect(ofTag(run.events, "reply_rejected")).toEqual([expect.objectContaining({ agent: "agent_a", reason: "no_tool_call" })])
      expectSameRun(doc, run)
    }),
  )

  live("three replies with no valid tool call fail the agent", () =>
    Effect.gen(function* () {
      const doc = {
        agents: agents(
          { script: [{ text: "one" }, { vote: "agent9" }, { text: "three" }] },
          { answer: "B", vote: "agent2", final: "B it is" },
        ),
      }
      const run = yield* runInMemory(doc)
      expect(ofTag(run.events, "agent_failed")).toEqual([expect.objectContaining({ agent: "agent_a", kind: "error" })])
      expectSameRun(doc, run)
    }),
  )

  live("a failing agent", () =>
    Effect.gen(function* () {
      const doc = { agents: agents({ fail_calls: 5 }, { answer: "B", vote: "agent2" }, { answer: "C", vote: "agent2" }) }
      const run = yield* runInMemory(doc)
      expect(run.reason).toBe("completed")
      expect(ofTag(run.events, "agent_failed").map((e) => e.agent)).toEqual(["agent_a"])
      expectSameRun(doc, run)
    }),
  )

  live("every agent failing", () =>
    Effect.gen(function* () {
      const doc = { agents: agents({ fail_calls: 5 }, { script: [{ fail: "no" }] }) }
      const run = yield* runInMemory(doc)
      expect(run.reason).toBe("error")
      expectSameRun(doc, run)
    }),
  )

  effect("a failed call retried after a backoff", () =>
    Effect.gen(function* () {
      const doc = { agents: agents({ fail_calls: 1, max_retries: 2, answer: "A", vote: "agent1" }, { answer: "B", vote: "agent1" }) }
      const run = yield* untilDone(yield* Effect.fork(runInMemory(doc)))
      expect(ofTag(run.events, "call_retried")).toHaveLength(1)
      expectSameRun(doc, run)
    }),
  )

  effect("an agent timeout", () =>
    Effect.gen(function* () {
      const doc = { agents: agents({ hang: true }, { answer: "B", vote: "agent2" }), timeout_settings: { agent_timeout_seconds: 5 } }
      const run = yield* untilDone(yield* Effect.fork(runInMemory(doc)))
      expect(ofTag(run.events, "agent_failed")).toEqual([expect.objectContaining({ agent: "agent_a", kind: "timeout" })])
      expectSameRun(doc, run)
    }),
  )

  effect("an orchestrator timeout salvages an answer", () =>
    Effect.gen(function* () {
      const doc = { agents: agents({ answer: "A" }, { hang: true }), timeout_settings: { orchestrator_timeout_seconds: 60 } }
      const run = yield* untilDone(yield* Effect.fork(runInMemory(doc)))
      expect(run.reason).toBe("timeout")
      expect(ofTag(run.events, "final_answer")).toEqual([expect.objectContaining({ source: "salvaged", content: "A" })])
      expectSameRun(doc, run)
    }),
  )

  live("the answer cap", () =>
    Effect.gen(function* () {
      const doc = {
        agents: agents({ answer: "A", keep_answering: true }, { answer: "B", vote: "agent1" }, { answer: "C", vote: "agent1" }),
        orchestrator: { max_new_answers_per_agent: 2 },
      }
      const run = yield* runInMemory(doc)
      expect(ofTag(run.events, "round_started").some((e) => e.vote_only)).toBe(true)
      expectSameRun(doc, run)
    }),
  )

  live("a skipped presentation", () =>
    Effect.gen(function* () {
      const doc = { ...CONSENSUS, orchestrator: { skip_final_presentation: true } }
      const run = yield* runInMemory(doc)
      expect(ofTag(run.events, "final_answer")).toEqual([expect.objectContaining({ source: "stored_answer", content: "Four." })])
      expectSameRun(doc, run)
    }),
  )

  effect("a run stopped by a signal", () =>
    Effect.gen(function* () {
      const stop = yield* Deferred.make<string>()
      const doc = { agents: agents({ answer: "A" }, { hang: true }) }
      const fiber = yield* Effect.fork(runInMemory(doc, { interrupt: Deferred.await(stop) }))
      yield* TestClock.adjust("3 seconds")
      yield* Deferred.succeed(stop, "stopped by SIGINT")
      const run = yield* Fiber.join(fiber)
      expect(run.reason).toBe("interrupted")
      expectSameRun(doc, run)
    }),
  )

  live("a run cut by a crash and resumed", () =>
    Effect.gen(function* () {
      const doc = CONSENSUS
      const config = configOf(doc)
      const first = yield* runInMemory(doc)
      // What a crash left: the first half of the log and a torn piece of the next line.
      const lines = first.events.map(encodeEventLine)
      const kept = Math.floor(lines.length / 2)
      const logDir = "/tmp/massgen-test/log_x"
      const streams = new Map([[logDir, `${lines.slice(0, kept).join("\n")}\n${lines[kept]!.slice(0, 9)}`]])
      const left = readEventsText(streams.get(logDir)!)
      const runFiles = memoryRunFiles()
      for (const [k, v] of first.files) if (k.startsWith("llm_log/")) runFiles.files.set(k, v)
      const backends = new Map(config.agents.map((a) => [a.id, makeScriptedBackend(a)]))
      yield* runCoordination({
        config,
        question: "What is 2+2?",
        logDir,
        runId: "log_x",
        version: "test",
        pid: 2,
        interrupt: Effect.never,
        resume: { events: left.events, skipped: left.skipped, tornTail: left.tornTail },
      }).pipe(
        Effect.scoped,
        Effect.provide(
          Layer.mergeAll(
            EventStore.memory(streams),
            StatusWriter.memory([]),
            runFiles.layer,
            Layer.succeed(Backends, { forAgent: (id: string) => backends.get(id)! }),
          ),
        ),
      )
      const events = readEventsText(streams.get(logDir)!).events
      expect(ofTag(events, "run_resumed")).toEqual([expect.objectContaining({ dropped_lines: 1, torn_tail: true })])
      expect(ofTag(events, "run_finished")).toEqual([expect.objectContaining({ reason: "completed" })])
      expectSameRun(doc, { events, files: runFiles.files })
    }),
  )
})

/**
 * The model of a counted vote: the request of the call that made it showed
 * every answer that was the latest of its agent when the vote was counted
 * (in its base messages or in an update injected into its round).
 */
const expectNoStaleVoteCounted = (run: { readonly events: ReadonlyArray<Event>; readonly files: ReadonlyMap<string, string> }) => {
  const calls = callsOf(run.files)
  let state = initialState
  run.events.forEach((e, i) => {
    if (e._tag === "vote_cast") {
      const call = run.events.slice(0, i).findLast((c) => c._tag === "call_end" && c.agent === e.agent && c.role === "round")
      const request = call?._tag === "call_end" ? calls(call.call)?.request : undefined
      const seen = JSON.stringify(request?.messages ?? [])
      const unseen = latestLabels(state).filter((label) => !seen.includes(`<${label}>`))
      expect({ vote: i, unseen }).toEqual({ vote: i, unseen: [] })
    }
    state = evolve(state, e)
  })
}

describe("replay of random scripted runs", () => {
  const step = fc.oneof(
    fc.record({ new_answer: fc.constantFrom("A", "B ✓", "C") }),
    fc.record({ vote: fc.constantFrom("agent1", "agent2", "agent3", "agent7") }),
    fc.record({ text: fc.constant("no tool here") }),
    fc.record({ fail: fc.constant("scripted failure") }),
  )
  const backend = (n: number, capped: boolean) =>
    fc.record(
      {
        answer: fc.constantFrom("Four", "4 – vier", "2+2=4"),
        vote: fc.integer({ min: 1, max: n }).map((i) => `agent${i}`),
        final: fc.constantFrom("The answer is 4.", ""),
        delay_seconds: fc.constantFrom(0, 0, 1, 2, 5),
        fail_calls: fc.constantFrom(0, 0, 0, 1, 9),
        max_retries: fc.constantFrom(0, 1),
        keep_answering: capped ? fc.boolean() : fc.constant(false),
        // An answer first, so that later steps (a reply with no tool call) come in rounds that injection reaches.
        script: fc.oneof(
          fc.array(step, { maxLength: 3 }),
          fc.array(step, { maxLength: 2 }).map((rest) => [{ new_answer: "A0" }, { text: "thinking" }, ...rest]),
        ),
        model: fc.constantFrom("priced", "unpriced"),
        input_tokens: fc.constantFrom(100, 1000),
      },
      { requiredKeys: ["answer", "vote", "delay_seconds"] },
    )
  const docArb = fc
    .record({
      n: fc.integer({ min: 2, max: 3 }),
      cap: fc.option(fc.integer({ min: 1, max: 2 }), { nil: null }),
      skip: fc.boolean(),
      budget: fc.option(fc.constantFrom(0.5, 1.5, 4), { nil: null }),
      restart: fc.boolean(),
    })
    .chain(({ n, cap, skip, budget, restart }) =>
      fc.array(backend(n, cap !== null), { minLength: n, maxLength: n }).map((backends) => ({
        agents: agents(...backends),
        pricing: { priced: { input: 1000, output: 0 } },
        orchestrator: { max_new_answers_per_agent: cap, skip_final_presentation: skip, budget_usd: budget, disable_injection: restart },
        timeout_settings: { orchestrator_timeout_seconds: 300, agent_timeout_seconds: 60 },
      })),
    )

  test("live interpretation and replay of the same replies give the same events and final answer", async () => {
    const reasons = new Set<string>()
    await fc.assert(
      fc.asyncProperty(docArb, async (doc) => {
        const run = await Effect.runPromise(
          Effect.gen(function* () {
            return yield* untilDone(yield* Effect.fork(runInMemory(doc)), 900)
          }).pipe(Effect.provide(TestContext.TestContext)),
        )
        expectSameRun(doc, run)
        expectNoStaleVoteCounted(run)
        // A resume's replay starts at the last point where nothing was under way: it rebuilds the work of the
        // agents still in the run as the whole replay does (the whole one also keeps a failed agent's last machine).
        const { agents: configured } = configOf(doc)
        for (let cut = 1 + (run.events.length % 3); cut <= run.events.length; cut += 2 + (cut % 7)) {
          const events = run.events.slice(0, cut)
          if (quietPoint(events) > 0) reasons.add("replayed from a quiet point")
          const whole = replayRun(events, configured, () => undefined, { checkRequests: false })
          const live = <A>(work: ReadonlyMap<string, A>) =>
            new Map([...work].filter(([agent]) => whole.state.agents.some((a) => a.info.id === agent && a.failure === null)))
          expect(live(continuationsOf(events, configured))).toEqual(live(whole.continuations))
          expect(live(roundsInFlight(events, configured))).toEqual(live(whole.rounds))
          // A resume folds the log once, keeping the fold at its quiet point for the replay.
          const { state, start } = foldWithStart(events)
          expect(state).toEqual(foldEvents(events))
          expect(start.state).toEqual(foldEvents(events.slice(0, start.from)))
          expect(live(continuationsOf(events, configured, {}, start))).toEqual(live(whole.continuations))
        }
        reasons.add(run.reason)
        if (ofTag(run.events, "reply_rejected").length > 0) reasons.add("rejected")
      }),
      { numRuns: 50 },
    )
    // The runs reach the decider's budget stop and the round machine's retries (injection, surely: test/injection.test.ts, test/properties.test.ts).
    expect(reasons).toContain("budget")
    expect(reasons).toContain("rejected")
    expect(reasons).toContain("replayed from a quiet point")
  }, 60_000)
})

describe("sameDecision", () => {
  /** What it stands for: both events written as JSON alike, with the wall-clock fields left out at any depth. */
  const byText = (a: unknown, b: unknown) => {
    const text = (e: unknown) => JSON.stringify(e, (key, value) => (WALL_CLOCK.has(key) ? undefined : value))
    return text(a) === text(b)
  }
  const values = FastCheck.oneof(
    FastCheck.jsonValue({ maxDepth: 2 }),
    FastCheck.constantFrom<unknown>(undefined, Number.NaN, Number.POSITIVE_INFINITY, -0, null, () => 1, Symbol("s"), [
      undefined,
      Number.NaN,
    ]),
  )
  /** An event with a field anywhere changed, dropped, added or moved to the end. */
  const edited = (event: Event, edits: ReadonlyArray<readonly [number, number, string, unknown]>): unknown => {
    const copy = structuredClone(event) as Record<string, unknown>
    for (const [kind, pick, key, value] of edits) {
      const objects: Array<Record<string, unknown>> = []
      const walk = (v: unknown) => {
        if (typeof v !== "object" || v === null) return
        if (!Array.isArray(v)) objects.push(v as Record<string, unknown>)
        for (const w of Object.values(v)) walk(w)
      }
      walk(copy)
      const target = objects[pick % objects.length]!
      const keys = Object.keys(target)
      const name = keys.length > 0 && kind !== 2 ? keys[pick % keys.length]! : key
      if (kind === 0) target[name] = value
      else if (kind === 1) delete target[name]
      else if (kind === 2) target[key] = value
      else {
        const moved = target[name]
        delete target[name]
        target[name] = moved
      }
    }
    return copy
  }
  const events = Arbitrary.make(EventSchema)
  const edits = FastCheck.array(
    FastCheck.tuple(
      FastCheck.nat(3),
      FastCheck.nat(),
      FastCheck.constantFrom("time", "seconds", "run_id", "agent", "extra", "reply"),
      values,
    ),
    { maxLength: 3 },
  )

  test("says what comparing their JSON texts says, on random events edited at any depth", () => {
    let same = 0
    FastCheck.assert(
      FastCheck.property(events, edits, edits, (event, left, right) => {
        const a = edited(event, left)
        const b = edited(event, right)
        expect(sameDecision(a as Event, b as Event)).toBe(byText(a, b))
        if (byText(a, b)) same += 1
      }),
      { numRuns: 3000 },
    )
    FastCheck.assert(
      FastCheck.property(events, events, (a, b) => expect(sameDecision(a, b)).toBe(byText(a, b))),
      { numRuns: 500 },
    )
    expect(same).toBeGreaterThan(300)
  })
})

describe("divergences", () => {
  const recordConsensus = () => Effect.runPromise(runInMemory(CONSENSUS))
  /** The events with the reply that call `n`'s call_end carries changed by `f`. */
  const editReply = (events: ReadonlyArray<Event>, n: number, f: (reply: any) => void): Array<Event> =>
    events.map((e) => {
      if (e._tag !== "call_end" || e.call !== n) return e
      const reply = structuredClone(e.reply)
      f(reply)
      return { ...e, reply }
    })
  const edit = (files: Map<string, string>, n: number, f: (record: any) => void) => {
    const record = JSON.parse(files.get(`llm_log/${n}.json`)!)
    f(record)
    files.set(`llm_log/${n}.json`, JSON.stringify(record))
  }
  /** The call whose reply made an event of `tag` for `agent`: the last call_end of that agent before it. */
  const callBehind = (events: ReadonlyArray<Event>, index: number) => {
    const e = events[index] as { agent: string }
    const end = events.slice(0, index).findLast((x) => x._tag === "call_end" && x.agent === e.agent)
    return (end as Extract<Event, { _tag: "call_end" }>).call
  }

  test("a changed recorded reply makes replay diverge at the event it changes, named by index and type", async () => {
    const run = await recordConsensus()
    const at = run.events.findIndex((e) => e._tag === "answer_submitted" && e.agent === "agent_b")
    const call = callBehind(run.events, at)
    const events = editReply(run.events, call, (r) => {
      r.tool_calls[0].arguments = JSON.stringify({ content: "Five." })
    })
    const result = replayOf(CONSENSUS, events, run.files)
    expect(result.divergence).not.toBeNull()
    expect(result.divergence!.index).toBe(at)
    expect(result.divergence!.recorded?._tag).toBe("answer_submitted")
    expect(result.divergence!.replayed).toEqual(expect.objectContaining({ _tag: "answer_submitted", content: "Five." }))
    expect(result.events).toHaveLength(at)
  })

  test("a changed vote in a recorded reply diverges at that vote", async () => {
    const run = await recordConsensus()
    const at = run.events.findIndex((e) => e._tag === "vote_cast" && e.agent === "agent_c")
    const call = callBehind(run.events, at)
    const events = editReply(run.events, call, (r) => {
      r.tool_calls[0].arguments = JSON.stringify({ agent_id: "agent2", reason: "changed my mind" })
    })
    const result = replayOf(CONSENSUS, events, run.files)
    expect(result.divergence?.index).toBe(at)
    expect(result.divergence?.recorded?._tag).toBe("vote_cast")
  })

  test("a changed presentation text diverges at final_answer", async () => {
    const run = await recordConsensus()
    const at = run.events.findIndex((e) => e._tag === "final_answer")
    const call = ofTag(run.events, "call_end").find((e) => e.role === "presentation")!.call
    const events = editReply(run.events, call, (r) => {
      r.text = "Something else."
    })
    const result = replayOf(CONSENSUS, events, run.files)
    expect(result.divergence?.index).toBe(at)
    expect(result.divergence?.recorded?._tag).toBe("final_answer")
  })

  test("a reply that no longer calls a tool diverges at the round's result", async () => {
    const run = await recordConsensus()
    const at = run.events.findIndex((e) => e._tag === "answer_submitted" && e.agent === "agent_a")
    const call = callBehind(run.events, at)
    const events = editReply(run.events, call, (r) => {
      r.tool_calls = []
    })
    const result = replayOf(CONSENSUS, events, run.files)
    expect(result.divergence).not.toBeNull()
    expect(result.divergence!.index).toBe(at)
  })

  test("a log older than call_end's reply is replayed from the replies in llm_log/", async () => {
    const run = await recordConsensus()
    const old = run.events.map((e) => (e._tag === "call_end" ? { ...e, reply: undefined } : e)) as Array<Event>
    expect(replayOf(CONSENSUS, old, run.files).divergence).toBeNull()
    const at = old.findIndex((e) => e._tag === "answer_submitted" && e.agent === "agent_b")
    const files = new Map(run.files)
    edit(files, callBehind(old, at), (r) => {
      r.reply.toolCalls[0].arguments = JSON.stringify({ content: "Five." })
    })
    expect(replayOf(CONSENSUS, old, files).divergence?.index).toBe(at)
  })

  test("a call log keeps each long text once, in blobs/; a missing blob is a divergence, not a crash", async () => {
    const run = await recordConsensus()
    const logs = [...run.files].filter(([k]) => k.startsWith("llm_log/"))
    const blobs = [...run.files].filter(([k]) => k.startsWith("blobs/"))
    expect(blobs.length).toBeGreaterThan(0)
    // The system prompt of every call is one blob, not a copy per call.
    const system = callLogOf(run.files)(1).request.system as string
    expect(system.length).toBeGreaterThanOrEqual(256)
    expect(logs.every(([, text]) => !text.includes(system))).toBe(true)
    expect(blobs.filter(([, text]) => text === system)).toHaveLength(1)
    const start = ofTag(run.events, "call_start")[0]!
    const files = new Map(run.files)
    for (const [k, text] of blobs) if (text === system) files.delete(k)
    expect(replayOf(CONSENSUS, run.events, files).divergence?.index).toBe(run.events.indexOf(start))
  })

  test("a missing llm_log file is a divergence saying it is missing, not a crash", async () => {
    const run = await recordConsensus()
    const end = ofTag(run.events, "call_end")[1]!
    const files = new Map(run.files)
    files.delete(`llm_log/${end.call}.json`)
    const result = replayOf(CONSENSUS, run.events, files)
    expect(result.divergence).not.toBeNull()
    expect(result.divergence!.reason).toContain("missing")
    expect(result.divergence!.index).toBe(run.events.indexOf(end))
    expect(result.divergence!.recorded?._tag).toBe("call_end")
  })

  test("an llm_log file that is not JSON, as massgen replay reads it from disk, is a divergence, not a crash", async () => {
    const run = await recordConsensus()
    const end = ofTag(run.events, "call_end")[0]!
    const dir = sandbox()
    fs.mkdirSync(nodePath.join(dir, "llm_log"))
    fs.mkdirSync(nodePath.join(dir, "blobs"))
    for (const [k, v] of run.files) if (k.startsWith("llm_log/") || k.startsWith("blobs/")) fs.writeFileSync(nodePath.join(dir, k), v)
    expect(replayRun(run.events, configOf(CONSENSUS).agents, recordedCall(dir)).divergence).toBeNull()
    fs.writeFileSync(nodePath.join(dir, "llm_log", `${end.call}.json`), "{ not json")
    const result = replayRun(run.events, configOf(CONSENSUS).agents, recordedCall(dir))
    expect(result.divergence?.index).toBe(run.events.indexOf(end))
    expect(result.divergence?.reason).toContain("missing")
  })

  test("a request built differently from the recorded one is a divergence at its call_start", async () => {
    const run = await recordConsensus()
    const start = ofTag(run.events, "call_start")
      .filter((e) => e.agent === "agent_b" && run.files.has(`llm_log/${e.call}.json`))
      .at(-1)!
    expect(start.round).toBeGreaterThan(1)
    const files = new Map(run.files)
    edit(files, start.call, (r) => {
      r.request.messages[0].content = `${r.request.messages[0].content}\n(an older massgen said this)`
    })
    const result = replayOf(CONSENSUS, run.events, files)
    expect(result.divergence).not.toBeNull()
    expect(result.divergence!.index).toBe(run.events.indexOf(start))
    expect(result.divergence!.recorded?._tag).toBe("call_start")
    expect(result.divergence!.reason).toContain("request")
  })

  test("a request with different tools or system text is a divergence too", async () => {
    const run = await recordConsensus()
    const start = ofTag(run.events, "call_start")[0]!
    for (const change of [(r: any) => (r.request.system += "!"), (r: any) => r.request.tools.pop()]) {
      const files = new Map(run.files)
      edit(files, start.call, change)
      const result = replayOf(CONSENSUS, run.events, files)
      expect(result.divergence?.index).toBe(run.events.indexOf(start))
    }
  })

  test("a config changed since the run (another system message) is a divergence, not a crash", async () => {
    const run = await recordConsensus()
    const changed = { agents: CONSENSUS.agents.map((a, i) => (i === 0 ? { ...a, system_message: "Be brief." } : a)) }
    const result = replayOf(changed, run.events, run.files)
    expect(result.divergence?.recorded?._tag).toBe("call_start")
  })

  test("an edited event in the log is a divergence at that event", async () => {
    const run = await recordConsensus()
    const at = run.events.findIndex((e) => e._tag === "presentation_started")
    const events = run.events.map((e, i) => (i === at ? { ...e, agent: "agent_b" } : e)) as Array<Event>
    const result = replayOf(CONSENSUS, events, run.files)
    expect(result.divergence?.index).toBe(at)
  })
})

// ---------------------------------------------------------------------------
// Through the command line

const QUESTION = "What is 2+2?"
const CLEAN_ENV = { OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined, FAKE_LLM_KEY: "fake-key" }

const logDirOf = (lines: ReadonlyArray<string>, out: string): string => {
  const line = lines.find((l) => l.startsWith("LOG_DIR: "))
  if (line === undefined) throw new Error(`no LOG_DIR line:\n${out}`)
  return line.slice("LOG_DIR: ".length)
}

const recordRun = async (doc: unknown, env: Record<string, string | undefined> = {}) => {
  const cwd = sandbox()
  const config = writeConfig(cwd, doc)
  const result = await runCli("source", ["--automation", "--config", config, QUESTION], { cwd, env: { ...CLEAN_ENV, ...env } })
  expect({ code: result.exitCode, out: result.stdout + result.stderr }).toEqual({ code: 0, out: expect.any(String) })
  return { cwd, logDir: logDirOf(result.lines, result.stdout + result.stderr) }
}

const replayCli = (logDir: string, cwd: string, env: Record<string, string | undefined> = {}) =>
  runCli("source", ["replay", logDir, "--check"], { cwd, env: { ...CLEAN_ENV, ...env } })

const eventLines = (dir: string) =>
  fs
    .readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")

describe.concurrent("massgen replay --check", () => {
  test("exit 0 on a recorded scripted run; the replayed run is written to a new directory", async () => {
    const { cwd, logDir } = await recordRun({
      ...CONSENSUS,
      agents: CONSENSUS.agents.map((a) => ({ ...a, backend: { ...a.backend, delay_seconds: 0.05 } })),
    })
    const before = fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")
    const result = await replayCli(logDir, cwd)
    expect({ code: result.exitCode, out: result.stdout, err: result.stderr }).toEqual({
      code: 0,
      out: expect.stringContaining("SAME"),
      err: "",
    })
    const replayDir = result.lines.find((l) => l.startsWith("REPLAY_DIR: "))!.slice("REPLAY_DIR: ".length)
    expect(replayDir).not.toBe(logDir)
    expect(fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")).toBe(before)
    const recorded = readEventsText(before).events
    const replayed = readEventsText(fs.readFileSync(nodePath.join(replayDir, "events.jsonl"), "utf8")).events
    expect(decisions(replayed)).toEqual(decisions(recorded))
    expect(fs.readFileSync(nodePath.join(replayDir, "final", "agent_a", "answer.txt"), "utf8")).toBe("The answer is 4.")
    expect(JSON.parse(fs.readFileSync(nodePath.join(replayDir, "status.json"), "utf8")).results.winner).toBe("agent_a")
  }, 60_000)

  test("exit 2 after a recorded reply is edited, printing the diverging event", async () => {
    const { cwd, logDir } = await recordRun(CONSENSUS)
    const events = readEventsText(fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")).events
    const at = events.findIndex((e) => e._tag === "answer_submitted" && e.agent === "agent_c")
    const end = events.slice(0, at).findLast((e) => e._tag === "call_end" && e.agent === "agent_c") as Extract<Event, { _tag: "call_end" }>
    const file = nodePath.join(logDir, "events.jsonl")
    const lines = fs.readFileSync(file, "utf8").split("\n")
    const endLine = lines.findIndex((l) => l.includes('"type":"call_end"') && l.includes(`"call":${end.call},`))
    const record = JSON.parse(lines[endLine]!)
    record.reply.tool_calls[0].arguments = JSON.stringify({ content: "2+2=5" })
    lines[endLine] = JSON.stringify(record)
    fs.writeFileSync(file, lines.join("\n"))
    const result = await replayCli(logDir, cwd)
    expect(result.exitCode).toBe(2)
    const diverged = result.lines.find((l) => l.startsWith("DIVERGED"))
    // No line was dropped from this log: event N is line N.
    expect(diverged).toBe(`DIVERGED at event ${at + 1} (line ${at + 1} of events.jsonl): this code makes a different event here`)
    expect(result.stdout).toContain('"_tag":"answer_submitted"')
    expect(result.stdout).toContain("2+2=5")
  }, 60_000)

  test("exit 2 naming a missing recorded request", async () => {
    const { cwd, logDir } = await recordRun(CONSENSUS)
    const calls = nodePath.join(logDir, CALL_LOG_FILE)
    fs.writeFileSync(
      calls,
      fs
        .readFileSync(calls, "utf8")
        .split("\n")
        .filter((line) => !line.startsWith('{"call":2,'))
        .join("\n"),
    )
    const result = await replayCli(logDir, cwd)
    expect(result.exitCode).toBe(2)
    expect(result.stdout).toMatch(/DIVERGED at event (\d+) \(line \1 of events\.jsonl\): the request of call 2 is missing/)
    expect(result.stderr).toBe("")
  }, 60_000)

  test("a directory that is not a run is exit 1", async () => {
    const cwd = sandbox()
    const result = await runCli("source", ["replay", cwd, "--check"], { cwd })
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toContain("not a massgen run")
    expect(fs.readdirSync(cwd)).toEqual([])
  }, 60_000)
})

// ---------------------------------------------------------------------------
// Each real-backend protocol, through the fake server

type Provider = "openai" | "chatcompletion" | "claude"

/** Answers while its own answer is not shown, then votes for the first agent shown; presents when offered no tools. */
const council = (req: FakeRequest) => {
  const text = promptText(req)
  const self = /You are (agent\d+)\./.exec(text)?.[1] ?? "agent1"
  const tools = offeredTools(req)
  if (tools.length === 0) return reply({ text: ["Final: ", "4."], usage: { input: 100, output: 10 } })
  const start = text.indexOf("<CURRENT ANSWERS")
  const current = start < 0 ? "" : text.slice(start, text.indexOf("<END OF CURRENT ANSWERS>", start))
  if (tools.includes("new_answer") && !current.includes(`<${self}.`)) {
    return reply({ text: "Drafting.", toolCalls: [{ name: "new_answer", args: { content: `${self} says 4 – ✓` }, chunks: 4 }] })
  }
  const target = /<(agent\d+)\.\d+>/.exec(current)?.[1] ?? self
  return reply({ text: "Reviewing.", toolCalls: [{ name: "vote", args: { agent_id: target, reason: "right" }, chunks: 3 }] })
}

const providerDoc = (fake: FakeLlm, provider: Provider) => ({
  agents: [1, 2, 3].map((n) => ({
    id: `agent_${"abc"[n - 1]}`,
    system_message: `You are agent${n}.`,
    backend: {
      type: provider,
      model: "fake-model",
      base_url: provider === "claude" ? fake.url : fake.openAiBaseUrl,
      api_key: "${FAKE_LLM_KEY}",
    },
  })),
  timeout_settings: { orchestrator_timeout_seconds: 40, agent_timeout_seconds: 30 },
})

describe.concurrent("replay of runs recorded through each real-backend protocol", () => {
  for (const provider of ["openai", "chatcompletion", "claude"] as const) {
    test(`${provider}: --check passes, with no request to the server`, async () => {
      const fake = await startFakeLlm({ respond: council })
      try {
        const { cwd, logDir } = await recordRun(providerDoc(fake, provider))
        const calls = fake.requests.length
        expect(calls).toBeGreaterThanOrEqual(7)
        expect(eventLines(logDir).length).toBeGreaterThan(10)
        // Replay needs neither the server's key nor the server.
        const result = await replayCli(logDir, cwd, { FAKE_LLM_KEY: undefined })
        expect({ code: result.exitCode, out: result.stdout, err: result.stderr }).toEqual({
          code: 0,
          out: expect.stringContaining("SAME"),
          err: "",
        })
        expect(fake.requests.length).toBe(calls)
      } finally {
        fake.stop()
      }
    }, 60_000)
  }
})

/** How each protocol's request carries the config's reasoning effort. */
const EFFORT_SENT: Readonly<Record<Provider, string>> = {
  openai: '"reasoning":{"effort":"high"}',
  chatcompletion: '"reasoning_effort":"high"',
  claude: '"output_config":{"effort":"high"}',
}

describe.concurrent("replay of runs with provider tools and settings", () => {
  for (const provider of ["openai", "chatcompletion", "claude"] as const) {
    test(`${provider}: every reply reasons and searches the web (where the protocol can); --check passes`, async () => {
      const fake = await startFakeLlm({
        respond: (req) => {
          const behaviour = council(req)
          return behaviour.kind === "reply"
            ? reply({ ...behaviour.spec, reasoning: ["Weighing it."], hosted: [{ tool: "web_search", query: "2+2" }] })
            : behaviour
        },
      })
      try {
        const hosted = provider === "chatcompletion" ? {} : { enable_web_search: true }
        const settings = { ...hosted, reasoning: { effort: "high" }, top_p: 0.9, extra_body: { metadata: { run: "replay" } } }
        const doc = providerDoc(fake, provider)
        const { cwd, logDir } = await recordRun({
          ...doc,
          agents: doc.agents.map((a) => ({ ...a, backend: { ...a.backend, ...settings } })),
        })
        expect(fake.requests.every((r) => JSON.stringify(r.body).includes(EFFORT_SENT[provider]))).toBe(true)
        const result = await replayCli(logDir, cwd, { FAKE_LLM_KEY: undefined })
        expect({ code: result.exitCode, out: result.stdout, err: result.stderr }).toEqual({
          code: 0,
          out: expect.stringContaining("SAME"),
          err: "",
        })
        const logs = [...callLogTexts(logDir).values()]
        expect(logs.some((l) => l.includes('"hostedToolUses"'))).toBe(provider !== "chatcompletion")
      } finally {
        fake.stop()
      }
    }, 60_000)
  }
})
