/**
 * Events folded per second by `foldEvents`, over two logs of 100,000+ events:
 * - "many runs": the events of real coordinations (scripted agents run by the
 *   orchestrator in memory: 3/10/20 agents converging, agents revising under
 *   an answer cap, a failing agent, rejected replies), copied with shifted times
 *   until the log holds 100,000+ events, folded run by run;
 * - "one long run": a synthetic single run of 20 agents and 1,250 answers, each
 *   answer followed by a vote round of every other agent, folded in one pass.
 * For each: (a) `foldEvents` on decoded events, and (b) `readEventsText` of the
 * JSONL text (built with `encodeEventLine`) then `foldEvents`.
 */
import { Either } from "effect"
import { type Config, DEFAULT_SETTINGS, decodeConfig } from "../src/domain/config.ts"
import { encodeEventLine, readEventsText } from "../src/domain/event-codec.ts"
import type { Event } from "../src/domain/events.ts"
import { type State, foldEvents } from "../src/domain/state.ts"
import { callEnded } from "./scale-logs-gen.ts"
import { convergingConfig, fmt, line, median, timedRun } from "./support.ts"

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
      backend: { type: "scripted", answer: `Revision of agent ${i + 1}`, keep_answering: true, vote: "agent2" },
    })),
  }),
  configOf({
    agents: [
      { backend: { type: "scripted", answer: "Four.", vote: "agent1" } },
      { backend: { type: "scripted", fail_calls: 1, max_retries: 0 } },
      { backend: { type: "scripted", script: [{ text: "thinking aloud, no tool" }], answer: "4", vote: "agent1" } },
      { backend: { type: "scripted", answer: "2+2=4", vote: "agent3" } },
    ],
  }),
]

const shiftTime = (event: Event, ms: number): Event => ({ ...event, time: new Date(Date.parse(event.time) + ms).toISOString() })

/** Copies of the sample runs, each copy an hour later, until there are MIN_EVENTS events. */
const manyRuns = async (): Promise<ReadonlyArray<ReadonlyArray<Event>>> => {
  const samples: Array<ReadonlyArray<Event>> = []
  for (const config of sampleConfigs()) samples.push((await timedRun(config, "memory")).events.map((e) => e.event))
  const runs: Array<ReadonlyArray<Event>> = []
  let total = 0
  for (let copy = 0; total < MIN_EVENTS; copy++) {
    for (const sample of samples) {
      runs.push(sample.map((e) => shiftTime(e, copy * 3_600_000)))
      total += sample.length
    }
  }
  return runs
}

/** One run of 20 agents: 1,250 answers, each followed by a round, a call and a vote of every other agent. */
export const oneLongRun = (): ReadonlyArray<Event> => {
  const agents = Array.from({ length: 20 }, (_, i) => ({ id: `agent_${i + 1}`, anon_id: `agent${i + 1}`, backend: "scripted", model: null }))
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
  for (let cycle = 0; events.length < MIN_EVENTS; cycle++) {
    const i = cycle % agents.length
    answers[i]! += 1
    const label = `${agents[i]!.anon_id}.${answers[i]}`
    round(i, (r) => ({ _tag: "answer_submitted", time: time(), agent: agents[i]!.id, round: r, label, content: `Answer ${label}: 4.` }))
    latest[i] = label
    for (let j = 0; j < agents.length; j++) {
      if (j === i) continue
      round(j, (r) => ({ _tag: "vote_cast", time: time(), agent: agents[j]!.id, round: r, target: agents[i]!.id, target_label: label, reason: "best" }))
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

export const foldBench = async (): Promise<void> => {
  console.log("# 2. Events folded per second")
  const logs: Array<{ readonly name: string; readonly runs: ReadonlyArray<ReadonlyArray<Event>> }> = [
    { name: "many runs", runs: await manyRuns() },
    { name: "one long run", runs: [oneLongRun()] },
  ]
  for (const { name, runs } of logs) {
    const count = runs.reduce((n, r) => n + r.length, 0)
    const texts = runs.map((run) => run.map((e) => `${encodeEventLine(e)}\n`).join(""))
    const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0)
    // Check the text reads back whole before timing it.
    const back = texts.reduce((n, t) => n + readEventsText(t).events.length, 0)
    if (back !== count) throw new Error(`${name}: ${count} events encoded, ${back} decoded`)
    line(`${name}: events / runs / JSONL size`, `${count} / ${runs.length} / ${fmt(bytes / 1e6, 1)} MB`)
    let sink: State | null = null
    const foldMs = timeIt(5, () => {
      for (const run of runs) sink = foldEvents(run)
    })
    report(`${name}: (a) foldEvents on decoded events`, count, foldMs)
    const textMs = timeIt(2, () => {
      for (const text of texts) sink = foldEvents(readEventsText(text).events)
    })
    report(`${name}: (b) readEventsText + foldEvents from text`, count, textMs)
    if (sink === null) throw new Error("nothing folded")
  }
}
