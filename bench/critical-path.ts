/**
 * Orchestration overhead with slow agents: every scripted agent replies after
 * a fixed 200 ms (`delay_seconds: 0.2`, real clock); for 3 and 10 agents, the
 * run's wall time (observed run_started -> run_finished, live file layers)
 * divided by the ideal. The ideal is 200 ms times the number of backend-call
 * layers on the run's critical path, computed from the run's own events: the
 * longest chain of calls that were not cut off, in which each call started
 * after the one before it ended (3 for a converging run: answers, votes,
 * presentation).
 * The time over the ideal is split along that chain: before its first call,
 * inside its calls beyond 200 ms, between its calls, and after its last call.
 * The floor (bare sleeps, no coordination) is measured between the runs.
 */
import { Duration, Effect } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import { convergingConfig, fmt, line, median, targetLine, timedRun } from "./support.ts"

const DELAY_MS = 200
const TARGET_RATIO = 1.05
const RUNS = Number(process.env.BENCH_RUNS ?? 10)

/**
 * The machine's floor: the same layers of the same number of bare 200 ms Effect
 * sleeps, with no coordination at all. A timer fires late by a few ms on a busy
 * or virtual machine; this says how much of the ratio that is.
 */
const floorWall = (agents: number, layers: number): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const started = performance.now()
      for (let layer = 0; layer < layers; layer++) {
        yield* Effect.all(
          Array.from({ length: agents }, () => Effect.sleep(Duration.millis(DELAY_MS))),
          { concurrency: "unbounded", discard: true },
        )
      }
      return performance.now() - started
    }),
  )

interface Call {
  readonly start: number
  readonly end: number
}

/** The longest chain of calls not cut off, each started after the previous one ended; ties go to the later end. */
export const criticalChain = (events: ReadonlyArray<{ readonly event: Event; readonly at: number }>): ReadonlyArray<Call> => {
  const starts = new Map<number, number>()
  const calls: Array<Call> = []
  for (const { event, at } of events) {
    if (event._tag === "call_start") starts.set(event.call, at)
    // A call cut off by a cancelled round (error "cancelled") did no work anything waits for.
    if (event._tag === "call_end" && event.error !== "cancelled") {
      const start = starts.get(event.call)
      if (start !== undefined) calls.push({ start, end: at })
    }
  }
  calls.sort((a, b) => a.start - b.start)
  const depth: Array<number> = []
  const before: Array<number> = []
  for (const [i, call] of calls.entries()) {
    let best = -1
    for (let j = 0; j < i; j++) {
      const c = calls[j]!
      if (c.end > call.start) continue
      if (best < 0 || depth[j]! > depth[best]! || (depth[j] === depth[best] && c.end > calls[best]!.end)) best = j
    }
    depth.push(best < 0 ? 1 : depth[best]! + 1)
    before.push(best)
  }
  let last = -1
  for (let i = 0; i < calls.length; i++) {
    if (last < 0 || depth[i]! > depth[last]! || (depth[i] === depth[last] && calls[i]!.end > calls[last]!.end)) last = i
  }
  const chain: Array<Call> = []
  for (let i = last; i >= 0; i = before[i]!) chain.unshift(calls[i]!)
  return chain
}

export const criticalPathBench = async (): Promise<void> => {
  console.log(`# 3. Wall time / ideal, agents replying after ${DELAY_MS} ms (live layers)`)
  for (const agents of [3, 10]) {
    const config = convergingConfig(agents, DELAY_MS / 1000)
    await timedRun(config, "live") // warm-up
    const walls: Array<number> = []
    const ideals: Array<number> = []
    const parts = { lead: [] as Array<number>, inCalls: [] as Array<number>, between: [] as Array<number>, tail: [] as Array<number> }
    const eventCounts: Array<number> = []
    const cancelled: Array<number> = []
    const floors: Array<number> = []
    const overFloor: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      // Interleaved, so that the floor and the runs see the machine in the same state.
      const floor = await floorWall(agents, 3)
      const run = await timedRun(config, "live")
      if (run.reason !== "completed") throw new Error(`a ${agents}-agent run ended ${run.reason}`)
      const chain = criticalChain(run.events)
      const ideal = chain.length * DELAY_MS
      walls.push(run.wallMs)
      ideals.push(ideal)
      floors.push(floor / (3 * DELAY_MS))
      overFloor.push(run.wallMs / floor)
      eventCounts.push(run.events.length)
      cancelled.push(run.events.filter((e) => e.event._tag === "round_cancelled").length)
      const started = run.events[0]!.at
      const finished = run.events[run.events.length - 1]!.at
      parts.lead.push(chain[0]!.start - started)
      parts.inCalls.push(chain.reduce((sum, c) => sum + (c.end - c.start - DELAY_MS), 0))
      parts.between.push(chain.slice(1).reduce((sum, c, k) => sum + (c.start - chain[k]!.end), 0))
      parts.tail.push(finished - chain[chain.length - 1]!.end)
    }
    const layers = median(ideals) / DELAY_MS
    targetLine(`${agents} agents (${RUNS} runs): wall / ideal (${fmt(layers, 0)} layers x ${DELAY_MS} ms)`, walls, "ms", {
      ratio: (ms) => ms / median(ideals),
      op: "<",
      limit: TARGET_RATIO,
      text: `< ${TARGET_RATIO}`,
      digits: 4,
    })
    line(
      `${agents} agents: floor (3 layers of ${agents} bare ${DELAY_MS} ms sleeps) / ideal; wall / floor`,
      `ratio ${fmt(median(floors), 4)}; ${fmt(median(overFloor), 4)}`,
    )
    line(
      `${agents} agents: over the ideal, ms medians: lead / in calls / between / tail`,
      `${fmt(median(parts.lead))} / ${fmt(median(parts.inCalls))} / ${fmt(median(parts.between))} / ${fmt(median(parts.tail))}`,
    )
    line(`${agents} agents: events / rounds cancelled per run, medians`, `${fmt(median(eventCounts), 0)} / ${fmt(median(cancelled), 0)}`)
  }
}
