/**
 * Start-up, as a CLI user gets it: compiled binaries, each run a cold process
 * of its own, timed from spawn to exit (median and max of N, the three kinds
 * interleaved so that other load on the machine falls on each alike):
 * - the floor: a compiled `console.log("x")` built with the flags of
 *   `bun run build` (`BUILD_FLAGS`), what any compiled Bun program costs here;
 * - the Effect floor: the same, importing `effect` and printing through
 *   `Effect.runPromise`: what any program built on Effect costs (not a goal;
 *   it says how much of the 5 × the run has left for its own work);
 * - `massgen --version` (goal: within 2 × the floor);
 * - a 3-agent zero-delay scripted run with `--automation`, the whole process
 *   with its log directory written (goal: within 5 × the floor); its events
 *   also give the run's own span, `run_started` -> `run_finished` (target < 20 ms).
 * Ratios are to the floor's median; "max" divides the worst case by it too.
 * `dist/massgen` is built first when it is missing or older than its sources.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BUILD_FLAGS } from "../scripts/compile.ts"
import { binaryIsStale, ensureBinary } from "../test/support/cli.ts"
import { fmt, line, median, targetLine, timedProcess } from "./support.ts"

const RUNS = 21
const VERSION_GOAL = 2
const RUN_GOAL = 5
const TARGET_3_AGENTS_MS = 20

const FLOOR_SOURCE = 'console.log("x")\n'
// Resolved from the repository, so the program finds `effect` wherever its temp directory is.
const EFFECT_FLOOR_SOURCE = `const { Effect } = await import(${JSON.stringify(Bun.resolveSync("effect", import.meta.dir))})\nawait Effect.runPromise(Effect.sync(() => console.log("x")))\n`

/** A program of `text`, built with `bun run build`'s flags into `dir` as `name`. */
const buildFloor = (dir: string, name: string, text: string): string => {
  const source = join(dir, `${name}.ts`)
  const binary = join(dir, name)
  writeFileSync(source, text)
  const built = Bun.spawnSync([process.execPath, "build", "--compile", ...BUILD_FLAGS, source, "--outfile", binary], { cwd: dir })
  if (built.exitCode !== 0) throw new Error(`building the ${name} program failed: ${built.stderr.toString()}`)
  return binary
}

const stats = (values: ReadonlyArray<number>) => `${fmt(median(values))} / ${fmt(Math.max(...values))}`

const ratioLine = (label: string, values: ReadonlyArray<number>, floor: number, goal: number) =>
  targetLine(label, values, "ms", { ratio: (ms) => ms / floor, op: "<=", limit: goal, text: `<= ${goal}` })

export const startUpBench = async (): Promise<void> => {
  console.log(`# 0. Start-up: compiled binaries, one cold process per run, spawn to exit (${RUNS} runs each, interleaved)`)
  if (binaryIsStale()) console.log("(dist/massgen is missing or older than its sources: building it)")
  const binary = await ensureBinary()
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-start-up-"))
  try {
    const floorBinary = buildFloor(dir, "hello", FLOOR_SOURCE)
    const effectBinary = buildFloor(dir, "hello-effect", EFFECT_FLOOR_SOURCE)
    const config = join(dir, "team.yaml")
    const agent = (i: number) => `  - id: agent_${i}\n    backend: { type: scripted, answer: "Answer ${i}: four.", vote: agent1 }\n`
    writeFileSync(config, `agents:\n${[1, 2, 3].map(agent).join("")}`)
    const env = { ...process.env, MASSGEN_LOG_BASE_DIR: join(dir, "logs") }
    const floor: Array<number> = []
    const effectFloor: Array<number> = []
    const version: Array<number> = []
    const whole: Array<number> = []
    const inRun: Array<number> = []
    // One of each first, not counted: the first start of a binary reads it from disk.
    timedProcess([floorBinary])
    timedProcess([effectBinary])
    timedProcess([binary, "--version"])
    for (let i = 0; i < RUNS; i++) {
      floor.push(timedProcess([floorBinary]).ms)
      effectFloor.push(timedProcess([effectBinary]).ms)
      version.push(timedProcess([binary, "--version"]).ms)
      const run = timedProcess([binary, "--automation", "--config", config, "What is 2+2?"], { env })
      whole.push(run.ms)
      const logDir = /^LOG_DIR: (.*)$/m.exec(run.stdout)?.[1]
      if (logDir === undefined) throw new Error(`no LOG_DIR line in: ${run.stdout}`)
      const times = readFileSync(join(logDir, "events.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => Date.parse(JSON.parse(l).time))
      inRun.push(times[times.length - 1]! - times[0]!)
    }
    const floorMs = median(floor)
    line('floor: compiled console.log("x"), same build flags: ms median / max', stats(floor))
    line(
      "Effect floor: the same importing effect, through Effect.runPromise: ms median / max, ratio",
      `${stats(effectFloor)}   ratio ${fmt(median(effectFloor) / floorMs)}`,
    )
    ratioLine("massgen --version: ms median / max, ratio to the floor", version, floorMs, VERSION_GOAL)
    ratioLine("3 agents zero-delay, whole process: ms median / max, ratio to the floor", whole, floorMs, RUN_GOAL)
    targetLine("3 agents, the same runs, run_started -> run_finished: ms median / max", inRun, "ms", {
      ratio: (ms) => ms / TARGET_3_AGENTS_MS,
      op: "<",
      limit: 1,
      text: `< 1 (under ${TARGET_3_AGENTS_MS} ms)`,
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
