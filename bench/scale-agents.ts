/**
 * Many agents (issue 10), each run a cold process of the compiled binary with
 * a scripted config, timed from spawn to exit (file writes included), beside
 * the seed's v1 orchestrator on the same job (`seed_baseline.py`, which times
 * its run in process: no interpreter start-up):
 * - 50 and 200 agents replying after 200 ms: wall / ideal, the ideal being
 *   3 × 0.2 s (answer, vote, presentation); goal <= 1.10. The run's own span
 *   (run_started -> run_finished) over the ideal is printed too, and the rest
 *   of the process: spawn -> run_started, run_finished -> exit;
 * - 200 zero-delay agents: the run's own span against the seed's in-run time;
 *   goal <= 0.5 × the seed;
 * - at 200 agents: extra model calls from cancelled rounds (call_start events
 *   over the minimum 2N + 1; goal <= 5 %), peak RSS (/usr/bin/time; goal
 *   <= 100 MB), and the log directory's size and bytes per event, against the
 *   same directory with its call logs written as before the blob store (each
 *   call's log a file `llm_log/<n>.json`, whole and indented, no `blobs/`); goal <= 1/3.
 * `MASSGEN_BENCH_BINARY` runs another build of massgen (an older one, say) in place of dist/massgen.
 * The seed runs from `../shared/bench/seed_baseline.py` beside the repo; its
 * lines are skipped with the reason when python3 or a file is missing.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { blobPath } from "../src/domain/run-paths.ts"
import { expandJson } from "../src/services/run-files/blobs.ts"
import { callLogTexts } from "../src/services/run-files/call-logs.ts"
import { BINARY as BUILT } from "../test/support/cli.ts"
import { fmt, line, median, peakRssProcess, targetLine } from "./support.ts"

const RUNS = Number(process.env.BENCH_AGENT_RUNS ?? 5)
const DELAY_S = 0.2
const IDEAL_MS = Math.round(3 * DELAY_S * 1000)
const WALL_GOAL = 1.1
const SEED_GOAL = 0.5
const EXTRA_CALLS_GOAL = 0.05
const RSS_GOAL_MB = 100
const SIZE_GOAL = 1 / 3
const BINARY = process.env.MASSGEN_BENCH_BINARY ?? BUILT

const SHARED = resolve(import.meta.dir, "..", "..", "shared")
const SEED_SCRIPT = join(SHARED, "bench", "seed_baseline.py")
const SEED_DIFF = join(SHARED, "seeds", "002_253ce59e6196adb7.txt")

/** Why the seed cannot run here, or null. */
const seedMissing = (): string | null => {
  if (Bun.which("python3") === null) return "python3 is not on the PATH"
  for (const file of [SEED_SCRIPT, SEED_DIFF]) if (!existsSync(file)) return `${file} is missing`
  return null
}

/** The seed orchestrator's own time for `agents` agents replying after `delay` s, ms. */
const seedRun = (agents: number, delay: number): number => {
  const proc = Bun.spawnSync(["python3", SEED_SCRIPT, SEED_DIFF, String(agents), String(delay)])
  const seconds = /: ([\d.]+) s,/.exec(proc.stdout.toString())?.[1]
  if (proc.exitCode !== 0 || seconds === undefined)
    throw new Error(`seed_baseline.py exited ${proc.exitCode}: ${proc.stdout}${proc.stderr}`)
  return Number(seconds) * 1000
}

interface AgentRun {
  readonly wallMs: number
  readonly inRunMs: number
  /** From spawn to run_started, and from run_finished to exit (wall clock, ms). */
  readonly beforeMs: number
  readonly afterMs: number
  readonly calls: number
  readonly events: number
  readonly rssBytes: number | null
  readonly dirBytes: number
  /** The directory's size with its call logs as written before the blob store. */
  readonly unblobbedBytes: number
  readonly cancelled: number
}

const dirBytes = (dir: string): number =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .reduce((n, d) => n + statSync(join(d.parentPath, d.name)).size, 0)

/** The size of `dir` had each call log been written whole and indented, as before the blob store (and no blobs/). */
const unblobbedBytes = (dir: string): number => {
  const blob = (hash: string) => {
    try {
      return readFileSync(join(dir, blobPath(hash)), "utf8")
    } catch {
      return undefined
    }
  }
  return (
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .reduce((n, d) => {
        const path = join(d.parentPath, d.name)
        const rel = path.slice(dir.length + 1)
        if (rel.startsWith("blobs/") || rel.startsWith("llm_log/")) return n
        return n + statSync(path).size
      }, 0) +
    [...callLogTexts(dir).values()].reduce(
      (n, text) => n + Buffer.byteLength(`${JSON.stringify(expandJson(JSON.parse(text), blob), null, 2)}\n`),
      0,
    )
  )
}

const configFor = (root: string, agents: number, delay: number): string => {
  const path = join(root, `team_${agents}_${delay}.yaml`)
  const agent = (i: number) =>
    `  - id: agent_${i}\n    backend: { type: scripted, answer: "Answer ${i}: four.", vote: agent1${delay > 0 ? `, delay_seconds: ${delay}` : ""} }\n`
  writeFileSync(path, `agents:\n${Array.from({ length: agents }, (_, i) => agent(i + 1)).join("")}`)
  return path
}

const runBinary = (root: string, config: string): AgentRun => {
  const logs = join(root, "logs")
  const spawned = Date.now()
  const run = peakRssProcess([BINARY, "--automation", "--config", config, "What is 2+2?"], root, {
    env: { ...process.env, MASSGEN_LOG_BASE_DIR: logs },
  })
  const dir = /^LOG_DIR: (.*)$/m.exec(run.stdout)?.[1]
  if (dir === undefined) throw new Error(`no LOG_DIR line in: ${run.stdout}`)
  const exited = Date.now()
  const events = readFileSync(join(dir, "events.jsonl"), "utf8")
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l))
  const first = Date.parse(events[0].time)
  const last = Date.parse(events[events.length - 1].time)
  const result = {
    wallMs: run.ms,
    inRunMs: last - first,
    beforeMs: first - spawned,
    afterMs: exited - last,
    calls: events.filter((e) => e.type === "call_start").length,
    events: events.length,
    rssBytes: run.rssBytes,
    dirBytes: dirBytes(dir),
    unblobbedBytes: unblobbedBytes(dir),
    cancelled: events.filter((e) => e.type === "round_cancelled").length,
  }
  if (events[events.length - 1].reason !== "completed") throw new Error(`a run ended ${events[events.length - 1].reason}`)
  rmSync(dir, { recursive: true, force: true })
  return result
}

/** RUNS runs of massgen and of the seed, interleaved. */
const runs = (root: string, agents: number, delay: number, seed: boolean) => {
  const config = configFor(root, agents, delay)
  runBinary(root, config) // not counted: the first start reads the binary and the config
  const ours: Array<AgentRun> = []
  const seeds: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    ours.push(runBinary(root, config))
    if (seed) seeds.push(seedRun(agents, delay))
  }
  return { ours, seeds }
}

/** Where a whole process's time goes besides its run: spawn -> run_started, run_finished -> exit (wall clock, ms). */
const outside = (label: string, runs: ReadonlyArray<AgentRun>) => {
  const stat = (values: ReadonlyArray<number>) => `${fmt(median(values), 0)} / ${fmt(Math.max(...values), 0)}`
  line(
    `${label}: spawn -> run_started, run_finished -> exit: ms median / max`,
    `${stat(runs.map((r) => r.beforeMs))}   ${stat(runs.map((r) => r.afterMs))}`,
  )
}

const extraCalls = (label: string, agents: number, calls: ReadonlyArray<number>) => {
  const minimum = 2 * agents + 1
  targetLine(`${label}: model calls, extra over the minimum 2N+1 = ${minimum}`, calls, "calls", {
    ratio: (n) => (n - minimum) / minimum,
    op: "<=",
    limit: EXTRA_CALLS_GOAL,
    text: `<= ${EXTRA_CALLS_GOAL} (5 %)`,
  })
}

export const scaleAgentsBench = async (): Promise<void> => {
  console.log(`# 6. Many agents: the compiled binary, one cold process per run, spawn to exit (${RUNS} runs each, median / max)`)
  const missing = seedMissing()
  if (missing !== null) console.log(`(the seed orchestrator's lines are skipped: ${missing})`)
  const root = mkdtempSync(join(tmpdir(), "massgen-bench-scale-agents-"))
  try {
    let at200: ReadonlyArray<AgentRun> = []
    for (const agents of [50, 200]) {
      const { ours, seeds } = runs(root, agents, DELAY_S, missing === null)
      targetLine(
        `${agents} agents x 200 ms, whole process: wall / ideal ${IDEAL_MS} ms`,
        ours.map((r) => r.wallMs),
        "ms",
        {
          ratio: (ms) => ms / IDEAL_MS,
          op: "<=",
          limit: WALL_GOAL,
          text: `<= ${fmt(WALL_GOAL)}`,
        },
      )
      const inRun = ours.map((r) => r.inRunMs)
      line(
        `${agents} agents x 200 ms, run_started -> run_finished / ideal`,
        `${fmt(median(inRun), 0)} / ${fmt(Math.max(...inRun), 0)} ms   ratio ${fmt(median(inRun) / IDEAL_MS)} (max ${fmt(Math.max(...inRun) / IDEAL_MS)})`,
      )
      outside(`${agents} agents x 200 ms`, ours)
      if (seeds.length > 0) {
        line(
          `${agents} agents x 200 ms, seed v1 orchestrator (in process) / ideal`,
          `${fmt(median(seeds), 0)} / ${fmt(Math.max(...seeds), 0)} ms   ratio ${fmt(median(seeds) / IDEAL_MS)} (max ${fmt(Math.max(...seeds) / IDEAL_MS)})`,
        )
      }
      extraCalls(
        `${agents} agents x 200 ms`,
        agents,
        ours.map((r) => r.calls),
      )
      if (agents === 200) at200 = ours
    }
    const zero = runs(root, 200, 0, missing === null)
    const inRun = zero.ours.map((r) => r.inRunMs)
    if (zero.seeds.length > 0) {
      const seed = median(zero.seeds)
      line("200 agents zero-delay, seed v1 orchestrator (in process): ms", `${fmt(seed, 0)} / ${fmt(Math.max(...zero.seeds), 0)}`)
      targetLine("200 agents zero-delay, run_started -> run_finished / the seed's", inRun, "ms", {
        ratio: (ms) => ms / seed,
        op: "<=",
        limit: SEED_GOAL,
        text: `<= ${SEED_GOAL}`,
      })
    } else line("200 agents zero-delay, run_started -> run_finished: ms", `${fmt(median(inRun), 0)} / ${fmt(Math.max(...inRun), 0)}`)
    line(
      "200 agents zero-delay, whole process: ms",
      `${fmt(median(zero.ours.map((r) => r.wallMs)), 0)} / ${fmt(Math.max(...zero.ours.map((r) => r.wallMs)), 0)}`,
    )
    outside("200 agents zero-delay", zero.ours)
    extraCalls(
      "200 agents zero-delay",
      200,
      zero.ours.map((r) => r.calls),
    )
    const rss = [...at200, ...zero.ours].flatMap((r) => (r.rssBytes === null ? [] : [r.rssBytes / 1e6]))
    if (rss.length > 0) {
      targetLine("200 agents (200 ms and zero-delay runs): peak RSS", rss, "MB", {
        ratio: (mb) => mb / RSS_GOAL_MB,
        op: "<=",
        limit: 1,
        text: `<= 1 (${RSS_GOAL_MB} MB)`,
      })
    } else line("200 agents: peak RSS", "skipped: /usr/bin/time is missing")
    const size = median(at200.map((r) => r.dirBytes))
    const events = median(at200.map((r) => r.events))
    line(
      "200 agents x 200 ms: rounds cancelled",
      `${fmt(median(at200.map((r) => r.cancelled)), 0)} / ${Math.max(...at200.map((r) => r.cancelled))}`,
    )
    targetLine(
      "200 agents x 200 ms: log directory / the same with call logs as before the blob store",
      at200.map((r) => r.dirBytes / r.unblobbedBytes),
      "",
      {
        ratio: (x) => x,
        op: "<=",
        limit: SIZE_GOAL,
        text: "<= 0.33",
      },
    )
    line(
      "200 agents x 200 ms: log directory size, events, bytes per event",
      `${fmt(size / 1e6, 1)} MB (max ${fmt(Math.max(...at200.map((r) => r.dirBytes)) / 1e6, 1)}; before the blob store ${fmt(median(at200.map((r) => r.unblobbedBytes)) / 1e6, 1)} MB), ${fmt(events, 0)} events, ${fmt(size / events, 0)} B/event`,
    )
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
