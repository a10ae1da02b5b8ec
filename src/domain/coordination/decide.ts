/**
 * The decider: what the orchestrator does next, from the state alone.
 *
 * `decide(state)` returns the commands the state calls for now; after the
 * orchestrator has turned them into events and folded those, `decide` asks for
 * nothing more until another event arrives. `judgeReply` turns what a round or
 * a presentation returned into the events it causes, checked against the state
 * at the moment it arrives (a round may have been shown answers that are no
 * longer the latest). `stopRun` gives the events of a run stopped before it is
 * decided (orchestrator timeout, budget, signal). All are pure: times come in
 * as ISO strings. The budget is a rule of `decide`: once the calls have cost
 * the budget, it stops the run (`StopRun`), and `mayStartCall` refuses any
 * further call, so no agent is charged with a failure for it.
 *
 * MassGen's rules: a new answer clears every vote and makes every other agent
 * look again (an agent still on its first answer is not interrupted). A round
 * that has work to keep (a model call of it came back) gets the new answers by
 * injection at its next step boundary (`update_injected`, made by the round
 * itself); a round whose first call is still out has nothing to keep and is
 * cancelled and started again, as is every round with `disable_injection`. A round
 * whose agent reached `max_new_answers_per_agent` offers only `vote`; the run
 * is decided when every live agent has voted; the most-voted agent wins, a tie
 * going to the earliest agent in config order.
 *
 * MassGen's coordination options (v0.1.97): `max_new_answers_global` caps the
 * answers of all agents together: at the cap every round offers only `vote`
 * (a round in flight that offers `new_answer` is cancelled and started again
 * as a vote-only round). `defer_voting_until_all_answered`: an agent with an
 * answer gets no new round (so cannot vote) until every live agent has one,
 * unless the global cap is reached; meanwhile a round offers no `vote`
 * (`requests.ts`) and a vote is ignored (`deferred`). A *no-vote run* (`skip_voting`, or quick
 * synthesize: several agents, `synthesize` and `max_new_answers_per_agent: 1`)
 * gives each agent rounds until its first answer and, once every live agent has
 * one (or the global cap is reached), no vote is held: the first live agent in
 * config order with an answer presents. MassGen's fairness and deferred peer
 * updates (`fairness.ts`): a round too far ahead does not start, and what is
 * injected into a round in flight may be capped or held for its next round.
 */
import type { Event, FinalAnswerStrategy, FinishReason, RunSettings } from "../events/index.ts"
import { type AgentState, agentByAnonId, agentIndex, isLive, latestLabels, type State, sameLabels, showsLatest } from "../state/index.ts"
import { fairnessPaused, injectionFor } from "./fairness.ts"
import { afterFinal, judgeEvaluation, type Verdict } from "./restarts.ts"

export type Command =
  | {
      readonly _tag: "StartRound"
      readonly agent: string
      readonly round: number
      readonly shown: ReadonlyArray<string>
      readonly voteOnly: boolean
      readonly restart: boolean
    }
  | { readonly _tag: "CancelRound"; readonly agent: string; readonly round: number }
  | {
      readonly _tag: "StartPresentation"
      readonly agent: string
      readonly label: string
      readonly votes: Readonly<Record<string, number>>
      readonly isTie: boolean
      readonly strategy: FinalAnswerStrategy
      readonly callsModel: boolean
    }
  | { readonly _tag: "UseStoredAnswer"; readonly agent: string; readonly label: string; readonly content: string }
  | { readonly _tag: "FinishRun"; readonly reason: FinishReason; readonly winner: string | null; readonly message: string }
  /** The presenter evaluates the final answer of attempt `attempt` (orchestration restarts, `restarts.ts`). */
  | { readonly _tag: "StartEvaluation"; readonly agent: string; readonly attempt: number }
  /** The run stops before it is decided (the budget is spent): the final answer is salvaged, then the run finishes. */
  | { readonly _tag: "StopRun"; readonly reason: "budget"; readonly message: string }

/** What a round or a presentation came back with. */
export type Reply =
  | { readonly _tag: "answered"; readonly agent: string; readonly round: number; readonly content: string }
  | { readonly _tag: "voted"; readonly agent: string; readonly round: number; readonly targetAnonId: string; readonly reason: string }
  | {
      readonly _tag: "failed"
      readonly agent: string
      readonly round: number
      readonly kind: "error" | "timeout"
      readonly message: string
    }
  | { readonly _tag: "presented"; readonly agent: string; readonly content: string }
  | { readonly _tag: "presentation_failed"; readonly agent: string; readonly message: string }
  /** What the presenter's evaluation of the final answer decided (`restarts.ts`). */
  | ({ readonly _tag: "evaluated"; readonly agent: string } & Verdict)

export interface Tally {
  readonly winner: string
  /** Votes by answer label, every latest label listed (0 when none). */
  readonly votes: Readonly<Record<string, number>>
  readonly isTie: boolean
}

/** Votes counted by the agent voted for; the winner is the most-voted, ties to config order. */
export const tally = (state: State): Tally | null => {
  const byAgent = new Map<string, number>()
  const votes: Record<string, number> = {}
  for (const label of latestLabels(state)) votes[label] = 0
  for (const a of state.agents) {
    if (a.vote === null || !isLive(a)) continue
    byAgent.set(a.vote.target, (byAgent.get(a.vote.target) ?? 0) + 1)
    votes[a.vote.targetLabel] = (votes[a.vote.targetLabel] ?? 0) + 1
  }
  if (byAgent.size === 0) return null
  const top = Math.max(...byAgent.values())
  const leaders = state.agents.filter((a) => byAgent.get(a.info.id) === top)
  const winner = leaders[0]
  return winner ? { winner: winner.info.id, votes, isTie: leaders.length > 1 } : null
}

const latestLabel = (a: AgentState): string | undefined => a.answers[a.answers.length - 1]

/** The answers of all agents reached `max_new_answers_global` (in this attempt: a restart gives every agent a fresh start). */
export const globalCapReached = (state: State): boolean => {
  const cap = state.run?.settings.max_new_answers_global ?? null
  if (cap === null) return false
  let answers = 0
  for (const a of state.agents) answers += a.answers.length
  return answers >= cap
}

const atCap = (state: State, a: AgentState): boolean => {
  const cap = state.run?.settings.max_new_answers_per_agent ?? null
  return (cap !== null && a.answers.length >= cap) || globalCapReached(state)
}

/**
 * No vote is taken now: the run holds none (`noVoteRun`), or `defer_voting_until_all_answered`
 * holds votes back while a live agent has no answer and the global cap is not reached.
 */
export const votingDeferred = (state: State): boolean => {
  const run = state.run
  if (run === null) return false
  if (noVoteRun(run.settings, state.agents.length)) return true
  return (
    run.settings.defer_voting_until_all_answered === true &&
    !globalCapReached(state) &&
    state.agents.some((a) => isLive(a) && a.answers.length === 0)
  )
}

/** A run that holds no vote: `skip_voting`, or quick synthesize (several agents, `synthesize`, one answer each). */
export const noVoteRun = (settings: RunSettings, agents: number): boolean =>
  settings.skip_voting === true ||
  (agents > 1 && settings.final_answer_strategy === "synthesize" && settings.max_new_answers_per_agent === 1)

/** The run has a budget and its calls have cost that much. */
export const budgetSpent = (state: State): boolean => {
  const budget = state.run?.settings.budget_usd ?? null
  return budget !== null && (state.usage.cost ?? 0) >= budget
}

/** Whether a model call may start now: the run goes on and its budget is not spent. */
export const mayStartCall = (state: State): boolean => state.run !== null && state.finished === null && !budgetSpent(state)

/** Whether new answers reach `a`'s round in flight by injection rather than by a restart. */
export const injects = (settings: RunSettings, a: AgentState): boolean => !settings.disable_injection && (a.inFlight?.steps ?? 0) > 0

/**
 * The answers to inject into `agent`'s round `round` at a step boundary: the
 * latest labels, when the run injects, the round is in flight, its agent has
 * an answer of its own (first-answer protection) and it does not show them yet.
 */
export const updateFor = (state: State, agent: string, round: number): ReadonlyArray<string> | null => {
  const a = state.agents[agentIndex(state, agent)]
  if (state.run === null || state.finished !== null || state.run.settings.disable_injection) return null
  if (a === undefined || !isLive(a) || a.inFlight?.round !== round || a.answers.length === 0) return null
  return showsLatest(state, a.inFlight.shown) ? null : injectionFor(state, a.inFlight.shown, a.inFlight.injected ?? 0)
}

export const decide = (state: State): ReadonlyArray<Command> => {
  const run = state.run
  if (run === null || state.finished !== null) return []
  // The final answer ends the attempt: its evaluation while attempts remain (`restarts.ts`), else the run;
  // a budget spent before the evaluation decides stops the run with the final answer it has.
  if (state.final !== null) {
    const after = afterFinal(state)
    if (after[0]?._tag === "FinishRun" || !budgetSpent(state)) return after
    return [{ _tag: "StopRun", reason: "budget", message: `budget of $${run.settings.budget_usd} spent` }]
  }
  // The agents' tools did not start: no model is called.
  if (state.toolsFailed !== null) return [{ _tag: "FinishRun", reason: "error", winner: null, message: state.toolsFailed.message }]
  if (budgetSpent(state)) return [{ _tag: "StopRun", reason: "budget", message: `budget of $${run.settings.budget_usd} spent` }]
  if (state.presentation !== null) {
    const p = state.presentation
    const content = state.answers[p.label]?.content ?? ""
    return p.callsModel ? [] : [{ _tag: "UseStoredAnswer", agent: p.agent, label: p.label, content }]
  }
  const live = state.agents.filter(isLive)
  if (live.length === 0) {
    return [{ _tag: "FinishRun", reason: "error", winner: null, message: "every agent failed" }]
  }
  const shown = latestLabels(state)
  const commands: Array<Command> = []
  const capped = globalCapReached(state)
  // The rounds started together were shown one list: each list is compared once (200 agents: 200 × 200 labels a decision).
  const compared = new Map<ReadonlyArray<string>, boolean>()
  const showing = (labels: ReadonlyArray<string>): boolean => {
    let same = compared.get(labels)
    if (same === undefined) compared.set(labels, (same = sameLabels(labels, shown)))
    return same
  }
  for (const a of live) {
    if (a.inFlight === null) continue
    // First-answer protection: an agent without an answer finishes its round undisturbed.
    const outdated = a.answers.length > 0 && !injects(run.settings, a) && !showing(a.inFlight.shown)
    // At the global cap no round may answer: one that offers new_answer starts again as vote-only.
    if (outdated || (capped && !a.inFlight.voteOnly)) commands.push({ _tag: "CancelRound", agent: a.info.id, round: a.inFlight.round })
  }
  if (commands.length > 0) return commands
  const noVote = noVoteRun(run.settings, state.agents.length)
  const first = live.find((a) => a.answers.length > 0)
  if (noVote && first !== undefined && live.every((a) => a.inFlight === null && (a.answers.length > 0 || capped))) {
    const label = latestLabel(first)!
    const votes = Object.fromEntries(shown.map((l) => [l, 0]))
    const callsModel = !run.settings.skip_final_presentation && run.settings.final_answer_strategy !== "winner_reuse"
    return [
      {
        _tag: "StartPresentation",
        agent: first.info.id,
        label,
        votes,
        isTie: false,
        strategy: run.settings.final_answer_strategy,
        callsModel,
      },
    ]
  }
  // Deferred voting: an agent with an answer waits for every live agent to have one (the global cap ends the wait).
  const deferred = (a: AgentState): boolean => (noVote ? a.answers.length > 0 || capped : a.answers.length > 0 && votingDeferred(state))
  // MassGen's fairness pauses an agent too far ahead; never every agent at once (with nothing in flight, none could catch up).
  const paused = new Set(live.filter((a) => a.inFlight === null && a.vote === null && !deferred(a) && fairnessPaused(state, a)))
  const stalled = paused.size > 0 && live.every((a) => a.inFlight === null && (a.vote !== null || deferred(a) || paused.has(a)))
  const waiting = (a: AgentState): boolean => deferred(a) || (!stalled && paused.has(a))
  if (live.every((a) => a.vote !== null && a.inFlight === null)) {
    const t = tally(state)
    const winner = t ? state.agents[agentIndex(state, t.winner)] : undefined
    const label = winner ? latestLabel(winner) : undefined
    if (t && winner && label) {
      const callsModel = isLive(winner) && !run.settings.skip_final_presentation && run.settings.final_answer_strategy !== "winner_reuse"
      const strategy = run.settings.final_answer_strategy
      return [{ _tag: "StartPresentation", agent: t.winner, label, votes: t.votes, isTie: t.isTie, strategy, callsModel }]
    }
  }
  for (const a of live) {
    if (a.inFlight !== null || a.vote !== null || waiting(a)) continue
    commands.push({
      _tag: "StartRound",
      agent: a.info.id,
      round: a.rounds + 1,
      shown,
      voteOnly: atCap(state, a),
      restart: a.restartPending,
    })
  }
  return commands
}

/** The events caused by a reply, judged against the state it arrives in. */
export const judgeReply = (state: State, reply: Reply, time: string): ReadonlyArray<Event> => {
  if (state.run === null || state.finished !== null) return []
  // The presenter evaluates its final answer even when it is out (a stored answer of a failed winner).
  if (reply._tag === "evaluated") return judgeEvaluation(state, reply.agent, reply, time)
  const i = agentIndex(state, reply.agent)
  const agent = state.agents[i]
  if (agent === undefined || !isLive(agent)) return []
  switch (reply._tag) {
    case "presented":
    case "presentation_failed": {
      const p = state.presentation
      if (p === null || p.agent !== reply.agent || state.final !== null) return []
      const stored = state.answers[p.label]?.content ?? ""
      const presented = reply._tag === "presented" && reply.content.trim() !== ""
      return [
        {
          _tag: "final_answer",
          time,
          agent: p.agent,
          label: p.label,
          source: presented ? "presentation" : "stored_answer",
          content: presented ? reply.content : stored,
        },
      ]
    }
    default:
      break
  }
  if (agent.inFlight === null || agent.inFlight.round !== reply.round) return []
  const round = reply.round
  switch (reply._tag) {
    case "failed":
      return [{ _tag: "agent_failed", time, agent: agent.info.id, round, kind: reply.kind, message: reply.message }]
    case "answered":
      // MassGen refuses an answer over the global cap: the round starts again as a vote-only one.
      if (globalCapReached(state)) return [{ _tag: "round_cancelled", time, agent: agent.info.id, round, reason: "new_answer" }]
      return [
        {
          _tag: "answer_submitted",
          time,
          agent: agent.info.id,
          round,
          label: `${agent.info.anon_id}.${(agent.priorAnswers ?? 0) + agent.answers.length + 1}`,
          content: reply.content,
        },
      ]
    case "voted": {
      const target = agentByAnonId(state, reply.targetAnonId)
      // The label the voter saw for its target: the one in its round's shown list.
      const seen = agent.inFlight.shown.find((label) => label.startsWith(`${reply.targetAnonId}.`))
      if (target === undefined || seen === undefined) {
        return [{ _tag: "vote_ignored", time, agent: agent.info.id, round, target: reply.targetAnonId, reason: "invalid_target" }]
      }
      if (votingDeferred(state)) {
        return [{ _tag: "vote_ignored", time, agent: agent.info.id, round, target: target.info.id, reason: "deferred" }]
      }
      if (!showsLatest(state, agent.inFlight.shown)) {
        return [{ _tag: "vote_ignored", time, agent: agent.info.id, round, target: target.info.id, reason: "stale" }]
      }
      return [{ _tag: "vote_cast", time, agent: agent.info.id, round, target: target.info.id, target_label: seen, reason: reply.reason }]
    }
  }
}

/** The answer a stopped run leaves: the most-voted, else the latest answer of a live agent, else any latest answer. */
export const salvage = (state: State): { readonly agent: string; readonly label: string; readonly content: string } | null => {
  const t = tally(state)
  const byVotes = t ? state.agents[agentIndex(state, t.winner)] : undefined
  const votedLabel = byVotes ? latestLabel(byVotes) : undefined
  if (byVotes && votedLabel) {
    return { agent: byVotes.info.id, label: votedLabel, content: state.answers[votedLabel]?.content ?? "" }
  }
  const answers = Object.values(state.answers)
  const pick = (live: boolean) =>
    answers
      .filter((ans) => {
        const owner = state.agents[agentIndex(state, ans.agent)]
        return owner !== undefined && (!live || isLive(owner)) && latestLabel(owner) === ans.label
      })
      .reduce<(typeof answers)[number] | undefined>((best, ans) => (best === undefined || ans.time >= best.time ? ans : best), undefined)
  const latest = pick(true) ?? pick(false)
  return latest ? { agent: latest.agent, label: latest.label, content: latest.content } : null
}

/**
 * The events that stop a run from outside (timeout, budget, signal): the final
 * answer salvaged when there is one (the most-voted, else the latest), then the stop.
 */
export const stopRun = (state: State, reason: Exclude<FinishReason, "completed">, message: string, time: string): ReadonlyArray<Event> => {
  if (state.run === null || state.finished !== null) return []
  const existing = state.final
  const saved = existing ?? salvage(state)
  const events: Array<Event> = []
  if (existing === null && saved !== null) {
    events.push({ _tag: "final_answer", time, agent: saved.agent, label: saved.label, source: "salvaged", content: saved.content })
  }
  events.push({ _tag: "run_finished", time, reason, winner: saved?.agent ?? null, message })
  return events
}

/** The events a command is recorded as, before the orchestrator carries it out. */
export const commandEvents = (state: State, command: Command, time: string): ReadonlyArray<Event> =>
  command._tag === "StopRun" ? stopRun(state, command.reason, command.message, time) : [commandEvent(command, time)]

/** The event a command that is one event is recorded as. */
export const commandEvent = (command: Exclude<Command, { readonly _tag: "StopRun" }>, time: string): Event => {
  switch (command._tag) {
    case "StartRound":
      return {
        _tag: "round_started",
        time,
        agent: command.agent,
        round: command.round,
        shown: command.shown,
        vote_only: command.voteOnly,
        restart: command.restart,
      }
    case "CancelRound":
      return { _tag: "round_cancelled", time, agent: command.agent, round: command.round, reason: "new_answer" }
    case "StartPresentation":
      return {
        _tag: "presentation_started",
        time,
        agent: command.agent,
        label: command.label,
        votes: command.votes,
        is_tie: command.isTie,
        strategy: command.strategy,
        calls_model: command.callsModel,
      }
    case "StartEvaluation":
      return { _tag: "evaluation_started", time, agent: command.agent, attempt: command.attempt }
    case "UseStoredAnswer":
      return { _tag: "final_answer", time, agent: command.agent, label: command.label, source: "stored_answer", content: command.content }
    case "FinishRun":
      return { _tag: "run_finished", time, reason: command.reason, winner: command.winner, message: command.message }
  }
}
