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
 * once more at the end. `observe` sees every event with the state after it and
 * every streamed text delta, for the display.
 *
 * The agents' own tools (`AgentTools`, none when the layer is absent) are
 * offered in every request and run by the tool runner (`tools/tool-runner.ts`).
 * A resumed run continues the work its stopped process had in flight from the
 * rebuilt round machines (`domain/resume-plan.ts`) instead of starting it again.
 * With `Workspaces` (`tools/workspace.ts`), an accepted answer's workspace is
 * snapshotted before the answer is appended, `workspace_snapshotted` right
 * after it in the same append, and the winner's files are copied before
 * `final_answer` (`workspace_finalized`).
 */
import { hostname } from "node:os"
import * as nodePath from "node:path"
import { Clock, Duration, Effect, Fiber, Option, Queue, Ref, Schedule } from "effect"
import type { Config } from "../domain/config.ts"
import { type Command, type Reply, budgetSpent, commandEvents, decide, judgeReply, mayStartCall, stopRun, updateFor } from "../domain/decide.ts"
import type { ConversationMessage, Event, FinishReason } from "../domain/events.ts"
import type { LlmRequest, TokenUsage } from "../domain/llm.ts"
import { requestText, updateMessage } from "../domain/prompts.ts"
import { requestForPresentation, requestForRound, shownAnswers } from "../domain/requests.ts"
import { agentFile } from "../domain/run-paths.ts"
import { type State, activeMs, evolve, foldEvents, initialState } from "../domain/state.ts"
import type { ReplayStart } from "../domain/replay-start.ts"
import { project } from "../domain/status.ts"
import { type RoundDeps, runPresentation, runRound, timeoutReply } from "./agent-round.ts"
import { Backends } from "./backend.ts"
import { EVENTS_FILE, EventStore, type NewEvent } from "./event-store.ts"
import { RunFiles } from "./run-files.ts"
import { StatusWriter } from "./status-writer.ts"
import { RunStorageError, type StorageKind } from "./io-errors.ts"
import { blobPath, blobWriter, compactJsonText, hashText } from "./blobs.ts"
import { onForcedStop } from "./forced-stop.ts"
import { takeWindow } from "./scheduling-window.ts"
import { resumePlan } from "../domain/resume-plan.ts"
import type { Transition } from "../domain/round-machine.ts"
import { AgentTools } from "./tools/agent-tools.ts"
import { noTools } from "./tools/tool-provider.ts"
import { makeToolRunner } from "./tools/tool-runner.ts"
import { Workspaces } from "./tools/workspace.ts"

export interface RunInput {
  readonly config: Config
  readonly question: string
  /** The conversation the question continues, oldest first; recorded on `run_started` when not empty. */
  readonly conversation?: ReadonlyArray<ConversationMessage>
  readonly logDir: string
  readonly runId: string
  readonly version: string
  readonly pid: number
  /** Completes when the run must stop from outside (a signal); its value names why. */
  readonly interrupt: Effect.Effect<string>
  readonly observe?: Observer
  readonly priceOf?: (model: string | null, usage: TokenUsage) => number | null
  /** Take up a recorded run instead of starting one: its events, and what the reader skipped. */
  readonly resume?: ResumeInput
}

export interface ResumeInput {
  /** Every event of the run's stream: their number is the version the first append expects. */
  readonly events: ReadonlyArray<Event>
  readonly skipped: number
  readonly tornTail: boolean
  /** The fold of `events`, when the caller has it already. */
  readonly state?: State
  /** Where the replay that rebuilds the work in flight may start, with the fold before it, when the caller has it (`foldWithStart`). */
  readonly replayStart?: ReplayStart
  /** The whole result of tool call `n` (`tool_log/<n>.json`), for results the events do not hold. */
  readonly toolResultOf?: (n: number) => string | undefined
}

export interface Observer {
  readonly onEvent: (event: Event, state: State) => Effect.Effect<void>
  readonly onText: (agent: string, text: string) => Effect.Effect<void>
}

export interface RunOutcome {
  readonly state: State
  readonly reason: FinishReason
}

type Input =
  | { readonly _tag: "reply"; readonly reply: Reply }
  /** A file the run must keep could not be written (`fatal` holds why): the run stops at once. */
  | { readonly _tag: "fatal" }
  | { readonly _tag: "stop"; readonly reason: Exclude<FinishReason, "completed">; readonly message: string }
  /** The state changed in a way the decider must see (a call spent the budget). */
  | { readonly _tag: "wake" }

const replyKey = (reply: Reply): string => workKey(reply.agent, "round" in reply ? reply.round : "present")

/** The key of a piece of work (its fiber, its request, its call's time): `agent#round`, or `agent#present` for a presentation. */
const workKey = (agent: string, round: number | "present"): string => `${agent}#${round}`

/**
 * The events after which something leaves the process (a model call, a tool call, a context path
 * write, the run's end): the orchestrator settles the log (`EventStoreService.settled`) after each.
 */
export const announcesEffect = (event: Event): boolean =>
  event._tag === "call_start" || event._tag === "tool_call_started" || event._tag === "context_write_intended" || event._tag === "run_finished"

const isoNow = Effect.clockWith((c) => c.currentTimeMillis).pipe(Effect.map((ms) => new Date(ms).toISOString()))

export const runCoordination = (input: RunInput) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    /** The events in the run's stream: what the next append expects to find. */
    let version = input.resume?.events.length ?? 0
    const machineFacts = { log_dir: input.logDir, pid: input.pid, host: hostname(), version: input.version }
    const enveloped = (event: Event): NewEvent =>
      event._tag === "run_started" || event._tag === "run_resumed" ? { event, meta: machineFacts } : event
    const status = yield* StatusWriter
    const files = yield* RunFiles
    const backends = yield* Backends
    const { config } = input
    const recorded = input.resume ? (input.resume.state ?? foldEvents(input.resume.events)) : null
    // A resumed run keeps the settings it was started with.
    const settings = recorded?.run?.settings ?? config.settings
    const stateRef = yield* Ref.make<State>(initialState)
    const emitLock = yield* Effect.makeSemaphore(1)
    const inbox = yield* Queue.unbounded<Input>()
    const fibers = new Map<string, Fiber.RuntimeFiber<void>>()
    const callCounter = yield* Ref.make(
      input.resume?.events.reduce((n, e) => (e._tag === "call_start" ? Math.max(n, e.call) : n), 0) ?? 0,
    )
    /** The base request of each piece of work, by `workKey`: what the winner saw, for `final/<winner>/context.txt`. */
    const contexts = new Map<string, LlmRequest>()
    const agentById = new Map(config.agents.map((a) => [a.id, a]))
    const observe = input.observe
    const workspaces = Option.getOrNull(yield* Effect.serviceOption(Workspaces))

    /** The first failure to write a file the run must keep; once set, nothing more is appended and the run stops. */
    const fatal = yield* Ref.make<RunStorageError | null>(null)
    const failStorage = (kind: StorageKind, path: string, cause: string) =>
      Effect.gen(function* () {
        const error = new RunStorageError({ kind, path, cause, logDir: input.logDir })
        if (yield* Ref.modify(fatal, (f) => (f === null ? [true, error] : [false, f]))) yield* Queue.offer(inbox, { _tag: "fatal" })
      })

    const writeStatus = Effect.gen(function* () {
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      yield* status.write(project(yield* Ref.get(stateRef), now, input.logDir)).pipe(
        Effect.catchAll((e) => failStorage("status", e.path, e.detail)),
      )
    })

    /** Blobs found new by this process and not written yet (a resumed run may store one again: the same bytes). */
    const freshBlobs: Array<readonly [string, string]> = []
    const blobSink = blobWriter((hash, text) => void freshBlobs.push([hash, text]))
    /** When the latest call of each piece of work went out (the Effect clock, ms), by `workKey`: when its reply may be due. */
    const callSentAt = new Map<string, number>()
    /** Calls refused at their call_start (`mayStartCall`): the budget was spent or the run ended. */
    const refusedCalls = new Set<number>()

    /**
     * Appends events (in one write), then folds them: the log holds every fact
     * the state knows. Nothing is appended after `run_finished`: a call still in
     * flight when the run stopped (budget, timeout, signal) ends unrecorded while
     * it is interrupted.
     */
    const appendAll = (given: ReadonlyArray<Event>): Effect.Effect<void> =>
        Effect.gen(function* () {
          const before = yield* Ref.get(stateRef)
          const broken = (yield* Ref.get(fatal)) !== null
          let state = before
          const accepted: Array<readonly [Event, State]> = []
          for (const next of given) {
            // Checked under the lock: another call may have spent the budget since this call was asked for.
            if (next._tag === "call_start" && (broken || !mayStartCall(state))) {
              refusedCalls.add(next.call)
              continue
            }
            // Once a write failed, the log takes nothing more: the run is stopping.
            if (broken) return
            // run_resumed is the one event that re-opens a run a signal stopped.
            if (state.finished !== null && next._tag !== "run_resumed") continue
            // Times never go back in the log, whichever fiber read the clock first.
            const event = Date.parse(next.time) < state.lastTime ? { ...next, time: new Date(state.lastTime).toISOString() } : next
            if (event._tag === "final_answer") {
              const round = state.answers[event.label]?.round
              const written = yield* Effect.either(
                Effect.zipRight(
                  files.write(agentFile(event.agent, "final_answer"), event.content),
                  Effect.suspend(() => {
                    const seen = contexts.get(workKey(event.agent, "present")) ?? (round === undefined ? undefined : contexts.get(workKey(event.agent, round)))
                    return files.write(agentFile(event.agent, "final_context"), seen === undefined ? "" : requestText(seen))
                  }),
                ),
              )
              if (written._tag === "Left") return yield* failStorage("final_answer", written.left.path, written.left.detail)
              // The winner's files too, before the event that announces the final answer.
              if (workspaces !== null) {
                const source = event.source === "presentation" ? "workspace" : "snapshot"
                const made = yield* Effect.either(workspaces.finalize(event.agent, event.label, source))
                if (made._tag === "Left") return yield* failStorage("workspace", nodePath.join(input.logDir, made.left.path), made.left.detail)
                if (made.right !== null) {
                  const copied: Event = { _tag: "workspace_finalized", time: event.time, agent: event.agent, label: event.label, source, ...made.right }
                  state = evolve(state, copied)
                  accepted.push([copied, state])
                }
              }
            }
            const before = state
            state = evolve(state, event)
            accepted.push([event, state])
            // An answer's snapshot is taken before the answer is appended, and named by an event right after it.
            if (event._tag === "answer_submitted" && workspaces !== null && state !== before) {
              const made = yield* Effect.either(workspaces.snapshot(event.agent, event.label))
              if (made._tag === "Left") return yield* failStorage("workspace", nodePath.join(input.logDir, made.left.path), made.left.detail)
              if (made.right !== null) {
                const copied: Event = { _tag: "workspace_snapshotted", time: event.time, agent: event.agent, label: event.label, ...made.right }
                state = evolve(state, copied)
                accepted.push([copied, state])
              }
            }
          }
          if (accepted.length === 0) return
          const appended = yield* Effect.either(store.append(input.logDir, accepted.map(([event]) => enveloped(event)), version))
          if (appended._tag === "Left") {
            const e = appended.left
            return yield* failStorage("event_log", nodePath.join(input.logDir, EVENTS_FILE), e._tag === "EventStoreError" ? e.detail : e.message)
          }
          version = appended.right
          // Durable before anything outside acts on it: the store's barrier after an event that announces an effect.
          if (accepted.some(([event]) => announcesEffect(event))) {
            const settled = yield* Effect.either(store.settled(input.logDir))
            if (settled._tag === "Left") {
              const e = settled.left
              return yield* failStorage("event_log", nodePath.join(input.logDir, EVENTS_FILE), e._tag === "EventStoreError" ? e.detail : e.message)
            }
          }
          yield* Ref.set(stateRef, state)
          if (observe) for (const [event, after] of accepted) yield* observe.onEvent(event, after)
        })
    const emitAll = (given: ReadonlyArray<Event>): Effect.Effect<void> => emitLock.withPermits(1)(appendAll(given))
    const emit = (event: Event): Effect.Effect<void> => emitAll([event])

    /** Injection: the latest answers into `agent`'s round in flight, decided and recorded under the emit lock. */
    const injectUpdate = (agent: string, round: number, afterVote: boolean) =>
      emitLock.withPermits(1)(
        Effect.gen(function* () {
          const state = yield* Ref.get(stateRef)
          const latest = updateFor(state, agent, round)
          if (latest === null) return null
          const before = shownAnswers(state, state.agents.find((a) => a.info.id === agent)?.inFlight?.shown ?? [])
          yield* appendAll([{ _tag: "update_injected", time: yield* isoNow, agent, round, shown: latest, after_vote: afterVote }])
          // Not recorded (the run is stopping, or a write failed): nothing reaches the round.
          if (updateFor(yield* Ref.get(stateRef), agent, round) !== null) return null
          const shown = shownAnswers(state, latest)
          const key = workKey(agent, round)
          const seen = contexts.get(key)
          // What the agent saw, for final/<winner>/context.txt: the update too.
          if (seen !== undefined) contexts.set(key, { ...seen, messages: [...seen.messages, { role: "user", content: updateMessage(before, shown) }] })
          return shown
        }),
      )

    const agentTools = Option.getOrElse(yield* Effect.serviceOption(AgentTools), () => ({ forAgent: () => noTools }))
    const toolSpecs = (agentId: string) => agentTools.forAgent(agentId).tools.map((t) => t.spec)
    const toolCounter = yield* Ref.make(
      input.resume?.events.reduce((n, e) => (e._tag === "tool_call_started" ? Math.max(n, e.tool_call) : n), 0) ?? 0,
    )

    const deps: RoundDeps = {
      runTools: (agent, round, role, calls) => runTools(agent, round, role, calls),
      emit: (event) =>
        Effect.gen(function* () {
          yield* emit(event)
          // A refused call never starts: the run is stopping, so its round ends here.
          if (event._tag === "call_start" && refusedCalls.has(event.call)) return yield* Effect.interrupt
          // Not recorded durably (a write or the barrier failed): the effect it announces does not happen.
          if (announcesEffect(event) && (yield* Ref.get(fatal)) !== null) return yield* Effect.interrupt
          if (event._tag === "call_start") callSentAt.set(workKey(event.agent, event.role === "presentation" ? "present" : event.round), yield* Clock.currentTimeMillis)
          if (event._tag === "call_end" && budgetSpent(yield* Ref.get(stateRef))) yield* Queue.offer(inbox, { _tag: "wake" })
        }),
      now: isoNow,
      nextCallNumber: Ref.updateAndGet(callCounter, (n) => n + 1),
      onText: (agent, text) =>
        Effect.zipRight(files.append(agentFile(agent, "output"), text), observe ? observe.onText(agent, text) : Effect.void),
      onReasoning: (agent, text) => files.append(agentFile(agent, "reasoning"), text),
      record: (agent, text) => files.append(agentFile(agent, "output"), text),
      logCall: (call, record) =>
        Effect.gen(function* () {
          // Long texts and large values go to the blob store once; the call log references them.
          const text = compactJsonText(record, blobSink)
          for (const [hash, blob] of freshBlobs.splice(0)) yield* files.write(blobPath(hash), blob)
          yield* files.write(`llm_log/${call}.json`, `${text}\n`)
        }).pipe(Effect.catchAll((e) => failStorage("call_log", e.path, e.detail))),
      priceOf: input.priceOf ?? (() => null),
      // Without injection a round has nothing to ask at its step boundaries (and no lock to take there).
      ...(settings.disable_injection ? {} : { injectUpdate }),
    }

    const runTools = makeToolRunner({
      providerOf: agentTools.forAgent,
      emit: deps.emit,
      now: isoNow,
      nextToolCall: Ref.updateAndGet(toolCounter, (n) => n + 1),
      writeLog: (n, record) =>
        files.write(`tool_log/${n}.json`, `${JSON.stringify(record, null, 2)}\n`).pipe(Effect.catchAll((e) => failStorage("tool_log", e.path, e.detail))),
      digest: hashText,
      state: Ref.get(stateRef),
      ...(config.toolTimeoutSeconds !== undefined ? { timeoutSeconds: config.toolTimeoutSeconds } : {}),
    })

    /**
     * The work to end at `agent_timeout_seconds`, in the order it started: every piece has the
     * same timeout, so its deadlines come in that order too. One fiber ends it all (`watchdog`),
     * not a timer fiber and a race per round (at 200 zero-delay agents, a fifth of the run's time).
     */
    const deadlines = yield* Queue.unbounded<{ readonly key: string; readonly spawned: number; readonly at: number; readonly reply: Reply }>()
    /** Which spawn the fiber under each key is (a deadline holds that number, not the fiber: nothing of finished work is kept). */
    const spawnOf = new Map<string, number>()
    let spawns = 0

    /** Runs a round or a presentation in a fiber of its own, under its `workKey`, until its reply or its timeout. */
    const spawn = (key: string, work: Effect.Effect<Reply>, timedOut: Reply) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(work.pipe(Effect.flatMap((reply) => Queue.offer(inbox, { _tag: "reply", reply })), Effect.asVoid))
        const spawned = ++spawns
        fibers.set(key, fiber)
        spawnOf.set(key, spawned)
        const at = (yield* Clock.currentTimeMillis) + settings.agent_timeout_seconds * 1000
        yield* Queue.offer(deadlines, { key, spawned, at, reply: timedOut })
      })

    /** Ends work still running at its deadline, as a timeout inside it would: its cut-off call is recorded, then its timeout is its reply. */
    const watchdog = Effect.forever(
      Effect.gen(function* () {
        const next = yield* Queue.take(deadlines)
        const wait = next.at - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
        // Work that replied (its reply may wait in the inbox) or was stopped is not this deadline's.
        const fiber = fibers.get(next.key)
        if (fiber === undefined || spawnOf.get(next.key) !== next.spawned || fiber.unsafePoll() !== null) return
        fibers.delete(next.key)
        spawnOf.delete(next.key)
        callSentAt.delete(next.key)
        yield* Fiber.interrupt(fiber)
        yield* Queue.offer(inbox, { _tag: "reply", reply: next.reply })
      }),
    )

    /** Ends the work under `keys` all at once; each records its cut-off call before this returns. */
    const stopWork = (keys: ReadonlyArray<string>) =>
      Effect.suspend(() => {
        const stopping = keys.flatMap((key) => {
          const fiber = fibers.get(key)
          fibers.delete(key)
          spawnOf.delete(key)
          callSentAt.delete(key)
          return fiber === undefined ? [] : [fiber]
        })
        return stopping.length === 0 ? Effect.void : Fiber.interruptAll(stopping)
      })

    const stopAll = Effect.suspend(() => stopWork([...fibers.keys()]))

    /** Starts `agentId`'s round `round` (from its rebuilt machine, when a resume continues it). */
    const startRound = (state: State, agentId: string, round: number, from?: Transition) =>
      Effect.suspend(() => {
        const agent = agentById.get(agentId)!
        const request = requestForRound(state, agent, toolSpecs(agent.id))
        if (request === null) return Effect.void
        const key = workKey(agent.id, round)
        contexts.set(key, request)
        const backend = backends.forAgent(agent.id)
        const soft = round === 1 ? settings.initial_round_timeout_seconds : settings.subsequent_round_timeout_seconds
        const roundTimeout = soft != null ? { roundTimeout: { softSeconds: soft, graceSeconds: settings.round_timeout_grace_seconds ?? 120 } } : {}
        return spawn(
          key,
          runRound(deps, { agent: agent.id, round, backend, request, agentTimeoutSeconds: settings.agent_timeout_seconds, timedByCaller: true, ...roundTimeout, ...(from ? { from } : {}) }),
          timeoutReply(agent.id, round, settings.agent_timeout_seconds),
        )
      })

    /** Starts the winner's presentation (from its rebuilt machine, when a resume continues it). */
    const startPresentation = (state: State, agentId: string, from?: Transition) =>
      Effect.suspend(() => {
        const agent = agentById.get(agentId)!
        const request = requestForPresentation(state, agent, toolSpecs(agent.id))
        if (request === null) return Effect.void
        contexts.set(workKey(agent.id, "present"), request)
        const round = from?.machine.round ?? (state.agents.find((a) => a.info.id === agent.id)?.rounds ?? 0) + 1
        const backend = backends.forAgent(agent.id)
        return spawn(
          workKey(agent.id, "present"),
          runPresentation(deps, { agent: agent.id, round, backend, request, agentTimeoutSeconds: settings.agent_timeout_seconds, timedByCaller: true, ...(from ? { from } : {}) }),
          timeoutReply(agent.id, "present", settings.agent_timeout_seconds),
        )
      })

    /** Starts the work a command asks for, from the state after its event. */
    const start = (state: State, command: Command) =>
      Effect.gen(function* () {
        switch (command._tag) {
          case "StartRound":
            return yield* startRound(state, command.agent, command.round)
          case "StartPresentation":
            return command.callsModel ? yield* startPresentation(state, command.agent) : undefined
          case "CancelRound":
          case "UseStoredAnswer":
          case "FinishRun":
          case "StopRun":
            return
        }
      })

    const isBroken = Effect.map(Ref.get(fatal), (f) => f !== null)

    /**
     * Runs the decider's commands until it asks for nothing more (or a write
     * failed: the state then stays put). The commands of one decision are
     * carried out together: the rounds it cancels are stopped at once (each
     * records its cut-off call before the events that cancel it), its events
     * are appended in one write, and then the work it starts is started.
     */
    const drive = Effect.gen(function* () {
      for (;;) {
        if (yield* isBroken) return
        const commands = decide(yield* Ref.get(stateRef))
        if (commands.length === 0) return
        yield* stopWork(commands.flatMap((c) => (c._tag === "CancelRound" ? [workKey(c.agent, c.round)] : [])))
        if (commands.some((c) => c._tag === "FinishRun" || c._tag === "StopRun")) yield* stopAll
        const time = yield* isoNow
        const before = yield* Ref.get(stateRef)
        yield* emitAll(commands.flatMap((c) => commandEvents(before, c, time)))
        const after = yield* Ref.get(stateRef)
        if (after === before) return
        for (const command of commands) yield* start(after, command)
      }
    })

    /** The inputs of one scheduling window (`scheduling-window.ts`). */
    const takeBatch = takeWindow(inbox, { callTimes: callSentAt, count: () => fibers.size }, (x) => (x._tag === "reply" ? replyKey(x.reply) : null))

    /** Stops the run on a failed write: the work ends, nothing more is written, and the run fails with why. */
    const stopBroken = Effect.gen(function* () {
      const error = yield* Ref.get(fatal)
      if (error === null) return
      yield* stopAll
      return yield* Effect.fail(error)
    })

    if (recorded !== null && input.resume) {
      if (observe) {
        // The display shows the whole run, from its first event.
        let replayed = initialState
        for (const event of input.resume.events) {
          replayed = evolve(replayed, event)
          yield* observe.onEvent(event, replayed)
        }
      }
      yield* Ref.set(stateRef, recorded)
      // The work in flight goes on where it was: nothing recorded is asked of a model or run again.
      const plan = resumePlan(
        input.resume.events,
        config.agents,
        { toolsOf: toolSpecs, ...(input.resume.toolResultOf ? { toolResultOf: input.resume.toolResultOf } : {}) },
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
      const now = yield* Ref.get(stateRef)
      for (const a of now.agents) if (a.inFlight !== null) yield* startRound(now, a.info.id, a.inFlight.round, plan.machines.get(a.info.id))
      const p = now.presentation
      if (plan.presentationContinued && p !== null && now.final === null) yield* startPresentation(now, p.agent, plan.machines.get(p.agent))
    } else {
      yield* emit({
        _tag: "run_started",
        time: yield* isoNow,
        run_id: input.runId,
        question: input.question,
        ...(input.conversation !== undefined && input.conversation.length > 0 ? { conversation: input.conversation } : {}),
        agents: config.agents.map((a) => ({ id: a.id, anon_id: a.anonId, backend: a.backend.type, model: backends.forAgent(a.id).model })),
        settings,
      })
    }
    // A resumed run has the time its first process had not used yet.
    const used = recorded ? activeMs({ ...recorded, finished: null }, recorded.lastTime) / 1000 : 0
    const timeLeft = Math.max(0, settings.orchestrator_timeout_seconds - used)
    // status.json now, then every 2 s, beside the run rather than in its way.
    const statusTicker = yield* Effect.forkScoped(Effect.repeat(writeStatus, Schedule.fixed(Duration.seconds(2))))
    yield* Effect.forkScoped(watchdog)
    yield* Effect.forkScoped(
      Effect.delay(
        Queue.offer(inbox, { _tag: "stop", reason: "timeout", message: `orchestrator timeout after ${settings.orchestrator_timeout_seconds}s` }),
        Duration.seconds(timeLeft),
      ),
    )
    yield* Effect.forkScoped(Effect.flatMap(input.interrupt, (why) => Queue.offer(inbox, { _tag: "stop", reason: "interrupted", message: why })))

    // A second signal exits at once: the log still gets its stop and status.json its last word.
    yield* onForcedStop(() => {
      // From the log itself: the clean stop may be halfway through its own appends.
      const read = Effect.runSync(store.read(input.logDir))
      let state = foldEvents(read.events.map((stored) => stored.event))
      let at = read.version
      if (state.finished === null && Effect.runSync(Ref.get(fatal)) === null) {
        const time = new Date(Math.max(Date.now(), state.lastTime)).toISOString()
        for (const event of stopRun(state, "interrupted", "stopped by a second signal", time)) {
          at = Effect.runSync(store.append(input.logDir, [event], at))
          state = evolve(state, event)
        }
      }
      status.writeNow(project(state, Date.now(), input.logDir))
    })
    yield* drive
    yield* stopBroken
    while ((yield* Ref.get(stateRef)).finished === null) {
      const batch = yield* takeBatch
      const replies = batch.flatMap((x) => (x._tag === "reply" ? [x.reply] : []))
      for (const r of replies) {
        fibers.delete(replyKey(r))
        spawnOf.delete(replyKey(r))
        callSentAt.delete(replyKey(r))
      }
      // Every reply of the batch is judged before anything is decided, each against the state its predecessors left.
      const time = yield* isoNow
      let judged = yield* Ref.get(stateRef)
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
        if (judge(yield* Ref.get(stateRef), yield* isoNow).length > 0) {
          // The work still running ends (its calls record call_end) before the stop, which is judged after it.
          yield* stopAll
          yield* emitAll(judge(yield* Ref.get(stateRef), yield* isoNow))
        }
      }
      // A failed write leaves the state as it was: the rest of the batch appends nothing, and the run stops here.
      yield* stopBroken
      yield* drive
      yield* stopBroken
    }
    yield* stopAll
    const final = yield* Ref.get(stateRef)
    // The ticker's write in flight, if any, lands first: the final status is the last one written.
    yield* Fiber.interrupt(statusTicker)
    yield* files.flush
    yield* writeStatus
    yield* stopBroken
    return { state: final, reason: final.finished!.reason } satisfies RunOutcome
  })
