/**
 * MassGen's coordination options (issue 13), as given(events) → when(reply | decision) → then(events),
 * and the round machine's checks of a reply. No I/O. Each test names the MassGen behaviour
 * (v0.1.97's test suite, `shared/reference/massgen-tests.md`) it pins down.
 *
 * Agents a, b, c are agent1, agent2, agent3 to each other.
 */
import { describe, expect, test } from "bun:test"
import { quickSettings } from "../src/domain/config/index.ts"
import { duplicateProblem, noveltyProblem, roundRequest, wordOverlap } from "../src/domain/coordination/prompts.ts"
import { requestForPresentation, requestForRound } from "../src/domain/coordination/requests.ts"
import { classifyReply, onModelReply, startRound } from "../src/domain/coordination/round-machine.ts"
import type { Event } from "../src/domain/events/index.ts"
import {
  answer,
  answered,
  defaultSettings,
  given,
  presentationStarted,
  roundCancelled,
  roundStarted,
  runStarted,
  vote,
  voted,
  voteIgnored,
} from "./support/given.ts"
import { newAnswer, reply, request, shownOf, tool } from "./support/replies.ts"

const ids = ["a", "b", "c"]
const started = (settings: Parameters<typeof runStarted>[1], agents = ids): ReadonlyArray<Event> => [
  runStarted(agents, settings),
  ...agents.map((id) => roundStarted(id, 1, [])),
]
const agentOf = (id: string, i: number) => ({ id, anonId: `agent${i + 1}`, systemMessage: null, backend: { type: "scripted" as const } })

describe("skip_voting (MassGen consensus tests: completes once every agent answered, votes == {})", () => {
  const settings = { skip_voting: true }

  test("an agent that answered waits: no vote round is started for it", () => {
    given(...started(settings), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then()
  })

  test("once every agent answered, the first in config order presents, with no vote counted", () => {
    given(...started(settings), answer("b", 1, "agent2.1", "B"), answer("c", 1, "agent3.1", "C"), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then(
        presentationStarted(
          "a",
          "agent1.1",
          { "agent1.1": 0, "agent2.1": 0, "agent3.1": 0 },
          { strategy: "winner_present", callsModel: true },
        ),
      )
  })

  test("the strategy still says how it ends: skip_final_presentation reuses the first agent's answer", () => {
    given(
      ...started({ ...settings, skip_final_presentation: true, final_answer_strategy: "winner_reuse" }),
      answer("a", 1, "agent1.1", "A"),
      answer("b", 1, "agent2.1", "B"),
      answer("c", 1, "agent3.1", "C"),
    )
      .whenDecided()
      .then(
        presentationStarted(
          "a",
          "agent1.1",
          { "agent1.1": 0, "agent2.1": 0, "agent3.1": 0 },
          { strategy: "winner_reuse", callsModel: false },
        ),
      )
  })

  test("a vote is not taken: it is ignored as deferred", () => {
    given(
      runStarted(ids, settings),
      roundStarted("a", 1, []),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("b", 1, ["agent1.1"]),
      roundStarted("c", 1, ["agent1.1"]),
    )
      .when(voted("b", 1, "agent1"))
      .then(voteIgnored("b", 1, "a", "deferred"))
  })
})

describe("quick synthesize (MassGen: several agents, synthesize, max_new_answers_per_agent 1: one call each, no vote rounds, the first agent presents)", () => {
  const settings = { final_answer_strategy: "synthesize" as const, max_new_answers_per_agent: 1 }

  test("every agent answered once: agent a synthesizes at once, no vote round", () => {
    given(...started(settings), answer("a", 1, "agent1.1", "A"), answer("b", 1, "agent2.1", "B"))
      .whenDecided()
      .then().state
    given(...started(settings), answer("a", 1, "agent1.1", "A"), answer("b", 1, "agent2.1", "B"), answer("c", 1, "agent3.1", "C"))
      .whenDecided()
      .then(
        presentationStarted("a", "agent1.1", { "agent1.1": 0, "agent2.1": 0, "agent3.1": 0 }, { strategy: "synthesize", callsModel: true }),
      )
  })

  test("the presentation's context says that no vote was held", () => {
    const state = given(
      ...started(settings),
      answer("a", 1, "agent1.1", "A"),
      answer("b", 1, "agent2.1", "B"),
      answer("c", 1, "agent3.1", "C"),
    ).whenDecided().state
    const request = requestForPresentation(state, agentOf("a", 0))!
    expect(request.messages[0]!.content).toContain("No vote was held")
    expect(request.messages[0]!.content).toContain("Combine the strongest parts of all answers")
  })

  test("one agent with synthesize and a cap of 1 is not quick synthesize: it votes as usual", () => {
    given(runStarted(["a"], settings), roundStarted("a", 1, []), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then(roundStarted("a", 2, ["agent1.1"], { voteOnly: true }))
  })
})

describe("--quick (MassGen: max_new_answers_per_agent 1, skip_final_presentation; several agents: synthesize, deferred voting, no injection; one agent: skip_voting)", () => {
  test("several agents: quick synthesize, the first agent presents", () => {
    const s = quickSettings(defaultSettings, 3)
    expect(s).toMatchObject({
      max_new_answers_per_agent: 1,
      final_answer_strategy: "synthesize",
      disable_injection: true,
      defer_voting_until_all_answered: true,
    })
    given(...started(s), answer("a", 1, "agent1.1", "A"), answer("b", 1, "agent2.1", "B"), answer("c", 1, "agent3.1", "C"))
      .whenDecided()
      .then(
        presentationStarted("a", "agent1.1", { "agent1.1": 0, "agent2.1": 0, "agent3.1": 0 }, { strategy: "synthesize", callsModel: true }),
      )
  })

  test("one agent: one call, its answer is final with no presentation call", () => {
    const s = quickSettings(defaultSettings, 1)
    given(runStarted(["a"], s), roundStarted("a", 1, []), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then(presentationStarted("a", "agent1.1", { "agent1.1": 0 }, { strategy: "winner_reuse", callsModel: false }))
  })
})

describe("defer_voting_until_all_answered (MassGen: agents at the cap wait until everyone has answered)", () => {
  const settings = { defer_voting_until_all_answered: true }

  test("an agent with an answer gets no round while another live agent has none", () => {
    given(...started(settings), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then()
  })

  test("once every live agent answered, every agent is given a round to vote", () => {
    given(...started(settings), answer("a", 1, "agent1.1", "A"), answer("b", 1, "agent2.1", "B"), answer("c", 1, "agent3.1", "C"))
      .whenDecided()
      .then(
        roundStarted("a", 2, ["agent1.1", "agent2.1", "agent3.1"]),
        roundStarted("b", 2, ["agent1.1", "agent2.1", "agent3.1"]),
        roundStarted("c", 2, ["agent1.1", "agent2.1", "agent3.1"]),
      )
  })

  test("a round of an agent without an answer offers only new_answer, and a vote from it is ignored", () => {
    const g = given(
      runStarted(ids, settings),
      roundStarted("a", 1, []),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("b", 1, ["agent1.1"]),
      roundStarted("c", 1, ["agent1.1"]),
    )
    const request = requestForRound(g.state, agentOf("b", 1))!
    expect(request.tools.map((t) => t.name)).toEqual(["new_answer"])
    expect(request.context).toMatchObject({ answerOnly: true })
    g.when(voted("b", 1, "agent1")).then(voteIgnored("b", 1, "a", "deferred"))
  })
})

describe("max_new_answers_global (MassGen vote-only mode tests: at the cap every agent loses new_answer; it overrides waiting for all answers)", () => {
  test("at the cap, rounds are vote-only for every agent, even one without an answer", () => {
    given(...started({ max_new_answers_global: 2 }, ["a", "b", "c"]), answer("a", 1, "agent1.1", "A"), roundCancelled("c", 1))
      .when(answered("b", 1, "B"))
      .then(answer("b", 1, "agent2.1", "B"))
    const g = given(
      runStarted(["a", "b", "c"], { max_new_answers_global: 2 }),
      roundStarted("a", 1, []),
      roundStarted("b", 1, []),
      answer("a", 1, "agent1.1", "A"),
      answer("b", 1, "agent2.1", "B"),
    )
    g.whenDecided().then(
      roundStarted("a", 2, ["agent1.1", "agent2.1"], { voteOnly: true }),
      roundStarted("b", 2, ["agent1.1", "agent2.1"], { voteOnly: true }),
      roundStarted("c", 1, ["agent1.1", "agent2.1"], { voteOnly: true }),
    )
  })

  test("a round in flight that offers new_answer is cancelled at the cap, first answer or not", () => {
    given(...started({ max_new_answers_global: 1 }), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then(roundCancelled("b", 1), roundCancelled("c", 1))
  })

  test("an answer that arrives over the cap is refused: its round starts again vote-only", () => {
    given(...started({ max_new_answers_global: 1 }), answer("a", 1, "agent1.1", "A"))
      .when(answered("b", 1, "B"))
      .then(roundCancelled("b", 1))
  })

  test("the global cap overrides deferred voting", () => {
    given(
      ...started({ max_new_answers_global: 1, defer_voting_until_all_answered: true }),
      answer("a", 1, "agent1.1", "A"),
      roundCancelled("b", 1),
      roundCancelled("c", 1),
    )
      .whenDecided()
      .then(
        roundStarted("a", 2, ["agent1.1"], { voteOnly: true }),
        roundStarted("b", 2, ["agent1.1"], { voteOnly: true, restart: true }),
        roundStarted("c", 2, ["agent1.1"], { voteOnly: true, restart: true }),
      )
  })
})

describe("skip_final_presentation with an explicit strategy (MassGen final-presentation matrix)", () => {
  const voted3 = (settings: Parameters<typeof runStarted>[1]) =>
    given(
      ...started(settings, ["a", "b"]),
      answer("a", 1, "agent1.1", "A"),
      answer("b", 1, "agent2.1", "B"),
      roundStarted("a", 2, ["agent1.1", "agent2.1"]),
      roundStarted("b", 2, ["agent1.1", "agent2.1"]),
      vote("a", 2, "a", "agent1.1"),
      vote("b", 2, "a", "agent1.1"),
    )

  test("the config turns skip_final_presentation alone into winner_reuse: the stored answer, no call", () => {
    voted3({ skip_final_presentation: true, final_answer_strategy: "winner_reuse" })
      .whenDecided()
      .then(presentationStarted("a", "agent1.1", { "agent1.1": 2, "agent2.1": 0 }, { strategy: "winner_reuse", callsModel: false }))
  })

  test("with an explicit winner_present or synthesize the winner still presents", () => {
    for (const strategy of ["winner_present", "synthesize"] as const) {
      voted3({ skip_final_presentation: false, final_answer_strategy: strategy })
        .whenDecided()
        .then(presentationStarted("a", "agent1.1", { "agent1.1": 2, "agent2.1": 0 }, { strategy: strategy, callsModel: true }))
    }
  })
})

describe("a reply's workflow call, checked as MassGen checks it", () => {
  const shown = shownOf("agent1.1", "agent2.1")

  test("an answer identical to one shown is refused with MassGen's message, and uses up an attempt (enforcement retry)", () => {
    const t = onModelReply(
      startRound({ agent: "c", round: 2, role: "round", request: request(shown) }).machine,
      newAnswer(`  ${shown[1]!.content}\n`),
      "2025-06-01T12:00:00.000Z",
    )
    expect(t.events).toEqual([
      expect.objectContaining({ _tag: "reply_rejected", reason: "duplicate_answer", attempt: 1, message: duplicateProblem("agent2.1") }),
    ])
    expect(duplicateProblem("agent2.1")).toBe("Answer already provided by agent2.1. Provide different answer or vote for existing one.")
    expect(t.step).toMatchObject({ _tag: "call_model", attempt: 2 })
  })

  test("several vote calls in one reply are refused, not the first taken", () => {
    const twoVotes = reply("", [tool("vote", { agent_id: "agent1", reason: "x" }), tool("vote", { agent_id: "agent2", reason: "y" })])
    expect(classifyReply("c", 2, request(shown), twoVotes)).toMatchObject({ _tag: "invalid", reason: "several_votes" })
  })

  test("new_answer content given as an object is turned into its JSON text", () => {
    expect(classifyReply("c", 2, request(shown), newAnswer({ steps: ["plan", "build"] }))).toEqual({
      _tag: "workflow",
      reply: { _tag: "answered", agent: "c", round: 2, content: JSON.stringify({ steps: ["plan", "build"] }, null, 2) },
    })
    expect(classifyReply("c", 2, request(shown), newAnswer(42))).toMatchObject({ _tag: "invalid", reason: "bad_arguments" })
  })

  test("answer_novelty_requirement: balanced refuses above 70 % word overlap, strict above 50 %; lenient checks nothing", () => {
    const base = "one two three four five six seven eight nine ten"
    const close = "one two three four five six seven eight nine eleven" // 9 of 11 words: 0.82
    const half = "one two three four five six seven x y z" // 7 of 13 words: 0.54
    expect(wordOverlap(base, close)).toBeCloseTo(9 / 11)
    const answers = [{ label: "agent1.1", anonId: "agent1", content: base }]
    expect(noveltyProblem(close, answers, "balanced")).toContain("too similar to agent1.1")
    expect(noveltyProblem(half, answers, "balanced")).toBe(null)
    expect(noveltyProblem(half, answers, "strict")).toContain("too similar to agent1.1")
    const req = (novelty: "lenient" | "balanced" | "strict") =>
      roundRequest({ agentId: "b", selfAnonId: "agent2", systemMessage: null, question: "q", shown: answers, voteOnly: false, novelty })
    expect(classifyReply("b", 2, req("balanced"), newAnswer(close))).toMatchObject({ _tag: "invalid", reason: "answer_not_novel" })
    expect(classifyReply("b", 2, req("lenient"), newAnswer(close))).toMatchObject({ _tag: "workflow" })
  })

  test("voting_sensitivity and answer_novelty_requirement change the system message; lenient is the default's", () => {
    const system = (votingSensitivity: "lenient" | "balanced" | "strict", novelty: "lenient" | "balanced" | "strict" = "lenient") =>
      roundRequest({
        agentId: "b",
        selfAnonId: "agent2",
        systemMessage: null,
        question: "q",
        shown: [],
        voteOnly: false,
        votingSensitivity,
        novelty,
      }).system
    expect(system("lenient")).toBe(
      roundRequest({ agentId: "b", selfAnonId: "agent2", systemMessage: null, question: "q", shown: [], voteOnly: false }).system,
    )
    expect(system("balanced")).toContain("only if it is strong and complete")
    expect(system("strict")).toContain("could it serve as a reference")
    expect(system("lenient", "balanced")).toContain("meaningfully different")
    expect(system("lenient", "strict")).toContain("substantially different")
  })
})
