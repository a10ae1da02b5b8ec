/**
 * What a resume does with the work a stopped process had in flight: it goes on where it was.
 *
 * `resumePlan(events, agents, options)` reads a stopped run's events and says,
 * for its `run_resumed`, which rounds continue (each in-flight round of a live
 * agent, with what it showed) and whether the presentation does, and gives
 * each the round machine rebuilt from the log (`index.ts` continuations):
 * its recorded replies and tool results are fed back in order, so no model
 * call is made again and no finished tool call runs again. Work with no
 * recorded call yet starts at its first step. A tool call that was started and
 * not finished when the process stopped has no result: its step runs it
 * again. A run stopped by a signal is read as it was before the signal's
 * `run_finished`, which closed its rounds. `recorded` and `start`, when the
 * caller has them, are the fold of `events` and where its replay may start
 * (`start.ts`). Pure.
 */
import type { Agent } from "../config/index.ts"
import type { Transition } from "../coordination/round-machine.ts"
import type { Event } from "../events/index.ts"
import { foldEvents, type State } from "../state/index.ts"
import { continuationsOf } from "./replay-run.ts"
import type { ReplayStart } from "./start.ts"
import type { ReplayOptions } from "./types.ts"

export interface ResumePlan {
  readonly continuedRounds: ReadonlyArray<{
    readonly agent: string
    readonly round: number
    readonly shown: ReadonlyArray<string>
    readonly vote_only: boolean
  }>
  readonly presentationContinued: boolean
  /** The rebuilt machine of each agent's work that continues and has a recorded call, by agent. */
  readonly machines: ReadonlyMap<string, Transition>
}

export const resumePlan = (
  events: ReadonlyArray<Event>,
  agents: ReadonlyArray<Agent>,
  options: Omit<ReplayOptions, "checkRequests"> = {},
  recorded: State = foldEvents(events),
  start: ReplayStart | null = null,
): ResumePlan => {
  const beforeSignal =
    recorded.finished?.reason === "interrupted"
      ? foldEvents(events.filter((e) => !(e._tag === "run_finished" && e.reason === "interrupted")))
      : recorded
  const continuedRounds = beforeSignal.agents.flatMap((a) =>
    a.inFlight !== null && a.failure === null
      ? [{ agent: a.info.id, round: a.inFlight.round, shown: a.inFlight.shown, vote_only: a.inFlight.voteOnly }]
      : [],
  )
  const p = beforeSignal.presentation
  const presentationContinued = p !== null && beforeSignal.final === null && p.callsModel
  const rebuilt = continuationsOf(events, agents, options, start)
  const machines = new Map(
    [...rebuilt].filter(([agent, t]) =>
      t.machine.role === "presentation"
        ? presentationContinued && p?.agent === agent
        : continuedRounds.some((r) => r.agent === agent && r.round === t.machine.round),
    ),
  )
  return { continuedRounds, presentationContinued, machines }
}
