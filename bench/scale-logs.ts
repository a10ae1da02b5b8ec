/**
 * Logs at scale (issue 10), through the real commands of the compiled binary,
 * each a whole process timed from spawn to exit (file writes included):
 * - `massgen status DIR` of finished dense and sparse logs of 1,000,000 events
 *   (goal: under 5 s), and of a dense 100,000-event one; peak RSS beside;
 * - `massgen resume DIR` of an unfinished dense 100,000-event log whose agents
 *   all voted but one (the resumed run makes one vote call and the
 *   presentation): goal under 1 s plus the run's own work, which is the
 *   appended span from `run_resumed` to `run_finished`;
 * - `massgen replay DIR --check` of real recorded dense runs (3 agents that
 *   keep answering, 1,000 and 3,000 answers each, made by the binary: replay
 *   needs the run's `llm_log/`), with how long the run itself took; no goal;
 * and in process, read + decode + fold (`EventStore.file().read` then
 * `foldEvents`, as `resume` does) of dense and sparse logs of 10,000 and
 * 1,000,000 events: goal at least 300,000 events/s, and the cost per event at
 * 1,000,000 within 1.5 × the cost at 10,000 (each log after a full garbage
 * collection, so that none measures the collection of the one before).
 * The logs are made by bench/scale-logs-gen.ts in a temp dir removed at the end.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { foldEvents } from "../src/domain/state/index.ts"
import { EventStore, eventsOf } from "../src/services/event-store/index.ts"
import { BINARY } from "../test/support/cli.ts"
import { type Shape, writeRunDir } from "./scale-logs-gen.ts"
import { fmt, line, median, peakRssProcess, targetLine, timedProcess } from "./support.ts"

const RUNS = Number(process.env.BENCH_SCALE_RUNS ?? 3)
const STATUS_GOAL_MS = 5_000
const RESUME_GOAL_MS = 1_000
const FOLD_GOAL_PER_SECOND = 300_000
const GROWTH_GOAL = 1.5

const mb = (bytes: number) => `${fmt(bytes / 1e6, 0)} MB`

/** Read + decode + fold of the log in `dir`, in process, ms. */
const readAndFold = (dir: string): Promise<{ readonly ms: number; readonly events: number }> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const started = performance.now()
      const read = yield* Effect.flatMap(EventStore, (store) => store.read(dir))
      const state = foldEvents(eventsOf(read))
      const ms = performance.now() - started
      if (state.run === null) throw new Error(`${dir}: no run folded`)
      return { ms, events: eventsOf(read).length }
    }).pipe(Effect.scoped, Effect.provide(EventStore.file())),
  )

const statusLines = (root: string, dirs: Record<string, { dir: string; events: number }>) => {
  for (const [name, { dir, events }] of Object.entries(dirs)) {
    const times: Array<number> = []
    const rss: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      const run = peakRssProcess([BINARY, "status", dir], root)
      times.push(run.ms)
      if (run.rssBytes !== null) rss.push(run.rssBytes)
    }
    const label = `status ${name} (${events} events), whole process: ms`
    if (events >= 1_000_000) {
      targetLine(label, times, "ms", { ratio: (ms) => ms / STATUS_GOAL_MS, op: "<=", limit: 1, text: "<= 1 (under 5 s)" })
    } else line(label, `${fmt(median(times))} / ${fmt(Math.max(...times))} ms`)
    if (rss.length > 0) line(`status ${name}: peak RSS median / max`, `${mb(median(rss))} / ${mb(Math.max(...rss))}`)
  }
}

const resumeLines = (root: string, template: string, events: number) => {
  const walls: Array<number> = []
  const own: Array<number> = []
  const over: Array<number> = []
  let finish = ""
  for (let i = 0; i < RUNS; i++) {
    const dir = join(root, `resume_${i}`)
    cpSync(template, dir, { recursive: true })
    const run = timedProcess([BINARY, "resume", dir, "--automation"])
    const appended = readFileSync(join(dir, "events.jsonl"), "utf8")
      .trimEnd()
      .split("\n")
      .slice(-12)
      .map((l) => JSON.parse(l))
    const resumed = appended.find((e) => e.type === "run_resumed")
    const finished = appended.find((e) => e.type === "run_finished")
    if (resumed === undefined || finished === undefined) throw new Error("the resumed run did not log run_resumed and run_finished")
    finish = finished.reason
    const ownMs = Date.parse(finished.time) - Date.parse(resumed.time)
    walls.push(run.ms)
    own.push(ownMs)
    over.push(run.ms - ownMs)
    rmSync(dir, { recursive: true, force: true })
  }
  line(
    `resume dense ${events} events: whole / own work (resumed->finished) ms`,
    `${fmt(median(walls))} / ${fmt(Math.max(...walls))}; ${fmt(median(own), 0)} / ${fmt(Math.max(...own), 0)}   finish: ${finish}`,
  )
  targetLine("resume dense 100k: whole process minus own work: ms", over, "ms", {
    ratio: (ms) => ms / RESUME_GOAL_MS,
    op: "<=",
    limit: 1,
    text: "<= 1 (under 1 s)",
  })
}

/** A real dense run recorded by the binary, then `replay --check` of it. */
const replayLines = (root: string, answersPerAgent: number) => {
  const config = join(root, `dense_${answersPerAgent}.yaml`)
  const agent = (i: number) =>
    `  - id: agent_${i}\n    backend: { type: scripted, answer: "Answer ${i}: four.", vote: agent1, keep_answering: true }\n`
  writeFileSync(config, `orchestrator: { max_new_answers_per_agent: ${answersPerAgent} }\nagents:\n${[1, 2, 3].map(agent).join("")}`)
  const recorded = timedProcess([BINARY, "--automation", "--config", config, "What is 2+2?"], {
    env: { ...process.env, MASSGEN_LOG_BASE_DIR: join(root, `recorded_${answersPerAgent}`) },
  })
  const dir = /^LOG_DIR: (.*)$/m.exec(recorded.stdout)?.[1]
  if (dir === undefined) throw new Error(`no LOG_DIR line in: ${recorded.stdout}`)
  const events = readFileSync(join(dir, "events.jsonl"), "utf8").trimEnd().split("\n").length
  const times: Array<number> = []
  let same = true
  for (let i = 0; i < RUNS; i++) {
    const run = timedProcess([BINARY, "replay", dir, "--check", "--out", join(root, `replay_${answersPerAgent}_${i}`)], { ok: [0, 2] })
    same &&= run.exitCode === 0
    times.push(run.ms)
  }
  line(
    `replay --check, real dense run, ${events} events (run took ${fmt(recorded.ms / 1000, 1)} s): ms`,
    `${fmt(median(times))} / ${fmt(Math.max(...times))}   ${fmt(events / (median(times) / 1000) / 1e6, 3)} M events/s   ${same ? "same" : "DIVERGED"}`,
  )
}

const foldLines = async (dirs: Record<Shape, { small: { dir: string; events: number }; large: { dir: string; events: number } }>) => {
  for (const shape of ["dense", "sparse"] as const) {
    const perEvent: Record<"small" | "large", Array<number>> = { small: [], large: [] }
    for (const size of ["small", "large"] as const) {
      const { dir, events } = dirs[shape][size]
      const repeats = size === "small" ? 10 : RUNS
      // The garbage of the log measured before (a million events) is collected now, not in this log's time.
      Bun.gc(true)
      await readAndFold(dir) // warm-up, and the file in the page cache
      const times: Array<number> = []
      for (let i = 0; i < repeats; i++) times.push((await readAndFold(dir)).ms)
      perEvent[size] = times.map((ms) => ms / events)
      targetLine(`read+decode+fold ${shape} ${events} events: ms`, times, "ms", {
        ratio: (ms) => events / (ms / 1000) / 1e6,
        op: ">=",
        limit: FOLD_GOAL_PER_SECOND / 1e6,
        text: `>= ${fmt(FOLD_GOAL_PER_SECOND / 1e6, 3)} M events/s`,
        name: "M events/s",
        digits: 3,
      })
    }
    const base = median(perEvent.small)
    targetLine(
      `read+decode+fold ${shape}: µs per event at 1M, ratio to 10k`,
      perEvent.large.map((ms) => ms * 1000),
      "µs",
      {
        ratio: (us) => us / 1000 / base,
        op: "<=",
        limit: GROWTH_GOAL,
        text: `<= ${GROWTH_GOAL}`,
      },
    )
  }
}

export const scaleLogsBench = async (): Promise<void> => {
  console.log(`# 5. Logs at scale: the compiled binary, whole processes (${RUNS} runs each), and read + decode + fold in process`)
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run bun run build`)
  const root = mkdtempSync(join(tmpdir(), "massgen-bench-scale-logs-"))
  try {
    const make = async (name: string, shape: Shape, events: number, finished: boolean) => {
      const dir = join(root, name)
      return { dir, events: await writeRunDir(dir, shape, events, finished) }
    }
    const dense1m = await make("dense_1m", "dense", 1_000_000, true)
    const sparse1m = await make("sparse_1m", "sparse", 1_000_000, true)
    const dense100k = await make("dense_100k", "dense", 100_000, true)
    const unfinished = await make("dense_100k_unfinished", "dense", 100_000, false)
    const dense10k = await make("dense_10k", "dense", 10_000, true)
    const sparse10k = await make("sparse_10k", "sparse", 10_000, true)
    const size = (dir: string) => mb(Bun.file(join(dir, "events.jsonl")).size)
    line(
      "logs: events.jsonl of dense / sparse 1M events, dense 100k",
      `${size(dense1m.dir)} / ${size(sparse1m.dir)} / ${size(dense100k.dir)}`,
    )
    statusLines(root, { "dense 1M": dense1m, "sparse 1M": sparse1m, "dense 100k": dense100k })
    resumeLines(root, unfinished.dir, unfinished.events)
    for (const answers of [1_000, 3_000]) replayLines(root, answers)
    await foldLines({ dense: { small: dense10k, large: dense1m }, sparse: { small: sparse10k, large: sparse1m } })
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
