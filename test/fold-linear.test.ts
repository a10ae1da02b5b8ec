/**
 * Issue 10: folding stays linear, and the fast fold is the plain fold.
 *
 * `foldEvents` extends in place the answers it made itself; `evolve` copies.
 * The fold of a log must equal the plain reduction with `evolve`, on random
 * simulated logs (test/properties.test.ts makes those; here dense synthetic
 * ones) and on the real schema-1 logs. Linear is checked by counting work,
 * which no other load on the machine changes: over a fold of n answers, the
 * answers copied into new answer records and the labels copied into new
 * label arrays (each record or array counted once, at its size when the fold
 * made it) are at most n, for a log of 2,000 answers and one of 20,000; and
 * reading, decoding and folding a log's text in one pass (`EventStore.fold`,
 * as `massgen status` does) reads each character of it about once and folds
 * each event once. The fold's speed is in `bun run bench` (section 2,
 * `bench/fold.ts`: events per second at three sizes, and the time of ten
 * times more answers over the time of the fewer).
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import fc from "fast-check"
import type { Event } from "../src/domain/events/index.ts"
import { encodeEventLine, readEventsText } from "../src/domain/log/index.ts"
import { applyEvent, emptyViewModel, foldView, type ViewModel } from "../src/domain/projections/view-model.ts"
import { advanceInPlace, evolve, foldEvents, foldingInPlace, initialState, type State } from "../src/domain/state/index.ts"
import { makeStore } from "../src/services/event-store/index.ts"
import { memoryStorage } from "../src/services/event-store/storage.ts"
import { denseLog } from "./support/dense-log.ts"

const plainFold = (events: ReadonlyArray<Event>) => events.reduce(evolve, initialState)

/**
 * The copying a fold did, seen through its states in order: each answers
 * record and each agent's label array is counted once, the first time a state
 * holds it, at its size then (a fold that copies makes a new one, as large as
 * what it copies; one that extends in place goes on with the same one).
 */
const copyCounter = () => {
  const records = new Set<object>()
  const arrays = new Set<object>()
  const copied = { answers: 0, labels: 0 }
  return {
    copied,
    see: (state: State): void => {
      if (!records.has(state.answers)) {
        records.add(state.answers)
        copied.answers += Object.keys(state.answers).length
      }
      for (const agent of state.agents) {
        if (arrays.has(agent.answers)) continue
        arrays.add(agent.answers)
        copied.labels += agent.answers.length
      }
    },
  }
}

const SIZES = [2_000, 20_000] as const

describe("the fast fold", () => {
  test("equals the plain fold of evolve on dense logs of random sizes and agents, from any starting prefix", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 1, max: 6 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (n, agents, cut) => {
          const events = denseLog(
            n,
            Array.from({ length: agents }, (_, i) => `ag${i}`),
          )
          const k = Math.floor(cut * events.length)
          const from = plainFold(events.slice(0, k))
          const before = structuredClone(from)
          expect(foldEvents(events.slice(k), from)).toEqual(plainFold(events))
          // The state it started from is not changed.
          expect(from).toEqual(before)
        },
      ),
      { numRuns: 60 },
    )
  })

  test("advance gives evolve's state after every event, and advancing a copy of a state on the way gives the same end", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 1, max: 5 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (n, agents, cut) => {
          const events = denseLog(
            n,
            Array.from({ length: agents }, (_, i) => `ag${i}`),
          )
          let plain = initialState
          let advanced = initialState
          const k = Math.floor(cut * events.length)
          let branch: State | null = null
          events.forEach((event, i) => {
            plain = evolve(plain, event)
            advanced = advanceInPlace(advanced, event)
            if (i === k) branch = structuredClone(advanced)
            expect(advanced).toEqual(plain)
          })
          // From a state advanced from already: the rest again, from a copy of it, gives the same end.
          if (branch !== null) {
            let again: State = branch
            for (const event of events.slice(k + 1)) again = advanceInPlace(again, event)
            expect(again).toEqual(plain)
          }
        },
      ),
      { numRuns: 40 },
    )
  })

  test("a view (advance) of n answers copies at most n answers and n labels, for n = 2,000 and 20,000", () => {
    for (const n of SIZES) {
      const events = denseLog(n)
      const counter = copyCounter()
      let model: ViewModel = emptyViewModel
      for (const event of events) {
        model = applyEvent(model, event)
        counter.see(model.state)
      }
      expect(model.state).toEqual(foldEvents(events))
      expect(model).toEqual(foldView(events))
      expect({ n, copied: counter.copied, atMostN: counter.copied.answers <= n && counter.copied.labels <= n }).toEqual({
        n,
        copied: counter.copied,
        atMostN: true,
      })
    }
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

  test("folding n answers copies at most n answers and n labels, for n = 2,000 and 20,000", () => {
    for (const n of SIZES) {
      const events = denseLog(n)
      const counter = copyCounter()
      const fold = foldingInPlace()
      for (const event of events) counter.see(fold.add(event))
      expect(fold.state()).toEqual(foldEvents(events))
      expect({ n, copied: counter.copied, atMostN: counter.copied.answers <= n && counter.copied.labels <= n }).toEqual({
        n,
        copied: counter.copied,
        atMostN: true,
      })
    }
  })

  test("reading, decoding and folding a log in one pass reads each character about once, folds each event once and copies at most n answers", () => {
    for (const n of SIZES) {
      const events = denseLog(n)
      const text = events.map((e) => `${encodeEventLine(e)}\n`).join("")
      const base = memoryStorage(new Map([["/logs/run", text]]), 20)
      let read = 0
      /** The memory storage, counting the characters each read gives. */
      const counting = {
        ...base,
        readFrom: (stream: string, offset: number, end: number) => {
          const got = base.readFrom(stream, offset, end)
          read += got.whole.length + got.rest.length
          return got
        },
      }
      const counter = copyCounter()
      const fold = foldingInPlace()
      let calls = 0
      const store = makeStore(counting, 64 * 1024)
      const folded = Effect.runSync(
        store.fold("/logs/run", initialState, (_: State, stored) => {
          calls++
          const state = fold.add(stored.event)
          counter.see(state)
          return state
        }),
      )
      // The plain fold of the larger log would take minutes: it copies every answer on every answer.
      if (n === SIZES[0]) expect(folded.state).toEqual(plainFold(events))
      expect(folded.state).toEqual(foldEvents(events))
      // A chunk's cut line is read again with the next chunk: a line more per 64 KiB.
      const work = { n, calls, readOverText: read / text.length, copied: counter.copied }
      expect({ ...work, linear: calls === events.length && read <= 1.05 * text.length && counter.copied.answers <= n }).toEqual({
        ...work,
        linear: true,
      })
    }
  }, 60_000)
})
