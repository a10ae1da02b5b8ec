/**
 * The orchestrator: the interpreter of the decider.
 *
 * It appends an event, folds it, asks `decide` what to do, and carries that
 * out: a round or a presentation runs in a fiber of its own, and what it
 * returns comes back through one inbox together with the stops from outside
 * (orchestrator timeout, budget, signal). State changes only when an event is
 * appended; nothing polls. Every event is appended (and so flushed) before the
 * orchestrator acts on it, and a final answer file is written before the
 * `final_answer` event that announces it.
 *
 * `status.json` is written at the start, every 2 s on the Effect clock and
 * once more at the end. `observe` sees every event with the state after it and
 * every streamed text delta, for the display.
 */
import { Duration, Effect, Fiber, Queue, Ref, Schedule } from "effect"
import type { Config } from "../domain/config.ts"
import { type Command, type Reply, commandEvent, decide, judgeReply, stopRun } from "../domain/decide.ts"
import type { Event, FinishReason } from "../domain/events.ts"
import type { ShownAnswer, TokenUsage } from "../domain/llm.ts"
import { presentationRequest, requestText, roundRequest } from "../domain/prompts.ts"
import { type State, evolve, initialState } from "../domain/state.ts"
import { project } from "../domain/status.ts"
import { type RoundDeps, runPresentation, runRound } from "./agent-round.ts"
import { Backends } from "./backend.ts"
import { EventLog } from "./event-log.ts"
import { RunFiles } from "./run-files.ts"
import { StatusWriter } from "./status-writer.ts"

export interface RunInput {
  readonly config: Config
  readonly question: string
  readonly logDir: string
  readonly runId: string
  readonly version: string
  readonly pid: number
  /** Completes when the run must stop from outside (a signal); its value names why. */
  readonly interrupt: Effect.Effect<string>
  readonly observe?: Observer
  readonly priceOf?: (model: string | null, usage: TokenUsage) => number | null
}

export interface Observer {
  readonly onEvent: (event: Event, state: State) => Effect.Effect<void>
  readonly onText: (agent: string, text: string) => Effect.Effect<void>
}

export interface RunOutcome {
  readonly state: State
  readonly reason: FinishReason
}

type Input = { readonly _tag: "reply"; readonly reply: Reply } | { readonly _tag: "stop"; readonly reason: Exclude<FinishReason, "completed">; readonly message: string }

const isoNow = Effect.clockWith((c) => c.currentTimeMillis).pipe(Effect.map((ms) => new Date(ms).toISOString()))

export const runCoordination = (input: RunInput) =>
  Effect.gen(function* () {
    const log = yield* EventLog
    const status = yield* StatusWriter
    const files = yield* RunFiles
    const backends = yield* Backends
    const { config } = input
    const settings = config.settings
    const stateRef = yield* Ref.make<State>(initialState)
    const emitLock = yield* Effect.makeSemaphore(1)
    const inbox = yield* Queue.unbounded<Input>()
    const fibers = new Map<string, Fiber.RuntimeFiber<void>>()
    const callCounter = yield* Ref.make(0)
    const contexts = new Map<string, string>()
    const agentById = new Map(config.agents.map((a) => [a.id, a]))
    const observe = input.observe

    const writeStatus = Effect.gen(function* () {
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      yield* status.write(project(yield* Ref.get(stateRef), now)).pipe(Effect.catchAll((e) => Effect.logWarning(e.message)))
    })

    /** Appends an event, then folds it: the log holds every fact the state knows. */
    const emit = (event: Event): Effect.Effect<void> =>
      emitLock.withPermits(1)(
        Effect.gen(function* () {
          if (event._tag === "final_answer") {
            yield* files.write(`final/${event.agent}/answer.txt`, event.content)
            const round = (yield* Ref.get(stateRef)).answers[event.label]?.round
            const seen = contexts.get(`${event.agent}#present`) ?? contexts.get(`${event.agent}#${round}`) ?? ""
            yield* files.write(`final/${event.agent}/context.txt`, seen)
          }
          yield* log.append(event).pipe(Effect.orDie)
          const next = evolve(yield* Ref.get(stateRef), event)
          yield* Ref.set(stateRef, next)
          if (observe) yield* observe.onEvent(event, next)
        }),
      )

    const budgetLeft = Effect.map(Ref.get(stateRef), (s) => settings.budget_usd === null || (s.usage.cost ?? 0) < settings.budget_usd)

    const deps: RoundDeps = {
      emit: (event) =>
        Effect.gen(function* () {
          yield* emit(event)
          if (event._tag === "call_end" && !(yield* budgetLeft)) {
            yield* Queue.offer(inbox, { _tag: "stop", reason: "budget", message: `budget of $${settings.budget_usd} spent` })
          }
        }),
      now: isoNow,
      nextCallNumber: Ref.updateAndGet(callCounter, (n) => n + 1),
      onText: (agent, text) =>
        Effect.zipRight(files.appendOutput(agent, text), observe ? observe.onText(agent, text) : Effect.void),
      onReasoning: (agent, text) => files.appendOutput(`${agent}.reasoning`, text),
      logCall: (call, record) => files.write(`llm_log/${call}.json`, `${JSON.stringify(record, null, 2)}\n`),
      priceOf: input.priceOf ?? (() => null),
      mayCall: budgetLeft,
    }

    const shownAnswers = (state: State, labels: ReadonlyArray<string>): ReadonlyArray<ShownAnswer> =>
      labels.flatMap((label) => {
        const answer = state.answers[label]
        return answer ? [{ label, anonId: label.split(".")[0]!, content: answer.content }] : []
      })

    /** Runs a round (key `agent#round`) or a presentation (`agent#present`) in a fiber of its own. */
    const spawn = (key: string, work: Effect.Effect<Reply>) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(work.pipe(Effect.flatMap((reply) => Queue.offer(inbox, { _tag: "reply", reply })), Effect.asVoid))
        fibers.set(key, fiber)
      })

    const execute = (command: Command) =>
      Effect.gen(function* () {
        yield* emit(commandEvent(command, yield* isoNow))
        const state = yield* Ref.get(stateRef)
        const run = state.run!
        switch (command._tag) {
          case "StartRound": {
            const agent = agentById.get(command.agent)!
            const request = roundRequest({
              agentId: agent.id,
              selfAnonId: agent.anonId,
              systemMessage: agent.systemMessage,
              question: run.question,
              shown: shownAnswers(state, command.shown),
              voteOnly: command.voteOnly,
            })
            contexts.set(`${agent.id}#${command.round}`, requestText(request))
            const work = runRound(deps, {
              agent: agent.id,
              round: command.round,
              backend: backends.forAgent(agent.id),
              request,
              agentTimeoutSeconds: settings.agent_timeout_seconds,
            })
            return yield* spawn(`${agent.id}#${command.round}`, work)
          }
          case "CancelRound": {
            const key = `${command.agent}#${command.round}`
            const fiber = fibers.get(key)
            fibers.delete(key)
            if (fiber) yield* Fiber.interrupt(fiber)
            return
          }
          case "StartPresentation": {
            if (!command.callsModel) return
            const agent = agentById.get(command.agent)!
            const shown = shownAnswers(state, Object.keys(command.votes))
            const request = presentationRequest({
              agentId: agent.id,
              selfAnonId: agent.anonId,
              systemMessage: agent.systemMessage,
              question: run.question,
              answers: state.agents.flatMap((a) => {
                const label = a.answers[a.answers.length - 1]
                const answer = label ? state.answers[label] : undefined
                return answer ? [{ agentId: a.info.id, label: answer.label, content: answer.content, own: a.info.id === agent.id }] : []
              }),
              shown,
              voteReasons: state.agents.flatMap((a) => (a.vote?.target === agent.id ? [a.vote.reason] : [])),
              isTie: command.isTie,
              strategy: command.strategy,
            })
            contexts.set(`${agent.id}#present`, requestText(request))
            const presentationRound = (state.agents.find((a) => a.info.id === agent.id)?.rounds ?? 0) + 1
            return yield* spawn(
              `${agent.id}#present`,
              runPresentation(deps, {
                agent: agent.id,
                round: presentationRound,
                backend: backends.forAgent(agent.id),
                request,
                agentTimeoutSeconds: settings.agent_timeout_seconds,
              }),
            )
          }
          case "UseStoredAnswer":
          case "FinishRun":
            return
        }
      })

    /** Runs the decider's commands until it asks for nothing more. */
    const drive = Effect.gen(function* () {
      for (let commands = decide(yield* Ref.get(stateRef)); commands.length > 0; commands = decide(yield* Ref.get(stateRef))) {
        for (const command of commands) yield* execute(command)
      }
    })

    yield* emit({
      _tag: "run_started",
      time: yield* isoNow,
      run_id: input.runId,
      question: input.question,
      log_dir: input.logDir,
      agents: config.agents.map((a) => ({ id: a.id, anon_id: a.anonId, backend: a.backend.type, model: a.backend.model ?? null })),
      settings,
      version: input.version,
      pid: input.pid,
    })
    yield* writeStatus
    yield* Effect.forkScoped(Effect.repeat(Effect.delay(writeStatus, Duration.seconds(2)), Schedule.forever))
    yield* Effect.forkScoped(
      Effect.delay(
        Queue.offer(inbox, { _tag: "stop", reason: "timeout", message: `orchestrator timeout after ${settings.orchestrator_timeout_seconds}s` }),
        Duration.seconds(settings.orchestrator_timeout_seconds),
      ),
    )
    yield* Effect.forkScoped(Effect.flatMap(input.interrupt, (why) => Queue.offer(inbox, { _tag: "stop", reason: "interrupted", message: why })))

    yield* drive
    while ((yield* Ref.get(stateRef)).finished === null) {
      const next = yield* Queue.take(inbox)
      const state = yield* Ref.get(stateRef)
      const time = yield* isoNow
      const events =
        next._tag === "reply" ? judgeReply(state, next.reply, time) : stopRun(state, next.reason, next.message, time, next.reason !== "interrupted")
      if (next._tag === "reply") {
        const r = next.reply
        fibers.delete("round" in r ? `${r.agent}#${r.round}` : `${r.agent}#present`)
      }
      for (const event of events) yield* emit(event)
      yield* drive
    }
    yield* Effect.forEach([...fibers.values()], (f) => Fiber.interrupt(f), { discard: true })
    fibers.clear()
    const final = yield* Ref.get(stateRef)
    yield* writeStatus
    return { state: final, reason: final.finished!.reason } satisfies RunOutcome
  })
