/**
 * The round machine (`domain/coordination/round-machine.ts`), as specs with no I/O:
 * given a round (its request and the replies so far) → when a reply, a failed
 * call or tool results come → then the events it appends and its next step.
 * The classifier is specified on every kind of reply.
 */
import { describe, expect, test } from "bun:test"
import { presentationRequest, retryMessages } from "../src/domain/coordination/prompts.ts"
import {
  classifyReply,
  MAX_ATTEMPTS,
  onCallFailed,
  onModelReply,
  onToolRecorded,
  onToolResults,
  recordReply,
  replyOfRecord,
  type Step,
  startRound,
  type Transition,
  unfinishedTools,
} from "../src/domain/coordination/round-machine.ts"
import type { Event } from "../src/domain/events/index.ts"
import type { LlmReply, LlmRequest, ShownAnswer, ToolSpec } from "../src/domain/llm.ts"
import { newAnswer, reply, request, shownOf, tool, voteFor } from "./support/replies.ts"

// ---------------------------------------------------------------- builders

const T = "2025-06-01T12:00:00.000Z"

const searchTool: ToolSpec = {
  name: "search",
  description: "search the web",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
}

type When =
  | { readonly _tag: "reply"; readonly reply: LlmReply }
  | { readonly _tag: "failed"; readonly message: string }
  | { readonly _tag: "tools"; readonly results: ReadonlyArray<{ callId: string; name: string; content: string }> }

/** A round of agent `a` (round 1) on `req`, taken through `steps` from its start. */
const given = (req: LlmRequest, ...steps: ReadonlyArray<When>) => {
  let t: Transition = startRound({
    agent: "a",
    round: 1,
    role: req.context.kind === "presentation" ? "presentation" : "round",
    request: req,
  })
  const apply = (w: When): Transition =>
    w._tag === "reply"
      ? onModelReply(t.machine, w.reply, T)
      : w._tag === "failed"
        ? onCallFailed(t.machine, w.message)
        : onToolResults(t.machine, w.results)
  for (const s of steps) t = apply(s)
  return {
    transition: t,
    when: (w: When) => {
      const next = apply(w)
      return {
        then: (events: ReadonlyArray<Partial<Event>>, step: Partial<Step> & { _tag: Step["_tag"] }) => {
          expect(next.events).toEqual(events.map((e) => expect.objectContaining(e)))
          expect(next.step).toMatchObject(step)
          return next
        },
      }
    },
  }
}

const rejected = (attempt: number, reason: string) => ({
  _tag: "reply_rejected" as const,
  agent: "a",
  round: 1,
  attempt,
  reason: reason as never,
})

// ---------------------------------------------------------------- specs

describe("a round", () => {
  test("starts by calling the model with the base request, attempt 1", () => {
    const req = request()
    const t = startRound({ agent: "a", round: 1, role: "round", request: req })
    expect(t.events).toEqual([])
    expect(t.step).toEqual({ _tag: "call_model", request: req, attempt: 1 })
  })

  test("a valid new_answer ends it: no event, the answer is its result", () => {
    given(request())
      .when({ _tag: "reply", reply: newAnswer("4") })
      .then([], { _tag: "done", reply: { _tag: "answered", agent: "a", round: 1, content: "4" } })
  })

  test("a valid vote ends it with the voted reply", () => {
    given(request(shownOf("agent1.1", "agent2.1")))
      .when({ _tag: "reply", reply: voteFor("agent2", "clearer") })
      .then([], { _tag: "done", reply: { _tag: "voted", agent: "a", round: 1, targetAnonId: "agent2", reason: "clearer" } })
  })

  test("an invalid reply is rejected (reply_rejected) and the model is asked again, told what was wrong", () => {
    const req = request()
    const next = given(req)
      .when({ _tag: "reply", reply: reply("I think 4.") })
      .then([rejected(1, "no_tool_call")], { _tag: "call_model", attempt: 2 })
    const step = next.step as Extract<Step, { _tag: "call_model" }>
    expect(step.request.messages).toEqual([...req.messages, ...retryMessages("I think 4.", "Your reply called no tool.")])
  })

  test(`the ${MAX_ATTEMPTS}rd invalid reply fails the round, after its reply_rejected`, () => {
    const bad = { _tag: "reply", reply: reply("hmm") } as const
    given(request(), bad, bad)
      .when(bad)
      .then([rejected(3, "no_tool_call")], {
        _tag: "done",
        reply: {
          _tag: "failed",
          agent: "a",
          round: 1,
          kind: "error",
          message: "no valid tool call after 3 attempts: Your reply called no tool.",
        },
      })
  })

  test("the transcript keeps every rejected reply in order", () => {
    const t = given(request(), { _tag: "reply", reply: reply("one") }, { _tag: "reply", reply: reply("two") }).transition
    expect(t.machine.transcript).toEqual([
      ...retryMessages("one", "Your reply called no tool."),
      ...retryMessages("two", "Your reply called no tool."),
    ])
    expect(t.machine.attempt).toBe(3)
  })

  test("a failed call ends it as failed with the call's message", () => {
    given(request())
      .when({ _tag: "failed", message: "HTTP 500" })
      .then([], { _tag: "done", reply: { _tag: "failed", agent: "a", round: 1, kind: "error", message: "HTTP 500" } })
  })

  test("calls of an offered tool are a tool step: no attempt used, results join the transcript", () => {
    const call = tool("search", { q: "2+2" })
    const req = request([], false, [searchTool])
    const next = given(req)
      .when({ _tag: "reply", reply: reply("let me look", [call]) })
      .then([], { _tag: "run_tools", calls: [call] })
    const after = onToolResults(next.machine, [{ callId: call.id, name: "search", content: "4" }])
    expect(after.events).toEqual([])
    expect(after.step).toMatchObject({ _tag: "call_model", attempt: 1 })
    expect(after.machine.toolSteps).toBe(1)
    expect(after.machine.transcript).toEqual([
      { role: "assistant", content: "let me look", toolCalls: [call] },
      { role: "tool", toolCallId: call.id, name: "search", content: "4" },
    ])
  })

  test("a tool call that gets no result is answered with an error result", () => {
    const call = tool("search", { q: "x" })
    const t = given(
      request([], false, [searchTool]),
      { _tag: "reply", reply: reply("", [call]) },
      { _tag: "tools", results: [] },
    ).transition
    expect(t.machine.transcript.at(-1)).toEqual({
      role: "tool",
      toolCallId: call.id,
      name: "search",
      content: "error: the tool gave no result",
      isError: true,
    })
  })

  test("a failed call's result carries the error flag; a good one none", () => {
    const [good, bad] = [tool("search", { q: "x" }), tool("search", { q: "y" })]
    const t = given(request([], false, [searchTool]), { _tag: "reply", reply: reply("", [good, bad]) }).transition
    const next = onToolResults(t.machine, [
      { callId: good.id, name: "search", content: "r" },
      { callId: bad.id, name: "search", content: "error: failed: down", isError: true },
    ])
    expect(next.machine.transcript.slice(-2)).toEqual([
      { role: "tool", toolCallId: good.id, name: "search", content: "r" },
      { role: "tool", toolCallId: bad.id, name: "search", content: "error: failed: down", isError: true },
    ])
  })

  test("past the tool-step cap a tool call is rejected as tool_limit, using an attempt", () => {
    const req = request([], false, [searchTool])
    let t = startRound({ agent: "a", round: 1, role: "round", request: req, maxToolSteps: 1 })
    const call = tool("search", { q: "x" })
    t = onModelReply(t.machine, reply("", [call]), T)
    t = onToolResults(t.machine, [{ callId: call.id, name: "search", content: "r" }])
    const next = onModelReply(t.machine, reply("", [tool("search", { q: "y" })]), T)
    expect(next.events).toEqual([expect.objectContaining(rejected(1, "tool_limit"))])
    expect(next.step).toMatchObject({ _tag: "call_model", attempt: 2 })
  })

  test("attempts and tool steps are separate budgets: tool steps never fail a round", () => {
    const req = request([], false, [searchTool])
    let t = startRound({ agent: "a", round: 1, role: "round", request: req })
    for (let i = 0; i < 10; i++) {
      const call = tool("search", { q: String(i) })
      t = onModelReply(t.machine, reply("", [call]), T)
      t = onToolResults(t.machine, [{ callId: call.id, name: "search", content: "r" }])
    }
    expect(t.step).toMatchObject({ _tag: "call_model", attempt: 1 })
    expect(onModelReply(t.machine, newAnswer("4"), T).step).toMatchObject({ _tag: "done", reply: { _tag: "answered" } })
  })
})

describe("a presentation", () => {
  const req = presentationRequest({
    agentId: "a",
    selfAnonId: "agent1",
    systemMessage: null,
    question: "What is 2+2?",
    answers: [{ agentId: "a", label: "agent1.1", content: "4", own: true }],
    shown: shownOf("agent1.1"),
    voteReasons: [],
    isTie: false,
    strategy: "winner_present",
  })

  test("its reply's text is the result, whatever tools it calls that it was not offered", () => {
    given(req)
      .when({ _tag: "reply", reply: reply("The answer is 4.", [tool("vote", {})]) })
      .then([], { _tag: "done", reply: { _tag: "presented", agent: "a", content: "The answer is 4." } })
  })

  test("a failed call is a failed presentation", () => {
    given(req)
      .when({ _tag: "failed", message: "HTTP 503" })
      .then([], { _tag: "done", reply: { _tag: "presentation_failed", agent: "a", message: "HTTP 503" } })
  })

  test("has one attempt", () => {
    expect(startRound({ agent: "a", round: 2, role: "presentation", request: req }).machine.maxAttempts).toBe(1)
  })

  const withTools: LlmRequest = { ...req, tools: [searchTool] }

  test("a reply that calls its offered tools is a tool step; the text after the results is the final answer", () => {
    const call = tool("search", { q: "2+2" })
    const t = given(withTools)
      .when({ _tag: "reply", reply: reply("Let me check.", [call]) })
      .then([], { _tag: "run_tools", calls: [call] })
    const next = onToolResults(t.machine, [{ callId: call.id, name: "search", content: "4" }])
    expect(next.step).toMatchObject({ _tag: "call_model" })
    expect(onModelReply(next.machine, reply("The answer is 4."), T).step).toEqual({
      _tag: "done",
      reply: { _tag: "presented", agent: "a", content: "The answer is 4." },
    })
  })

  test("once its tool steps are spent, its reply's text is the final answer", () => {
    const t = startRound({ agent: "a", round: 2, role: "presentation", request: withTools, maxToolSteps: 0 })
    expect(onModelReply(t.machine, reply("Four.", [tool("search", { q: "x" })]), T).step).toMatchObject({
      _tag: "done",
      reply: { content: "Four." },
    })
  })
})

describe("tool results recorded one by one (replay, resume)", () => {
  const a = tool("search", { q: "a" })
  const b = tool("search", { q: "b" })
  const stepped = () => given(request([], false, [searchTool]), { _tag: "reply", reply: reply("", [a, b]) }).transition

  test("given a tool step of two calls, when one result is recorded, then only the other is left to run", () => {
    const next = onToolRecorded(stepped().machine, { callId: b.id, name: "search", content: "B" })
    expect(next.events).toEqual([])
    expect(next.step).toEqual({ _tag: "run_tools", calls: [a] })
    expect(unfinishedTools(next.machine)).toEqual([a])
  })

  test("when the last result comes, the model is called with every result in the order of the calls", () => {
    const one = onToolRecorded(stepped().machine, { callId: b.id, name: "search", content: "B" })
    const both = onToolResults(one.machine, [{ callId: a.id, name: "search", content: "A" }])
    expect(both.step._tag).toBe("call_model")
    const messages = both.step._tag === "call_model" ? both.step.request.messages : []
    expect(messages.slice(-2)).toEqual([
      { role: "tool", toolCallId: a.id, name: "search", content: "A" },
      { role: "tool", toolCallId: b.id, name: "search", content: "B" },
    ])
    const recorded = onToolRecorded(onToolRecorded(stepped().machine, { callId: b.id, name: "search", content: "B" }).machine, {
      callId: a.id,
      name: "search",
      content: "A",
    })
    expect(recorded.step).toEqual(both.step)
    expect(recorded.machine.toolSteps).toBe(1)
  })

  test("a result of no pending call changes nothing", () => {
    const t = stepped()
    expect(onToolRecorded(t.machine, { callId: "other", name: "search", content: "X" }).machine).toEqual(t.machine)
  })
})

describe("recorded replies", () => {
  test("a reply recorded in call_end reads back as the same text, tool calls and opaque parts", () => {
    const r = { ...reply("text", [tool("vote", { agent_id: "agent1" })]), parts: [{ type: "thinking", thinking: "t", signature: "sig" }] }
    const back = replyOfRecord(recordReply(r))!
    expect(back.text).toBe(r.text)
    expect(back.toolCalls).toEqual(r.toolCalls)
    expect(back.parts).toEqual(r.parts)
  })
})

// ---------------------------------------------------------------- the classifier

describe("classifyReply", () => {
  const classify = (shown: ReadonlyArray<ShownAnswer>, r: LlmReply, voteOnly = false) => classifyReply("a", 1, request(shown, voteOnly), r)
  const rejection = (c: ReturnType<typeof classifyReply>) => (c._tag === "invalid" ? c.reason : c._tag)

  test("a reply with no tool call is invalid as no_tool_call", () => {
    expect(rejection(classify([], reply("I think 4.")))).toBe("no_tool_call")
  })

  test("a reply calling both tools is invalid as both_tools", () => {
    const both = reply("", [tool("new_answer", { content: "4" }), tool("vote", { agent_id: "agent1" })])
    expect(rejection(classify(shownOf("agent1.1"), both))).toBe("both_tools")
  })

  test("a reply calling only a tool the request does not offer is invalid as unknown_tool, naming it", () => {
    const c = classify([], reply("", [tool("web_search", { q: "2+2" })]))
    expect(c).toEqual({ _tag: "invalid", reason: "unknown_tool", message: expect.stringContaining("web_search") })
  })

  test("arguments that are not a JSON object are invalid as bad_arguments", () => {
    for (const args of ["{content: 4", "[1,2]", "null"])
      expect(rejection(classify([], reply("", [tool("new_answer", args)])))).toBe("bad_arguments")
  })

  test("new_answer without a content string is invalid as bad_arguments", () => {
    expect(rejection(classify([], newAnswer(4)))).toBe("bad_arguments")
    expect(rejection(classify([], reply("", [tool("new_answer", "")])))).toBe("bad_arguments")
  })

  test("new_answer in a vote-only round is invalid as answer_limit", () => {
    expect(rejection(classify(shownOf("agent1.1"), newAnswer("4"), true))).toBe("answer_limit")
  })

  test("new_answer with blank content is invalid as empty_answer", () => {
    expect(rejection(classify([], newAnswer("")))).toBe("empty_answer")
    expect(rejection(classify([], newAnswer("  \n\t")))).toBe("empty_answer")
  })

  test("a vote for an id the round did not show is invalid_vote_target, listing the valid ones", () => {
    expect(classify(shownOf("agent1.1", "agent2.1"), voteFor("agent3"))).toEqual({
      _tag: "invalid",
      reason: "invalid_vote_target",
      message: expect.stringContaining("agent1, agent2"),
    })
    expect(rejection(classify(shownOf("agent1.1"), voteFor(1)))).toBe("invalid_vote_target")
    expect(rejection(classify(shownOf("agent1.1"), reply("", [tool("vote", {})])))).toBe("invalid_vote_target")
  })

  test("a vote when no answer is shown is invalid_vote_target", () => {
    expect(rejection(classify([], voteFor("agent1")))).toBe("invalid_vote_target")
  })

  test("a valid vote is a workflow reply; a missing reason is empty", () => {
    expect(classify(shownOf("agent1.1"), voteFor("agent1"))).toMatchObject({ _tag: "workflow", reply: { _tag: "voted", reason: "" } })
  })

  test("an unknown tool next to a workflow tool is ignored", () => {
    const c = classify([], reply("", [tool("web_search", {}), tool("new_answer", { content: "4" })]))
    expect(c).toMatchObject({ _tag: "workflow", reply: { _tag: "answered", content: "4" } })
  })

  test("calls of offered tools only are a tool step", () => {
    const call = tool("search", { q: "x" })
    expect(classifyReply("a", 1, request([], false, [searchTool]), reply("", [call]))).toEqual({ _tag: "tool_calls", calls: [call] })
  })
})
