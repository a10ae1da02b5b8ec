/**
 * Properties of the fold, the decider and the projection, over runs made by a pure simulator.
 *
 * The simulator is the orchestrator without effects: it applies `decide` until it asks
 * for nothing more (recording each command as its event), then picks a round in flight
 * (or the presentation) and a reply for it, judges it with `judgeReply`, folds the
 * events, and sometimes stops the run from outside. Every reply comes after its call
 * (call_start, call_end with a cost), so a budget is spent as in a real run and the
 * decider stops it; a process may die and the run be resumed (run_resumed), also after
 * a signal stopped it. After a random phase it only gives valid replies, so every run
 * must end.
 */
import { describe, expect, test } from "bun:test"
import { Arbitrary, FastCheck } from "effect"
import fc from "fast-check"
import {
  budgetSpent,
  type Command,
  commandEvents,
  decide,
  globalCapReached,
  judgeReply,
  noVoteRun,
  type Reply,
  stopRun,
  updateFor,
  votingDeferred,
} from "../src/domain/coordination/decide.ts"
import { DEFAULT_CRITERIA, Event, type FinishReason, type RunSettings } from "../src/domain/events/index.ts"
import { decodeEventLine, encodeEventLine, readEventsText } from "../src/domain/log/index.ts"
import { project } from "../src/domain/projections/status.ts"
import { attemptsOf, evolve, foldEvents, initialState, isLive, latestLabels, type State, sameLabels } from "../src/domain/state/index.ts"
import { at, runStarted } from "./support/given.ts"
import { observe, reference } from "./support/reference-model.ts"

// ---------------------------------------------------------------- helpers

const deepFreeze = <T>(value: T): T => {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value)) deepFreeze(v)
  }
  return value
}

/** The invariants every state of a simulated run keeps. Throws (via expect) when one breaks. */
const checkInvariants = (state: State): void => {
  const live = state.agents.filter(isLive)
  // Labels: agentN.1, agentN.2, ... per agent, unique over the run.
  let labels = 0
  for (const a of state.agents) {
    // Orchestration restarts: an attempt's labels go on after the attempts before (`priorAnswers`).
    const prior = a.priorAnswers ?? 0
    expect(a.answers).toEqual(a.answers.map((_, i) => `${a.info.anon_id}.${prior + i + 1}`))
    for (const label of a.answers) expect(state.answers[label]?.agent).toBe(a.info.id)
    labels += prior + a.answers.length
  }
  // Attempts: never more than 1 + max_orchestration_restarts, and an evaluation only of a final answer.
  const at = attemptsOf(state)
  if (state.run !== null) expect(at.attempt).toBeLessThanOrEqual(1 + (state.run.settings.max_orchestration_restarts ?? 0))
  if (at.evaluating !== null) expect(state.final?.agent).toBe(at.evaluating.agent)
  expect(Object.keys(state.answers)).toHaveLength(labels)
  // Votes: only live agents vote, so never more than the live agents.
  const votes = state.agents.filter((a) => a.vote !== null)
  expect(votes.length).toBeLessThanOrEqual(live.length)
  expect(votes.every(isLive)).toBe(true)
  // A vote names an answer that is still the latest of its agent.
  for (const a of votes) {
    const target = state.agents.find((t) => t.info.id === a.vote!.target)!
    expect(target.answers.at(-1)).toBe(a.vote!.targetLabel)
  }
  // The cap holds (the simulator, like checkReply, answers only in rounds that offer new_answer).
  const cap = state.run?.settings.max_new_answers_per_agent ?? null
  if (cap !== null) for (const a of state.agents) expect(a.answers.length).toBeLessThanOrEqual(cap)
  // So does the global cap (MassGen's max_new_answers_global): an answer over it is refused.
  const globalCap = state.run?.settings.max_new_answers_global ?? null
  if (globalCap !== null) expect(state.agents.reduce((n, a) => n + a.answers.length, 0)).toBeLessThanOrEqual(globalCap)
  // A presentation, a final answer or a winner only when every live agent voted (in a no-vote run: answered), or the run was stopped.
  const noVote = state.run !== null && noVoteRun(state.run.settings, state.agents.length)
  const capped = state.run !== null && globalCapReached(state)
  const allVoted = live.length > 0 && live.every((a) => (noVote ? a.answers.length > 0 || capped : a.vote !== null))
  if (state.presentation !== null) expect(allVoted).toBe(true)
  if (state.final !== null && state.final.source !== "salvaged") expect(allVoted).toBe(true)
  if (state.finished !== null && state.finished.reason === "completed") expect(allVoted && state.final !== null).toBe(true)
  if (state.finished?.winner != null) expect(state.final?.agent).toBe(state.finished.winner)
  // No round in flight once finished; at most one per agent by construction.
  if (state.finished !== null) expect(state.agents.every((a) => a.inFlight === null)).toBe(true)
  // completion_percentage is 100 iff the run completed; is_complete iff it finished; an error says why it did not complete.
  const status = project(state, state.lastTime)
  expect(status.coordination.completion_percentage === 100).toBe(state.finished?.reason === "completed")
  expect(status.is_complete).toBe(state.finished !== null)
  expect(status.error?.reason ?? null).toBe(state.finished === null || state.finished.reason === "completed" ? null : state.finished.reason)
  expect(status.coordination.completion_percentage).toBeGreaterThanOrEqual(0)
}

/** The rules each event of a simulated run obeys, judged against the state before it. */
const checkTransition = (prev: State, event: Event): void => {
  const agentOf = (id: string) => prev.agents.find((a) => a.info.id === id)!
  switch (event._tag) {
    case "round_started": {
      // A round shows the latest answers; it is vote-only exactly when its agent is at the cap.
      const a = agentOf(event.agent)
      const settings = prev.run!.settings
      const cap = settings.max_new_answers_per_agent
      expect(event.shown).toEqual(latestLabels(prev))
      expect(event.vote_only).toBe((cap !== null && a.answers.length >= cap) || globalCapReached(prev))
      // A no-vote run gives rounds only until an agent's first answer; deferred voting holds an agent
      // with an answer back until every live agent has one (the global cap ends the wait).
      if (noVoteRun(settings, prev.agents.length)) expect(a.answers.length).toBe(0)
      if (settings.defer_voting_until_all_answered === true && a.answers.length > 0 && !globalCapReached(prev)) {
        expect(prev.agents.filter(isLive).every((b) => b.answers.length > 0)).toBe(true)
      }
      // MassGen's fairness: no agent starts a round that could put it more than the lead cap ahead of the
      // slowest active peer, unless nothing else could move (rounds started in the same decision show the latest, no call back yet).
      const leadCap = settings.fairness_lead_cap_answers ?? null
      const active = prev.agents.filter((b) => isLive(b) && b.vote === null)
      if (leadCap !== null && a.answers.length > 0 && active.length > 1) {
        const slowest = Math.min(...active.filter((b) => b !== a).map((b) => b.answers.length))
        const startedTogether = (b: (typeof prev.agents)[number]) =>
          b.inFlight === null || (b.inFlight.steps === 0 && sameLabels(b.inFlight.shown, latestLabels(prev)))
        if (a.answers.length + 1 - slowest > leadCap) expect(prev.agents.filter(isLive).every(startedTogether)).toBe(true)
      }
      expect(event.round).toBe(a.rounds + 1)
      expect(event.restart).toBe(a.restartPending)
      break
    }
    case "round_cancelled": {
      // Only an agent that has an answer is cancelled, and only when its round is stale;
      // at the global cap, any round that offers new_answer.
      const a = agentOf(event.agent)
      expect(a.inFlight?.round).toBe(event.round)
      if (globalCapReached(prev) && !a.inFlight!.voteOnly) break
      expect(a.answers.length).toBeGreaterThan(0)
      expect(sameLabels(a.inFlight!.shown, latestLabels(prev))).toBe(false)
      break
    }
    case "update_injected": {
      // New answers reach only a round with work to keep, of an agent with an answer, when injection is on; they are the latest.
      const a = agentOf(event.agent)
      expect(prev.run!.settings.disable_injection).toBe(false)
      expect(a.answers.length).toBeGreaterThan(0)
      expect(a.inFlight?.round).toBe(event.round)
      expect(a.inFlight!.steps).toBeGreaterThan(0)
      expect(sameLabels(a.inFlight!.shown, event.shown)).toBe(false)
      // MassGen's defer_peer_updates_until_restart: nothing reaches a round in flight.
      expect(prev.run!.settings.defer_peer_updates_until_restart).not.toBe(true)
      // MassGen's max_midstream_injections_per_round: at most that many agents' answers reach one round; all of them when they fit.
      const cap = prev.run!.settings.max_midstream_injections_per_round ?? null
      const injected = (a.inFlight!.injected ?? 0) + event.shown.filter((l) => !a.inFlight!.shown.includes(l)).length
      if (cap === null) expect(event.shown).toEqual(latestLabels(prev))
      else {
        expect(injected).toBeLessThanOrEqual(cap)
        if (injected < cap) expect(event.shown).toEqual(latestLabels(prev))
      }
      break
    }
    case "vote_cast": {
      // A vote counts only when its round showed the latest answers, the target's among them.
      const a = agentOf(event.agent)
      expect(sameLabels(a.inFlight!.shown, latestLabels(prev))).toBe(true)
      expect(a.inFlight!.shown).toContain(event.target_label)
      expect(agentOf(event.target).answers.at(-1)).toBe(event.target_label)
      break
    }
    case "answer_submitted":
      expect(agentOf(event.agent).inFlight?.voteOnly).toBe(false)
      break
    case "presentation_started": {
      if (noVoteRun(prev.run!.settings, prev.agents.length)) {
        // MassGen's skip_voting and quick synthesize: no vote; every live agent answered, and the first presents.
        const live = prev.agents.filter(isLive)
        expect(live.every((a) => a.answers.length > 0) || globalCapReached(prev)).toBe(true)
        expect(event.agent).toBe(live.find((a) => a.answers.length > 0)!.info.id)
        expect(Object.values(event.votes).every((n) => n === 0)).toBe(true)
        break
      }
      // The most-voted agent wins; a tie goes to the earliest in config order.
      const counts = new Map<string, number>()
      for (const a of prev.agents) if (a.vote !== null) counts.set(a.vote.target, (counts.get(a.vote.target) ?? 0) + 1)
      const top = Math.max(...counts.values())
      const leaders = prev.agents.filter((a) => counts.get(a.info.id) === top).map((a) => a.info.id)
      expect(event.agent).toBe(leaders[0]!)
      expect(event.is_tie).toBe(leaders.length > 1)
      expect(event.label).toBe(agentOf(event.agent).answers.at(-1)!)
      expect(Object.values(event.votes).reduce((x, y) => x + y, 0)).toBe(prev.agents.filter((a) => a.vote !== null).length)
      break
    }
    default:
      break
  }
}

// ---------------------------------------------------------------- the simulator

interface Sim {
  state: State
  calls: number
  resumes: number
  readonly events: Array<Event>
  /** The state after each event, as the simulator held it. */
  readonly states: Array<State>
  /** Rounds that were cancelled: a late reply for one must be ignored. */
  readonly cancelled: Array<{ readonly agent: string; readonly round: number }>
  readonly commands: Array<Command>
}

const now = (sim: Sim): string => at(sim.events.length)

const append = (sim: Sim, event: Event): void => {
  checkTransition(sim.state, event)
  sim.state = deepFreeze(evolve(sim.state, event))
  sim.events.push(event)
  sim.states.push(sim.state)
  checkInvariants(sim.state)
}

/** Runs the decider until it asks for nothing more, as the orchestrator's `drive` does. */
const drive = (sim: Sim): void => {
  for (let i = 0; i < 20; i++) {
    const commands = decide(sim.state)
    if (commands.length === 0) return
    for (const command of commands) {
      sim.commands.push(command)
      if (command._tag === "CancelRound") sim.cancelled.push({ agent: command.agent, round: command.round })
      for (const event of commandEvents(sim.state, command, now(sim))) append(sim, event)
    }
  }
  throw new Error("decide never settled")
}

type Pick = <T>(arb: fc.Arbitrary<T>) => T

type Work =
  | {
      readonly _tag: "round"
      readonly agent: string
      readonly round: number
      readonly shown: ReadonlyArray<string>
      readonly voteOnly: boolean
    }
  | { readonly _tag: "presentation"; readonly agent: string }
  | { readonly _tag: "evaluation"; readonly agent: string }

const pendingWork = (state: State): ReadonlyArray<Work> => {
  const work: Array<Work> = state.agents.flatMap(
    (a): Array<Work> =>
      a.inFlight === null
        ? []
        : [{ _tag: "round", agent: a.info.id, round: a.inFlight.round, shown: a.inFlight.shown, voteOnly: a.inFlight.voteOnly }],
  )
  const p = state.presentation
  if (p !== null && p.callsModel && state.final === null) work.push({ _tag: "presentation", agent: p.agent })
  const evaluating = state.finished === null ? attemptsOf(state).evaluating : null
  if (evaluating !== null) work.push({ _tag: "evaluation", agent: evaluating.agent })
  return work
}

const anonOf = (label: string): string => label.split(".")[0]!

/** A percentage roll, unbiased (fast-check otherwise favours the bounds). */
const percent = (pick: Pick): number => pick(fc.noBias(fc.integer({ min: 1, max: 100 })))

/** A valid reply: an answer where the round offers it and shows nothing to vote for, else a vote for a shown agent. */
const validReply = (pick: Pick, w: Work, sim: Sim, answerChance: number): Reply => {
  // The presenter's evaluation (MassGen's post_evaluate_answer): restart, submit, or no decision.
  if (w._tag === "evaluation") {
    const roll = percent(pick)
    if (roll <= 50) return { _tag: "evaluated", agent: w.agent, verdict: "restart", reason: "incomplete", instructions: "more" }
    return { _tag: "evaluated", agent: w.agent, verdict: roll <= 85 ? "submit" : "none" }
  }
  if (w._tag === "presentation")
    return { _tag: "presented", agent: w.agent, content: percent(pick) <= 70 ? "Final." : pick(fc.constantFrom("", "  \n")) }
  const mayAnswer = !w.voteOnly
  // Deferred voting (MassGen's defer_voting_until_all_answered): the round offers only new_answer.
  if (w.shown.length === 0 || (mayAnswer && (votingDeferred(sim.state) || percent(pick) <= answerChance))) {
    return { _tag: "answered", agent: w.agent, round: w.round, content: `answer ${sim.events.length}` }
  }
  const target = anonOf(pick(fc.constantFrom(...w.shown)))
  return { _tag: "voted", agent: w.agent, round: w.round, targetAnonId: target, reason: "because" }
}

/** Any reply a round may come back with, valid or not. */
const anyReply = (pick: Pick, w: Work, sim: Sim): Reply => {
  const kind = percent(pick)
  if (w._tag === "evaluation") return validReply(pick, w, sim, 0)
  if (w._tag === "presentation") {
    return kind <= 15 ? { _tag: "presentation_failed", agent: w.agent, message: "boom" } : validReply(pick, w, sim, 0)
  }
  if (kind <= 4) return { _tag: "failed", agent: w.agent, round: w.round, kind: pick(fc.constantFrom("error", "timeout")), message: "boom" }
  if (kind <= 12) {
    const n = sim.state.agents.length
    return {
      _tag: "voted",
      agent: w.agent,
      round: w.round,
      targetAnonId: `agent${pick(fc.integer({ min: 1, max: n + 2 }))}`,
      reason: "any",
    }
  }
  return validReply(pick, w, sim, 45)
}

const settingsArb: fc.Arbitrary<Partial<RunSettings>> = fc
  .record({
    max_new_answers_per_agent: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
    skip_final_presentation: fc.boolean(),
    final_answer_strategy: fc.constantFrom("winner_present", "winner_reuse", "synthesize"),
    budget_usd: fc.option(fc.constantFrom(0.5, 1, 2, 4), { nil: null, freq: 3 }),
    disable_injection: fc.boolean(),
    // MassGen's coordination options (issue 13), off in most runs.
    skip_voting: fc.constantFrom(false, false, false, true),
    defer_voting_until_all_answered: fc.boolean(),
    max_new_answers_global: fc.option(fc.integer({ min: 1, max: 6 }), { nil: null, freq: 2 }),
    // MassGen's fairness and deferred peer updates (issue 27).
    fairness_lead_cap_answers: fc.option(fc.integer({ min: 0, max: 2 }), { nil: null, freq: 2 }),
    max_midstream_injections_per_round: fc.option(fc.integer({ min: 0, max: 2 }), { nil: null, freq: 2 }),
    defer_peer_updates_until_restart: fc.constantFrom(false, false, false, true),
    // Checklist-gated voting gates votes inside the round (round machine); the decider runs as without it.
    checklist: fc.option(fc.record({ voting_threshold: fc.integer({ min: 0, max: 10 }), criteria: fc.constant(DEFAULT_CRITERIA) }), {
      nil: null,
      freq: 3,
    }),
    // Orchestration restarts (issue 27): none in most runs.
    max_orchestration_restarts: fc.constantFrom(0, 0, 1, 2),
  })
  .map(({ checklist, ...settings }): Partial<RunSettings> => (checklist === null ? settings : { ...settings, checklist }))

/** Stops from outside; the budget is the decider's own stop. */
const STOP_REASONS: ReadonlyArray<Exclude<FinishReason, "completed">> = ["timeout", "interrupted", "error"]

/** The process died (or a signal stopped it) and `massgen resume` took the run up again. */
const resume = (sim: Sim): void => {
  const s = sim.state
  sim.resumes += 1
  append(sim, {
    _tag: "run_resumed",
    time: now(sim),
    dropped_lines: 0,
    torn_tail: false,
    restarted_rounds: s.agents.flatMap((a) => (a.inFlight ? [{ agent: a.info.id, round: a.inFlight.round }] : [])),
    presentation_restarted: s.presentation !== null && s.final === null && s.presentation.callsModel,
  })
  drive(sim)
}

/** The call behind a reply: call_start, then call_end with what it cost. */
const call = (pick: Pick, sim: Sim, w: Work): void => {
  const n = ++sim.calls
  const round = w._tag === "round" ? w.round : (sim.state.agents.find((a) => a.info.id === w.agent)?.rounds ?? 0) + 1
  const role = w._tag === "round" ? "round" : w._tag === "evaluation" ? "evaluation" : "presentation"
  append(sim, { _tag: "call_start", time: now(sim), call: n, agent: w.agent, round, role, model: "m", attempt: 1 })
  const cost = pick(fc.constantFrom(0.1, 0.25, 0.5))
  append(sim, {
    _tag: "call_end",
    time: now(sim),
    call: n,
    agent: w.agent,
    round,
    role,
    model: "m",
    seconds: 1,
    input_tokens: 100,
    cached_input_tokens: 0,
    output_tokens: 10,
    reasoning_tokens: 0,
    truncated: false,
    cost,
    error: null,
  })
}

interface SimResult extends Sim {
  readonly steps: number
}

/**
 * One run: `randomSteps` steps of any replies (with late replies for cancelled rounds), then
 * valid replies only until the run finishes; stopped from outside at `stop.at` if still going.
 * Fails if it does not finish in `maxSteps`.
 */
const simulate = (
  pick: Pick,
  options: {
    readonly agents: number
    readonly settings: Partial<RunSettings>
    readonly randomSteps: number
    /** Stop the run from outside at this step, if it is still going. */
    readonly stop: { readonly at: number; readonly reason: Exclude<FinishReason, "completed"> } | null
  },
): SimResult => {
  const ids = Array.from({ length: options.agents }, (_, i) => `ag_${i}`)
  const sim: Sim = { state: initialState, calls: 0, resumes: 0, events: [], states: [], cancelled: [], commands: [] }
  append(sim, { ...runStarted(ids, options.settings), time: now(sim) })
  drive(sim)
  const attempts = 1 + (options.settings.max_orchestration_restarts ?? 0)
  const maxSteps = options.randomSteps + (40 * options.agents + 20) * attempts
  let steps = 0
  for (; sim.state.finished === null; steps++) {
    if (steps >= maxSteps) throw new Error(`run did not finish in ${maxSteps} steps`)
    const random = steps < options.randomSteps
    const roll = percent(pick)
    if (options.stop !== null && steps === options.stop.at) {
      const reason = options.stop.reason
      for (const e of stopRun(sim.state, reason, `stopped: ${reason}`, now(sim))) append(sim, e)
      const stopped: State = sim.state
      expect(stopped.finished?.reason).toBe(reason)
      // Every stop (a signal too) leaves the best answer there is.
      // (of the attempt under way: a restart set the answers before it aside).
      expect(stopped.final !== null).toBe(stopped.agents.some((a) => a.answers.length > 0))
      // A run a signal stopped is taken up again by a resume, at times.
      if (reason === "interrupted" && roll <= 50) {
        resume(sim)
        expect(sim.state.finished).toBeNull()
        continue
      }
      break
    }
    if (roll <= 3 && sim.resumes < 2) {
      // The process died here; what it had in flight starts again.
      resume(sim)
      continue
    }
    if (random && roll <= 8 && sim.cancelled.length > 0) {
      // A late reply for a cancelled round changes nothing.
      const c = pick(fc.constantFrom(...sim.cancelled))
      const late: Reply = pick(
        fc.constantFrom<Reply>(
          { _tag: "answered", agent: c.agent, round: c.round, content: "late" },
          { _tag: "voted", agent: c.agent, round: c.round, targetAnonId: "agent1", reason: "late" },
          { _tag: "failed", agent: c.agent, round: c.round, kind: "error", message: "late" },
        ),
      )
      expect(judgeReply(sim.state, late, now(sim))).toEqual([])
      continue
    }
    const work = pendingWork(sim.state)
    // Liveness: an unfinished run always waits for something.
    expect(work.length).toBeGreaterThan(0)
    let w = pick(fc.constantFrom(...work))
    // A step boundary of a round with work to keep: new answers are injected before its next call
    // (unless they arrived while that call was out: a vote of it then meets them below).
    if (w._tag === "round" && (sim.state.agents.find((a) => a.info.id === w.agent)?.inFlight?.steps ?? 0) > 0) {
      const latest = updateFor(sim.state, w.agent, w.round)
      if (latest !== null && percent(pick) <= 50) {
        append(sim, { _tag: "update_injected", time: now(sim), agent: w.agent, round: w.round, shown: latest, after_vote: false })
        w = { ...w, shown: latest }
      }
    }
    call(pick, sim, w)
    // The decider may see a spent budget before the reply arrives: the reply is then lost with the run.
    if (budgetSpent(sim.state) && percent(pick) <= 50) {
      drive(sim)
      expect((sim.state as State).finished?.reason).toBe("budget")
      break
    }
    // A tool step: the call came back with no workflow result, and the round goes on. Its call_end
    // wakes the decider, as in the orchestrator: a budget the call spent stops the run here.
    if (w._tag === "round" && random && percent(pick) <= 25) {
      drive(sim)
      continue
    }
    const reply = random ? anyReply(pick, w, sim) : validReply(pick, w, sim, 0)
    // A vote that did not see the newest answers is not judged: the update is injected and the round goes on.
    const update = reply._tag === "voted" ? updateFor(sim.state, reply.agent, reply.round) : null
    if (reply._tag === "voted" && update !== null) {
      append(sim, { _tag: "update_injected", time: now(sim), agent: reply.agent, round: reply.round, shown: update, after_vote: true })
      continue
    }
    const events = judgeReply(sim.state, reply, now(sim))
    // A reply to work in flight is never silently dropped.
    expect(events.length).toBeGreaterThan(0)
    // No agent is ever charged with the budget.
    expect(events.some((e) => e._tag === "agent_failed" && e.message.includes("budget"))).toBe(false)
    for (const e of events) append(sim, e)
    drive(sim)
  }
  // Once finished, nothing more is decided or judged.
  expect(decide(sim.state)).toEqual([])
  return { ...sim, steps }
}

const runArb = fc.record({
  agents: fc.integer({ min: 1, max: 6 }),
  settings: settingsArb,
  randomSteps: fc.integer({ min: 0, max: 60 }),
  stop: fc.option(fc.record({ at: fc.integer({ min: 0, max: 30 }), reason: fc.constantFrom(...STOP_REASONS) }), { nil: null }),
})

/** A property of simulated runs. */
const simulated = (property: (run: SimResult) => void) =>
  fc.property(runArb, fc.gen(), (input, g) => {
    const pick: Pick = (arb) => g(() => arb)
    property(simulate(pick, input))
  })

/**
 * An event that cannot fit right after `events[i]`: an earlier answer, vote or
 * failure again (its round is over), an answer under another agent's label, an
 * event of an unknown agent, a vote for one, a second run_started, or anything
 * but a resume after the run finished. Null when `events[..i]` gives none.
 */
const unfitAfter = (pick: Pick, events: ReadonlyArray<Event>, i: number): Event | null => {
  const before = events.slice(0, i + 1)
  const time = events[i]!.time
  const again = before.filter((e) => e._tag === "answer_submitted" || e._tag === "vote_cast" || e._tag === "agent_failed")
  const answers = before.filter((e): e is Extract<Event, { _tag: "answer_submitted" }> => e._tag === "answer_submitted")
  const started = before[0] as Extract<Event, { _tag: "run_started" }>
  const ids = started.agents.map((a) => a.id)
  const options: Array<() => Event | null> = [
    () => (again.length === 0 ? null : { ...pick(fc.constantFrom(...again)), time }),
    () => {
      if (answers.length === 0 || ids.length < 2) return null
      const a = pick(fc.constantFrom(...answers))
      return { ...a, time, agent: pick(fc.constantFrom(...ids.filter((id) => id !== a.agent))) }
    },
    () => ({ _tag: "round_started", time, agent: "ghost", round: 1, shown: [], vote_only: false, restart: false }),
    () => ({
      _tag: "call_end",
      time,
      call: 999,
      agent: "ghost",
      round: 1,
      role: "round",
      model: null,
      seconds: 1,
      input_tokens: 5,
      cached_input_tokens: 0,
      output_tokens: 5,
      reasoning_tokens: 0,
      truncated: false,
      cost: 1,
      error: null,
    }),
    () => {
      const voter = pick(fc.constantFrom(...ids))
      return { _tag: "vote_cast", time, agent: voter, round: 1, target: "ghost", target_label: "agent9.1", reason: "" }
    },
    () => ({ ...started, time }),
  ]
  if (before.some((e) => e._tag === "run_finished") && before.at(-1)?._tag === "run_finished" && i === events.length - 1) {
    options.push(() => ({ _tag: "round_started", time, agent: ids[0]!, round: 99, shown: [], vote_only: false, restart: false }))
  }
  return pick(fc.constantFrom(...options))()
}

// ---------------------------------------------------------------- properties

/**
 * Shrinking a whole simulated run can take minutes; a failure is reported with the
 * counterexample shrunk so far once this much time has passed.
 */
const SHRINK_LIMIT = { interruptAfterTimeLimit: 5_000, markInterruptAsFailure: false }

describe("simulated runs", () => {
  test("every run terminates with run_finished, and the invariants hold after every event", () => {
    const reasons = new Set<string>()
    const ALL = ["budget", "completed", "error", "injected", "interrupted", "restarted", "resumed", "resumed after a signal", "timeout"]
    // A batch of 150 random runs now and then misses one way (injection is rarer since the coordination options):
    // more batches, each checking the same invariants, until every way is seen, at most 4.
    for (let batch = 0; batch < 4 && ALL.some((r) => !reasons.has(r)); batch++) {
      fc.assert(
        simulated((run) => {
          expect(run.events.at(-1)?._tag).toBe("run_finished")
          // One run_finished, and one more for every signal stop a resume took up again.
          const resumedAfterStop = run.events.filter(
            (e, i) => e._tag === "run_resumed" && run.events[i - 1]?._tag === "run_finished",
          ).length
          expect(run.events.filter((e) => e._tag === "run_finished")).toHaveLength(1 + resumedAfterStop)
          expect(run.state.skippedEvents).toBe(0)
          if (run.events.some((e) => e._tag === "run_resumed")) reasons.add("resumed")
          if (resumedAfterStop > 0) reasons.add("resumed after a signal")
          if (run.events.some((e) => e._tag === "update_injected")) reasons.add("injected")
          // Orchestration restarts (MassGen's restart_orchestration): the generator reaches attempt 2.
          if (run.events.some((e) => e._tag === "orchestration_restarted")) reasons.add("restarted")
          expect(run.state.finished).not.toBeNull()
          reasons.add(run.state.finished!.reason)
        }),
        { numRuns: 150, ...SHRINK_LIMIT },
      )
    }
    // The generator reaches every way a run ends, injection and orchestration restarts.
    expect([...reasons].sort()).toEqual(ALL)
  })

  test("with valid replies only and no stops, every run completes with a final answer", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), settingsArb, fc.gen(), (agents, settings, g) => {
        const run = simulate((arb) => g(() => arb), { agents, settings: { ...settings, budget_usd: null }, randomSteps: 0, stop: null })
        expect(run.state.finished?.reason).toBe("completed")
        expect(run.state.final).not.toBeNull()
        const callsModel = !settings.skip_final_presentation && settings.final_answer_strategy !== "winner_reuse"
        expect(run.state.presentation?.callsModel).toBe(callsModel)
        if (!callsModel) expect(run.state.final?.source).toBe("stored_answer")
      }),
      { numRuns: 100, ...SHRINK_LIMIT },
    )
  })

  test("after every event the fold says what an independent reading of the events says", () => {
    fc.assert(
      simulated((run) => {
        run.events.forEach((_, i) => {
          expect(observe(run.states[i]!)).toEqual(reference(run.events.slice(0, i + 1)))
        })
      }),
      { numRuns: 40, ...SHRINK_LIMIT },
    )
  })

  test("an event that does not fit changes nothing but the count of skipped events", () => {
    fc.assert(
      fc.property(runArb, fc.gen(), (input, g) => {
        const pick: Pick = (arb) => g(() => arb)
        const run = simulate(pick, input)
        const events: Array<Event> = [...run.events]
        const misfits = pick(fc.integer({ min: 1, max: 5 }))
        let inserted = 0
        for (let k = 0; k < misfits; k++) {
          const i = pick(fc.integer({ min: 1, max: events.length - 1 }))
          const misfit = unfitAfter(pick, events, i)
          if (misfit === null) continue
          events.splice(i + 1, 0, misfit)
          inserted += 1
        }
        const folded = foldEvents(events)
        expect(folded.skippedEvents).toBe(inserted)
        expect({ ...folded, skippedEvents: 0 }).toEqual(run.state)
      }),
      { numRuns: 60, ...SHRINK_LIMIT },
    )
  })

  test("decide asks for nothing more once its commands are folded", () => {
    fc.assert(
      simulated((run) => {
        // Every state right after a reply was driven to rest: re-deciding there gives nothing new.
        expect(decide(run.state)).toEqual([])
        for (const s of run.states) {
          const commands = decide(s)
          const folded = foldEvents(
            commands.flatMap((c) => commandEvents(s, c, at(0))),
            s,
          )
          // Cancellations come alone; after them, rounds (or the presentation) follow.
          if (commands.some((c) => c._tag === "CancelRound")) expect(commands.every((c) => c._tag === "CancelRound")).toBe(true)
          else expect(decide(folded).filter((c) => c._tag === "StartRound" || c._tag === "CancelRound")).toEqual([])
        }
      }),
      { numRuns: 40, ...SHRINK_LIMIT },
    )
  })

  test("encode then decode gives every generated event back, and a torn file decodes its whole lines", () => {
    fc.assert(
      fc.property(runArb, fc.gen(), fc.double({ min: 0, max: 1, noNaN: true }), (input, g, cut) => {
        const run = simulate((arb) => g(() => arb), input)
        const lines = run.events.map(encodeEventLine)
        for (const [i, line] of lines.entries()) expect(decodeEventLine(line)).toEqual({ _tag: "event", event: run.events[i]! })
        const text = lines.map((l) => `${l}\n`).join("")
        const torn = text.slice(0, Math.floor(cut * text.length))
        const read = readEventsText(torn)
        const whole = torn.split("\n").length - 1
        expect(read.events.slice(0, whole)).toEqual(run.events.slice(0, whole))
        expect(read.events.length - whole).toBeLessThanOrEqual(1)
        expect(foldEvents(read.events)).toEqual(read.events.length === 0 ? initialState : run.states[read.events.length - 1]!)
      }),
      { numRuns: 40, ...SHRINK_LIMIT },
    )
  })

  test("project is pure: same state and time give deep-equal output, and the state is not mutated", () => {
    fc.assert(
      fc.property(runArb, fc.gen(), fc.integer({ min: 0, max: 10_000_000 }), (input, g, dt) => {
        const run = simulate((arb) => g(() => arb), input)
        // The simulator deep-froze every state: a write to one would have thrown.
        for (const state of run.states) {
          const before = structuredClone(state)
          const t = state.lastTime + dt
          const a = project(state, t)
          const b = project(state, t)
          expect(a).toEqual(b)
          expect(state).toEqual(before)
          expect(JSON.parse(JSON.stringify(a))).toEqual(a)
        }
      }),
      { numRuns: 30, ...SHRINK_LIMIT },
    )
  })
})

// ---------------------------------------------------------------- arbitrary events

/** Arbitrary events, mostly about agents a, b and c so that many of them apply. */
const agentIds = ["a", "b", "c"] as const
const looseEvents = FastCheck.array(
  FastCheck.tuple(Arbitrary.make(Event), FastCheck.constantFrom(...agentIds), FastCheck.boolean()).map(([event, agent, retarget]) =>
    retarget && "agent" in event ? ({ ...event, agent } as Event) : event,
  ),
  { maxLength: 40 },
)

describe("arbitrary event sequences", () => {
  test("folding never throws, and decide, judgeReply, stopRun and project never throw on the result", () => {
    const start = { ...runStarted([...agentIds]), time: at(0) }
    FastCheck.assert(
      FastCheck.property(looseEvents, FastCheck.boolean(), (events, started) => {
        const state = foldEvents(started ? [start, ...events] : events)
        expect(state.eventCount).toBeLessThanOrEqual(events.length + 1)
        decide(state)
        project(state, state.lastTime)
        stopRun(state, "timeout", "t", at(1))
        for (const a of agentIds) {
          judgeReply(state, { _tag: "answered", agent: a, round: 1, content: "x" }, at(1))
          judgeReply(state, { _tag: "voted", agent: a, round: 1, targetAnonId: "agent1", reason: "" }, at(1))
          judgeReply(state, { _tag: "presented", agent: a, content: "x" }, at(1))
        }
      }),
      { numRuns: 300 },
    )
  })

  test("folding ignores every event before run_started", () => {
    FastCheck.assert(
      FastCheck.property(looseEvents, (events) => {
        const before = events.filter((e) => e._tag !== "run_started")
        expect(foldEvents(before)).toEqual({ ...initialState, skippedEvents: before.length })
      }),
      { numRuns: 100 },
    )
  })

  test("nothing changes the state after run_finished", () => {
    const start = { ...runStarted([...agentIds]), time: at(0) }
    const end: Event = { _tag: "run_finished", time: at(1), reason: "timeout", winner: null, message: "t" }
    FastCheck.assert(
      FastCheck.property(looseEvents, (events) => {
        const finished = foldEvents([start, end])
        const after = foldEvents(events, finished)
        expect(after).toEqual({ ...finished, skippedEvents: after.skippedEvents })
      }),
      { numRuns: 100 },
    )
  })
})
