/**
 * Issue 10: folding stays linear, and the fast fold is the plain fold.
 *
 * `foldEvents` extends in place the answers it made itself; `evolve` copies.
 * The fold of a log must equal the plain reduction with `evolve`, on random
 * simulated logs (test/properties.test.ts makes those; here dense synthetic
 * ones) and on the real schema-1 logs, and folding ten times more answers may
 * cost at most fifteen times the time (a coarse guard against quadratic work,
 * robust on a noisy machine); so may reading, decoding and folding a log's
 * text in one pass (`EventStore.fold`, as `massgen status` does).
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import fc from "fast-check"
import { Effect } from "effect"
import { encodeEventLine, readEventsText } from "../src/domain/event-codec.ts"
import type { Event } from "../src/domain/events.ts"
import { type State, advance, evolve, foldEvents, folding, initialState } from "../src/domain/state.ts"
import { foldView } from "../src/domain/view-model.ts"
import { EventStore } from "../src/services/event-store.ts"
import { at, runStarted } from "./support/given.ts"

/** A dense log: `answers` answers by three agents in turn, each in a round of its own (two events per answer). */
const denseLog = (answers: number, ids: ReadonlyArray<string> = ["a", "b", "c"]): Array<Event> => {
  const events: Array<Event> = [{ ...runStarted(ids), time: at(0) }]
  const count = new Map(ids.map((id) => [id, 0]))
  const latest = new Map<string, string>()
  for (let n = 0; n < answers; n++) {
    const i = n % ids.length
    const id = ids[i]!
    const round = count.get(id)! + 1
    count.set(id, round)
    const shown = ids.flatMap((x) => (latest.has(x) ? [latest.get(x)!] : []))
    const time = at(1 + n)
    events.push({ _tag: "round_started", time, agent: id, round, shown, vote_only: false, restart: false })
    const label = `agent${i + 1}.${round}`
    events.push({ _tag: "answer_submitted", time, agent: id, round, label, content: `answer ${n}` })
    latest.set(id, label)
  }
  return events
}

const plainFold = (events: ReadonlyArray<Event>) => events.reduce(evolve, initialState)

// CPU time, not wall time: on a busy machine a long fold is more often preempted than a short one.
const cpuMs = (): number => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** The least CPU time of 5 runs of `work`, each from a collected heap (none pays for the garbage of the one before). */
const bestCpuMs = async (work: () => unknown): Promise<number> => {
  let best = Number.POSITIVE_INFINITY
  for (let i = 0; i < 5; i++) {
    Bun.gc(true)
    const start = cpuMs()
    await work()
    best = Math.min(best, cpuMs() - start)
  }
  return best
}

describe("the fast fold", () => {
  test("equals the plain fold of evolve on dense logs of random sizes and agents, from any starting prefix", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 1, max: 6 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, agents, cut) => {
        const events = denseLog(n, Array.from({ length: agents }, (_, i) => `ag${i}`))
        const k = Math.floor(cut * events.length)
        const from = plainFold(events.slice(0, k))
        const before = structuredClone(from)
        expect(foldEvents(events.slice(k), from)).toEqual(plainFold(events))
        // The state it started from is not changed.
        expect(from).toEqual(before)
      }),
      { numRuns: 60 },
    )
  })

  test("advance gives evolve's state after every event, and advancing a copy of a state on the way gives the same end", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 1, max: 5 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, agents, cut) => {
        const events = denseLog(n, Array.from({ length: agents }, (_, i) => `ag${i}`))
        let plain = initialState
        let advanced = initialState
        const k = Math.floor(cut * events.length)
        let branch: State | null = null
        events.forEach((event, i) => {
          plain = evolve(plain, event)
          advanced = advance(advanced, event)
          if (i === k) branch = structuredClone(advanced)
          expect(advanced).toEqual(plain)
        })
        // From a state advanced from already: the rest again, from a copy of it, gives the same end.
        if (branch !== null) {
          let again: State = branch
          for (const event of events.slice(k + 1)) again = advance(again, event)
          expect(again).toEqual(plain)
        }
      }),
      { numRuns: 40 },
    )
  })

  test("a view (advance) of ten times more answers costs at most fifteen times the time", async () => {
    const small = denseLog(5_000)
    const large = denseLog(50_000)
    const time = (events: ReadonlyArray<Event>) => bestCpuMs(() => foldView(events))
    await time(small)
    expect(foldView(small).state).toEqual(foldEvents(small))
    expect((await time(large)) / (await time(small))).toBeLessThan(15)
  })

  test("equals the plain fold on every real schema-1 log", () => {
    const root = nodePath.join(import.meta.dir, "fixtures", "v1")
    const names = fs.readdirSync(root).filter((n) => fs.existsSync(nodePath.join(root, n, "events.jsonl")))
    expect(names.length).toBeGreaterThan(0)
    for (const name of names) {
      const events = readEventsText(fs.readFileSync(nodePath.join(root, name, "events.jsonl"), "utf8")).events
      expect(foldEvents(events)).toEqual(plainFold(events))
    }
  })

  // Sizes past the caches: a fold of a few thousand answers runs from cache, several times faster per event.
  test("folding ten times more answers costs at most fifteen times the time", async () => {
    const small = denseLog(20_000)
    const large = denseLog(200_000)
    const time = (events: ReadonlyArray<Event>) => bestCpuMs(() => foldEvents(events))
    await time(small)
    expect((await time(large)) / (await time(small))).toBeLessThan(15)
  })

  test("reading, decoding and folding a log of ten times more answers in one pass costs at most fifteen times the time", async () => {
    const texts = new Map<string, string>()
    const logs = { small: denseLog(4_000), large: denseLog(40_000) }
    for (const [name, events] of Object.entries(logs)) texts.set(`/logs/${name}`, events.map((e) => `${encodeEventLine(e)}\n`).join(""))
    /** The store's one-pass fold, with the fast fold: a fresh store each time, so that nothing is cached. */
    const foldOnce = (stream: string) => {
      const fold = folding()
      return Effect.runPromise(
        Effect.flatMap(EventStore, (store) => store.fold(stream, initialState, (_: State, s) => fold.add(s.event))).pipe(
          Effect.provide(EventStore.memory(texts, { foldChunk: 64 * 1024 })),
        ),
      )
    }
    // The plain fold of the large log would take minutes: it copies every answer on every answer.
    expect((await foldOnce("/logs/small")).state).toEqual(plainFold(logs.small))
    const time = (stream: string) => bestCpuMs(() => foldOnce(stream))
    await time("/logs/small")
    const ratio = (await time("/logs/large")) / (await time("/logs/small"))
    expect(ratio).toBeLessThan(15)
  }, 60_000)
})
