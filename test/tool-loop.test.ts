/**
 * The tool loop through the whole orchestrator, in memory: scripted agents
 * call their own tools (fake ones that count their runs) before they answer.
 * Every call is recorded; replay feeds the recorded results back and runs no
 * tool, and fails at the event whose result was changed; and a run stopped at
 * any event boundary and resumed finishes like the whole run, each tool call
 * that finished before the stop never running again and every other one
 * running exactly once. A failed call's result goes to the model flagged as an
 * error, live and after a resume.
 */
import { describe, expect } from "bun:test"
import { Effect } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import { encodeEventLine } from "../src/domain/log/index.ts"
import { replayRun } from "../src/domain/replay/index.ts"
import { hashText } from "../src/lib/sha256.ts"
import { AgentTools } from "../src/services/tools/agent-tools.ts"
import { callsOf } from "./support/call-logs.ts"
import { effect } from "./support/effect-test.ts"
import { configOf, runInMemory } from "./support/harness.ts"

const DOC = {
  agents: [
    {
      id: "a",
      backend: {
        type: "scripted",
        script: [{ tool: "lookup", args: { q: "a1" } }, { tool: "lookup", args: { q: "a2" } }, { new_answer: "A, looked up twice" }],
        vote: "agent1",
        final: "A, presented",
      },
    },
    { id: "b", backend: { type: "scripted", script: [{ tool: "lookup", args: { q: "b1" } }, { new_answer: "B" }], vote: "agent1" } },
  ],
}
const agents = configOf(DOC).agents

/** Fake tools that count how often each query ran. */
const counting = () => {
  const runs = new Map<string, number>()
  const lookup = (agent: string) => (args: Record<string, unknown>) => {
    runs.set(String(args.q), (runs.get(String(args.q)) ?? 0) + 1)
    return `${agent} found ${String(args.q)}`
  }
  return { runs, layer: AgentTools.fake({ a: { lookup: lookup("a") }, b: { lookup: lookup("b") } }) }
}

const ofTag = <T extends Event["_tag"]>(events: ReadonlyArray<Event>, tag: T) =>
  events.filter((e): e is Extract<Event, { _tag: T }> => e._tag === tag)
const queryOf = (e: { readonly arguments: string | object }) => String(JSON.parse(e.arguments as string).q)

describe("the tool loop, in memory", () => {
  effect("each tool call runs once and is recorded; the model is sent its result; replay runs no tool and matches", () =>
    Effect.gen(function* () {
      const tools = counting()
      const run = yield* runInMemory(DOC, { tools: tools.layer })
      expect(run.reason).toBe("completed")
      expect(Object.fromEntries(tools.runs)).toEqual({ a1: 1, a2: 1, b1: 1 })
      const finished = ofTag(run.events, "tool_call_finished")
      expect(finished.map((e) => [e.agent, queryOf(e), e.ok, e.result])).toEqual(
        expect.arrayContaining([
          ["a", "a1", true, "a found a1"],
          ["a", "a2", true, "a found a2"],
          ["b", "b1", true, "b found b1"],
        ]),
      )
      // The result is recorded before the model is called with it.
      for (const e of finished) {
        const next = run.events.findIndex((x, i) => i > run.events.indexOf(e) && x._tag === "call_start" && x.agent === e.agent)
        expect(next).toBeGreaterThan(run.events.indexOf(e))
      }
      expect((run.statuses.at(-1) as { agents: Record<string, { tool_calls: unknown }> }).agents.a!.tool_calls).toEqual({
        total: 2,
        errors: 0,
        hosted: 0,
      })
      const replayed = replayRun(run.events, agents, callsOf(run.files), { checkRequests: true, digestOf: hashText })
      expect(replayed.divergence).toBeNull()
      expect(replayed.state.final?.content).toBe("A, presented")
    }),
  )

  effect("replay fails at the tool_call_finished whose recorded result was changed", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory(DOC, { tools: counting().layer })
      const at = run.events.findIndex((e) => e._tag === "tool_call_finished")
      const changed = run.events.map((e, i) => (i === at && e._tag === "tool_call_finished" ? { ...e, result: "something else" } : e))
      const replayed = replayRun(changed, agents, callsOf(run.files), { checkRequests: true, digestOf: hashText })
      expect(replayed.divergence).toMatchObject({ index: at, reason: expect.stringContaining("does not match its digest") })
    }),
  )

  effect(
    "stopped at any event and resumed: finished calls never run again, the others once, and the run ends the same",
    () =>
      Effect.gen(function* () {
        const reference = yield* runInMemory(DOC, { tools: counting().layer })
        const lines = reference.events.length
        const streamText = (n: number) =>
          reference.events
            .slice(0, n)
            .map((e) => `${encodeEventLine(e)}\n`)
            .join("")
        for (let keep = 1; keep < lines; keep++) {
          const prefix = reference.events.slice(0, keep)
          const tools = counting()
          const resumed = yield* runInMemory(DOC, { tools: tools.layer, resume: { text: streamText(keep) } })
          const finishedBefore = new Set(ofTag(prefix, "tool_call_finished").map(queryOf))
          for (const q of ["a1", "a2", "b1"])
            expect({ keep, q, runs: tools.runs.get(q) ?? 0 }).toEqual({ keep, q, runs: finishedBefore.has(q) ? 0 : 1 })
          expect({ keep, reason: resumed.reason }).toEqual({ keep, reason: "completed" })
          expect(resumed.state.final?.content).toBe("A, presented")
          expect(ofTag(resumed.events, "tool_call_finished").map(queryOf).sort()).toEqual(["a1", "a2", "b1"])
          const ended = new Set(ofTag(prefix, "call_end").map((e) => `llm_log/${e.call}.json`))
          const files = new Map([...[...reference.files].filter(([k]) => ended.has(k) || k.startsWith("blobs/")), ...resumed.files])
          const replayed = replayRun(resumed.events, agents, callsOf(files), { checkRequests: true, digestOf: hashText })
          expect({ keep, divergence: replayed.divergence }).toEqual({ keep, divergence: null })
        }
      }),
    60_000,
  )

  effect("a failed call's result is flagged as an error in the next request, and so it is when the run is resumed right after it", () =>
    Effect.gen(function* () {
      const failing = AgentTools.fake({
        a: {
          lookup: (args) => {
            if (args.q === "a1") throw new Error("index down")
            return `found ${String(args.q)}`
          },
        },
        b: { lookup: () => "found" },
      })
      const flagsOf = (events: ReadonlyArray<Event>, files: ReadonlyMap<string, string>) =>
        ofTag(events, "call_start")
          .filter((e) => e.agent === "a")
          .flatMap((e) =>
            (callsOf(files)(e.call)?.request?.messages ?? [])
              .filter((m) => m.role === "tool")
              .map((m) => [m.content, m.role === "tool" ? m.isError : null]),
          )
      const reference = yield* runInMemory(DOC, { tools: failing })
      const failed = ofTag(reference.events, "tool_call_finished").find((e) => queryOf(e) === "a1")!
      expect(failed.ok).toBe(false)
      expect(flagsOf(reference.events, reference.files)).toContainEqual(["error: failed: index down", true])
      expect(flagsOf(reference.events, reference.files)).toContainEqual(["found a2", undefined])
      const keep = reference.events.indexOf(failed) + 1
      const text = reference.events
        .slice(0, keep)
        .map((e) => `${encodeEventLine(e)}\n`)
        .join("")
      const resumed = yield* runInMemory(DOC, { tools: failing, resume: { text } })
      expect(resumed.reason).toBe("completed")
      const later = resumed.events.slice(keep)
      expect(flagsOf(later, resumed.files)[0]).toEqual(["error: failed: index down", true])
    }),
  )
})
