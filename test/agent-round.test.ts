/**
 * One round of one agent: `runRound`, the round machine's interpreter,
 * against a fake backend under the TestClock (retries, backoff, retry-after, timeouts).
 */
import { describe, expect } from "bun:test"
import { Clock, Effect, Fiber, Option, TestClock } from "effect"
import { presentationRequest } from "../src/domain/coordination/prompts.ts"
import { MAX_ATTEMPTS } from "../src/domain/coordination/round-machine.ts"
import type { Event } from "../src/domain/events/index.ts"
import type { LlmReply, LlmRequest, ShownAnswer } from "../src/domain/llm.ts"
import { type Backend, BackendError } from "../src/services/backends/index.ts"
import { type RoundDeps, type RoundInput, runPresentation, runRound } from "../src/services/orchestrator/agent-round.ts"
import { effect } from "./support/effect-test.ts"
import { newAnswer, reply, request, shownOf, tool, voteFor } from "./support/replies.ts"

// ---------------------------------------------------------------- fixtures

const textOnly = (text: string) => reply(text)

type Step =
  | { readonly _tag: "reply"; readonly reply: LlmReply }
  | { readonly _tag: "error"; readonly error: BackendError }
  | { readonly _tag: "hang" }

const ok = (r: LlmReply): Step => ({ _tag: "reply", reply: r })
const fail = (options: { retryable?: boolean; retryAfterSeconds?: number | null; detail?: string } = {}): Step => ({
  _tag: "error",
  error: new BackendError({
    reason: options.retryable === false ? "bad_request" : "server_error",
    detail: options.detail ?? "HTTP 503",
    retryable: options.retryable ?? true,
    retryAfterSeconds: options.retryAfterSeconds ?? null,
  }),
})
const hang: Step = { _tag: "hang" }

interface FakeBackend extends Backend {
  readonly requests: Array<LlmRequest>
}

/** A backend that plays `steps` one per call; the last step repeats. */
const fakeBackend = (
  steps: ReadonlyArray<Step>,
  options: { maxRetries?: number; callTimeoutSeconds?: number | null } = {},
): FakeBackend => {
  const requests: Array<LlmRequest> = []
  return {
    type: "fake",
    model: "fake-model",
    maxRetries: options.maxRetries ?? 0,
    callTimeoutSeconds: options.callTimeoutSeconds ?? null,
    requests,
    call: (req, onChunk) =>
      Effect.suspend(() => {
        const step = steps[Math.min(requests.length, steps.length - 1)]!
        requests.push(req)
        switch (step._tag) {
          case "reply":
            return (step.reply.text === "" ? Effect.void : onChunk({ _tag: "text", text: step.reply.text })).pipe(Effect.as(step.reply))
          case "error":
            return Effect.fail(step.error)
          case "hang":
            return Effect.never
        }
      }),
  }
}

const makeDeps = () => {
  const events: Array<Event> = []
  const texts: Array<string> = []
  let calls = 0
  const deps: RoundDeps = {
    emit: (event) => Effect.sync(() => void events.push(event)),
    now: Clock.currentTimeMillis.pipe(Effect.map((ms) => new Date(ms).toISOString())),
    nextCallNumber: Effect.sync(() => ++calls),
    onText: (_agent, text) => Effect.sync(() => void texts.push(text)),
    onReasoning: () => Effect.void,
    logCall: () => Effect.void,
    priceOf: () => null,
  }
  return { deps, events, texts }
}

const roundInput = (
  backend: Backend,
  options: { shown?: ReadonlyArray<ShownAnswer>; voteOnly?: boolean; agentTimeoutSeconds?: number } = {},
): RoundInput => ({
  agent: "a",
  round: 1,
  backend,
  request: request(options.shown ?? [], options.voteOnly ?? false),
  agentTimeoutSeconds: options.agentTimeoutSeconds ?? 600,
})

const tags = (events: ReadonlyArray<Event>) => events.map((e) => e._tag)
const ofTag = <T extends Event["_tag"]>(events: ReadonlyArray<Event>, tag: T) =>
  events.filter((e): e is Extract<Event, { _tag: T }> => e._tag === tag)

/** Whether a forked fiber has finished. */
const isDone = <A, E>(fiber: Fiber.Fiber<A, E>) => Effect.map(Fiber.poll(fiber), Option.isSome)

// ---------------------------------------------------------------- runRound

describe("runRound", () => {
  effect("a reply with no tool call, then a tool call on the 2nd attempt: the answer, and one reply_rejected", () =>
    Effect.gen(function* () {
      const { deps, events, texts } = makeDeps()
      const backend = fakeBackend([ok(textOnly("Let me think.")), ok(newAnswer("4"))])
      const result = yield* runRound(deps, roundInput(backend))
      expect(result).toEqual({ _tag: "answered", agent: "a", round: 1, content: "4" })
      expect(tags(events)).toEqual(["call_start", "call_end", "reply_rejected", "call_start", "call_end"])
      expect(ofTag(events, "reply_rejected")).toEqual([
        expect.objectContaining({ agent: "a", round: 1, attempt: 1, reason: "no_tool_call" }),
      ])
      expect(ofTag(events, "call_start").map((e) => [e.call, e.attempt, e.role])).toEqual([
        [1, 1, "round"],
        [2, 2, "round"],
      ])
      // The second call is told what was wrong, with the first reply kept in view.
      const second = backend.requests[1]!
      expect(second.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"])
      expect(second.messages[1]!.content).toBe("Let me think.")
      expect(second.messages[2]!.content).toContain("Your reply called no tool.")
      expect(texts).toEqual(["Let me think."])
    }),
  )

  effect(`${MAX_ATTEMPTS} invalid replies fail the round`, () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([ok(textOnly("hmm")), ok(newAnswer("")), ok(voteFor("agent7"))])
      const result = yield* runRound(deps, roundInput(backend))
      expect(result).toMatchObject({ _tag: "failed", agent: "a", round: 1, kind: "error" })
      expect(result._tag === "failed" && result.message).toContain(`no valid tool call after ${MAX_ATTEMPTS} attempts`)
      expect(ofTag(events, "reply_rejected").map((e) => [e.attempt, e.reason])).toEqual([
        [1, "no_tool_call"],
        [2, "empty_answer"],
        [3, "invalid_vote_target"],
      ])
      expect(backend.requests).toHaveLength(MAX_ATTEMPTS)
    }),
  )

  effect("a vote-only round rejects new_answer as answer_limit and accepts the vote that follows", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([ok(newAnswer("more")), ok(voteFor("agent2", "good"))])
      const result = yield* runRound(deps, roundInput(backend, { shown: shownOf("agent1.2", "agent2.1"), voteOnly: true }))
      expect(result).toEqual({ _tag: "voted", agent: "a", round: 1, targetAnonId: "agent2", reason: "good" })
      expect(ofTag(events, "reply_rejected").map((e) => e.reason)).toEqual(["answer_limit"])
      expect(backend.requests[0]!.tools.map((t) => t.name)).toEqual(["vote"])
    }),
  )

  effect("a retryable failure is tried again after a backoff of 0.8–1.2 s (call_retried), then succeeds", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([fail(), ok(newAnswer("4"))], { maxRetries: 1 })
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend)))
      yield* TestClock.adjust("790 millis")
      expect(yield* isDone(fiber)).toBe(false)
      expect(backend.requests).toHaveLength(1)
      yield* TestClock.adjust("410 millis")
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "answered", agent: "a", round: 1, content: "4" })
      const [retried] = ofTag(events, "call_retried")
      expect(retried).toMatchObject({ call: 1, agent: "a", round: 1, retry: 1, error: "server error: HTTP 503" })
      expect(retried!.delay_seconds).toBeGreaterThanOrEqual(0.8)
      expect(retried!.delay_seconds).toBeLessThanOrEqual(1.2)
      expect(tags(events)).toEqual(["call_start", "call_end", "call_retried", "call_start", "call_end"])
      expect(ofTag(events, "call_end").map((e) => e.error)).toEqual(["server error: HTTP 503", null])
      // A retry serves the same reply attempt.
      expect(ofTag(events, "call_start").map((e) => e.attempt)).toEqual([1, 1])
      expect(ofTag(events, "reply_rejected")).toEqual([])
    }),
  )

  effect("the backoff doubles: the second retry waits 1.6–2.4 s", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([fail(), fail(), ok(newAnswer("4"))], { maxRetries: 2 })
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend)))
      yield* TestClock.adjust("4 seconds")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "answered" })
      const delays = ofTag(events, "call_retried").map((e) => e.delay_seconds)
      expect(delays).toHaveLength(2)
      expect(delays[1]!).toBeGreaterThanOrEqual(1.6)
      expect(delays[1]!).toBeLessThanOrEqual(2.4)
    }),
  )

  effect("the retry-after of the error is honoured exactly", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([fail({ retryAfterSeconds: 7 }), ok(newAnswer("4"))], { maxRetries: 3 })
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend)))
      yield* TestClock.adjust("6999 millis")
      expect(yield* isDone(fiber)).toBe(false)
      expect(ofTag(events, "call_retried").map((e) => e.delay_seconds)).toEqual([7])
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "answered", content: "4" })
      expect(ofTag(events, "call_start").map((e) => e.time)).toEqual([new Date(0).toISOString(), new Date(7000).toISOString()])
    }),
  )

  effect("a retryable failure with no retries left fails the round", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([fail(), fail(), ok(newAnswer("4"))], { maxRetries: 1 })
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend)))
      yield* TestClock.adjust("2 seconds")
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "failed", agent: "a", round: 1, kind: "error", message: "server error: HTTP 503" })
      expect(ofTag(events, "call_retried")).toHaveLength(1)
      expect(backend.requests).toHaveLength(2)
    }),
  )

  effect("a failure that is not retryable fails the round at once", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([fail({ retryable: false, detail: "HTTP 400" }), ok(newAnswer("4"))], { maxRetries: 5 })
      const result = yield* runRound(deps, roundInput(backend))
      expect(result).toEqual({ _tag: "failed", agent: "a", round: 1, kind: "error", message: "bad request: HTTP 400" })
      expect(ofTag(events, "call_retried")).toEqual([])
    }),
  )

  effect("the per-call timeout fires on a hanging backend", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([hang], { callTimeoutSeconds: 5 })
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend)))
      yield* TestClock.adjust("4999 millis")
      expect(yield* isDone(fiber)).toBe(false)
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toEqual({
        _tag: "failed",
        agent: "a",
        round: 1,
        kind: "error",
        message: "timeout: no reply after 5s",
      })
      expect(ofTag(events, "call_end")).toEqual([expect.objectContaining({ seconds: 5, error: "timeout: no reply after 5s" })])
    }),
  )

  effect("a call timeout is retryable: the next call can succeed", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([hang, ok(newAnswer("4"))], { callTimeoutSeconds: 5, maxRetries: 1 })
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend)))
      yield* TestClock.adjust("7 seconds")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "answered", content: "4" })
      expect(ofTag(events, "call_retried").map((e) => e.error)).toEqual(["timeout: no reply after 5s"])
    }),
  )

  effect("the agent timeout ends a hanging round with kind timeout", () =>
    Effect.gen(function* () {
      const { deps } = makeDeps()
      const backend = fakeBackend([hang])
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend, { agentTimeoutSeconds: 30 })))
      yield* TestClock.adjust("29 seconds")
      expect(yield* isDone(fiber)).toBe(false)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(fiber)).toEqual({
        _tag: "failed",
        agent: "a",
        round: 1,
        kind: "timeout",
        message: "Agent timeout after 30s",
      })
    }),
  )

  effect("the agent timeout covers the retries of a round, not each call", () =>
    Effect.gen(function* () {
      const { deps } = makeDeps()
      const backend = fakeBackend([fail({ retryAfterSeconds: 20 }), hang], { maxRetries: 10 })
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend, { agentTimeoutSeconds: 30 })))
      yield* TestClock.adjust("29999 millis")
      expect(yield* isDone(fiber)).toBe(false)
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "failed", kind: "timeout" })
      expect(backend.requests).toHaveLength(2)
    }),
  )

  const rateLimited = (retryAfterSeconds: number) =>
    ({
      _tag: "error",
      error: new BackendError({
        reason: "rate_limited",
        detail: "HTTP 429: slow down, tokens per minute exceeded",
        retryable: true,
        retryAfterSeconds,
      }),
    }) as const

  effect("a retry-after longer than the round's time left fails the call at once, as rate-limited, with the provider's message", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([rateLimited(5), rateLimited(120), ok(newAnswer("4"))], { maxRetries: 5 })
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend, { agentTimeoutSeconds: 30 })))
      // The first retry-after (5 s) fits in the 30 s of the round: it is waited for.
      yield* TestClock.adjust("5 seconds")
      // The second (120 s) does not fit in the 25 s left: no waiting, no timeout.
      expect(yield* isDone(fiber)).toBe(true)
      const message =
        "rate limited: HTTP 429: slow down, tokens per minute exceeded (retry-after 120s is past the 25s left of agent_timeout_seconds)"
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "failed", agent: "a", round: 1, kind: "error", message })
      expect(ofTag(events, "call_retried").map((e) => e.delay_seconds)).toEqual([5])
      expect(ofTag(events, "call_end").map((e) => e.error)).toEqual([
        "rate limited: HTTP 429: slow down, tokens per minute exceeded",
        "rate limited: HTTP 429: slow down, tokens per minute exceeded",
      ])
      expect(backend.requests).toHaveLength(2)
    }),
  )

  effect("a retry-after that ends exactly at the round's timeout is not waited for either; the presentation fails the same way", () =>
    Effect.gen(function* () {
      const { deps } = makeDeps()
      const round = yield* runRound(deps, roundInput(fakeBackend([rateLimited(30)], { maxRetries: 1 }), { agentTimeoutSeconds: 30 }))
      expect(round).toMatchObject({
        _tag: "failed",
        kind: "error",
        message: expect.stringContaining("retry-after 30s is past the 30s left"),
      })
      const presentation = yield* runPresentation(deps, roundInput(fakeBackend([rateLimited(3600)], { maxRetries: 1 })))
      expect(presentation).toMatchObject({ _tag: "presentation_failed", message: expect.stringContaining("rate limited: HTTP 429") })
    }),
  )

  effect("a backoff past the round's deadline is not waited for: the call fails with its own error", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const backend = fakeBackend([fail()], { maxRetries: 3 })
      const result = yield* runRound(deps, roundInput(backend, { agentTimeoutSeconds: 0.5 }))
      expect(result).toMatchObject({
        _tag: "failed",
        kind: "error",
        message: expect.stringMatching(
          /^server error: HTTP 503 \(the next retry in [01](\.\d+)?s is past the 0\.5s left of agent_timeout_seconds\)$/,
        ),
      })
      expect(ofTag(events, "call_retried")).toEqual([])
    }),
  )

  effect("a call whose stream was cut after some text is retried; the text streamed so far stays in the output", () =>
    Effect.gen(function* () {
      const { deps, events, texts } = makeDeps()
      let calls = 0
      const cut = new BackendError({
        reason: "stream_cut",
        detail: "the stream ended without a reply",
        retryable: true,
        retryAfterSeconds: null,
      })
      const backend: Backend = {
        type: "fake",
        model: null,
        maxRetries: 1,
        callTimeoutSeconds: null,
        call: (_request, onChunk) =>
          ++calls === 1 ? Effect.zipRight(onChunk({ _tag: "text", text: "par" }), Effect.fail(cut)) : Effect.succeed(newAnswer("4")),
      }
      const fiber = yield* Effect.fork(runRound(deps, roundInput(backend)))
      yield* TestClock.adjust("2 seconds")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "answered" })
      expect(ofTag(events, "call_retried").map((e) => e.error)).toEqual(["stream cut: the stream ended without a reply"])
      expect(texts).toEqual(["par"])
    }),
  )
})

describe("runPresentation", () => {
  const presentation = (backend: Backend): RoundInput => ({
    agent: "b",
    round: 4,
    backend,
    request: presentationRequest({
      agentId: "b",
      selfAnonId: "agent2",
      systemMessage: null,
      question: "What is 2+2?",
      answers: [{ agentId: "b", label: "agent2.1", content: "4", own: true }],
      shown: shownOf("agent2.1"),
      voteReasons: ["right"],
      isTie: false,
      strategy: "winner_present",
    }),
    agentTimeoutSeconds: 600,
  })

  effect("the presentation's text is presented, in one call with role presentation", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const result = yield* runPresentation(deps, presentation(fakeBackend([ok(textOnly("The answer is 4."))])))
      expect(result).toEqual({ _tag: "presented", agent: "b", content: "The answer is 4." })
      expect(ofTag(events, "call_start").map((e) => [e.role, e.round])).toEqual([["presentation", 4]])
    }),
  )

  effect("a failed presentation call is presentation_failed", () =>
    Effect.gen(function* () {
      const { deps } = makeDeps()
      const result = yield* runPresentation(deps, presentation(fakeBackend([fail({ retryable: false, detail: "HTTP 401" })])))
      expect(result).toEqual({ _tag: "presentation_failed", agent: "b", message: "bad request: HTTP 401" })
    }),
  )
})

describe("tools in a round and in the presentation", () => {
  const lookup = { name: "lookup", description: "looks up", parameters: { type: "object" as const, properties: {}, required: [] } }
  const withRunner = () => {
    const made = makeDeps()
    const ran: Array<string> = []
    const deps: RoundDeps = {
      ...made.deps,
      runTools: (agent, round, role, calls) =>
        Effect.gen(function* () {
          for (const c of calls) {
            ran.push(`${agent}#${round} ${role} ${c.name} ${c.arguments}`)
            yield* made.deps.emit({
              _tag: "tool_call_finished",
              time: "2026-01-01T00:00:00.000Z",
              tool_call: ran.length,
              agent,
              round,
              role,
              call_id: c.id,
              tool: c.name,
              server: null,
              arguments: c.arguments,
              ok: true,
              error: null,
              seconds: 0,
              result: "42",
              result_chars: 2,
              digest: "d",
            })
          }
          return calls.map((c) => ({ callId: c.id, name: c.name, content: "42" }))
        }),
    }
    return { ...made, deps, ran }
  }

  effect("a presentation may call its tools; its next reply's text is the final answer, sent the results", () =>
    Effect.gen(function* () {
      const { deps, events, ran } = withRunner()
      const call = tool("lookup", { q: "2+2" })
      const backend = fakeBackend([ok(reply("Checking.", [call])), ok(textOnly("It is 4."))])
      const base = presentationRequest({
        agentId: "b",
        selfAnonId: "agent2",
        systemMessage: null,
        question: "What is 2+2?",
        answers: [],
        shown: [],
        voteReasons: [],
        isTie: false,
        strategy: "winner_present",
      })
      const result = yield* runPresentation(deps, {
        agent: "b",
        round: 4,
        backend,
        request: { ...base, tools: [lookup] },
        agentTimeoutSeconds: 600,
      })
      expect(result).toEqual({ _tag: "presented", agent: "b", content: "It is 4." })
      expect(ran).toEqual([`b#4 presentation lookup ${call.arguments}`])
      expect(tags(events)).toEqual(["call_start", "call_end", "tool_call_finished", "call_start", "call_end"])
      expect(backend.requests[1]!.messages.at(-1)).toEqual({ role: "tool", toolCallId: call.id, name: "lookup", content: "42" })
    }),
  )

  effect("each provider tool a reply used is a hosted_tool_used event after its call_end", () =>
    Effect.gen(function* () {
      const { deps, events } = makeDeps()
      const searched = {
        ...newAnswer("4"),
        hostedToolUses: [
          { tool: "web_search", detail: "2+2" },
          { tool: "code_interpreter", detail: "print(2+2)" },
        ],
      }
      yield* runRound(deps, roundInput(fakeBackend([ok(searched)])))
      expect(tags(events)).toEqual(["call_start", "call_end", "hosted_tool_used", "hosted_tool_used"])
      expect(ofTag(events, "hosted_tool_used").map((e) => [e.call, e.round, e.role, e.tool, e.detail])).toEqual([
        [1, 1, "round", "web_search", "2+2"],
        [1, 1, "round", "code_interpreter", "print(2+2)"],
      ])
    }),
  )
})
