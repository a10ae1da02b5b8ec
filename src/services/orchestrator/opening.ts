/**
 * How the orchestrator opens a run: `run_started` for a new one; for a resumed one, `run_resumed` and its work continued.
 *
 * Contract: `openNewRun` and `openResumedRun` append the run's first event of
 * this process: a new run's before its tools start (so a run whose tools do
 * not start leaves a log that says so), a resumed run's once they have (the
 * work it continues needs their specs).
 * A resumed run (`recorded`, the fold of its events) first shows the observer
 * every recorded event (the display shows the whole run), takes up the
 * recorded state, and continues the work its stopped process had in flight
 * from the rebuilt round machines (`domain/replay/resume-plan.ts`): nothing recorded
 * is asked of a model or run again.
 */
import { Effect } from "effect"
import { resumePlan } from "../../domain/replay/index.ts"
import { advanceInPlace, initialState, type State } from "../../domain/state/index.ts"
import { Backends } from "../backends/index.ts"
import type { Emitter } from "./emit.ts"
import type { Rounds } from "./rounds.ts"
import { isoNow, type RunContext } from "./types.ts"

/** `run_started`: the run's question, agents and settings. */
export const openNewRun = ({ input, settings }: RunContext, { emit }: Emitter) =>
  Effect.gen(function* () {
    const backends = yield* Backends
    yield* emit({
      _tag: "run_started",
      time: yield* isoNow,
      run_id: input.runId,
      question: input.question,
      ...(input.conversation !== undefined && input.conversation.length > 0 ? { conversation: input.conversation } : {}),
      ...(input.media !== undefined && input.media.length > 0 ? { media: input.media } : {}),
      agents: input.config.agents.map((a) => ({
        id: a.id,
        anon_id: a.anonId,
        backend: a.backend.type,
        model: backends.forAgent(a.id).model,
      })),
      settings,
    })
  })

/** `run_resumed`, after the recorded events are shown; the work in flight goes on. */
export const openResumedRun = ({ input, state }: RunContext, { emit }: Emitter, rounds: Rounds, recorded: State) =>
  Effect.gen(function* () {
    const { config } = input
    if (!input.resume) return
    if (input.observe) {
      // The display shows the whole run, from its first event (each state to read during its call: see `Observer`).
      let replayed = initialState
      for (const event of input.resume.events) {
        replayed = advanceInPlace(replayed, event)
        yield* input.observe.onEvent(event, replayed)
      }
    }
    state.current = recorded
    // The work in flight goes on where it was: nothing recorded is asked of a model or run again.
    const plan = resumePlan(
      input.resume.events,
      config.agents,
      {
        toolsOf: rounds.toolSpecs,
        ...(input.resume.toolResultOf ? { toolResultOf: input.resume.toolResultOf } : {}),
        ...(input.resume.blobOf ? { blobOf: input.resume.blobOf } : {}),
      },
      recorded,
      input.resume.replayStart ?? null,
    )
    yield* emit({
      _tag: "run_resumed",
      time: yield* isoNow,
      dropped_lines: input.resume.skipped,
      torn_tail: input.resume.tornTail,
      restarted_rounds: [],
      presentation_restarted: false,
      continued_rounds: plan.continuedRounds,
      presentation_continued: plan.presentationContinued,
    })
    const now = state.current
    for (const a of now.agents)
      if (a.inFlight !== null) yield* rounds.startRound(now, a.info.id, a.inFlight.round, plan.machines.get(a.info.id))
    const p = now.presentation
    if (plan.presentationContinued && p !== null && now.final === null)
      yield* rounds.startPresentation(now, p.agent, plan.machines.get(p.agent))
  })
