/**
 * Running the `massgen` command line as a user would: a child process in a
 * fresh temporary directory, from source (`bun src/main.ts`) or as the
 * compiled binary (`dist/massgen`), with its stdout, stderr and exit code.
 *
 * - `sandbox()` makes a fresh working directory (removed by `cleanupSandboxes`).
 * - `writeConfig(dir, doc)` writes a YAML config (an object or YAML text) there.
 * - `runCli(mode, args, opts)` runs to the end and returns what the user saw
 *   (`opts.stdin`: the text the child reads on standard input).
 * - `startCli(mode, args, opts)` starts a run and hands back the live process,
 *   `waitForLine(prefix)` (resolves on the first stdout line starting with it)
 *   and `done` (the finished result).
 * - `startUntilLine(mode, args, prefix, opts)` starts a run and resolves once
 *   a stdout line starts with `prefix` (e.g. the in-progress line).
 * - `runTogether(mode, runs)` starts several runs at the same moment.
 * - `ensureBinary()` builds `dist/massgen` (`bun run build`) when it is missing
 *   or older than the sources, once per test process.
 *
 * Concurrency: tests run concurrently, but a small machine cannot start two
 * dozen `bun` processes at once without starving the runs whose outcome
 * depends on the order of their agents' replies. So every child takes a slot
 * of a shared limit (`SLOTS`, about two per CPU); `exclusive: true` takes them
 * all, for runs whose scripted timing must not be starved (and for the build).
 *
 * The child's environment is the test's, without `MASSGEN_LOG_BASE_DIR`
 * (unless given) so each run logs under its own working directory. Every wait
 * is bounded: a child that outlives its deadline is killed and the test fails.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { stringify as toYaml } from "yaml"

export const ROOT = nodePath.resolve(import.meta.dir, "..", "..")
export const BINARY = nodePath.join(ROOT, "dist", "massgen")
export const SOURCE_MAIN = nodePath.join(ROOT, "src", "main.ts")

export type Mode = "source" | "binary"

export interface CliResult {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number
  /** The signal that ended the process, if one did. */
  readonly signal: string | null
  /** stdout split into lines, without the final empty one. */
  readonly lines: ReadonlyArray<string>
}

export interface CliOptions {
  /** Working directory of the child; a fresh sandbox when not given. */
  readonly cwd?: string
  /** Variables added to (or, with `undefined`, removed from) the child's environment. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Kill the child and fail after this long (a safety bound, not a timing assumption). */
  readonly timeoutMs?: number
  /** Run with no other child of this test process running meanwhile. */
  readonly exclusive?: boolean
  /** What the child reads on standard input; when not given, stdin is /dev/null. */
  readonly stdin?: string
  /** Start the child through `sh` with this file mode mask (`umask 022; exec ...`). */
  readonly umask?: number
}

/** How many children run at once. */
export const SLOTS = Math.max(4, os.availableParallelism() * 2)
let slotsInUse = 0
const slotQueue: Array<{ readonly weight: number; readonly grant: () => void }> = []

const pumpSlots = () => {
  while (slotQueue.length > 0 && slotsInUse + slotQueue[0]!.weight <= SLOTS) {
    const next = slotQueue.shift()!
    slotsInUse += next.weight
    next.grant()
  }
}

/** Takes `weight` slots (first come, first served), runs `work`, gives them back. */
export const withSlots = async <T>(weight: number, work: () => Promise<T>): Promise<T> => {
  const w = Math.min(Math.max(0, weight), SLOTS)
  if (w > 0) await new Promise<void>((grant) => (slotQueue.push({ weight: w, grant }), pumpSlots()))
  try {
    return await work()
  } finally {
    slotsInUse -= w
    pumpSlots()
  }
}

const DEFAULT_TIMEOUT_MS = 25_000

const sandboxes: Array<string> = []

/** A fresh, empty working directory under the system's temp dir. */
export const sandbox = (): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-e2e-")))
  sandboxes.push(dir)
  return dir
}

export const cleanupSandboxes = (): void => {
  for (const dir of sandboxes.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
}

/** Writes a YAML config (a document object, or YAML text) into `dir`; its absolute path. */
export const writeConfig = (dir: string, doc: unknown, name = "config.yaml"): string => {
  const path = nodePath.join(dir, name)
  fs.writeFileSync(path, typeof doc === "string" ? doc : toYaml(doc))
  return path
}

/** The argv that starts the CLI in `mode`. */
export const command = (mode: Mode): ReadonlyArray<string> => (mode === "source" ? [process.execPath, SOURCE_MAIN] : [BINARY])

const childEnv = (extra: CliOptions["env"]): Record<string, string> => {
  const env: Record<string, string | undefined> = { ...process.env }
  delete env.MASSGEN_LOG_BASE_DIR
  for (const [k, v] of Object.entries(extra ?? {})) {
    if (v === undefined) delete env[k]
    else env[k] = v
  }
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined))
}

export interface RunningCli {
  readonly proc: Bun.Subprocess<"ignore" | Blob, "pipe", "pipe">
  readonly cwd: string
  /** stdout lines seen so far. */
  readonly lines: ReadonlyArray<string>
  /** Resolves with the first stdout line that starts with `prefix`; rejects if the process ends first. */
  readonly waitForLine: (prefix: string, timeoutMs?: number) => Promise<string>
  /** The finished run. */
  readonly done: Promise<CliResult>
}

/** Spawns the CLI now (the caller holds its slot); the returned object watches its stdout line by line. */
const spawnCli = (mode: Mode, args: ReadonlyArray<string>, options: CliOptions = {}): RunningCli => {
  const cwd = options.cwd ?? sandbox()
  const argv = [...command(mode), ...args]
  const viaShell =
    options.umask === undefined ? argv : ["sh", "-c", `umask ${options.umask.toString(8).padStart(3, "0")}; exec "$@"`, "massgen", ...argv]
  const proc = Bun.spawn(viaShell, {
    cwd,
    env: childEnv(options.env),
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  })
  const lines: Array<string> = []
  let stdout = ""
  let ended = false
  const waiters = new Set<{ prefix: string; resolve: (line: string) => void; reject: (e: Error) => void }>()

  const onLine = (line: string) => {
    lines.push(line)
    for (const w of [...waiters]) {
      if (line.startsWith(w.prefix)) {
        waiters.delete(w)
        w.resolve(line)
      }
    }
  }

  const readStdout = (async () => {
    const decoder = new TextDecoder()
    let pending = ""
    for await (const chunk of proc.stdout) {
      const text = decoder.decode(chunk, { stream: true })
      stdout += text
      pending += text
      let nl = pending.indexOf("\n")
      while (nl >= 0) {
        onLine(pending.slice(0, nl))
        pending = pending.slice(nl + 1)
        nl = pending.indexOf("\n")
      }
    }
    const rest = pending + decoder.decode()
    stdout += rest.slice(pending.length)
    if (rest !== "") onLine(rest)
  })()
  const readStderr = new Response(proc.stderr).text()

  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  let timedOut = false
  const killer = setTimeout(() => {
    timedOut = true
    proc.kill("SIGKILL")
  }, timeoutMs)

  const done = (async (): Promise<CliResult> => {
    const [exitCode, , stderr] = await Promise.all([proc.exited, readStdout, readStderr])
    clearTimeout(killer)
    ended = true
    for (const w of [...waiters]) {
      waiters.delete(w)
      w.reject(
        new Error(
          `massgen exited (${exitCode}) before printing a line starting with ${JSON.stringify(w.prefix)}\nstdout:\n${stdout}\nstderr:\n${stderr}`,
        ),
      )
    }
    if (timedOut)
      throw new Error(`massgen ${args.join(" ")} still running after ${timeoutMs} ms: killed\nstdout:\n${stdout}\nstderr:\n${stderr}`)
    return {
      stdout,
      stderr,
      exitCode,
      signal: proc.signalCode === null || proc.signalCode === undefined ? null : String(proc.signalCode),
      lines: stdout.split("\n").filter((l, i, all) => !(i === all.length - 1 && l === "")),
    }
  })()
  // A test that only waits for lines still sees a failure through waitForLine; keep this one quiet.
  done.catch(() => undefined)

  const waitForLine = (prefix: string, waitMs = timeoutMs) =>
    new Promise<string>((resolve, reject) => {
      const seen = lines.find((l) => l.startsWith(prefix))
      if (seen !== undefined) return resolve(seen)
      if (ended) return reject(new Error(`massgen exited before printing a line starting with ${JSON.stringify(prefix)}`))
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(new Error(`no stdout line starting with ${JSON.stringify(prefix)} within ${waitMs} ms; saw:\n${lines.join("\n")}`))
      }, waitMs)
      const waiter = {
        prefix,
        resolve: (line: string) => (clearTimeout(timer), resolve(line)),
        reject: (e: Error) => (clearTimeout(timer), reject(e)),
      }
      waiters.add(waiter)
    })

  return {
    proc,
    cwd,
    get lines() {
      return lines
    },
    waitForLine,
    done,
  }
}

/**
 * Starts the CLI once it has a slot; the slot is given back when it exits.
 * Awaiting the result gives the live process (for `waitForLine` and signals).
 */
export const startCli = (mode: Mode, args: ReadonlyArray<string>, options: CliOptions = {}): Promise<RunningCli> =>
  new Promise<RunningCli>((started, failed) => {
    withSlots(options.exclusive === true ? SLOTS : 1, () => {
      const run = spawnCli(mode, args, options)
      started(run)
      return run.done
    }).catch(failed)
  })

/** Starts the CLI and resolves, with the live process, once a stdout line starts with `prefix`. */
export const startUntilLine = async (
  mode: Mode,
  args: ReadonlyArray<string>,
  prefix: string,
  options: CliOptions = {},
): Promise<RunningCli> => {
  const run = await startCli(mode, args, options)
  await run.waitForLine(prefix)
  return run
}

/** Runs the CLI to its end. */
export const runCli = async (mode: Mode, args: ReadonlyArray<string>, options: CliOptions = {}): Promise<CliResult> =>
  (await startCli(mode, args, options)).done

/** Starts every run at the same moment, with no other child running; their results in order. */
export const runTogether = (
  mode: Mode,
  runs: ReadonlyArray<{ readonly args: ReadonlyArray<string>; readonly options?: CliOptions }>,
): Promise<ReadonlyArray<CliResult>> => withSlots(SLOTS, () => Promise.all(runs.map((r) => spawnCli(mode, r.args, r.options).done)))

const newestMtime = (path: string): number => {
  const stat = fs.statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let newest = stat.mtimeMs
  for (const entry of fs.readdirSync(path)) newest = Math.max(newest, newestMtime(nodePath.join(path, entry)))
  return newest
}

/** Whether `dist/massgen` is missing or older than what it is built from. */
export const binaryIsStale = (): boolean => {
  if (!fs.existsSync(BINARY)) return true
  const built = fs.statSync(BINARY).mtimeMs
  const inputs = ["src", "scripts", "package.json", "bun.lock", "tsconfig.json"]
    .map((p) => nodePath.join(ROOT, p))
    .filter((p) => fs.existsSync(p))
  return inputs.some((p) => newestMtime(p) > built)
}

let building: Promise<string> | null = null

/** Builds `dist/massgen` with `bun run build` when it is missing or stale; once per test process. */
export const ensureBinary = (): Promise<string> => {
  building ??= (async () => {
    if (!binaryIsStale()) return BINARY
    return withSlots(SLOTS, async () => {
      const proc = Bun.spawn([process.execPath, "run", "build"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
      const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      if (code !== 0) throw new Error(`bun run build failed (${code}):\n${out}\n${err}`)
      return BINARY
    })
  })()
  return building
}

/**
 * Resolves once process `pid` catches `signal` (Linux: its SigCgt mask in
 * /proc/<pid>/status), i.e. the moment its handler is installed; a bounded
 * loop of tiny awaits.
 */
export const waitForSignalHandler = async (pid: number, signal: "SIGINT" | "SIGTERM", timeoutMs = 10_000): Promise<void> => {
  const bit = 1n << BigInt((signal === "SIGINT" ? 2 : 15) - 1)
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const status = fs.existsSync(`/proc/${pid}/status`) ? fs.readFileSync(`/proc/${pid}/status`, "utf8") : ""
    const caught = /^SigCgt:\s*([0-9a-f]+)$/m.exec(status)?.[1]
    if (caught !== undefined && (BigInt(`0x${caught}`) & bit) !== 0n) return
    if (Date.now() > deadline) throw new Error(`process ${pid} did not install a ${signal} handler within ${timeoutMs} ms`)
    await Bun.sleep(1)
  }
}
