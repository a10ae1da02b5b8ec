/**
 * The log directory of a run: `<base>/log_YYYYMMDD_HHMMSS_ffffff/`, one per run, never shared.
 *
 * Contract: `createLogDir` creates the base if missing, then the run's own
 * directory, named after the run's start in UTC (so a name means the same
 * moment on every machine; MassGen uses local time) down to the microsecond
 * (`ffffff`). The leaf is made with a non-recursive mkdir, which fails
 * atomically when the name exists; the name then moves on by one microsecond,
 * until a free one is found. So two runs never share a directory, even when
 * they start in the same microsecond, in one process or in several. It returns
 * the directory's absolute path; everything a run writes goes under it. The
 * run's directory is private (mode 0700: `PRIVATE_DIR_MODE`), and so is every
 * directory and file made under it (`services/run-files/index.ts`, `status-writer.ts`); the
 * base keeps the modes the user's umask gives it.
 *
 * The base is `$MASSGEN_LOG_BASE_DIR` when set, else `<cwd>/.massgen/massgen_logs`
 * (`logBaseDir`). Time is given in *epoch microseconds*: microseconds since
 * 1970-01-01T00:00:00Z, an integer (exact in a double until the year 2255).
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect, Schema } from "effect"
import { PRIVATE_DIR_MODE } from "../../domain/run-paths.ts"
import { ioCause } from "../io-errors.ts"

export const LogDirErrorReason = Schema.Literal("base_unusable", "create_failed", "no_free_name")
export type LogDirErrorReason = typeof LogDirErrorReason.Type

export class LogDirError extends Schema.TaggedError<LogDirError>()("LogDirError", {
  reason: LogDirErrorReason,
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    const what = {
      base_unusable: "cannot create the log base directory",
      create_failed: "cannot create the run's log directory",
      no_free_name: "no free log directory name near",
    }
    return `${what[this.reason]} ${this.path}: ${this.detail}`
  }
}

/** Modes of what a run writes: prompts and answers are its owner's alone. */

/** How many names after the first `createLogDir` tries before it gives up. */
export const MAX_NAME_ATTEMPTS = 10_000

/** The directory under which runs create their log directories. */
export const logBaseDir = (env: Readonly<Record<string, string | undefined>>, cwd: string): string => {
  const override = env.MASSGEN_LOG_BASE_DIR
  return override !== undefined && override !== "" ? nodePath.resolve(cwd, override) : nodePath.resolve(cwd, ".massgen", "massgen_logs")
}

/** Now, in epoch microseconds, from the high-resolution clock. */
export const nowEpochMicros = (): number => Math.floor((performance.timeOrigin + performance.now()) * 1000)

const pad = (n: number, width: number): string => String(n).padStart(width, "0")

/** `log_YYYYMMDD_HHMMSS_ffffff` for a moment in epoch microseconds, in UTC. */
export const logDirName = (epochMicros: number): string => {
  const micros = ((epochMicros % 1_000_000) + 1_000_000) % 1_000_000
  const d = new Date((epochMicros - micros) / 1000)
  const date = `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1, 2)}${pad(d.getUTCDate(), 2)}`
  const time = `${pad(d.getUTCHours(), 2)}${pad(d.getUTCMinutes(), 2)}${pad(d.getUTCSeconds(), 2)}`
  return `log_${date}_${time}_${pad(micros, 6)}`
}

const detailOf = (cause: unknown): string => ioCause(cause)

/**
 * Creates a new run's log directory under `base` for a run started at
 * `epochMicros` (now, when not given); its absolute path.
 */
export const createLogDir = (base: string, epochMicros?: number): Effect.Effect<string, LogDirError> =>
  Effect.suspend(() => {
    const root = nodePath.resolve(base)
    try {
      fs.mkdirSync(root, { recursive: true })
    } catch (cause) {
      return Effect.fail(new LogDirError({ reason: "base_unusable", path: root, detail: detailOf(cause) }))
    }
    const start = Math.floor(epochMicros ?? nowEpochMicros())
    for (let attempt = 0; attempt < MAX_NAME_ATTEMPTS; attempt++) {
      const dir = nodePath.join(root, logDirName(start + attempt))
      try {
        fs.mkdirSync(dir, { mode: PRIVATE_DIR_MODE })
        return Effect.succeed(dir)
      } catch (cause) {
        if ((cause as { code?: unknown } | null)?.code !== "EEXIST") {
          return Effect.fail(new LogDirError({ reason: "create_failed", path: dir, detail: detailOf(cause) }))
        }
      }
    }
    return Effect.fail(
      new LogDirError({
        reason: "no_free_name",
        path: nodePath.join(root, logDirName(start)),
        detail: `${MAX_NAME_ATTEMPTS} names taken`,
      }),
    )
  })
