/**
 * Orchestration restarts (MassGen's `max_orchestration_restarts`, `post_evaluate_answer`, `handle_restart`),
 * as given(events) → when(reply | decision) → then(events), and the fold and the requests they lead to. No I/O.
 *
 * One agent `a` (agent1) answers, votes for itself and presents; its evaluation decides.
 */
import { describe, expect, test } from "bun:test"
import { headerLines } from "../src/cli/terminal-view/render.ts"
import { decide, type Reply } from "../src/domain/coordination/decide.ts"
import { requestForEvaluation, requestForRound } from "../src/domain/coordination/requests.ts"
import { evaluationVerdict } from "../src/domain/coordination/restarts.ts"
import { onCallFailed, onModelReply, startRound } from "../src/domain/coordination/round-machine.ts"
import type { Event } from "../src/domain/events/index.ts"
import { noUsage } from "../src/domain/llm.ts"
import { foldView, viewOf } from "../src/domain/projections/view-model.ts"
import { attemptsOf, foldEvents } from "../src/domain/state/index.ts"
import { answer, finalAnswer, given, presentationStarted, roundStarted, runFinished, runStarted, stamp, vote } from "./support/given.ts"

const AGENT = { id: "a", anonId: "agent1", systemMessage: null, backend: { type: "scripted" } } as never

/** Attempt `n` of a lone agent up to its final answer; its answer is `agent1.<n>`, its rounds 2n-1 and 2n. */
const attempt = (n: number, content: string): ReadonlyArray<Event> => {
  const label = `agent1.${n}`
  return [
    roundStarted("a", 2 * n - 1, []),
    answer("a", 2 * n - 1, label, content),
    roundStarted("a", 2 * n, [label]),
    vote("a", 2 * n, "a", label),
    presentationStarted("a", label, { [label]: 1 }, { callsModel: true }),
    finalAnswer("a", label, "presentation", `final ${content}`),
  ]
}

const evaluationStarted = (n: number): Event => ({ _tag: "evaluation_started", time: "", agent: "a", attempt: n })
const restarted = (n: number, reason = "incomplete", instructions = "add units"): Event => ({
  _tag: "orchestration_restarted",
  time: "",
  agent: "a",
  attempt: n,
  reason,
  instructions,
})
const confirmed = (n: number, how: "submitted" | "no_decision" = "submitted"): Event => ({
  _tag: "answer_confirmed",
  time: "",
  agent: "a",
  attempt: n,
  how,
})
const evaluated = (verdict: "submit" | "none"): Reply => ({ _tag: "evaluated", agent: "a", verdict })
const restartReply = (reason: string, instructions: string): Reply => ({
  _tag: "evaluated",
  agent: "a",
  verdict: "restart",
  reason,
  instructions,
})

const withRestarts = (n: number) => runStarted(["a"], { max_orchestration_restarts: n })

describe("post-evaluation (MassGen's post_evaluate_answer)", () => {
  test("with restarts left, the final answer is evaluated by its presenter before the run ends", () => {
    given(withRestarts(1), attempt(1, "A")).whenDecided().then(evaluationStarted(1))
  })

  test("without max_orchestration_restarts the run ends at the final answer, as before", () => {
    given(runStarted(["a"]), attempt(1, "A"))
      .whenDecided()
      .then(runFinished("completed", "a", "every live agent voted"))
  })

  test("nothing more is decided while the evaluation is in flight", () => {
    given(withRestarts(1), attempt(1, "A"), evaluationStarted(1)).whenDecided().thenNothing()
  })

  test("submit (MassGen's submit tool) confirms the answer, and the run completes", () => {
    given(withRestarts(1), attempt(1, "A"), evaluationStarted(1)).when(evaluated("submit")).then(confirmed(1))
    given(withRestarts(1), attempt(1, "A"), evaluationStarted(1), confirmed(1))
      .whenDecided()
      .then(runFinished("completed", "a", "every live agent voted"))
  })

  test("an evaluation that decides nothing (no tool, a failed call, a timeout) confirms the answer: MassGen auto-submits", () => {
    given(withRestarts(1), attempt(1, "A"), evaluationStarted(1)).when(evaluated("none")).then(confirmed(1, "no_decision"))
  })

  test("restart_orchestration starts attempt 2 with the reason and the instructions", () => {
    given(withRestarts(1), attempt(1, "A"), evaluationStarted(1))
      .when(restartReply("no units", "say metres"))
      .then(restarted(2, "no units", "say metres"))
  })

  test("a reply of no evaluation in flight is ignored", () => {
    given(withRestarts(1), attempt(1, "A")).when(restartReply("x", "y")).thenNothing()
  })
})

describe("the next attempt (MassGen's handle_restart)", () => {
  test("after a restart coordination starts again: round numbers go on, nothing is shown", () => {
    given(withRestarts(1), attempt(1, "A"), evaluationStarted(1), restarted(2))
      .whenDecided()
      .then(roundStarted("a", 3, []))
  })

  test("attempt 2's answer is labelled after attempt 1's (agent1.2), and its final answer is evaluated no more at the cap", () => {
    given(withRestarts(1), attempt(1, "A"), evaluationStarted(1), restarted(2), attempt(2, "B"))
      .whenDecided()
      .then(runFinished("completed", "a", "every live agent voted (attempt 2)"))
  })

  test("with restarts left after attempt 2, its final answer is evaluated too", () => {
    given(withRestarts(2), attempt(1, "A"), evaluationStarted(1), restarted(2), attempt(2, "B")).whenDecided().then(evaluationStarted(2))
  })

  test("the fold sets the attempt's answers, votes and final answer aside and keeps the restart", () => {
    const state = foldEvents(stamp([withRestarts(1), ...attempt(1, "A"), evaluationStarted(1), restarted(2, "why", "what")]))
    expect(state.final).toBeNull()
    expect(state.presentation).toBeNull()
    expect(state.agents[0]).toMatchObject({ answers: [], vote: null, rounds: 2, priorAnswers: 1 })
    expect(attemptsOf(state)).toMatchObject({
      attempt: 2,
      evaluating: null,
      restarts: [{ attempt: 2, reason: "why", instructions: "what", previousAnswer: "final A" }],
    })
  })

  test("a restart beyond the next attempt, or with no evaluation in flight, does not fold", () => {
    const state = foldEvents(stamp([withRestarts(1), ...attempt(1, "A"), evaluationStarted(1), restarted(3)]))
    expect(attemptsOf(state).attempt).toBe(1)
    expect(state.skippedEvents).toBe(1)
  })

  test("a round of attempt 2 opens with the previous attempt's feedback, before the task", () => {
    const state = foldEvents(
      stamp([withRestarts(1), ...attempt(1, "A"), evaluationStarted(1), restarted(2, "why", "what"), roundStarted("a", 3, [])]),
    )
    const request = requestForRound(state, AGENT)!
    const user = request.messages[0]!.content as string
    expect(user.startsWith("<PREVIOUS ATTEMPT FEEDBACK>")).toBe(true)
    expect(user).toContain("why")
    expect(user).toContain("what")
    expect(user).toContain("final A")
    expect(decide(state)).toEqual([])
  })
})

describe("the evaluation's call", () => {
  const state = foldEvents(stamp([withRestarts(1), ...attempt(1, "A"), evaluationStarted(1)]))
  const request = requestForEvaluation(state, AGENT)!
  const machine = startRound({ agent: "a", round: 2, role: "evaluation", request }).machine
  const replyWith = (name: string, args: object) => ({
    text: "",
    reasoning: "",
    toolCalls: [{ id: "c1", name, arguments: JSON.stringify(args) }],
    usage: noUsage,
    truncated: null,
    raw: null,
  })

  test("offers MassGen's submit and restart_orchestration, with the final answer to evaluate", () => {
    expect(request.tools.map((t) => t.name)).toEqual(["submit", "restart_orchestration"])
    expect(request.messages[0]!.content).toContain("final A")
  })

  test("restart_orchestration ends it with its reason and instructions; missing ones are MassGen's defaults", () => {
    const t = onModelReply(machine, replyWith("restart_orchestration", { reason: "r", instructions: "i" }), "2025-06-01T12:00:00.000Z")
    expect(t.step).toMatchObject({ _tag: "done", reply: { _tag: "evaluated", verdict: "restart", reason: "r", instructions: "i" } })
    expect(evaluationVerdict(replyWith("restart_orchestration", {}))).toEqual({
      verdict: "restart",
      reason: "No reason provided",
      instructions: "No instructions provided",
    })
  })

  test("submit ends it; a failed call ends it undecided", () => {
    expect(onModelReply(machine, replyWith("submit", { confirmed: true }), "2025-06-01T12:00:00.000Z").step).toMatchObject({
      reply: { verdict: "submit" },
    })
    expect(onCallFailed(machine, "boom").step).toMatchObject({ reply: { _tag: "evaluated", verdict: "none" } })
  })
})

describe("what the views show", () => {
  const events = stamp([withRestarts(2), ...attempt(1, "A"), evaluationStarted(1), restarted(2, "no units", "say metres")])

  test("the terminal view's header says the attempt, and its timeline the restart with its reason", () => {
    const view = viewOf(foldView(events), Date.parse("2025-06-01T13:00:00.000Z"))
    expect(view.attempt).toEqual({ current: 2, max: 3 })
    expect(headerLines(view, 120, false)[0]).toContain("attempt 2/3")
    expect(view.timeline.map((e) => e.text)).toContain("restarts the orchestration: attempt 2 starts (no units)")
  })

  test("a run without restarts shows no attempt", () => {
    const view = viewOf(foldView(stamp([runStarted(["a"]), ...attempt(1, "A")])), Date.parse("2025-06-01T13:00:00.000Z"))
    expect(view.attempt).toBeNull()
    expect(headerLines(view, 120, false)[0]).not.toContain("attempt")
  })
})
