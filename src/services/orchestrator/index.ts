/**
 * The orchestrator: the interpreter of the decider.
 *
 * It appends an event, folds it, asks `decide` what to do, and carries that
 * out: a round or a presentation runs in a fiber of its own, and what it
 * returns comes back through one inbox together with the stops from outside
 * (orchestrator timeout, budget, signal). The inbox is taken a scheduling
 * window at a time (`scheduling-window.ts`): every reply of the window is judged before
 * anything is decided, so replies that come together cancel the rounds they
 * undo once, not once each. A decision's commands are carried out together:
 * the rounds it cancels stop at once, its events go in one append, then its
 * work starts. State changes only when an event is appended; nothing polls. Every event is appended before the
 * orchestrator acts on it, and settled (durable: `EventStoreService.settled`)
 * before anything outside the process does: the append of an event that
 * announces an effect (`announcesEffect`) waits for the store's barrier, and
 * when the log cannot take it the effect does not happen. A final answer
 * file is written before the `final_answer` event that announces it.
 *
 * Work that runs past `agent_timeout_seconds` is ended by one watchdog fiber
 * for the whole run, as a timeout inside it would end it (its cut-off call
 * recorded, then the timeout as its reply).
 *
 * `status.json` is written at the start, every 2 s on the Effect clock and
 * once more at the end (an agent whose call has had no byte back is `waiting` in it: `rounds.ts`). `observe` sees every event with the state after it and
 * every streamed text delta, for the display.
 *
 * The agents' own tools (`AgentTools`, none when the layer is absent) are
 * offered in every request and run by the tool runner (`tools/tool-runner.ts`).
 * A resumed run continues the work its stopped process had in flight from the
 * rebuilt round machines (`domain/replay/resume-plan.ts`) instead of starting it again.
 * With `Workspaces` (`tools/workspace.ts`), an accepted answer's workspace is
 * snapshotted before the answer is appended, `workspace_snapshotted` right
 * after it in the same append, and the winner's files are copied before
 * `final_answer` (`workspace_finalized`).
 *
 * This file holds the run's loop; its parts: `types.ts` (what a
 * run is given and its parts share), `emit.ts` (the append path),
 * `work.ts` (work fibers and the watchdog),
 * `rounds.ts` (starting work, and what it is given),
 * `opening.ts` (a run's start, or its resume),
 * `forced-stop.ts` (what a second signal leaves).
 */
import { Duration, Effect, Either, Fiber, Queue, Schedule } from "effect"
import { commandEvents, decide, judgeReply, stopRun } from "../../domain/coordination/decide.ts"
import { workKey } from "../../domain/coordination/work-key.ts"
import type { Event } from "../../domain/events/index.ts"
import { project } from "../../domain/projections/status.ts"
import { activeMs, evolve, foldEvents, type State } from "../../domain/state/index.ts"
import { RunFiles, StatusWriter } from "../run-files/index.ts"
import { findSkills } from "../skills/offer.ts"
import { restoreMemory } from "../skills/restore.ts"
import { AgentTools } from "../tools/agent-tools.ts"
import { makeEmitter } from "./emit.ts"
import { onRunForcedStop } from "./forced-stop.ts"
import { openNewRun, openResumedRun } from "./opening.ts"
import { makeRounds } from "./rounds.ts"
import { takeWindow } from "./scheduling-window.ts"
import { isoNow, makeRunContext, type RunInput, type RunOutcome, replyKey } from "./types.ts"
import { makeWork } from "./work.ts"

export type { Observer, ResumeInput, RunInput, RunOutcome } from "./types.ts"

export const runCoordination = (input: RunInput) =>
  Effect.gen(function* () {
    const status = yield* StatusWriter
    const files = yield* RunFiles
    const { config } = input
    const recorded = input.resume ? (input.resume.state ?? foldEvents(input.resume.events)) : null
    // A resumed run keeps the settings it was started with.
    const settings = recorded?.run?.settings ?? config.settings
    const run = yield* makeRunContext(input, settings)
    const { state, inbox, fatal, failStorage, isBroken } = run
    const emitter = yield* makeEmitter(run)
    const { emitAll } = emitter
    const work = yield* makeWork(run)
    const { stopWork, stopAll } = work
    // A new run is on record before its tools start: a tool that does not start is a fact of it.
    if (recorded === null) yield* openNewRun(run, emitter)
    const started = input.startTools === undefined ? null : yield* Effect.either(input.startTools)
    if (started !== null && Either.isLeft(started)) {
      if (recorded !== null) return yield* Effect.fail(started.left)
      const { kind, name, problem } = started.left
      yield* emitAll([{ _tag: "tool_start_failed", time: yield* isoNow, kind, name, message: problem }])
    }
    const rounds = yield* started === null || Either.isLeft(started)
      ? makeRounds(run, emitter, work)
      : Effect.provide(makeRounds(run, emitter, work), AgentTools.fromProviders(started.right))

    const writeStatus = Effect.gen(function* () {
      // A log directory gone is not made again for a status.json alone.
      if (fatal.current?.kind === "log_dir") return
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      yield* status
        .write(project(state.current, now, input.logDir, { awaiting: rounds.awaiting }))
        .pipe(Effect.catchAll((e) => failStorage("status", e.path, e.detail)))
    })

    /**
     * Runs the decider's commands until it asks for nothing more (or a write
     * failed: the state then stays put). The commands of one decision are
     * carried out together: the rounds it cancels are stopped at once (each
     * records its cut-off call before the events that cancel it), its events
     * are appended in one write, and then the work it starts is started.
     */
    const drive = Effect.gen(function* () {
      for (;;) {
        if (isBroken()) return
        const commands = decide(state.current)
        if (commands.length === 0) return
        yield* stopWork(commands.flatMap((c) => (c._tag === "CancelRound" ? [workKey(c.agent, c.round)] : [])))
        if (commands.some((c) => c._tag === "FinishRun" || c._tag === "StopRun")) yield* stopAll
        const time = yield* isoNow
        const before = state.current
        yield* emitAll(commands.flatMap((c) => commandEvents(before, c, time)))
        const after = state.current
        if (after === before) return
        for (const command of commands) yield* rounds.start(after, command)
      }
    })

    /** The inputs of one scheduling window (`scheduling-window.ts`). */
    const takeBatch = takeWindow(inbox, { callTimes: run.callSentAt, count: work.count }, (x) =>
      x._tag === "reply" ? replyKey(x.reply) : null,
    )

    /** Stops the run on a failed write: the work ends, nothing more is written, and the run fails with why. */
    const stopBroken = Effect.gen(function* () {
      const error = fatal.current
      if (error === null) return
      yield* stopAll
      return yield* Effect.fail(error)
    })

    if (recorded !== null) yield* openResumedRun(run, emitter, rounds, recorded)
    // The skills are found once, before the first round; a resume and replay offer what the log names.
    if (settings.use_skills === true && state.current.skills === null && state.current.finished === null && input.skillSources) {
      const found = yield* findSkills(input.skillSources, input.logDir)
      yield* emitAll([{ _tag: "skills_offered", time: yield* isoNow, skills: found.skills, skipped: found.skipped }])
    }
    // A turn of a session starts with the memory its previous turn ended with (before any round: once).
    const fresh = state.current.agents.every((a) => a.rounds === 0 && a.inFlight === null)
    if (
      settings.memory_filesystem_mode === true &&
      input.previousTurn &&
      !state.current.memoryRestored &&
      fresh &&
      state.current.finished === null
    ) {
      const agents = config.agents.filter((a) => a.backend.cwd !== undefined)
      const files = yield* restoreMemory(
        input.previousTurn,
        input.logDir,
        agents.map((a) => a.anonId),
      )
      yield* emitAll([{ _tag: "memory_restored", time: yield* isoNow, from: input.previousTurn, agents: agents.map((a) => a.id), files }])
    }
    // A resumed run has the time its first process had not used yet.
    const used = recorded ? activeMs({ ...recorded, finished: null }, recorded.lastTime) / 1000 : 0
    const timeLeft = Math.max(0, settings.orchestrator_timeout_seconds - used)
    // status.json now, then every 2 s, beside the run rather than in its way.
    const statusTicker = yield* Effect.forkScoped(Effect.repeat(writeStatus, Schedule.fixed(Duration.seconds(2))))
    yield* Effect.forkScoped(work.watchdog)
    yield* Effect.forkScoped(
      Effect.delay(
        Effect.zipRight(
          emitter.stopComing,
          Queue.offer(inbox, {
            _tag: "stop",
            reason: "timeout",
            message: `orchestrator timeout after ${settings.orchestrator_timeout_seconds}s`,
          }),
        ),
        Duration.seconds(timeLeft),
      ),
    )
    yield* Effect.forkScoped(
      Effect.flatMap(input.interrupt, (why) =>
        Effect.zipRight(emitter.stopComing, Queue.offer(inbox, { _tag: "stop", reason: "interrupted", message: why })),
      ),
    )

    // A second signal exits at once: the log still gets its stop and status.json its last word.
    yield* onRunForcedStop(run)
    yield* drive
    yield* stopBroken
    while (state.current.finished === null) {
      const batch = yield* takeBatch
      const replies = batch.flatMap((x) => (x._tag === "reply" ? [x.reply] : []))
      for (const r of replies) work.replied(replyKey(r))
      // Every reply of the batch is judged before anything is decided, each against the state its predecessors left.
      const time = yield* isoNow
      let judged = state.current
      const events: Array<Event> = []
      for (const reply of replies) {
        for (const event of judgeReply(judged, reply, time)) {
          events.push(event)
          judged = evolve(judged, event)
        }
      }
      yield* emitAll(events)
      // Replies before stops: the reply whose call spent the budget is paid for, so it counts.
      for (const next of batch) {
        if (next._tag !== "stop") continue
        const judge = (state: State, at: string) => stopRun(state, next.reason, next.message, at)
        if (judge(state.current, yield* isoNow).length > 0) {
          // The work still running ends (its calls record call_end) before the stop, which is judged after it.
          yield* stopAll
          yield* emitAll(judge(state.current, yield* isoNow))
        }
      }
      // A failed write leaves the state as it was: the rest of the batch appends nothing, and the run stops here.
      yield* stopBroken
      yield* drive
      yield* stopBroken
    }
    yield* stopAll
    const final = state.current
    // The ticker's write in flight, if any, lands first: the final status is the last one written.
    yield* Fiber.interrupt(statusTicker)
    yield* files.flush
    yield* writeStatus
    yield* stopBroken
    return { state: final, reason: final.finished!.reason } satisfies RunOutcome
  })
