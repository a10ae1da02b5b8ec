/**
 * Fixtures for the views: a scripted three-agent run played on the TestClock,
 * its events written to a log directory on disk, and helpers to write such
 * directories line by line (to follow a run while it is "being written").
 *
 * - `COUNCIL`: the config (three scripted agents with models, small delays, one
 *   winner: `researcher`, the final answer in Markdown).
 * - `playCouncil()`: runs it in memory under the TestClock (time moves in
 *   100 ms steps), so event times carry realistic gaps; returns the `MemoryRun`.
 * - `eventLines(events)`: their lines, run_started and run_resumed with the
 *   machine facts of this process (`TEST_META`).
 * - `writeRunDir(dir, events, opts)`: a log directory with `events.jsonl`
 *   (and a status.json when `complete`, the run's other `files` when given),
 *   as a finished run leaves it, or as a run still going writes it: its machine
 *   facts (`metaAt(dir)`) are this process's, writing `dir` on this host.
 */
import * as fs from "node:fs"
import { hostname } from "node:os"
import * as nodePath from "node:path"
import { Effect, Fiber, TestClock, TestContext } from "effect"
import type { Event, EventMeta } from "../../src/domain/events/index.ts"
import { encodeEnvelopeLine } from "../../src/domain/log/index.ts"
import { project } from "../../src/domain/projections/status.ts"
import { foldEvents } from "../../src/domain/state/index.ts"
import { type MemoryRun, runInMemory } from "./harness.ts"

export const FINAL_MD =
  "## Learn by building\n\nStart a **small project** at once and read `idiomatic` code.\n\n- official tutorial\n- code review\n\n<script>alert(1)</script>"

export const COUNCIL = {
  agents: [
    {
      id: "planner",
      backend: {
        type: "scripted",
        model: "gpt-4o-mini",
        answer: "Build a small project in the first week.",
        vote: "agent2",
        delay_seconds: 1,
      },
    },
    {
      id: "researcher",
      backend: {
        type: "scripted",
        model: "claude-sonnet-4",
        answer: "1. Official tutorial.\n2. A real project.\n3. Code review.",
        vote: "agent2",
        reason: "the most complete plan",
        final: FINAL_MD,
        delay_seconds: 1.5,
      },
    },
    {
      id: "critic",
      backend: {
        type: "scripted",
        model: "gemini-2.5-flash",
        answer: "Read one good book and do every exercise.",
        vote: "agent2",
        delay_seconds: 2,
      },
    },
  ],
  orchestrator: { max_new_answers_per_agent: 2 },
  timeout_settings: { orchestrator_timeout_seconds: 120, agent_timeout_seconds: 30 },
}

export const QUESTION = "How should I learn a new programming language?"

export const playCouncil = (doc: unknown = COUNCIL): Promise<MemoryRun> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(runInMemory(doc, { question: QUESTION }))
      for (let i = 0; i < 10_000 && fiber.unsafePoll() === null; i++) yield* TestClock.adjust("100 millis")
      return yield* Fiber.join(fiber)
    }).pipe(Effect.provide(TestContext.TestContext)),
  )

/** Events shifted so the run starts at `start` (ms since the epoch), keeping their gaps. */
export const shiftEvents = (events: ReadonlyArray<Event>, start: number): Array<Event> => {
  const first = Date.parse(events[0]!.time)
  return events.map((e) => ({ ...e, time: new Date(start + Date.parse(e.time) - first).toISOString() }))
}

/** The machine facts the lines of `eventLines` carry: this process, and a directory the run is not in. */
export const TEST_META: EventMeta = { log_dir: "/where/it/was/written", pid: process.pid, host: "test-host", version: "test" }

/** The machine facts of this process writing the run in `dir`: a follower takes it for the run's live writer. */
export const metaAt = (dir: string): EventMeta => ({ ...TEST_META, log_dir: dir, host: hostname() })

/** Lines of events.jsonl; run_started and run_resumed carry `meta`. */
export const eventLines = (events: ReadonlyArray<Event>, meta: EventMeta = TEST_META): string =>
  events.map((e) => `${encodeEnvelopeLine(e, e._tag === "run_started" || e._tag === "run_resumed" ? meta : null)}\n`).join("")

/** A log directory holding `events`; with `complete`, also the status.json a finished run writes. */
export const writeRunDir = (
  dir: string,
  events: ReadonlyArray<Event>,
  options: { complete?: boolean; files?: ReadonlyMap<string, string> } = {},
): string => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(nodePath.join(dir, "events.jsonl"), eventLines(events, metaAt(dir)))
  for (const [path, text] of options.files ?? []) {
    fs.mkdirSync(nodePath.dirname(nodePath.join(dir, path)), { recursive: true })
    fs.writeFileSync(nodePath.join(dir, path), text)
  }
  if (options.complete) {
    const state = foldEvents(events)
    fs.writeFileSync(nodePath.join(dir, "status.json"), JSON.stringify(project(state, state.lastTime, dir)))
  }
  return dir
}
