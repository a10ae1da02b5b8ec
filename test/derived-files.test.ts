/**
 * The derived files written a piece at a time (`services/run-files/derived-files.ts`)
 * are the files `domain/projections/derived-logs.ts` derives from the whole log, byte for
 * byte: however the events came in (each write a process that adds what
 * came since, a run's ticks, or a resume after a kill), after a file was lost
 * or changed, and when the progress file is gone.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect } from "effect"
import fc from "fast-check"
import type { Event } from "../src/domain/events/index.ts"
import { readEventsText } from "../src/domain/log/index.ts"
import { coordinationEvents, snapshots } from "../src/domain/projections/derived-logs.ts"
import {
  COORDINATION_FILE,
  MAPPINGS_FILE,
  openDerivedFiles,
  PROGRESS_FILE,
  writeDerivedFiles,
} from "../src/services/run-files/derived-files.ts"

const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-derived-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
let dirs = 0
const freshDir = () => {
  dirs += 1
  const dir = nodePath.join(root, `run_${dirs}`)
  fs.mkdirSync(dir)
  return dir
}

const FIXTURES = nodePath.join(import.meta.dir, "fixtures", "v1")
/** Real logs: a run resumed after a kill, one a signal stopped, a budget stop, rejected replies, timeouts. */
const realLogs: ReadonlyArray<ReadonlyArray<Event>> = fs
  .readdirSync(FIXTURES)
  .filter((n) => fs.existsSync(nodePath.join(FIXTURES, n, "events.jsonl")))
  .map((n) => readEventsText(fs.readFileSync(nodePath.join(FIXTURES, n, "events.jsonl"), "utf8")).events)

const read = (dir: string, path: string) => fs.readFileSync(nodePath.join(dir, path), "utf8")

/** The derived files of `dir` are those of `events`, made whole. */
const expectDerived = (dir: string, events: ReadonlyArray<Event>) => {
  expect(read(dir, COORDINATION_FILE)).toBe(`${JSON.stringify(coordinationEvents(events), null, 2)}\n`)
  const s = snapshots(events)
  expect(read(dir, MAPPINGS_FILE)).toBe(`${JSON.stringify(s.mappings, null, 2)}\n`)
  for (const file of s.files) expect(read(dir, file.path)).toBe(file.text)
}

/** Writes the events in batches cut at `cuts`, each batch by a new writer given every event so far (a process that resumes). */
const writeInProcesses = async (dir: string, events: ReadonlyArray<Event>, cuts: ReadonlyArray<number>) => {
  for (const cut of [...cuts].sort((a, b) => a - b).concat(events.length))
    await Effect.runPromise(writeDerivedFiles(dir, events.slice(0, cut)))
}

describe("derived files written a piece at a time", () => {
  test("equal the whole derivation, byte for byte, however the events came in", async () => {
    expect(realLogs.length).toBeGreaterThan(0)
    await fc.assert(
      fc.asyncProperty(
        fc.nat(realLogs.length - 1),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
        async (i, fractions) => {
          const events = realLogs[i]!
          const dir = freshDir()
          await writeInProcesses(
            dir,
            events,
            fractions.map((x) => Math.floor(x * events.length)),
          )
          expectDerived(dir, events)
        },
      ),
      { numRuns: 40 },
    )
  })

  test("one writer that writes after each batch (a run's ticks) gives the same files", async () => {
    for (const events of realLogs) {
      const dir = freshDir()
      const files = openDerivedFiles(dir)
      for (let from = 0; from < events.length; from += 3) {
        files.add(events.slice(from, from + 3))
        await Effect.runPromise(files.write)
      }
      expectDerived(dir, events)
    }
  })

  test("a write with nothing new changes nothing; a lost or changed file, or no progress file, is written whole again", async () => {
    const events = realLogs.reduce((a, b) => (b.length > a.length ? b : a))
    const dir = freshDir()
    await writeInProcesses(dir, events, [Math.floor(events.length / 2)])
    const before = fs.statSync(nodePath.join(dir, COORDINATION_FILE)).mtimeMs
    await writeInProcesses(dir, events, [])
    expect(fs.statSync(nodePath.join(dir, COORDINATION_FILE)).mtimeMs).toBe(before)
    for (const damage of [
      () => fs.rmSync(nodePath.join(dir, COORDINATION_FILE)),
      () => fs.appendFileSync(nodePath.join(dir, MAPPINGS_FILE), " "),
      () => fs.rmSync(nodePath.join(dir, "snapshots"), { recursive: true }),
      () => fs.rmSync(nodePath.join(dir, PROGRESS_FILE)),
      () => fs.writeFileSync(nodePath.join(dir, PROGRESS_FILE), "{"),
    ]) {
      damage()
      await writeInProcesses(dir, events, [])
      expectDerived(dir, events)
    }
  })

  test("a label that comes twice: the later mapping replaces the earlier in place, as in a JSON object", async () => {
    const events = realLogs.find((e) => e.some((x) => x._tag === "answer_submitted"))!
    const answer = events.find((x) => x._tag === "answer_submitted")!
    const twice = [...events.slice(0, -1), { ...answer, content: "again" }, events[events.length - 1]!]
    const dir = freshDir()
    await writeInProcesses(dir, twice, [events.length - 1])
    expect(read(dir, MAPPINGS_FILE)).toBe(`${JSON.stringify(snapshots(twice).mappings, null, 2)}\n`)
  })
})
