/**
 * Events read and folded per second, over two logs, each at 10,000, 100,000
 * and 1,000,000 events (`bun bench/fold.ts [SIZE...]` runs some sizes alone):
 * - "many runs" (sparse: small runs): the events of real coordinations
 *   (scripted agents run by the orchestrator in memory: 3/10/20 agents
 *   converging, agents revising under an answer cap, a failing agent, rejected
 *   replies), copied with shifted times until the log holds enough events,
 *   folded run by run;
 * - "one long run" (dense: one run): a synthetic single run of 20 agents, each
 *   answer followed by a vote round of every other agent, folded in one pass.
 * For each: decoding the lines alone, with the Schema decoders alone (as
 * before issue 10) and with the plain decoders first (`decodeEventLine`, now);
 * (a) `foldEvents` on decoded events; (b) `readEventsText` of the JSONL text
 * (built with `encodeEventLine`) then `foldEvents`. At 1,000,000 events, the
 * dense log is also written to a temp directory and read by `massgen status`
 * in a process of its own (wall time, start-up included).
 * Then linearity as time: the CPU time of ten times more answers over that of
 * the fewer (least of 5 runs each, from a collected heap; goal: under 15) on
 * dense synthetic logs (`test/support/dense-log.ts`), for `foldEvents`
 * (20,000 and 200,000 answers: past the caches), a view's fold (`foldView`,
 * through `advanceInPlace`: 5,000 and 50,000) and the store's one-pass read, decode
 * and fold of a log's text (`EventStore.fold`, as `massgen status` does: 4,000
 * and 40,000). test/fold-linear.test.ts checks the same by counting work.
 */

import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { type Config, DEFAULT_SETTINGS, decodeConfig } from "../src/domain/config/index.ts"
import type { Event } from "../src/domain/events/index.ts"
import { decodeEventLine, decodeEventLineBySchema, encodeEventLine, readEventsText } from "../src/domain/log/index.ts"
import { foldView } from "../src/domain/projections/view-model.ts"
import { foldEvents, foldingInPlace, initialState, type State } from "../src/domain/state/index.ts"
import { EventStore } from "../src/services/event-store/index.ts"
import { denseLog } from "../test/support/dense-log.ts"
import { callEnded } from "./scale-logs-gen.ts"
import { convergingConfig, fmt, line, median, targetLine, timedRun } from "./support.ts"

const MIN_EVENTS = 100_000

const configOf = (doc: unknown): Config => {
  const decoded = decodeConfig(doc, {})
  if (Either.isLeft(decoded)) throw new Error(JSON.stringify(decoded.left))
  return decoded.right
}

/** Runs that between them log most kinds of event: answers, votes, cancellations, a rejected reply, a failed agent. */
const sampleConfigs = (): ReadonlyArray<Config> => [
  convergingConfig(3),
  convergingConfig(10),
  convergingConfig(20),
  configOf({
    orchestrator: { max_new_answers_per_agent: 3 },
    agents: Array.from({ length: 5 }, (_, i) => ({
      id: `agent${i + 1}`,
      backend: { type: "scripted", answer: `Revision of agent ${i + 1}`, keep_answering: true, vote: "agent2" },
    })),
  }),
  configOf({
    agents: [
      { id: "agent1", backend: { type: "scripted", answer: "Four.", vote: "agent1" } },
      { id: "agent2", backend: { type: "scripted", fail_calls: 1, max_retries: 0 } },
      { id: "agent3", backend: { type: "scripted", script: [{ text: "thinking aloud, no tool" }], answer: "4", vote: "agent1" } },
      { id: "agent4", backend: { type: "scripted", answer: "2+2=4", vote: "agent3" } },
    ],
  }),
]

const shiftTime = (event: Event, ms: number): Event => ({ ...event, time: new Date(Date.parse(event.time) + ms).toISOString() })

let samples: Array<ReadonlyArray<Event>> | null = null

/** Copies of the sample runs, each copy an hour later, until there are `minEvents` events. */
const manyRuns = async (minEvents: number): Promise<ReadonlyArray<ReadonlyArray<Event>>> => {
  if (samples === null) {
    samples = []
    for (const config of sampleConfigs()) samples.push((await timedRun(config, "memory")).events.map((e) => e.event))
  }
  const runs: Array<ReadonlyArray<Event>> = []
  let total = 0
  for (let copy = 0; total < minEvents; copy++) {
    for (const sample of samples) {
      runs.push(sample.map((e) => shiftTime(e, copy * 3_600_000)))
      total += sample.length
    }
  }
  return runs
}

/** One run of 20 agents: answers (1,250 for 100,000 events), each followed by a round, a call and a vote of every other agent. */
export const oneLongRun = (minEvents = MIN_EVENTS): ReadonlyArray<Event> => {
  const agents = Array.from({ length: 20 }, (_, i) => ({
    id: `agent_${i + 1}`,
    anon_id: `agent${i + 1}`,
    backend: "scripted",
    model: null,
  }))
  let clock = Date.parse("2025-01-01T00:00:00.000Z")
  const time = () => new Date((clock += 7)).toISOString()
  const events: Array<Event> = [
    {
      _tag: "run_started",
      time: time(),
      run_id: "log_long",
      question: "What is 2+2?",
      agents,
      settings: DEFAULT_SETTINGS,
    },
  ]
  const rounds = agents.map(() => 0)
  const answers = agents.map(() => 0)
  const latest: Array<string> = []
  let call = 0
  const round = (i: number, finish: (round: number) => Event) => {
    const agent = agents[i]!.id
    rounds[i]! += 1
    const r = rounds[i]!
    call += 1
    events.push(
      { _tag: "round_started", time: time(), agent, round: r, shown: latest.filter(Boolean), vote_only: false, restart: r > 1 },
      { _tag: "call_start", time: time(), call, agent, round: r, role: "round", model: null, attempt: 1 },
      callEnded(time(), call, agent, r, "round", { seconds: 1.5, input_tokens: 1200, output_tokens: 80, cost: 0.0012 }),
      finish(r),
    )
  }
  for (let cycle = 0; events.length < minEvents; cycle++) {
    const i = cycle % agents.length
    answers[i]! += 1
    const label = `${agents[i]!.anon_id}.${answers[i]}`
    round(i, (r) => ({ _tag: "answer_submitted", time: time(), agent: agents[i]!.id, round: r, label, content: `Answer ${label}: 4.` }))
    latest[i] = label
    for (let j = 0; j < agents.length; j++) {
      if (j === i) continue
      round(j, (r) => ({
        _tag: "vote_cast",
        time: time(),
        agent: agents[j]!.id,
        round: r,
        target: agents[i]!.id,
        target_label: label,
        reason: "best",
      }))
    }
  }
  events.push({ _tag: "run_finished", time: time(), reason: "timeout", winner: null, message: "bench" })
  return events
}

/** The median of `repeats` timings of `f`, in ms, after one untimed call. */
const timeIt = (repeats: number, f: () => unknown): number => {
  f()
  const times: Array<number> = []
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now()
    f()
    times.push(performance.now() - t0)
  }
  return median(times)
}

const report = (label: string, events: number, ms: number): void => {
  const perSecond = events / (ms / 1000)
  line(label, `${fmt(perSecond / 1e6, 3)} M events/s   ${fmt((ms * 100_000) / events)} ms per 100,000 events`)
}

/** Wall time of `massgen status` on a log of `text`, in a process of its own (start-up included). */
const statusMs = (text: string): number => {
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-status-"))
  try {
    writeFileSync(join(dir, "events.jsonl"), text)
    const t0 = performance.now()
    const run = spawnSync(process.execPath, [join(import.meta.dir, "..", "src", "main.ts"), "status", dir], { encoding: "utf8" })
    const ms = performance.now() - t0
    if (run.status !== 0) throw new Error(`massgen status failed (${run.status}): ${run.stderr}`)
    return ms
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

// CPU time, not wall time: on a busy machine a long fold is more often preempted than a short one.
const cpuMs = (): number => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** The least CPU time of 5 runs of `work`, in ms, each from a collected heap (none pays for the garbage of the one before). */
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

/** The store's one-pass fold of `text` with the fast fold, from a fresh memory store each time (nothing cached). */
const storeFold = (text: string) => {
  const fold = foldingInPlace()
  return Effect.runPromise(
    Effect.flatMap(EventStore, (store) => store.fold("/logs/run", initialState, (_: State, s) => fold.add(s.event))).pipe(
      Effect.provide(EventStore.memory(new Map([["/logs/run", text]]), { foldChunk: 64 * 1024 })),
    ),
  )
}

const LINEARITY_GOAL = 15

/** Each measure of linearity: its label, the fewer answers, and the work on a dense log of so many. */
const LINEAR_WORK: ReadonlyArray<readonly [string, number, (events: ReadonlyArray<Event>) => () => unknown]> = [
  ["foldEvents", 20_000, (events) => () => foldEvents(events)],
  ["a view's fold (foldView)", 5_000, (events) => () => foldView(events)],
  [
    "EventStore.fold (read, decode, fold)",
    4_000,
    (events) => {
      const text = events.map((e) => `${encodeEventLine(e)}\n`).join("")
      return () => storeFold(text)
    },
  ],
]

/** The CPU time of ten times more answers over that of the fewer, for each of `LINEAR_WORK`. */
export const linearityBench = async (): Promise<void> => {
  for (const [label, answers, workOn] of LINEAR_WORK) {
    const small = workOn(denseLog(answers))
    const large = workOn(denseLog(answers * 10))
    await bestCpuMs(small)
    const smallMs = await bestCpuMs(small)
    const largeMs = await bestCpuMs(large)
    targetLine(`${label}: ${answers * 10} over ${answers} answers, CPU time`, [largeMs], "ms", {
      ratio: (ms) => ms / smallMs,
      op: "<",
      limit: LINEARITY_GOAL,
      text: `< ${LINEARITY_GOAL} (10 x the answers)`,
    })
  }
}

const SIZES = [10_000, 100_000, 1_000_000]

export const foldBench = async (sizes: ReadonlyArray<number> = SIZES): Promise<void> => {
  console.log("# 2. Events read and folded per second")
  for (const size of sizes) {
    const logs: Array<{ readonly name: string; readonly runs: ReadonlyArray<ReadonlyArray<Event>> }> = [
      { name: "many runs", runs: await manyRuns(size) },
      { name: "one long run", runs: [oneLongRun(size)] },
    ]
    // Fewer timed repeats of the slow parts on bigger logs.
    const repeats = size >= 1_000_000 ? 1 : size >= 100_000 ? 2 : 5
    for (const { name, runs } of logs) {
      const count = runs.reduce((n, r) => n + r.length, 0)
      const texts = runs.map((run) => run.map((e) => `${encodeEventLine(e)}\n`).join(""))
      const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0)
      // Check the text reads back whole before timing it.
      const back = texts.reduce((n, t) => n + readEventsText(t).events.length, 0)
      if (back !== count) throw new Error(`${name}: ${count} events encoded, ${back} decoded`)
      line(`${name}, ${count} events: runs / JSONL size`, `${runs.length} / ${fmt(bytes / 1e6, 1)} MB`)
      const lines = runs.flatMap((run) => run.map(encodeEventLine))
      const schemaMs = timeIt(repeats, () => {
        for (const l of lines) decodeEventLineBySchema(l)
      })
      report(`${name}, ${count}: decode alone, Schema decoders (before)`, count, schemaMs)
      const plainMs = timeIt(repeats, () => {
        for (const l of lines) decodeEventLine(l)
      })
      report(`${name}, ${count}: decode alone, plain decoders (now)`, count, plainMs)
      let sink: State | null = null
      const foldMs = timeIt(repeats * 2, () => {
        for (const run of runs) sink = foldEvents(run)
      })
      report(`${name}, ${count}: (a) foldEvents on decoded events`, count, foldMs)
      const textMs = timeIt(repeats, () => {
        for (const text of texts) sink = foldEvents(readEventsText(text).events)
      })
      report(`${name}, ${count}: (b) readEventsText + foldEvents from text`, count, textMs)
      if (sink === null) throw new Error("nothing folded")
      if (size >= 1_000_000 && runs.length === 1)
        line(`${name}, ${count}: massgen status (own process)`, `${fmt(statusMs(texts[0]!) / 1000)} s`)
    }
  }
  await linearityBench()
}

if (import.meta.main) {
  const sizes = process.argv.slice(2).map(Number)
  await foldBench(sizes.length > 0 ? sizes : SIZES)
}
