/**
 * Runs a whole coordination in memory: scripted backends, memory event store,
 * status writer and run files. Returns the events, the statuses written, the
 * files and the final state. Time is whatever clock the caller provides
 * (TestClock under the `effect` helper).
 */
import { Context, Effect, Either, Layer } from "effect"
import { priceOf } from "../../src/cli/run/setup.ts"
import { type Config, decodeConfig } from "../../src/domain/config/index.ts"
import type { ConversationMessage, Event } from "../../src/domain/events/index.ts"
import { readEventsText } from "../../src/domain/log/index.ts"
import { type Backend, Backends } from "../../src/services/backends/index.ts"
import { makeScriptedBackend } from "../../src/services/backends/scripted.ts"
import { EventStore, type EventStoreService } from "../../src/services/event-store/index.ts"
import { type Observer, type RunOutcome, runCoordination } from "../../src/services/orchestrator/index.ts"
import { memoryRunFiles } from "../../src/services/run-files/index.ts"
import { StatusWriter } from "../../src/services/run-files/status-writer.ts"
import { AgentTools } from "../../src/services/tools/agent-tools.ts"

/** The log directory of a run in memory: the name of its stream. */
export const LOG_DIR = "/tmp/massgen-test/log_x"

export const configOf = (doc: unknown): Config => {
  const decoded = decodeConfig(doc, {})
  if (Either.isLeft(decoded)) throw new Error(JSON.stringify(decoded.left))
  return decoded.right
}

export interface MemoryRun extends RunOutcome {
  readonly events: ReadonlyArray<Event>
  readonly statuses: ReadonlyArray<any>
  readonly files: Map<string, string>
}

export const runInMemory = (
  doc: unknown,
  options: {
    question?: string
    /** The conversation the question continues. */
    conversation?: ReadonlyArray<ConversationMessage>
    interrupt?: Effect.Effect<string>
    /** Where the statuses written go, to watch them while the run goes on. */
    statuses?: Array<unknown>
    /** The agents' own tools. */
    tools?: Layer.Layer<AgentTools>
    /** Take up this recorded run (its events, as text, then as read) instead of starting one. */
    resume?: { readonly text: string; readonly files?: Map<string, string> }
    /** Wraps each agent's scripted backend (to hold its calls back, say). */
    wrap?: (agentId: string, backend: Backend) => Backend
    /** Wraps the memory event store (to watch its appends and barriers, say). */
    store?: (store: EventStoreService) => EventStoreService
    /** Sees every event and streamed text, as a display does. */
    observe?: Observer
  } = {},
) =>
  Effect.gen(function* () {
    const config = configOf(doc)
    const streams = new Map<string, string>(options.resume ? [[LOG_DIR, options.resume.text]] : [])
    const statuses: Array<unknown> = options.statuses ?? []
    const runFiles = memoryRunFiles()
    const recorded = options.resume ? readEventsText(options.resume.text) : null
    const wrap = options.wrap ?? ((_: string, backend: Backend) => backend)
    const backends = new Map(config.agents.map((a) => [a.id, wrap(a.id, makeScriptedBackend(a, recorded?.events ?? []))]))
    const layer = Layer.mergeAll(
      options.store
        ? Layer.map(EventStore.memory(streams), (c) => Context.make(EventStore, options.store!(Context.get(c, EventStore))))
        : EventStore.memory(streams),
      StatusWriter.memory(statuses),
      runFiles.layer,
      Layer.succeed(Backends, { forAgent: (id: string) => backends.get(id)! }),
      options.tools ?? AgentTools.fromProviders(new Map()),
    )
    const outcome = yield* runCoordination({
      config,
      question: options.question ?? "What is 2+2?",
      ...(options.conversation ? { conversation: options.conversation } : {}),
      logDir: LOG_DIR,
      runId: "log_x",
      version: "test",
      pid: 1,
      interrupt: options.interrupt ?? Effect.never,
      ...(options.observe ? { observe: options.observe } : {}),
      ...(recorded
        ? {
            resume: {
              events: recorded.events,
              skipped: recorded.skipped,
              tornTail: recorded.tornTail,
              // The blobs of the recorded run's files: the long tool-call arguments its events reference.
              ...(options.resume?.files ? { blobOf: (hash: string) => options.resume?.files?.get(`blobs/${hash}.txt`) } : {}),
            },
          }
        : {}),
      // Only a config with a pricing section is priced, so fixtures of known models stay unpriced.
      ...(Object.keys(config.pricing).length > 0 ? { priceOf: priceOf(config) } : {}),
    }).pipe(Effect.scoped, Effect.provide(layer))
    const events = readEventsText(streams.get(LOG_DIR) ?? "").events
    return { ...outcome, events, statuses, files: runFiles.files } satisfies MemoryRun
  })
