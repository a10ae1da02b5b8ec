/**
 * Resume and replay speed:
 * - resume of a 100,000-event log: read it through the event store, decode and fold it, and
 *   take the run up again with zero-delay scripted agents until it completes
 *   (the log is "one long run" of bench/fold.ts without its last event, so the
 *   run is unfinished); also the read + decode + fold part alone;
 * - replay: a live run of 3 agents replying after 200 ms is recorded in a temp
 *   directory, then `replayRun` makes its decisions again from events.jsonl and
 *   llm_log/; printed as replay time over the original run's wall time.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { recordedCall } from "../src/cli/run/run-dir.ts"
import { encodeEventLine, readEventsText } from "../src/domain/log/index.ts"
import { replayRun } from "../src/domain/replay/index.ts"
import { foldEvents } from "../src/domain/state/index.ts"
import { EventStore, eventsOf } from "../src/services/event-store/index.ts"
import { runCoordination } from "../src/services/orchestrator/index.ts"
import { oneLongRun } from "./fold.ts"
import { convergingConfig, fmt, line, median, runScripted, scriptedRunLayers, targetLine } from "./support.ts"

const resumeOnce = async (text: string): Promise<{ readonly foldMs: number; readonly totalMs: number; readonly reason: string }> => {
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-resume-"))
  try {
    writeFileSync(join(dir, "events.jsonl"), text)
    const config = convergingConfig(20)
    // As `massgen resume` does: one store reads the log and takes the run's appends, so the log is decoded once.
    return await Effect.runPromise(
      Effect.gen(function* () {
        const started = performance.now()
        const read = yield* Effect.flatMap(EventStore, (store) => store.read(dir))
        const folded = foldEvents(eventsOf(read))
        const foldMs = performance.now() - started
        if (folded.run === null || folded.finished !== null) throw new Error("the bench log must hold an unfinished run")
        const outcome = yield* runCoordination({
          config,
          question: folded.run.question,
          logDir: dir,
          runId: "bench",
          version: "bench",
          pid: process.pid,
          interrupt: Effect.never,
          resume: { events: eventsOf(read), skipped: read.skipped, tornTail: read.tornTail, state: folded },
        })
        return { foldMs, totalMs: performance.now() - started, reason: outcome.reason }
      }).pipe(Effect.scoped, Effect.provide(scriptedRunLayers(config, "live", dir))),
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export const resumeBench = async (): Promise<void> => {
  const events = oneLongRun().slice(0, -1)
  const text = events.map((e) => `${encodeEventLine(e)}\n`).join("")
  const runs = []
  for (let i = 0; i < 4; i++) runs.push(await resumeOnce(text))
  const timed = runs.slice(1)
  line("resume of a 100,000-event log: events / JSONL size", `${events.length} / ${fmt(text.length / 1e6, 1)} MB`)
  line("resume: read + decode + fold, ms median", `${fmt(median(timed.map((r) => r.foldMs)))}`)
  targetLine(
    `resume: read + fold + run to completion (finish: ${timed[0]!.reason}), ms`,
    timed.map((r) => r.totalMs),
    "ms",
    {
      ratio: (ms) => ms / 1000,
      op: "<",
      limit: 1,
      text: "< 1 (under 1000 ms)",
    },
  )
}

export const replayBench = async (): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-replay-"))
  try {
    const config = convergingConfig(3, 0.2)
    const started = performance.now()
    const outcome = await runScripted(config, "live", dir)
    const originalMs = performance.now() - started
    const times: Array<number> = []
    let divergence: unknown = null
    for (let i = 0; i < 6; i++) {
      const t0 = performance.now()
      const recorded = readEventsText(readFileSync(join(dir, "events.jsonl"), "utf8")).events
      divergence = replayRun(recorded, config.agents, recordedCall(dir)).divergence
      times.push(performance.now() - t0)
    }
    const replayMs = median(times.slice(1))
    line(
      "replay of a 3-agent run with 200 ms replies: original / replay, ms",
      `${fmt(originalMs)} / ${fmt(replayMs)}   (${outcome.reason}, ${divergence === null ? "same" : "diverged"})`,
    )
    line("replay: replay time / original wall time", fmt(replayMs / originalMs, 4))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
