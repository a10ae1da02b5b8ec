/**
 * Checklist-gated voting (MassGen's `voting_sensitivity: checklist_gated`) in the round machine and the
 * request: given(a checklist round) → when(reply) → then(events, next step). MassGen's gate knobs
 * (`ChecklistGate.from_budget`) are pinned by value. No I/O.
 */
import { describe, expect, test } from "bun:test"
import { votingSettingsOf } from "../src/domain/config/coordination.ts"
import { CHECKLIST_TOOL, gateOf, withChecklist } from "../src/domain/coordination/checklist.ts"
import { onModelReply, startRound, type Transition } from "../src/domain/coordination/round-machine.ts"
import { DEFAULT_CRITERIA } from "../src/domain/events/index.ts"
import type { LlmReply } from "../src/domain/llm.ts"
import { project } from "../src/domain/projections/status.ts"
import { timelineText } from "../src/domain/projections/view-model.ts"
import { foldEvents } from "../src/domain/state/index.ts"
import { answer, roundStarted, runStarted } from "./support/given.ts"
import { reply, request, shownOf, tool, voteFor } from "./support/replies.ts"

const T = "2025-06-01T12:00:10.000Z"
const SETTINGS = { voting_threshold: 5, criteria: DEFAULT_CRITERIA }

/** Round 2 of a (agent1), which has an answer, showing agent1.1 and agent2.1, checklist-gated. */
const checklistRound = (): Transition => {
  const state = foldEvents([
    runStarted(["a", "b"]),
    roundStarted("a", 1, []),
    answer("a", 1, "agent1.1", "A"),
    roundStarted("a", 2, ["agent1.1"]),
  ])
  const req = withChecklist(request(shownOf("agent1.1", "agent2.1")), SETTINGS, state.agents[0]!, 5)
  return startRound({ agent: "a", round: 2, role: "round", request: req })
}
const when = (t: Transition, r: LlmReply) => onModelReply(t.machine, r, T)
const allScored = (score: number) =>
  Object.fromEntries(["agent1.1", "agent2.1"].map((l) => [l, Object.fromEntries(DEFAULT_CRITERIA.map((c) => [c.id, { score }]))]))

describe("MassGen's ChecklistGate.from_budget", () => {
  test("four criteria: strict while the budget is ample, relaxed as it runs out and as voting_threshold rises", () => {
    // threshold 5, 5 of 5 answers left: effective 4 → 3 required, cutoff 8.
    expect(gateOf(5, 5, 5, 4)).toEqual({ required: 3, cutoff: 8 })
    // 2 left: effective 7 → 3 required, cutoff 6.
    expect(gateOf(5, 2, 5, 4)).toEqual({ required: 3, cutoff: 6 })
    // threshold 0, ample: effective 0 → every criterion, cutoff 10.
    expect(gateOf(0, 5, 5, 4)).toEqual({ required: 4, cutoff: 10 })
    // threshold 10, none left: effective 10 (clamped) → the floor of 2, cutoff 5.
    expect(gateOf(10, 0, 5, 4)).toEqual({ required: 2, cutoff: 5 })
  })
})

describe("the checklist round (MassGen: agents score the answers with submit_checklist before they vote)", () => {
  test("the round offers submit_checklist and tells the criteria", () => {
    const req = checklistRound().machine.request
    expect(req.tools.map((t) => t.name)).toContain(CHECKLIST_TOOL)
    expect(req.system).toContain(`E1: ${DEFAULT_CRITERIA[0]!.text}`)
  })

  test("a vote before the checklist is refused (checklist_required) and the model is asked again", () => {
    const t = when(checklistRound(), voteFor("agent2"))
    expect(t.events).toEqual([expect.objectContaining({ _tag: "reply_rejected", reason: "checklist_required", attempt: 1 })])
    expect(t.step._tag).toBe("call_model")
  })

  test("an accepted submission is checklist_submitted with the scores and verdict, then the vote counts", () => {
    const t = when(checklistRound(), reply("", [tool(CHECKLIST_TOOL, { scores: allScored(9), report_path: "" })]))
    expect(t.events).toEqual([
      expect.objectContaining({
        _tag: "checklist_submitted",
        agent: "a",
        round: 2,
        accepted: true,
        best_label: "agent1.1",
        true_count: 4,
        required: 3,
        cutoff: 8,
        verdict: "vote",
      }),
    ])
    expect(t.step._tag).toBe("call_model")
    const voted = when(t, voteFor("agent2"))
    expect(voted.step).toMatchObject({ _tag: "done", reply: { _tag: "voted", targetAnonId: "agent2" } })
  })

  test("the scores reach status.json (agents.<id>.checklist) and the timeline of both views", () => {
    const t = when(checklistRound(), reply("", [tool(CHECKLIST_TOOL, { scores: allScored(9) })]))
    const event = t.events[0]!
    expect(timelineText(event)).toBe("checklist: agent1.1 scored best, 4 criteria at 8+ (3 needed): vote")
    const state = foldEvents([
      runStarted(["a", "b"]),
      roundStarted("a", 1, []),
      answer("a", 1, "agent1.1", "A"),
      roundStarted("a", 2, ["agent1.1"]),
      event,
    ])
    expect(project(state, 0).agents.a!.checklist).toMatchObject({ round: 2, verdict: "vote", scores: { "agent2.1": { E1: 9 } } })
  })

  test("low scores give the verdict new_answer (the best answer passes too few criteria)", () => {
    const t = when(checklistRound(), reply("", [tool(CHECKLIST_TOOL, { scores: allScored(6) })]))
    expect(t.events[0]).toMatchObject({ accepted: true, true_count: 0, verdict: "new_answer" })
  })

  test("a submission missing an answer is not accepted, and a vote after it is still refused", () => {
    const t = when(checklistRound(), reply("", [tool(CHECKLIST_TOOL, { scores: { "agent1.1": allScored(9)["agent1.1"] } })]))
    expect(t.events[0]).toMatchObject({ _tag: "checklist_submitted", accepted: false, verdict: null })
    expect((t.events[0] as { message: string }).message).toContain("agent2.1 E1")
    expect(when(t, voteFor("agent2")).events).toEqual([expect.objectContaining({ reason: "checklist_required" })])
  })

  test("a round of an agent without an answer offers no checklist (MassGen: not before the first answer)", () => {
    const state = foldEvents([runStarted(["a", "b"]), roundStarted("a", 1, [])])
    const req = withChecklist(request(shownOf("agent2.1")), SETTINGS, state.agents[0]!, 5)
    expect(req.tools.map((t) => t.name)).not.toContain(CHECKLIST_TOOL)
  })
})

describe("the config (votingSettingsOf)", () => {
  test("checklist_gated takes voting_threshold (MassGen's `or 5`) and the inline criteria, else massgen's own", () => {
    expect(votingSettingsOf({ voting_sensitivity: "checklist_gated", voting_threshold: 2 })).toEqual({
      checklist: { voting_threshold: 2, criteria: DEFAULT_CRITERIA },
    })
    const inline = { coordination: { checklist_criteria_inline: [{ text: "Cites a source.", category: "primary" }] } }
    expect(votingSettingsOf({ voting_sensitivity: "checklist_gated", ...inline })).toEqual({
      checklist: { voting_threshold: 5, criteria: [{ id: "E1", text: "Cites a source." }] },
    })
    expect(votingSettingsOf({ voting_sensitivity: "strict", voting_threshold: 2 })).toEqual({})
  })
})
