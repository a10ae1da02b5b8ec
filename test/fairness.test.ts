/**
 * MassGen's fairness (`fairness_lead_cap_answers`, `max_midstream_injections_per_round`) and
 * `defer_peer_updates_until_restart`, as given(events) → when(decision | reply) → then(events), and
 * the config keys that turn them on (`votingSettingsOf`). No I/O.
 *
 * Agents a, b, c are agent1, agent2, agent3 to each other.
 */
import { describe, expect, test } from "bun:test"
import { votingSettingsOf } from "../src/domain/config/coordination.ts"
import { decide, updateFor } from "../src/domain/coordination/decide.ts"
import type { Event, RunSettings } from "../src/domain/events/index.ts"
import { answer, callEnded, given, roundStarted, runStarted, updateInjected, voted, voteIgnored } from "./support/given.ts"

const L1 = ["agent1.1"]
const L12 = ["agent1.1", "agent2.1"]

/** a answered and is in round 2 with work to keep (a call came back), while b and c are still on their first rounds. */
const aAhead = (settings: Partial<RunSettings>): ReadonlyArray<Event> => [
  runStarted(["a", "b", "c"], settings),
  roundStarted("a", 1, []),
  roundStarted("b", 1, []),
  roundStarted("c", 1, []),
  answer("a", 1, "agent1.1", "A"),
  roundStarted("a", 2, L1),
  callEnded("a", 2, 1),
]

describe("fairness_lead_cap_answers (MassGen pauses an agent before a round that would put it too far ahead)", () => {
  test("an agent one answer ahead of the slowest active peer gets no new round at lead cap 1", () => {
    // b and c have no answer: a's next (second) answer would lead by 2 > 1.
    given(...aAhead({ fairness_lead_cap_answers: 1 }), answer("a", 2, "agent1.2", "A2"))
      .whenDecided()
      .thenNothing()
  })

  test("without the cap the same agent gets its next round at once", () => {
    given(...aAhead({}), answer("a", 2, "agent1.2", "A2"))
      .whenDecided()
      .then(roundStarted("a", 3, ["agent1.2"]))
  })

  test("the first answer is never held back, even at lead cap 0", () => {
    given(runStarted(["a", "b"], { fairness_lead_cap_answers: 0 }))
      .whenDecided()
      .then(roundStarted("a", 1, []), roundStarted("b", 1, []))
  })

  test("peers catching up get their rounds while the agent a full answer ahead still waits", () => {
    given(
      ...aAhead({ fairness_lead_cap_answers: 1 }),
      answer("a", 2, "agent1.2", "A2"),
      answer("b", 1, "agent2.1", "B"),
      answer("c", 1, "agent3.1", "C"),
    )
      .whenDecided()
      .then(roundStarted("b", 2, ["agent1.2", "agent2.1", "agent3.1"]), roundStarted("c", 2, ["agent1.2", "agent2.1", "agent3.1"]))
  })

  test("agents that voted are not active peers: a lone active agent is never paused (MassGen's guard against deadlock)", () => {
    const g = given(
      runStarted(["a", "b"], { fairness_lead_cap_answers: 1 }),
      roundStarted("a", 1, []),
      roundStarted("b", 1, []),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, L1),
      answer("a", 2, "agent1.2", "A2"),
    )
    // b voted for a's latest with no answer of its own; a alone is active, and gets its round.
    const after = given(...g.events, {
      _tag: "vote_cast",
      time: g.now,
      agent: "b",
      round: 1,
      target: "a",
      target_label: "agent1.2",
      reason: "ok",
    })
    expect(after.whenDecided().commands).toEqual([
      { _tag: "StartRound", agent: "a", round: 3, shown: ["agent1.2"], voteOnly: false, restart: false },
    ])
  })

  test("when every agent would be paused and nothing is in flight, they all start (no one could catch up otherwise)", () => {
    given(
      runStarted(["a", "b"], { fairness_lead_cap_answers: 0 }),
      roundStarted("a", 1, []),
      roundStarted("b", 1, []),
      answer("a", 1, "agent1.1", "A"),
      answer("b", 1, "agent2.1", "B"),
    )
      .whenDecided()
      .then(roundStarted("a", 2, L12), roundStarted("b", 2, L12))
  })
})

describe("max_midstream_injections_per_round (MassGen's cap on the source updates injected into one round)", () => {
  test("two new answers at cap 1: only the first in config order is injected", () => {
    const g = given(...aAhead({ max_midstream_injections_per_round: 1 }), answer("b", 1, "agent2.1", "B"), answer("c", 1, "agent3.1", "C"))
    expect(updateFor(g.state, "a", 2)).toEqual(L12)
  })

  test("at the cap nothing more is injected, and the round is not cancelled: it goes on", () => {
    const g = given(
      ...aAhead({ max_midstream_injections_per_round: 1 }),
      answer("b", 1, "agent2.1", "B"),
      updateInjected("a", 2, L12),
      answer("c", 1, "agent3.1", "C"),
    )
    expect(g.state.agents[0]!.inFlight!.injected).toBe(1)
    expect(updateFor(g.state, "a", 2)).toBeNull()
    expect(decide(g.state).filter((c) => c._tag === "CancelRound")).toEqual([])
  })

  test("its vote, which did not see the last answer, is not counted: its next round shows it (MassGen ignores the vote, restart pending)", () => {
    given(
      ...aAhead({ max_midstream_injections_per_round: 1 }),
      answer("b", 1, "agent2.1", "B"),
      updateInjected("a", 2, L12),
      answer("c", 1, "agent3.1", "C"),
    )
      .when(voted("a", 2, "agent2"))
      .then(voteIgnored("a", 2, "b", "stale"))
  })

  test("without the cap every new answer is injected at once", () => {
    const g = given(...aAhead({}), answer("b", 1, "agent2.1", "B"), answer("c", 1, "agent3.1", "C"))
    expect(updateFor(g.state, "a", 2)).toEqual(["agent1.1", "agent2.1", "agent3.1"])
  })
})

describe("defer_peer_updates_until_restart (MassGen holds peer updates back until the agent's round restarts)", () => {
  const aBusy = [
    runStarted(["a", "b"], { defer_peer_updates_until_restart: true }),
    roundStarted("a", 1, []),
    roundStarted("b", 1, []),
    answer("a", 1, "agent1.1", "A"),
    roundStarted("a", 2, L1),
    callEnded("a", 2, 1),
    answer("b", 1, "agent2.1", "B"),
  ]

  test("a new answer reaches no round in flight, and the round is not cancelled", () => {
    const g = given(...aBusy)
    expect(updateFor(g.state, "a", 2)).toBeNull()
    expect(decide(g.state).filter((c) => "agent" in c && c.agent === "a")).toEqual([])
  })

  test("the round's stale vote is not counted, and the next round shows the new answer", () => {
    const g = given(...aBusy).when(voted("a", 2, "agent1"))
    g.then(voteIgnored("a", 2, "a", "stale"))
    given(...aBusy, voteIgnored("a", 2, "a", "stale"))
      .whenDecided()
      .then(roundStarted("a", 3, L12, { restart: true }), roundStarted("b", 2, L12))
  })
})

describe("the voting keys' settings (votingSettingsOf)", () => {
  test("fairness_enabled: true takes MassGen's caps, lead 1 and 2 injections a round", () => {
    expect(votingSettingsOf({ fairness_enabled: true })).toEqual({ fairness_lead_cap_answers: 1, max_midstream_injections_per_round: 2 })
  })
  test("a fairness key alone turns fairness on, as in MassGen where it is on by default", () => {
    expect(votingSettingsOf({ max_midstream_injections_per_round: 3 })).toEqual({
      fairness_lead_cap_answers: 1,
      max_midstream_injections_per_round: 3,
    })
  })
  test("fairness_enabled: false turns the caps off whatever they say; no key leaves the run as before", () => {
    expect(votingSettingsOf({ fairness_enabled: false, fairness_lead_cap_answers: 2 })).toEqual({})
    expect(votingSettingsOf({})).toEqual({})
    expect(votingSettingsOf({ defer_peer_updates_until_restart: true })).toEqual({ defer_peer_updates_until_restart: true })
  })
})
