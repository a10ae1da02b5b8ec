/**
 * How the orchestrator starts work: the rounds and presentations the decider asks for, and what each is given.
 *
 * Contract: `start(state, command)` starts the work a command asks for, from
 * the state after its event; `startRound` and `startPresentation` start one
 * piece of work, from its rebuilt machine when a resume continues it. Each
 * runs in a fiber of its own (`work.ts`) with the run's
 * `RoundDeps`: its events go through the emit path (a refused call, or an
 * effect whose event is not settled, does not happen), its streamed text to
 * the agent's files and the observer, its call log to `llm_log/` (long texts
 * to the blob store once, and so long tool-call arguments, which the events
 * reference), and its tool calls to the tool runner
 * (`tools/tool-runner.ts`) with the agents' own tools (`AgentTools`, none when
 * the layer is absent) offered in every request, through the permission gate
 * when an agent has a `permissions:` policy (`tools/permission-gate.ts`; a
 * resume keeps the decisions its log holds). `awaiting` holds the agents
 * whose model call was sent and has sent nothing back yet (from its
 * `call_start` to its first chunk of text or reasoning, or its `call_end`):
 * `status.json` shows them `waiting`.
 */
import { Clock, Effect, Option, Queue, Ref } from "effect"
import { budgetSpent, type Command } from "../../domain/coordination/decide.ts"
import { requestForEvaluation, requestForPresentation, requestForRound } from "../../domain/coordination/requests.ts"
import type { Transition } from "../../domain/coordination/round-machine.ts"
import { workKey } from "../../domain/coordination/work-key.ts"
import { ARGUMENTS_BLOB_MIN_CHARS, type ArgumentsText } from "../../domain/events/index.ts"
import { isLongText } from "../../domain/log/index.ts"
import { agentPolicy } from "../../domain/permissions/index.ts"
import { agentFile, blobPath } from "../../domain/run-paths.ts"
import { longTextsOf, memoryKey, type State } from "../../domain/state/index.ts"
import { hashText } from "../../lib/sha256.ts"
import { Backends } from "../backends/index.ts"
import { blobWriter, callLogPath, compactJsonText, RunFiles, splitAtLongTexts } from "../run-files/index.ts"
import { loadMemory } from "../skills/memory.ts"
import { AgentTools } from "../tools/agent-tools.ts"
import { makePermissionGate, PermissionAsker, recordedDecisions } from "../tools/permission-gate.ts"
import { noTools } from "../tools/tool-provider.ts"
import { makeToolRunner } from "../tools/tool-runner.ts"
import { type RoundDeps, runEvaluation, runPresentation, runRound, timeoutReply } from "./agent-round.ts"
import { announcesEffect, type Emitter } from "./emit.ts"
import { isoNow, type RunContext } from "./types.ts"
import type { Work } from "./work.ts"

/** The answer of `new_answer` arguments when it is a long text (`domain/log/long-texts.ts`), else none. */
const longAnswerOf = (args: string): ReadonlyArray<string> => {
  if (!isLongText(args)) return []
  try {
    const content = (JSON.parse(args) as { content?: unknown } | null)?.content
    return typeof content === "string" && isLongText(content) ? [content] : []
  } catch {
    return []
  }
}

export const makeRounds = (run: RunContext, emitter: Emitter, work: Work) =>
  Effect.gen(function* () {
    const { input, settings, state, fatal, inbox, failStorage, contexts, callSentAt } = run
    const { config } = input
    const { emit } = emitter
    const files = yield* RunFiles
    const backends = yield* Backends
    const observe = input.observe
    const agentById = new Map(config.agents.map((a) => [a.id, a]))
    const callCounter = yield* Ref.make(input.resume?.events.reduce((n, e) => (e._tag === "call_start" ? Math.max(n, e.call) : n), 0) ?? 0)
    /** Blobs found new by this process and not written yet (a resumed run may store one again: the same bytes). */
    const freshBlobs: Array<readonly [string, string]> = []
    const blobSink = blobWriter((hash, text) => void freshBlobs.push([hash, text]))
    /** Writes the blobs found new: before the call log or the event that references them. */
    const writeFreshBlobs = Effect.gen(function* () {
      for (const [hash, blob] of freshBlobs.splice(0)) yield* files.write(blobPath(hash), blob)
    })
    /** The run's long texts, with a long answer of `calls` (a reply's, in no event yet): what call logs and arguments reference. */
    const longTextsWith = (calls: ReadonlyArray<{ readonly name: string; readonly arguments: string }>): ReadonlyArray<string> => {
      const longs = longTextsOf(state.current)
      const answers = calls.flatMap((c) => (c.name === "new_answer" ? longAnswerOf(c.arguments) : []))
      return answers.length === 0 ? longs : [...longs, ...answers]
    }
    /**
     * Long tool-call arguments go to the blob store once; the events reference them. Arguments that hold a long
     * text of the run (a long answer) reference it, and keep only what is around it.
     */
    const storeArguments = (text: string, name?: string): Effect.Effect<ArgumentsText> =>
      text.length < ARGUMENTS_BLOB_MIN_CHARS
        ? Effect.succeed(text)
        : Effect.suspend(() => {
            const pieces = splitAtLongTexts(text, longTextsWith(name === undefined ? [] : [{ name, arguments: text }]))
            const ref: ArgumentsText =
              pieces === null
                ? { $blob: blobSink.store(text) }
                : pieces.map((p) =>
                    typeof p === "string"
                      ? p
                      : p.escaped
                        ? { $blob: blobSink.store(p.long), escaped: true as const }
                        : { $blob: blobSink.store(p.long) },
                  )
            // Not written: the run stops, and the event that would reference it is not appended.
            return Effect.as(
              Effect.catchAll(writeFreshBlobs, (e) => failStorage("call_log", e.path, e.detail)),
              ref,
            )
          })

    const agentTools = Option.getOrElse(yield* Effect.serviceOption(AgentTools), () => ({ forAgent: () => noTools }))
    const toolSpecs = (agentId: string) => agentTools.forAgent(agentId).tools.map((t) => t.spec)
    const toolCounter = yield* Ref.make(
      input.resume?.events.reduce((n, e) => (e._tag === "tool_call_started" ? Math.max(n, e.tool_call) : n), 0) ?? 0,
    )

    const awaiting = new Set<string>()
    const deps: RoundDeps = {
      runTools: (agent, round, role, calls) => runTools(agent, round, role, calls),
      emit: (event) =>
        Effect.flatMap(emit(event), () => {
          // A refused call never starts: the run is stopping, so its round ends here.
          if (event._tag === "call_start" && emitter.wasRefused(event.call)) return Effect.interrupt
          // Not recorded durably (a write or the barrier failed): the effect it announces does not happen.
          if (announcesEffect(event) && fatal.current !== null) return Effect.interrupt
          if (event._tag === "call_end") awaiting.delete(event.agent)
          if (event._tag === "call_start") {
            awaiting.add(event.agent)
            return Effect.map(
              Clock.currentTimeMillis,
              (ms) =>
                void callSentAt.set(
                  workKey(event.agent, event.role === "presentation" ? "present" : event.role === "evaluation" ? "evaluate" : event.round),
                  ms,
                ),
            )
          }
          if (event._tag === "call_end" && budgetSpent(state.current)) return Queue.offer(inbox, { _tag: "wake" })
          return Effect.void
        }),
      now: isoNow,
      nextCallNumber: Ref.updateAndGet(callCounter, (n) => n + 1),
      onText: (agent, text) =>
        Effect.zipRight(
          Effect.sync(() => awaiting.delete(agent)),
          Effect.zipRight(files.append(agentFile(agent, "output"), text), observe ? observe.onText(agent, text) : Effect.void),
        ),
      onReasoning: (agent, text) =>
        Effect.zipRight(
          Effect.sync(() => awaiting.delete(agent)),
          files.append(agentFile(agent, "reasoning"), text),
        ),
      record: (agent, text) => files.append(agentFile(agent, "output"), text),
      logCall: (call, record) =>
        Effect.gen(function* () {
          // Long texts and large values go to the blob store once; the call log references them, and the run's long texts within its prompts.
          const calls = (record as { reply?: { toolCalls?: ReadonlyArray<{ name: string; arguments: string }> } | null }).reply?.toolCalls
          const text = compactJsonText(record, blobSink, longTextsWith(calls ?? []))
          yield* writeFreshBlobs
          yield* files.write(callLogPath(call), `${text}\n`)
        }).pipe(Effect.catchAll((e) => failStorage("call_log", e.path, e.detail))),
      storeArguments,
      priceOf: input.priceOf ?? (() => null),
      // Without injection a round has nothing to ask at its step boundaries (and no lock to take there).
      ...(settings.disable_injection ? {} : { injectUpdate: emitter.injectUpdate }),
    }

    const human = Option.getOrUndefined(yield* Effect.serviceOption(PermissionAsker))
    const policies = new Map(config.agents.map((a) => [a.id, agentPolicy(config.permissions, a.backend.permissions)]))
    const gate = [...policies.values()].some((p) => p !== null)
      ? makePermissionGate({
          policyOf: (agent) => policies.get(agent) ?? null,
          recorded: recordedDecisions(input.resume?.events ?? []),
          logDir: input.logDir,
          emit: deps.emit,
          now: isoNow,
          ...(human !== undefined ? { human } : {}),
        })
      : undefined
    const runTools = makeToolRunner({
      providerOf: agentTools.forAgent,
      emit: deps.emit,
      now: isoNow,
      nextToolCall: Ref.updateAndGet(toolCounter, (n) => n + 1),
      writeLog: (n, record) =>
        files
          .write(`tool_log/${n}.json`, `${JSON.stringify(record, null, 2)}\n`)
          .pipe(Effect.catchAll((e) => failStorage("tool_log", e.path, e.detail))),
      digest: hashText,
      state: Effect.sync(() => state.current),
      storeArguments,
      ...(gate !== undefined ? { gate } : {}),
      ...(config.toolTimeoutSeconds !== undefined ? { timeoutSeconds: config.toolTimeoutSeconds } : {}),
    })

    /** Starts `agentId`'s round `round` (from its rebuilt machine, when a resume continues it). */
    const startRound = (given: State, agentId: string, round: number, from?: Transition) =>
      Effect.gen(function* () {
        const agent = agentById.get(agentId)!
        const memory = yield* shownMemory(given, agentId, round, false)
        const request = requestForRound(memory ? state.current : given, agent, toolSpecs(agent.id))
        if (request === null) return
        const key = workKey(agent.id, round)
        contexts.set(key, request)
        const backend = backends.forAgent(agent.id)
        const soft = round === 1 ? settings.initial_round_timeout_seconds : settings.subsequent_round_timeout_seconds
        const roundTimeout =
          soft != null ? { roundTimeout: { softSeconds: soft, graceSeconds: settings.round_timeout_grace_seconds ?? 120 } } : {}
        return yield* work.spawn(
          key,
          runRound(deps, {
            agent: agent.id,
            round,
            backend,
            request,
            agentTimeoutSeconds: settings.agent_timeout_seconds,
            timedByCaller: true,
            ...roundTimeout,
            ...(from ? { from } : {}),
          }),
          timeoutReply(agent.id, round, settings.agent_timeout_seconds),
        )
      })

    /**
     * Memory filesystem mode: the memory files of a round (or the presentation) not recorded yet are read and
     * recorded (`memory_loaded`) before its request is built; true when this appended them. A resumed round keeps
     * what its log holds.
     */
    const shownMemory = (given: State, agentId: string, round: number, presentation: boolean) =>
      Effect.gen(function* () {
        const agent = agentById.get(agentId)!
        if (settings.memory_filesystem_mode !== true || agent.backend.cwd === undefined) return false
        if (memoryKey(agentId, presentation ? "present" : round) in given.memory) return false
        const shown = presentation
          ? given.presentation?.agent === agentId
            ? Object.keys(given.presentation.votes)
            : null
          : (() => {
              const inFlight = given.agents.find((a) => a.info.id === agentId)?.inFlight ?? null
              return inFlight?.round === round ? inFlight.shown : null
            })()
        if (shown === null) return false
        const files = yield* loadMemory(input.logDir, agent.anonId, shown)
        yield* emit({ _tag: "memory_loaded", time: yield* isoNow, agent: agentId, round, files, ...(presentation ? { presentation } : {}) })
        return true
      })

    /** Starts the winner's presentation (from its rebuilt machine, when a resume continues it). */
    const startPresentation = (given: State, agentId: string, from?: Transition) =>
      Effect.gen(function* () {
        const agent = agentById.get(agentId)!
        const round = from?.machine.round ?? (given.agents.find((a) => a.info.id === agent.id)?.rounds ?? 0) + 1
        const memory = yield* shownMemory(given, agentId, round, true)
        const request = requestForPresentation(memory ? state.current : given, agent, toolSpecs(agent.id))
        if (request === null) return
        contexts.set(workKey(agent.id, "present"), request)
        const backend = backends.forAgent(agent.id)
        return yield* work.spawn(
          workKey(agent.id, "present"),
          runPresentation(deps, {
            agent: agent.id,
            round,
            backend,
            request,
            agentTimeoutSeconds: settings.agent_timeout_seconds,
            timedByCaller: true,
            ...(from ? { from } : {}),
          }),
          timeoutReply(agent.id, "present", settings.agent_timeout_seconds),
        )
      })

    /** Starts the presenter's evaluation of the final answer (orchestration restarts: `restarts.ts`). */
    const startEvaluation = (state: State, agentId: string) =>
      Effect.suspend(() => {
        const agent = agentById.get(agentId)!
        const request = requestForEvaluation(state, agent, toolSpecs(agent.id))
        if (request === null) return Effect.void
        const key = workKey(agent.id, "evaluate")
        contexts.set(key, request)
        const round = state.agents.find((a) => a.info.id === agent.id)?.rounds ?? 0
        return work.spawn(
          key,
          runEvaluation(deps, {
            agent: agent.id,
            round,
            backend: backends.forAgent(agent.id),
            request,
            agentTimeoutSeconds: settings.agent_timeout_seconds,
            timedByCaller: true,
          }),
          timeoutReply(agent.id, "evaluate", settings.agent_timeout_seconds),
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
          case "StartEvaluation":
            return yield* startEvaluation(state, command.agent)
          case "CancelRound":
          case "UseStoredAnswer":
          case "FinishRun":
          case "StopRun":
            return
        }
      })

    return { toolSpecs, startRound, startPresentation, start, awaiting: awaiting as ReadonlySet<string> }
  })

/** How one run starts work (`makeRounds`). */
export type Rounds = Effect.Effect.Success<ReturnType<typeof makeRounds>>
