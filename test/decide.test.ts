/**
 * The decider's rules, as given(events) → when(reply | decision | stop) → then(events). No I/O.
 *
 * Agents a, b, c are agent1, agent2, agent3 to each other.
 */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { decide, judgeReply, salvage, tally } from "../src/domain/coordination/decide.ts"
import type { Event } from "../src/domain/events/index.ts"
import { initialState, latestLabels, type State, sameLabels, showsLatest } from "../src/domain/state/index.ts"
import {
  agentFailed,
  answer,
  answered,
  failed,
  finalAnswer,
  given,
  presentationFailed,
  presentationStarted,
  presented,
  roundCancelled,
  roundStarted,
  runFinished,
  runStarted,
  vote,
  voted,
  voteIgnored,
} from "./support/given.ts"

const L1 = ["agent1.1"]
const L12 = ["agent1.1", "agent2.1"]
const L123 = ["agent1.1", "agent2.1", "agent3.1"]

const started = (settings: Parameters<typeof runStarted>[1] = {}): ReadonlyArray<Event> => [
  runStarted(["a", "b", "c"], settings),
  roundStarted("a", 1, []),
  roundStarted("b", 1, []),
  roundStarted("c", 1, []),
]

/** Every agent answered once; the rounds in flight show all three answers. */
const allAnswered = (settings: Parameters<typeof runStarted>[1] = {}): ReadonlyArray<Event> => [
  ...started(settings),
  answer("a", 1, "agent1.1", "A"),
  roundStarted("a", 2, L1),
  answer("b", 1, "agent2.1", "B"),
  roundCancelled("a", 2),
  roundStarted("a", 3, L12, { restart: true }),
  roundStarted("b", 2, L12),
  answer("c", 1, "agent3.1", "C"),
  roundCancelled("a", 3),
  roundCancelled("b", 2),
  roundStarted("a", 4, L123, { restart: true }),
  roundStarted("b", 3, L123, { restart: true }),
  roundStarted("c", 2, L123),
]

describe("starting", () => {
  test("at start every agent gets round 1 showing nothing", () => {
    given(runStarted(["a", "b", "c"]))
      .whenDecided()
      .then(roundStarted("a", 1, []), roundStarted("b", 1, []), roundStarted("c", 1, []))
  })

  test("before run_started nothing is decided and no reply is judged", () => {
    expect(decide(initialState)).toEqual([])
    expect(judgeReply(initialState, answered("a", 1, "A"), "2025-06-01T12:00:00.000Z")).toEqual([])
  })

  test("once the rounds are started the decider asks for nothing more", () => {
    given(started()).whenDecided().thenNothing()
  })
})

describe("answers", () => {
  test("an answer gets the next label of its agent", () => {
    given(started())
      .when(answered("b", 1, "B"))
      .then(answer("b", 1, "agent2.1", "B"))
  })

  test("after an answer the answering agent gets a new round showing it; others on their first answer go on", () => {
    given(started(), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then(roundStarted("a", 2, L1))
  })

  test("a second answer of the same agent is labelled agentN.2", () => {
    given(started(), answer("a", 1, "agent1.1", "A"), roundStarted("a", 2, L1))
      .when(answered("a", 2, "A, better"))
      .then(answer("a", 2, "agent1.2", "A, better"))
  })

  test("a new answer cancels the in-flight round of an agent that already has an answer", () => {
    given(started(), answer("a", 1, "agent1.1", "A"), roundStarted("a", 2, L1), answer("b", 1, "agent2.1", "B"))
      .whenDecided()
      .then(roundCancelled("a", 2))
  })

  test("first-answer protection: a new answer does not cancel an agent still on its first answer", () => {
    const outcome = given(
      started(),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1),
      answer("b", 1, "agent2.1", "B"),
    ).whenDecided()
    expect(outcome.commands.filter((c) => c._tag === "CancelRound").map((c) => c.agent)).toEqual(["a"])
  })

  test("after the cancellations, the cancelled agent restarts and the answering agent goes on, both shown the latest answers", () => {
    given(started(), answer("a", 1, "agent1.1", "A"), roundStarted("a", 2, L1), answer("b", 1, "agent2.1", "B"), roundCancelled("a", 2))
      .whenDecided()
      .then(roundStarted("a", 3, L12, { restart: true }), roundStarted("b", 2, L12))
  })

  test("a new answer clears every vote and the voters get restart rounds", () => {
    const g = given(
      ...started(),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1),
      answer("b", 1, "agent2.1", "B"),
      roundCancelled("a", 2),
      roundStarted("a", 3, L12, { restart: true }),
      roundStarted("b", 2, L12),
      vote("a", 3, "b", "agent2.1"),
      vote("b", 2, "b", "agent2.1"),
    )
    expect(g.state.agents.map((a) => a.vote?.target ?? null)).toEqual(["b", "b", null])
    const after = g.when(answered("c", 1, "C")).then(answer("c", 1, "agent3.1", "C"))
    expect(after.state.agents.map((a) => a.vote)).toEqual([null, null, null])
    given(g.events, after.events)
      .whenDecided()
      .then(roundStarted("a", 4, L123, { restart: true }), roundStarted("b", 3, L123, { restart: true }), roundStarted("c", 2, L123))
  })

  test("a cancelled round ends: its agent is no longer in flight and restarts next", () => {
    const out = given(started(), answer("a", 1, "agent1.1", "A"), roundStarted("a", 2, L1), answer("b", 1, "agent2.1", "B"))
      .when({ _tag: "CancelRound", agent: "a", round: 2 })
      .then(roundCancelled("a", 2))
    const a = out.state.agents[0]!
    expect([a.inFlight, a.restartPending]).toEqual([null, true])
  })

  test("the restart is counted once per restart round", () => {
    const state = given(allAnswered()).state
    expect(state.agents.map((a) => a.timesRestarted)).toEqual([2, 1, 0])
  })
})

describe("votes", () => {
  test("a vote for a shown answer counts, with the label the voter saw", () => {
    given(allAnswered())
      .when(voted("a", 4, "agent2", "clearest"))
      .then(vote("a", 4, "b", "agent2.1", "clearest"))
  })

  test("a vote from a round whose shown labels are no longer the latest is ignored as stale", () => {
    // c started late and still has no answer: b's new answer does not cancel it, but its vote is stale.
    given(
      runStarted(["a", "b", "c"]),
      roundStarted("a", 1, []),
      roundStarted("b", 1, []),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1),
      roundStarted("c", 1, L1),
      answer("b", 1, "agent2.1", "B"),
      roundCancelled("a", 2),
    )
      .when(voted("c", 1, "agent1"))
      .then(voteIgnored("c", 1, "a", "stale"))
  })

  test("after a stale vote the voter restarts with the latest answers", () => {
    given(
      runStarted(["a", "b"]),
      roundStarted("a", 1, []),
      roundStarted("b", 1, L1),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1),
      answer("a", 2, "agent1.2", "A2"),
      roundStarted("a", 3, ["agent1.2"]),
      voteIgnored("b", 1, "a", "stale"),
    )
      .whenDecided()
      .then(roundStarted("b", 2, ["agent1.2"], { restart: true }))
  })

  test("a vote for an agent whose answer the round did not show is ignored as invalid_target", () => {
    given(started(), answer("a", 1, "agent1.1", "A"), roundStarted("a", 2, L1))
      .when(voted("a", 2, "agent2"))
      .then(voteIgnored("a", 2, "agent2", "invalid_target"))
  })

  test("a vote for an agent that does not exist is ignored as invalid_target", () => {
    given(allAnswered())
      .when(voted("b", 3, "agent9"))
      .then(voteIgnored("b", 3, "agent9", "invalid_target"))
  })

  test("a vote does not start a round for the voter", () => {
    given(allAnswered(), vote("a", 4, "b", "agent2.1"))
      .whenDecided()
      .thenNothing()
  })
})

describe("the end of voting", () => {
  test("when every live agent has voted the most-voted agent presents", () => {
    given(allAnswered(), vote("a", 4, "b", "agent2.1"), vote("b", 3, "b", "agent2.1"), vote("c", 2, "a", "agent1.1"))
      .whenDecided()
      .then(presentationStarted("b", "agent2.1", { "agent1.1": 1, "agent2.1": 2, "agent3.1": 0 }, { isTie: false, callsModel: true }))
  })

  test("nothing is presented while one live agent has not voted", () => {
    given(allAnswered(), vote("a", 4, "b", "agent2.1"), vote("b", 3, "b", "agent2.1"))
      .whenDecided()
      .thenNothing()
  })

  test("a tie goes to the earliest agent in config order, marked is_tie", () => {
    given(allAnswered(), vote("a", 4, "c", "agent3.1"), vote("b", 3, "b", "agent2.1"), vote("c", 2, "a", "agent1.1"))
      .whenDecided()
      .then(presentationStarted("a", "agent1.1", { "agent1.1": 1, "agent2.1": 1, "agent3.1": 1 }, { isTie: true }))
  })

  test("a two-way tie between later agents goes to the earlier of them", () => {
    given(allAnswered(), vote("a", 4, "c", "agent3.1"), vote("b", 3, "b", "agent2.1"), vote("c", 2, "c", "agent3.1"))
      .whenDecided()
      .then(presentationStarted("c", "agent3.1", { "agent1.1": 0, "agent2.1": 1, "agent3.1": 2 }))
    given(
      runStarted(["a", "b", "c", "d"]),
      roundStarted("a", 1, []),
      roundStarted("b", 1, []),
      roundStarted("c", 1, []),
      roundStarted("d", 1, []),
      answer("a", 1, "agent1.1", "A"),
      answer("b", 1, "agent2.1", "B"),
      answer("c", 1, "agent3.1", "C"),
      answer("d", 1, "agent4.1", "D"),
      roundStarted("a", 2, ["agent1.1", "agent2.1", "agent3.1", "agent4.1"]),
      roundStarted("b", 2, ["agent1.1", "agent2.1", "agent3.1", "agent4.1"]),
      roundStarted("c", 2, ["agent1.1", "agent2.1", "agent3.1", "agent4.1"]),
      roundStarted("d", 2, ["agent1.1", "agent2.1", "agent3.1", "agent4.1"]),
      vote("a", 2, "c", "agent3.1"),
      vote("b", 2, "b", "agent2.1"),
      vote("c", 2, "c", "agent3.1"),
      vote("d", 2, "b", "agent2.1"),
    )
      .whenDecided()
      .then(presentationStarted("b", "agent2.1", { "agent1.1": 0, "agent2.1": 2, "agent3.1": 2, "agent4.1": 0 }, { isTie: true }))
  })

  const allVotedForB = (settings: Parameters<typeof runStarted>[1] = {}) => [
    ...allAnswered(settings),
    vote("a", 4, "b", "agent2.1"),
    vote("b", 3, "b", "agent2.1"),
    vote("c", 2, "b", "agent2.1"),
  ]
  const votesForB = { "agent1.1": 0, "agent2.1": 3, "agent3.1": 0 }

  test("the winner's presentation becomes the final answer, then the run completes", () => {
    const g = given(allVotedForB(), presentationStarted("b", "agent2.1", votesForB))
    g.whenDecided().thenNothing()
    const final = g.when(presented("b", "Final from B")).then(finalAnswer("b", "agent2.1", "presentation", "Final from B"))
    given(g.events, final.events)
      .whenDecided()
      .then(runFinished("completed", "b", "every live agent voted"))
  })

  test("skip_final_presentation: no presentation call, the stored answer is used", () => {
    const g = given(allVotedForB({ skip_final_presentation: true, final_answer_strategy: "winner_reuse" }))
    const p = g.whenDecided().then(presentationStarted("b", "agent2.1", votesForB, { strategy: "winner_reuse", callsModel: false }))
    const stored = given(g.events, p.events)
      .whenDecided()
      .then(finalAnswer("b", "agent2.1", "stored_answer", "B"))
    expect(stored.commands).toEqual([{ _tag: "UseStoredAnswer", agent: "b", label: "agent2.1", content: "B" }])
  })

  test("skip_final_presentation alone (strategy winner_present) still calls no model", () => {
    given(allVotedForB({ skip_final_presentation: true }))
      .whenDecided()
      .then(presentationStarted("b", "agent2.1", votesForB, { callsModel: false }))
  })

  test("winner_reuse: no presentation call, the stored answer is used", () => {
    const g = given(allVotedForB({ final_answer_strategy: "winner_reuse" }))
    const p = g.whenDecided().then(presentationStarted("b", "agent2.1", votesForB, { strategy: "winner_reuse", callsModel: false }))
    const stored = given(g.events, p.events)
      .whenDecided()
      .then(finalAnswer("b", "agent2.1", "stored_answer", "B"))
    given(g.events, p.events, stored.events)
      .whenDecided()
      .then(runFinished("completed", "b", "every live agent voted"))
  })

  test("the synthesize strategy is passed on to the presentation", () => {
    given(allVotedForB({ final_answer_strategy: "synthesize" }))
      .whenDecided()
      .then(presentationStarted("b", "agent2.1", votesForB, { strategy: "synthesize" }))
  })

  test("an empty presentation falls back to the stored answer", () => {
    given(allVotedForB(), presentationStarted("b", "agent2.1", votesForB))
      .when(presented("b", "  \n "))
      .then(finalAnswer("b", "agent2.1", "stored_answer", "B"))
  })

  test("a failed presentation falls back to the stored answer", () => {
    given(allVotedForB(), presentationStarted("b", "agent2.1", votesForB))
      .when(presentationFailed("b"))
      .then(finalAnswer("b", "agent2.1", "stored_answer", "B"))
  })

  test("a presentation from an agent that is not presenting is ignored", () => {
    given(allVotedForB(), presentationStarted("b", "agent2.1", votesForB))
      .when(presented("a", "Hijack"))
      .thenNothing()
    given(allVotedForB()).when(presented("b", "Too early")).thenNothing()
  })

  test("a second presentation reply is ignored once the final answer is known", () => {
    given(allVotedForB(), presentationStarted("b", "agent2.1", votesForB), finalAnswer("b", "agent2.1", "presentation", "F"))
      .when(presented("b", "Again"))
      .thenNothing()
  })

  test("a winner that failed after being voted for is not called: its stored answer is used", () => {
    given(allAnswered(), vote("a", 4, "c", "agent3.1"), vote("b", 3, "c", "agent3.1"), agentFailed("c", 2))
      .whenDecided()
      .then(presentationStarted("c", "agent3.1", { "agent1.1": 0, "agent2.1": 0, "agent3.1": 2 }, { callsModel: false }))
  })
})

describe("failures", () => {
  test("a failed round takes the agent out of the run", () => {
    given(started())
      .when(failed("c", 1, "timeout", "Agent timeout after 600s"))
      .then(agentFailed("c", 1, "timeout", "Agent timeout after 600s"))
  })

  test("the rest complete without the failed agent", () => {
    const g = given(
      ...started(),
      agentFailed("c", 1),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1),
      answer("b", 1, "agent2.1", "B"),
      roundCancelled("a", 2),
      roundStarted("a", 3, L12, { restart: true }),
      roundStarted("b", 2, L12),
      vote("a", 3, "a", "agent1.1"),
      vote("b", 2, "a", "agent1.1"),
    )
    g.whenDecided().then(presentationStarted("a", "agent1.1", { "agent1.1": 2, "agent2.1": 0 }))
  })

  test("a failing agent's vote no longer counts", () => {
    const g = given(allAnswered(), vote("a", 4, "c", "agent3.1"), vote("c", 2, "c", "agent3.1"))
    const out = g.when(failed("b", 3)).then(agentFailed("b", 3))
    given(g.events, out.events, roundStarted("c", 3, ["agent1.1", "agent2.1", "agent3.1"]), agentFailed("c", 3))
      .whenDecided()
      .then(presentationStarted("c", "agent3.1", { "agent1.1": 0, "agent2.1": 0, "agent3.1": 1 }, { callsModel: false }))
  })

  test("when every agent failed the run finishes with an error and no winner", () => {
    given(started(), agentFailed("a", 1), agentFailed("b", 1), agentFailed("c", 1))
      .whenDecided()
      .then(runFinished("error", null, "every agent failed"))
  })

  test("a failed agent's replies are ignored", () => {
    given(started(), agentFailed("c", 1))
      .when(answered("c", 1, "late"))
      .thenNothing()
  })
})

describe("the answer cap", () => {
  test("an agent at max_new_answers_per_agent gets vote-only rounds", () => {
    given(started({ max_new_answers_per_agent: 1 }), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then(roundStarted("a", 2, L1, { voteOnly: true }))
  })

  test("below the cap rounds offer new_answer", () => {
    given(started({ max_new_answers_per_agent: 2 }), answer("a", 1, "agent1.1", "A"))
      .whenDecided()
      .then(roundStarted("a", 2, L1, { voteOnly: false }))
  })

  test("the cap is per agent: others still answer", () => {
    given(
      started({ max_new_answers_per_agent: 1 }),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1, { voteOnly: true }),
      answer("b", 1, "agent2.1", "B"),
      roundCancelled("a", 2),
    )
      .whenDecided()
      .then(roundStarted("a", 3, L12, { voteOnly: true, restart: true }), roundStarted("b", 2, L12, { voteOnly: true }))
  })
})

describe("stopping a run", () => {
  test("a timeout salvages the most-voted answer", () => {
    given(allAnswered(), vote("a", 4, "c", "agent3.1"), vote("b", 3, "c", "agent3.1"))
      .whenStopped("timeout", { message: "orchestrator timeout after 60s" })
      .then(finalAnswer("c", "agent3.1", "salvaged", "C"), runFinished("timeout", "c", "orchestrator timeout after 60s"))
  })

  test("with no votes a timeout salvages the latest answer", () => {
    given(allAnswered(), answer("a", 4, "agent1.2", "A2"), roundStarted("a", 5, ["agent1.2", "agent2.1", "agent3.1"]))
      .whenStopped("timeout", { message: "t" })
      .then(finalAnswer("a", "agent1.2", "salvaged", "A2"), runFinished("timeout", "a", "t"))
  })

  test("the latest answer of a live agent is preferred to a failed agent's", () => {
    given(
      started(),
      answer("a", 1, "agent1.1", "A"),
      answer("b", 1, "agent2.1", "B"),
      roundStarted("b", 2, ["agent1.1", "agent2.1"]),
      agentFailed("b", 2),
    )
      .whenStopped("budget", { message: "budget spent" })
      .then(finalAnswer("a", "agent1.1", "salvaged", "A"), runFinished("budget", "a", "budget spent"))
  })

  test("with only a failed agent's answer, that answer is salvaged", () => {
    given(started(), answer("b", 1, "agent2.1", "B"), roundStarted("b", 2, ["agent2.1"]), agentFailed("b", 2))
      .whenStopped("timeout", { message: "t" })
      .then(finalAnswer("b", "agent2.1", "salvaged", "B"), runFinished("timeout", "b", "t"))
  })

  test("with no answers a timeout gives run_finished with winner null", () => {
    given(started())
      .whenStopped("timeout", { message: "t" })
      .then(runFinished("timeout", null, "t"))
  })

  test("an interrupt salvages the best answer too: nothing already won is lost", () => {
    given(allAnswered(), vote("a", 4, "c", "agent3.1"))
      .whenStopped("interrupted", { message: "SIGINT" })
      .then(finalAnswer("c", "agent3.1", "salvaged", "C"), runFinished("interrupted", "c", "SIGINT"))
  })

  test("an interrupt before any answer gives no final answer", () => {
    given(...started())
      .whenStopped("interrupted", { message: "SIGINT" })
      .then(runFinished("interrupted", null, "SIGINT"))
  })

  test("a stop after the final answer keeps it and names its agent", () => {
    given(
      allAnswered(),
      vote("a", 4, "b", "agent2.1"),
      vote("b", 3, "b", "agent2.1"),
      vote("c", 2, "b", "agent2.1"),
      presentationStarted("b", "agent2.1", { "agent1.1": 0, "agent2.1": 3, "agent3.1": 0 }),
      finalAnswer("b", "agent2.1", "presentation", "F"),
    )
      .whenStopped("interrupted", { message: "SIGINT" })
      .then(runFinished("interrupted", "b", "SIGINT"))
  })

  test("a finished run cannot be stopped again, and decides nothing", () => {
    const g = given(started(), runFinished("timeout", null, "t"))
    g.whenStopped("interrupted").thenNothing()
    g.whenDecided().thenNothing()
    expect(g.state.agents.every((a) => a.inFlight === null)).toBe(true)
  })
})

describe("late and stray replies", () => {
  test("a reply for a cancelled round is ignored", () => {
    const g = given(
      started(),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1),
      answer("b", 1, "agent2.1", "B"),
      roundCancelled("a", 2),
    )
    g.when(voted("a", 2, "agent1")).thenNothing()
    g.when(answered("a", 2, "late")).thenNothing()
    g.when(failed("a", 2)).thenNothing()
  })

  test("a reply for a round replaced by a newer one is ignored", () => {
    given(
      started(),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1),
      answer("b", 1, "agent2.1", "B"),
      roundCancelled("a", 2),
      roundStarted("a", 3, L12, { restart: true }),
    )
      .when(voted("a", 2, "agent1"))
      .thenNothing()
  })

  test("a reply after the run finished is ignored", () => {
    given(started(), runFinished("interrupted", null, "SIGINT"))
      .when(answered("a", 1, "A"))
      .thenNothing()
  })

  test("a reply from an unknown agent is ignored", () => {
    given(started())
      .when(answered("z", 1, "?"))
      .thenNothing()
  })
})

describe("tally and salvage", () => {
  test("tally lists every latest label, voted or not", () => {
    const state = given(allAnswered(), vote("a", 4, "b", "agent2.1")).state
    expect(tally(state)).toEqual({ winner: "b", votes: { "agent1.1": 0, "agent2.1": 1, "agent3.1": 0 }, isTie: false })
  })

  test("tally is null with no votes; salvage is null with no answers", () => {
    const state = given(started()).state
    expect(tally(state)).toBeNull()
    expect(salvage(state)).toBeNull()
  })
})

describe("showsLatest", () => {
  test("says what sameLabels(labels, latestLabels(state)) says, for any answers and labels", () => {
    const label = fc.constantFrom("agent1.1", "agent1.2", "agent2.1", "agent3.1", "agent3.2")
    fc.assert(
      fc.property(fc.array(fc.array(label, { maxLength: 3 }), { maxLength: 4 }), fc.array(label, { maxLength: 4 }), (answers, labels) => {
        const state = { ...initialState, agents: answers.map((a) => ({ answers: a })) } as unknown as State
        expect(showsLatest(state, labels)).toBe(sameLabels(labels, latestLabels(state)))
        expect(showsLatest(state, latestLabels(state))).toBe(true)
      }),
    )
  })
})
