/**
 * The orchestrator and the event store's durability barrier (`EventStoreService.settled`):
 * nothing outside the run acts on an event before the store has settled it. A
 * store that watches its appends and barriers sees a barrier after every event
 * that announces an effect and before the effect (a model call, a tool call,
 * the run's end); a barrier that fails (a conflict found when the appends were
 * committed) stops the run with the storage error, and the call it announced
 * never happens.
 */
import { describe, expect } from "bun:test"
import { Effect } from "effect"
import { EventStoreConflict, type EventStoreService } from "../src/services/event-store/index.ts"
import { announcesEffect } from "../src/services/orchestrator/emit.ts"
import { AgentTools } from "../src/services/tools/agent-tools.ts"
import type { ToolProvider } from "../src/services/tools/tool-provider.ts"
import { live } from "./support/effect-test.ts"
import { runInMemory } from "./support/harness.ts"

/** A store that says, at any moment, whether an appended event that announces an effect is not settled yet. */
const watched = () => {
  const log: Array<string> = []
  let unsettled = false
  const wrap = (store: EventStoreService): EventStoreService => ({
    ...store,
    append: (stream, events, expected) =>
      Effect.tap(store.append(stream, events, expected), () =>
        Effect.sync(() => {
          for (const e of events) {
            const event = "_tag" in e ? e : e.event
            log.push(event._tag)
            if (announcesEffect(event)) unsettled = true
          }
        }),
      ),
    settled: (stream) => Effect.tap(store.settled(stream), () => Effect.sync(() => void ((unsettled = false), log.push("settled")))),
  })
  return { wrap, log, isUnsettled: () => unsettled }
}

const counter: ToolProvider = {
  tools: [{ spec: { name: "count", description: "Counts", parameters: { type: "object", properties: {} } }, server: null }],
  run: () => Effect.succeed("counted"),
} as unknown as ToolProvider

describe("the durability barrier", () => {
  live("every model call and tool run comes after the barrier that settled the event announcing it; run_finished is settled", () =>
    Effect.gen(function* () {
      const store = watched()
      const effects: Array<{ what: string; unsettled: boolean }> = []
      const provider: ToolProvider = {
        ...counter,
        run: (...args) =>
          Effect.zipRight(
            Effect.sync(() => void effects.push({ what: "tool", unsettled: store.isUnsettled() })),
            counter.run(...args),
          ),
      }
      const run = yield* runInMemory(
        {
          agents: [
            {
              id: "agent_a",
              backend: { type: "scripted", script: [{ tool: "count", args: {} }, { new_answer: "4" }], vote: "agent1", final: "4." },
            },
            { id: "agent_b", backend: { type: "scripted", answer: "four", vote: "agent1" } },
          ],
        },
        {
          store: store.wrap,
          tools: AgentTools.fromProviders(new Map([["agent_a", provider]])),
          wrap: (_, backend) => ({
            ...backend,
            call: (request, onChunk) =>
              Effect.zipRight(
                Effect.sync(() => void effects.push({ what: "call", unsettled: store.isUnsettled() })),
                backend.call(request, onChunk),
              ),
          }),
        },
      )
      expect(run.reason).toBe("completed")
      expect(effects.filter((e) => e.what === "tool")).toEqual([{ what: "tool", unsettled: false }])
      expect(effects.filter((e) => e.what === "call").length).toBeGreaterThan(3)
      expect(effects.filter((e) => e.unsettled)).toEqual([])
      expect(store.log.slice(-2)).toEqual(["run_finished", "settled"])
    }),
  )

  live("a barrier that fails: the call it announced is not made, and the run stops with the storage error", () =>
    Effect.gen(function* () {
      let calls = 0
      const lost = (store: EventStoreService): EventStoreService => ({
        ...store,
        settled: (stream) => Effect.fail(new EventStoreConflict({ reason: "conflict", stream, expected: 2, actual: 3 })),
      })
      const failed = yield* Effect.flip(
        runInMemory(
          { agents: [{ id: "agent_a", backend: { type: "scripted", answer: "4", vote: "agent1" } }] },
          {
            store: lost,
            wrap: (_, backend) => ({
              ...backend,
              call: (request, onChunk) =>
                Effect.zipRight(
                  Effect.sync(() => void (calls += 1)),
                  backend.call(request, onChunk),
                ),
            }),
          },
        ),
      )
      expect(failed).toMatchObject({ _tag: "RunStorageError", kind: "event_log" })
      expect(calls).toBe(0)
    }),
  )
})
