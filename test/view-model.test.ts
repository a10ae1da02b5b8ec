/**
 * The view model: a fold of the events (through `evolve`) and the streamed
 * text into what every view shows, with the same numbers as status.json:
 * every answer (replaced and losing ones too), and one clock (active time) for
 * the elapsed time and the timeline, a resume's pause counted in neither.
 */
import { beforeAll, expect, test } from "bun:test"
import type { Event } from "../src/domain/events/index.ts"
import { project } from "../src/domain/projections/status.ts"
import {
  applyEvent,
  applyText,
  foldView,
  markProcessGone,
  TAIL_LIMIT,
  TIMELINE_LIMIT,
  viewOf,
} from "../src/domain/projections/view-model.ts"
import { foldEvents } from "../src/domain/state/index.ts"
import type { MemoryRun } from "./support/harness.ts"
import { COUNCIL, FINAL_MD, playCouncil, QUESTION } from "./support/view-fixtures.ts"

let run: MemoryRun
beforeAll(async () => {
  run = await playCouncil()
})

test("every prefix of a run agrees with the state and status.json", () => {
  for (let n = 0; n <= run.events.length; n++) {
    const model = foldView(run.events.slice(0, n))
    const state = foldEvents(run.events.slice(0, n))
    expect(model.state).toEqual(state)
    const view = viewOf(model, state.lastTime)
    // A view knows which calls have sent nothing yet (no text seen since their call_start): status.json is told the same.
    const status = project(state, state.lastTime, "", { awaiting: model.awaiting })
    expect(view.phase).toBe(status.coordination.phase)
    expect(view.completion).toBe(status.coordination.completion_percentage)
    expect(view.agents.map((a) => a.status)).toEqual(Object.values(status.agents).map((a) => a.status))
    expect(view.tally).toEqual(status.results.votes)
  }
})

test("the finished view: question, answers, votes, winner and final answer", () => {
  const view = viewOf(foldView(run.events), 0)
  expect(view.question).toBe(QUESTION)
  expect(view.finished).toEqual({ reason: "completed", message: expect.any(String) })
  expect(view.agents.map((a) => [a.id, a.model, a.answers])).toEqual([
    ["planner", "gpt-4o-mini", ["agent1.1"]],
    ["researcher", "claude-sonnet-4", ["agent2.1"]],
    ["critic", "gemini-2.5-flash", ["agent3.1"]],
  ])
  expect(view.votes.map((v) => [v.voter, v.target, v.label])).toEqual([
    ["planner", "researcher", "agent2.1"],
    ["researcher", "researcher", "agent2.1"],
    ["critic", "researcher", "agent2.1"],
  ])
  expect(view.votes[1]!.reason).toBe("the most complete plan")
  expect(view.winner).toBe("researcher")
  expect(view.final).toMatchObject({ agent: "researcher", label: "agent2.1", source: "presentation", content: FINAL_MD })
  expect(view.inputTokens + view.outputTokens).toBe(view.agents.reduce((n, a) => n + a.tokens, 0))
  expect(view.elapsedSeconds).toBeGreaterThan(0)
  expect(view.timeline.at(-1)).toMatchObject({ kind: "run_finished", agent: null, text: "run completed, winner researcher" })
  expect(view.timeline.some((e) => e.kind === "call_start" || e.kind === "call_end")).toBe(false)
})

test("streamed text: kept per agent, bounded, cleared when the agent's next round starts", () => {
  const started = run.events.findIndex((e) => e._tag === "round_started" && e.agent === "planner")
  let model = foldView(run.events.slice(0, started + 1))
  model = applyText(applyText(model, "planner", "Hello "), "planner", "world")
  expect(viewOf(model, 0).agents[0]).toMatchObject({ tail: "Hello world", tailIsAnswer: false })
  model = applyText(model, "planner", "x".repeat(TAIL_LIMIT + 10))
  expect(model.tails.planner!.length).toBe(TAIL_LIMIT)
  const nextRound = run.events.findIndex((e, i) => i > started && e._tag === "round_started" && e.agent === "planner")
  model = foldView(run.events.slice(started + 1, nextRound + 1), model)
  // Nothing streamed in the new round: the panel shows the agent's latest answer.
  expect(viewOf(model, 0).agents[0]).toMatchObject({ tail: "Build a small project in the first week.", tailIsAnswer: true })
})

test("the timeline keeps the newest entries; events that change nothing are not added", () => {
  const started = run.events.find((e) => e._tag === "round_started")!
  let model = foldView(run.events.slice(0, 1))
  for (let i = 0; i < TIMELINE_LIMIT + 50; i++) model = applyEvent(model, { ...started, round: i + 1 } as typeof started)
  expect(model.timeline.length).toBeLessThanOrEqual(TIMELINE_LIMIT)
  const before = foldView(run.events)
  const after = applyEvent(before, run.events[3]!)
  expect(after.timeline).toBe(before.timeline)
  expect(after.state.skippedEvents).toBe(before.state.skippedEvents + 1)
})

test("the presentation clears the presenter's tail: its voting round's text is not shown as the final answer", () => {
  const presenting = run.events.findIndex((e) => e._tag === "presentation_started")
  const winner = (run.events[presenting] as { agent: string }).agent
  let model = foldView(run.events.slice(0, presenting))
  model = applyText(model, winner, "Reviewing 3 answer(s).")
  model = applyEvent(model, run.events[presenting]!)
  const presenter = viewOf(model, 0).agents.find((a) => a.id === winner)!
  expect(presenter.tail).not.toContain("Reviewing")
  expect(presenter.tailIsAnswer).toBe(true)
  model = applyText(model, winner, "Learn by")
  expect(viewOf(model, 0).agents.find((a) => a.id === winner)).toMatchObject({ tail: "Learn by", tailIsAnswer: false })
})

test("an agent's tool calls: a line each in its text (name, short arguments, ok or error, duration), counts, and the timeline", () => {
  const started = run.events.find((e) => e._tag === "round_started")!
  const base = {
    agent: started.agent,
    round: started.round,
    role: "round" as const,
    call_id: "c1",
    tool: "search",
    server: null,
    arguments: '{"q":"2+2"}',
  }
  const at = (ms: number) => new Date(Date.parse(started.time) + ms).toISOString()
  const finished = (ok: boolean, tool_call: number) => ({
    _tag: "tool_call_finished" as const,
    time: at(20 + tool_call),
    ...base,
    tool_call,
    ok,
    error: ok ? null : "failed: no network",
    seconds: 0.25,
    result: ok ? "4" : "error: failed: no network",
    result_chars: 1,
    digest: "d",
  })
  const prefix = run.events.slice(0, run.events.indexOf(started) + 1)
  const model = foldView([
    ...prefix,
    { _tag: "tool_call_started", time: at(10), tool_call: 1, ...base },
    finished(true, 1),
    finished(false, 2),
  ])
  const agent = viewOf(model, 0).agents.find((a) => a.id === started.agent)!
  expect(agent.tail.trim().split("\n")).toEqual([
    '[tool search(q="2+2") running]',
    '[tool search(q="2+2") ok in 0.25s]',
    '[tool search(q="2+2") error: failed: no network in 0.25s]',
  ])
  expect([agent.toolCalls, agent.toolErrors]).toEqual([2, 1])
  expect(model.timeline.slice(-2).map((e) => [e.agent, e.text])).toEqual([
    [started.agent, 'tool search(q="2+2") ok in 0.25s'],
    [started.agent, 'tool search(q="2+2") error: failed: no network in 0.25s'],
  ])
})

/** The council stopped (its process gone) after its first answer, taken up again `pauseMs` later by a resume that continues the rounds in flight. */
const resumedAfter = (pauseMs: number): Array<Event> => {
  const cut = run.events.findIndex((e) => e._tag === "answer_submitted") + 1
  const before = run.events.slice(0, cut)
  const inFlight = foldEvents(before).agents.flatMap((a) =>
    a.inFlight === null ? [] : [{ agent: a.info.id, round: a.inFlight.round, shown: a.inFlight.shown, vote_only: a.inFlight.voteOnly }],
  )
  const later = (e: Event): Event => ({ ...e, time: new Date(Date.parse(e.time) + pauseMs).toISOString() })
  const resumed: Event = {
    _tag: "run_resumed",
    time: before.at(-1)!.time,
    dropped_lines: 0,
    torn_tail: false,
    restarted_rounds: [],
    presentation_restarted: false,
    continued_rounds: inFlight,
  }
  return [...before, later(resumed), ...run.events.slice(cut).map(later)]
}

test("after a resume, elapsed time and the timeline are on one clock: the pause is in neither", () => {
  const pause = 60_000
  const events = resumedAfter(pause)
  const model = foldView(events)
  expect(model.state.skippedEvents).toBe(0)
  const view = viewOf(model, Date.now())
  const straight = viewOf(foldView(run.events), 0)
  expect(view.finished?.reason).toBe("completed")
  // The run took as long as the one never stopped; its last entry is at its elapsed time.
  expect(view.elapsedSeconds).toBe(straight.elapsedSeconds)
  expect(view.timeline.at(-1)!.at).toBe(view.elapsedSeconds)
  expect(view.timeline.find((e) => e.kind === "run_resumed")!.at).toBe(
    (Date.parse(events.find((e) => e._tag === "run_resumed")!.time) - pause - Date.parse(events[0]!.time)) / 1000,
  )
  expect(view.timeline.filter((e) => e.kind !== "run_resumed").map((e) => e.at)).toEqual(straight.timeline.map((e) => e.at))
  // While it goes on, the newest entry is never past the clock.
  for (let n = 1; n <= events.length; n++) {
    const part = viewOf(foldView(events.slice(0, n)), Date.parse(events[n - 1]!.time))
    expect(part.timeline.at(-1)!.at).toBeLessThanOrEqual(part.elapsedSeconds)
  }
})

test("a run whose process is gone keeps its clock at its last event", () => {
  const cut = run.events.findIndex((e) => e._tag === "vote_cast")
  const model = markProcessGone(foldView(run.events.slice(0, cut)))
  const at = Date.parse(run.events[cut - 1]!.time)
  expect(viewOf(model, at + 3_600_000).elapsedSeconds).toBe(viewOf(model, at).elapsedSeconds)
  expect(viewOf(model, at).processGone).toBe(true)
})

test("every answer is in the view, the replaced and the losing ones too, with its votes", () => {
  const model = foldView(run.events)
  const view = viewOf(model, 0)
  expect(view.answers.map((a) => [a.label, a.agent, a.supersededBy, a.votes])).toEqual([
    ["agent1.1", "planner", null, 0],
    ["agent2.1", "researcher", null, 3],
    ["agent3.1", "critic", null, 0],
  ])
  expect(view.answers.map((a) => a.content)).toEqual(Object.values(model.state.answers).map((a) => a.content))
})

test("a replaced answer names the one that replaced it", async () => {
  const revising = {
    ...COUNCIL,
    agents: COUNCIL.agents.map((a) => (a.id === "planner" ? { ...a, backend: { ...a.backend, keep_answering: true } } : a)),
  }
  const view = viewOf(foldView((await playCouncil(revising)).events), 0)
  const planner = view.answers.filter((a) => a.agent === "planner")
  expect(planner.map((a) => [a.label, a.supersededBy])).toEqual([
    ["agent1.1", "agent1.2"],
    ["agent1.2", null],
  ])
  expect(planner[1]!.content).toBe("Build a small project in the first week. (revision 2)")
  expect(planner[0]!.votes).toBe(0)
})
