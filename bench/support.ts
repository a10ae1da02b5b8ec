/**
 * Shared bench helpers: runs one whole coordination with scripted backends and
 * times it from its `run_started` event to its `run_finished` event
 * (performance.now() in the observer, so process start, layer set-up and the
 * first append are not counted), with either the live file layers in a temp
 * directory or the in-memory layers; plus small statistics and printing helpers.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, Layer } from "effect"
import { stringify } from "yaml"
import { type Config, decodeConfig } from "../src/domain/config/index.ts"
import type { Event } from "../src/domain/events/index.ts"
import { Backends } from "../src/services/backends/index.ts"
import { makeScriptedBackend } from "../src/services/backends/scripted.ts"
import { EventStore, type NewEvent } from "../src/services/event-store/index.ts"
import { type RunInput, runCoordination } from "../src/services/orchestrator/index.ts"
import { liveRunFiles, memoryRunFiles, RunFiles } from "../src/services/run-files/index.ts"
import { StatusWriter } from "../src/services/run-files/status-writer.ts"

export type Mode = "live" | "memory"

/** What a run spent in each kind of write, summed over the writes (concurrent writes overlap). */
export type IoKind = "event append" | "status.json write" | "llm_log write" | "final/ files write" | "agent output append"
export type IoProfile = Map<IoKind, { count: number; ms: number }>

const timed = <A, E>(profile: IoProfile | undefined, kind: IoKind, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  profile === undefined
    ? effect
    : Effect.suspend(() => {
        const t0 = performance.now()
        return Effect.ensuring(
          effect,
          Effect.sync(() => {
            const entry = profile.get(kind) ?? { count: 0, ms: 0 }
            entry.count += 1
            entry.ms += performance.now() - t0
            profile.set(kind, entry)
          }),
        )
      })

/** The layers of a run, each write timed into `profile` when given. */
export const runLayers = (mode: Mode, dir: string, profile: IoProfile | undefined) => {
  const eventStore = mode === "live" ? EventStore.file() : EventStore.memory()
  const statusWriter = mode === "live" ? StatusWriter.live(join(dir, "status.json")) : StatusWriter.memory([])
  const runFiles: Layer.Layer<RunFiles> = mode === "live" ? liveRunFiles(dir) : memoryRunFiles().layer
  if (profile === undefined) return Layer.mergeAll(eventStore, statusWriter, runFiles)
  return Layer.mergeAll(
    Layer.effect(
      EventStore,
      Effect.map(EventStore, (store) => ({
        ...store,
        append: (stream: string, events: ReadonlyArray<NewEvent>, expected: number) =>
          timed(profile, "event append", store.append(stream, events, expected)),
      })),
    ).pipe(Layer.provide(eventStore)),
    Layer.effect(
      StatusWriter,
      Effect.map(StatusWriter, (writer) => ({
        ...writer,
        write: (status: unknown) => timed(profile, "status.json write", writer.write(status)),
      })),
    ).pipe(Layer.provide(statusWriter)),
    Layer.effect(
      RunFiles,
      Effect.map(RunFiles, (files) => ({
        append: (path: string, text: string) => timed(profile, "agent output append", files.append(path, text)),
        write: (path: string, text: string) =>
          timed(profile, path.startsWith("llm_log/") ? "llm_log write" : "final/ files write", files.write(path, text)),
        flush: files.flush,
      })),
    ).pipe(Layer.provide(runFiles)),
  )
}

/** A converging config: every agent answers once, then votes for agent1; agent1 presents. */
export const convergingConfig = (agents: number, delaySeconds = 0): Config => {
  const doc = {
    agents: Array.from({ length: agents }, (_, i) => ({
      id: `agent_${i + 1}`,
      backend: {
        type: "scripted",
        answer: `Answer of agent ${i + 1}: four.`,
        vote: "agent1",
        ...(delaySeconds > 0 ? { delay_seconds: delaySeconds } : {}),
      },
    })),
  }
  const decoded = decodeConfig(doc, {})
  if (Either.isLeft(decoded)) throw new Error(JSON.stringify(decoded.left))
  return decoded.right
}

export interface TimedRun {
  /** performance.now() from the observed run_started to the observed run_finished, ms. */
  readonly wallMs: number
  /** Every event observed, with the performance.now() at which the observer saw it. */
  readonly events: ReadonlyArray<{ readonly event: Event; readonly at: number }>
  /** CPU time of the whole process (all threads) over the same span, ms: less sensitive to other load than wallMs. */
  readonly cpuMs: number
  readonly reason: string
}

let scratch: string | null = null
let runNumber = 0

/** A fresh directory for one live run, under one temp dir removed by `cleanUp`. */
export const freshDir = (): string => {
  scratch ??= mkdtempSync(join(tmpdir(), "massgen-bench-"))
  runNumber += 1
  return join(scratch, `log_${runNumber}`)
}

export const cleanUp = (): void => {
  if (scratch !== null) rmSync(scratch, { recursive: true, force: true })
  scratch = null
}

/** Every layer a coordination of `config` needs, with scripted backends. */
export const scriptedRunLayers = (config: Config, mode: Mode, dir: string, profile?: IoProfile) => {
  const backends = new Map(config.agents.map((a) => [a.id, makeScriptedBackend(a)]))
  return Layer.mergeAll(runLayers(mode, dir, profile), Layer.succeed(Backends, { forAgent: (id: string) => backends.get(id)! }))
}

/** One whole coordination of `config` with scripted agents in `dir`; `extra` adds to (or overrides) the run's input. */
export const runScripted = (config: Config, mode: Mode, dir: string, extra: Partial<RunInput> = {}, profile?: IoProfile) =>
  Effect.runPromise(
    runCoordination({
      config,
      question: "What is 2+2?",
      logDir: dir,
      runId: "bench",
      version: "bench",
      pid: process.pid,
      interrupt: Effect.never,
      ...extra,
    }).pipe(Effect.scoped, Effect.provide(scriptedRunLayers(config, mode, dir, profile))),
  )

/** One whole coordination of `config`, timed from run_started to run_finished. */
export const timedRun = (config: Config, mode: Mode, profile?: IoProfile): Promise<TimedRun> => {
  const events: Array<{ event: Event; at: number }> = []
  let cpuStart: NodeJS.CpuUsage | null = null
  let cpuMs = Number.NaN
  const dir = mode === "live" ? freshDir() : "/tmp/massgen-bench/memory"
  const observed = runScripted(
    config,
    mode,
    dir,
    {
      observe: {
        onEvent: (event) =>
          Effect.sync(() => {
            events.push({ event, at: performance.now() })
            if (event._tag === "run_started") cpuStart = process.cpuUsage()
            if (event._tag === "run_finished" && cpuStart !== null) {
              const used = process.cpuUsage(cpuStart)
              cpuMs = (used.user + used.system) / 1000
            }
          }),
        onText: () => Effect.void,
      },
    },
    profile,
  )
  return observed.then((outcome) => {
    const start = events.find((e) => e.event._tag === "run_started")
    const end = events.find((e) => e.event._tag === "run_finished")
    if (!start || !end) throw new Error("run_started or run_finished not observed")
    return { wallMs: end.at - start.at, events, cpuMs, reason: outcome.reason }
  })
}

export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export const fmt = (n: number, digits = 2): string => n.toFixed(digits)

/** One labelled line: `label: value`, the label padded so values line up. */
export const line = (label: string, value: string): void => console.log(`${label.padEnd(72)} ${value}`)

/** Spawn to exit of `argv`, ms, with its output; throws on an exit code not in `ok`. */
export const timedProcess = (
  argv: ReadonlyArray<string>,
  options: { env?: Record<string, string | undefined>; ok?: ReadonlyArray<number> } = {},
) => {
  const started = performance.now()
  const proc = Bun.spawnSync([...argv], { env: options.env ?? process.env })
  const ms = performance.now() - started
  if (!(options.ok ?? [0]).includes(proc.exitCode ?? -1))
    throw new Error(`${argv.join(" ")} exited ${proc.exitCode}: ${proc.stderr.toString()}`)
  return { ms, stdout: proc.stdout.toString(), stderr: proc.stderr.toString(), exitCode: proc.exitCode }
}

/**
 * A target line: the label, the median and the worst (max) of `values` (costs:
 * higher is worse) in `unit`, the measure the goal is stated in (`ratio` of the
 * median, and of the max; named `name`, by default "ratio"), the goal, and "met" or "NOT MET" (judged on the
 * median; a worst case past the goal is said too).
 */
export const targetLine = (
  label: string,
  values: ReadonlyArray<number>,
  unit: string,
  goal: {
    readonly ratio: (value: number) => number
    readonly op: "<" | "<=" | ">="
    readonly limit: number
    readonly text: string
    readonly digits?: number
    readonly name?: string
  },
): boolean => {
  const mid = median(values)
  const worst = Math.max(...values)
  const digits = goal.digits ?? 2
  const passes = (value: number) => {
    const r = goal.ratio(value)
    return goal.op === "<" ? r < goal.limit : goal.op === "<=" ? r <= goal.limit : r >= goal.limit
  }
  const met = passes(mid)
  const verdict = met ? (passes(worst) ? "met" : "met (max: not met)") : "NOT MET"
  line(
    label,
    `${fmt(mid)} / ${fmt(worst)} ${unit}   ${goal.name ?? "ratio"} ${fmt(goal.ratio(mid), digits)} (max ${fmt(goal.ratio(worst), digits)})   goal: ${goal.text}   ${verdict}`,
  )
  return met
}

const TIME = "/usr/bin/time"
let rssFiles = 0

/**
 * `timedProcess` of `argv`, with the process's peak RSS (`/usr/bin/time`'s
 * maximum resident set size, read from a file in `dir`), or null where
 * /usr/bin/time is missing. Its fork and exec add about a millisecond to the time.
 */
export const peakRssProcess = (
  argv: ReadonlyArray<string>,
  dir: string,
  options: { env?: Record<string, string | undefined>; ok?: ReadonlyArray<number> } = {},
) => {
  if (!existsSync(TIME)) return { ...timedProcess(argv, options), rssBytes: null }
  const out = join(dir, `rss-${process.pid}-${++rssFiles}.txt`)
  const run = timedProcess([TIME, "-f", "%M", "-o", out, ...argv], options)
  const kb = Number(readFileSync(out, "utf8").trim().split("\n").pop())
  rmSync(out, { force: true })
  return { ...run, rssBytes: Number.isFinite(kb) ? kb * 1024 : null }
}

/**
 * `massgen serve` (from source) in a fresh directory with `doc` as `team.yaml` and `flags`, once it listens:
 * the child, its directory, the config's path and the server's `/v1` URL.
 */
export const startServe = async (doc: unknown, flags: ReadonlyArray<string> = []) => {
  const dir = freshDir()
  mkdirSync(dir, { recursive: true })
  const config = join(dir, "team.yaml")
  writeFileSync(config, stringify(doc))
  const main = join(import.meta.dir, "..", "src", "main.ts")
  const child = Bun.spawn([process.execPath, main, "serve", "--config", config, "--port", "0", ...flags], {
    cwd: dir,
    stdout: "pipe",
    stderr: "inherit",
  })
  const reader = child.stdout.getReader()
  let out = ""
  while (!out.includes("\n")) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`massgen serve ended: ${out}`)
    out += new TextDecoder().decode(value)
  }
  return { child, dir, config, url: out.split(" ")[1]! }
}
