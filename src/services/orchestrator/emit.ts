/**
 * The orchestrator's emit path: how an event becomes a fact of the run.
 *
 * Contract: `emitAll(events)` appends the events in one write (under the emit
 * lock, `fiber-lock.ts`: one append at a time, run to its end once begun, so
 * an interrupt never leaves the log holding an event the state does not),
 * then folds them into the run's state and shows each to the observer; the log holds every fact the state knows. It never
 * fails: a failed write is recorded (`RunContext.failStorage`), the state stays
 * as it was, and nothing more is appended. Nothing is appended after
 * `run_finished` (but `run_resumed`). A `call_start` the state no longer allows
 * (`mayStartCall`) is refused: left out, and `wasRefused` says so. The append
 * of an event that announces an effect (`announcesEffect`) waits for the
 * store's barrier (`EventStoreService.settled`). A final answer's files (and
 * the winner's workspace, with `Workspaces`) are written before the
 * `final_answer` event; an accepted answer's workspace is snapshotted before
 * it, `workspace_snapshotted` right after it in the same append. A workspace
 * over a bound of `workspace_limits` gets no copy (no event names one; a
 * warning on stderr says why), and the run goes on. A stop (a signal, the
 * orchestrator timeout: `stopComing`) that comes while a copy is made aborts
 * it, and that append writes nothing, as for a call cut off by the stop.
 *
 * `injectUpdate` decides and records, under the same lock, the latest answers
 * shown to a round in flight.
 */
import { hostname } from "node:os"
import * as nodePath from "node:path"
import { Deferred, Effect, Option } from "effect"
import { mayStartCall, updateFor } from "../../domain/coordination/decide.ts"
import { requestText, updateMessage } from "../../domain/coordination/prompts.ts"
import { shownAnswers } from "../../domain/coordination/requests.ts"
import { workKey } from "../../domain/coordination/work-key.ts"
import type { Event } from "../../domain/events/index.ts"
import { withLongTextsShown } from "../../domain/log/index.ts"
import { agentFile } from "../../domain/run-paths.ts"
import { evolve, longTextsOf, type State } from "../../domain/state/index.ts"
import { instantMs, instantText } from "../../lib/instant.ts"
import { EVENTS_FILE, EventStore, type EventStoreFailure, type NewEvent } from "../event-store/index.ts"
import { RunFiles } from "../run-files/index.ts"
import { isOverLimit, type WorkspaceError, Workspaces } from "../tools/workspace.ts"
import { makeFiberLock } from "./fiber-lock.ts"
import { isoNow, type RunContext } from "./types.ts"

/**
 * The events after which something leaves the process (a model call, a tool call, a question
 * about one and its answer, a context path write, the run's end): the orchestrator settles the log (`EventStoreService.settled`) after each.
 */
export const announcesEffect = (event: Event): boolean =>
  event._tag === "call_start" ||
  event._tag === "tool_call_started" ||
  event._tag === "permission_asked" ||
  event._tag === "permission_decided" ||
  event._tag === "context_write_intended" ||
  event._tag === "run_finished"

/** The emit path of one run (`makeEmitter`). */
export type Emitter = Effect.Effect.Success<ReturnType<typeof makeEmitter>>

export const makeEmitter = (run: RunContext) =>
  Effect.gen(function* () {
    const { input, fatal, failStorage, contexts, state: stateCell } = run
    const store = yield* EventStore
    const files = yield* RunFiles
    const workspaces = Option.getOrNull(yield* Effect.serviceOption(Workspaces))
    const observe = input.observe
    /** The events in the run's stream: what the next append expects to find. */
    let version = input.resume?.events.length ?? 0
    const machineFacts = { log_dir: input.logDir, pid: input.pid, host: hostname(), version: input.version }
    const enveloped = (event: Event): NewEvent =>
      event._tag === "run_started" || event._tag === "run_resumed" ? { event, meta: machineFacts } : event
    const emitLock = makeFiberLock()
    /** Calls refused at their call_start (`mayStartCall`): the budget was spent or the run ended. */
    const refusedCalls = new Set<number>()
    const failLog = (e: EventStoreFailure) =>
      failStorage("event_log", nodePath.join(input.logDir, EVENTS_FILE), e._tag === "EventStoreError" ? e.detail : e.message)
    const failWorkspace = (e: { readonly path: string; readonly detail: string }) =>
      failStorage("workspace", nodePath.join(input.logDir, e.path), e.detail)
    /** Done once the run is told to stop (`stopComing`: a signal, the orchestrator timeout). */
    const signalled = yield* Deferred.make<void>()
    /**
     * What a copy of a workspace gives its append: its facts; null when there
     * is none (no workspace, or one over a bound of `workspace_limits`, said on
     * stderr); undefined when the append must write nothing: a stop came while
     * the copy was made (it is aborted, as a call cut off by the stop), or the
     * disk refused it (the run stops). A copy begun after a stop (the stop's
     * own final copy) is made whole.
     */
    const copyFacts = <A>(copy: Effect.Effect<A | null, WorkspaceError>, without: string): Effect.Effect<A | null | undefined> =>
      Effect.gen(function* () {
        const made = yield* Effect.either(
          (yield* Deferred.isDone(signalled))
            ? Effect.map(copy, Option.some)
            : Effect.raceFirst(
                Effect.interruptible(Effect.map(copy, Option.some)),
                Effect.interruptible(Effect.as(Deferred.await(signalled), Option.none<A | null>())),
              ),
        )
        if (made._tag === "Right") return Option.getOrUndefined(made.right)
        if (!isOverLimit(made.left)) return yield* Effect.as(failWorkspace(made.left), undefined)
        yield* Effect.logWarning(`${made.left.message}; the answer stands with ${without}`)
        return null
      })

    /**
     * Before a `final_answer`: the winner's answer and what it saw
     * (`final/<agent>/answer.txt`, `context.txt`), then, with workspaces, the
     * winner's files, named by the `workspace_finalized` it gives (null when
     * there is no copy); undefined when the append must write nothing (a write
     * failed, or a stop cut the copy).
     */
    const finalFiles = (state: State, event: Extract<Event, { _tag: "final_answer" }>): Effect.Effect<Event | null | undefined> =>
      Effect.gen(function* () {
        const round = state.answers[event.label]?.round
        const written = yield* Effect.either(
          Effect.zipRight(
            files.write(agentFile(event.agent, "final_answer"), event.content),
            Effect.suspend(() => {
              const seen =
                contexts.get(workKey(event.agent, "present")) ??
                (round === undefined ? undefined : contexts.get(workKey(event.agent, round)))
              // The question and answers it shows that are long texts are in the blob store: shown in their short form.
              const longs = longTextsOf(state)
              const text = seen === undefined ? "" : requestText(seen, (t) => withLongTextsShown(t, longs))
              return files.write(agentFile(event.agent, "final_context"), text)
            }),
          ),
        )
        if (written._tag === "Left") return yield* Effect.as(failStorage("final_answer", written.left.path, written.left.detail), undefined)
        if (workspaces === null) return null
        const source = event.source === "presentation" ? "workspace" : "snapshot"
        const facts = yield* copyFacts(workspaces.finalize(event.agent, event.label, source), "no final copy")
        if (facts === undefined || facts === null) return facts
        return { _tag: "workspace_finalized", time: event.time, agent: event.agent, label: event.label, source, ...facts }
      })

    /** After an accepted answer: its workspace's snapshot, named by the `workspace_snapshotted` it gives (null, undefined: as `finalFiles`). */
    const answerSnapshot = (event: Extract<Event, { _tag: "answer_submitted" }>): Effect.Effect<Event | null | undefined> =>
      workspaces === null
        ? Effect.succeed(null)
        : Effect.map(copyFacts(workspaces.snapshot(event.agent, event.label), "no snapshot"), (facts) =>
            facts === undefined || facts === null
              ? facts
              : { _tag: "workspace_snapshotted", time: event.time, agent: event.agent, label: event.label, ...facts },
          )

    /**
     * Appends events (in one write), then folds them: the log holds every fact
     * the state knows. Nothing is appended after `run_finished`: a call still in
     * flight when the run stopped (budget, timeout, signal) ends unrecorded while
     * it is interrupted. The side effects an event waits for are steps of their
     * own: the final files before a `final_answer` (`finalFiles`), the snapshot
     * of an accepted answer (`answerSnapshot`), each recorded by the event it
     * gives in the same append.
     */
    const appendAll = (given: ReadonlyArray<Event>): Effect.Effect<void> =>
      Effect.gen(function* () {
        const broken = fatal.current !== null
        let state = stateCell.current
        const accepted: Array<readonly [Event, State]> = []
        const accept = (event: Event) => {
          state = evolve(state, event)
          accepted.push([event, state])
        }
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
          const event = instantMs(next.time) < state.lastTime ? { ...next, time: instantText(state.lastTime) } : next
          if (event._tag === "final_answer") {
            const finalized = yield* finalFiles(state, event)
            if (finalized === undefined) return
            if (finalized !== null) accept(finalized)
          }
          const before = state
          accept(event)
          // An answer's snapshot is taken before the answer is appended, and named by an event right after it.
          if (event._tag === "answer_submitted" && state !== before) {
            const snapshotted = yield* answerSnapshot(event)
            if (snapshotted === undefined) return
            if (snapshotted !== null) accept(snapshotted)
          }
        }
        if (accepted.length === 0) return
        const appended = yield* Effect.either(
          store.append(
            input.logDir,
            accepted.map(([event]) => enveloped(event)),
            version,
          ),
        )
        if (appended._tag === "Left") return yield* failLog(appended.left)
        version = appended.right
        // Durable before anything outside acts on it: the store's barrier after an event that announces an effect.
        if (accepted.some(([event]) => announcesEffect(event))) {
          const settled = yield* Effect.either(store.settled(input.logDir))
          if (settled._tag === "Left") return yield* failLog(settled.left)
        }
        stateCell.current = state
        if (observe) for (const [event, after] of accepted) yield* observe.onEvent(event, after)
      })
    const emitAll = (given: ReadonlyArray<Event>): Effect.Effect<void> => emitLock.withLock(appendAll(given))
    const emit = (event: Event): Effect.Effect<void> => emitAll([event])

    /** Injection: the latest answers into `agent`'s round in flight, decided and recorded under the emit lock. */
    const injectUpdate = (agent: string, round: number, afterVote: boolean) =>
      emitLock.withLock(
        Effect.gen(function* () {
          const state = stateCell.current
          const latest = updateFor(state, agent, round)
          if (latest === null) return null
          const before = shownAnswers(state, state.agents.find((a) => a.info.id === agent)?.inFlight?.shown ?? [])
          yield* appendAll([{ _tag: "update_injected", time: yield* isoNow, agent, round, shown: latest, after_vote: afterVote }])
          // Not recorded (the run is stopping, or a write failed): nothing reaches the round.
          if (updateFor(stateCell.current, agent, round) !== null) return null
          const shown = shownAnswers(state, latest)
          const key = workKey(agent, round)
          const seen = contexts.get(key)
          // What the agent saw, for final/<winner>/context.txt: the update too.
          if (seen !== undefined)
            contexts.set(key, { ...seen, messages: [...seen.messages, { role: "user", content: updateMessage(before, shown) }] })
          return shown
        }),
      )

    /** Says a stop is coming (before it reaches the run's inbox): a workspace copy under way is cut. */
    const stopComing = Deferred.succeed(signalled, undefined)

    return { emitAll, emit, wasRefused: (call: number) => refusedCalls.has(call), injectUpdate, stopComing }
  })
