/**
 * The lock that says a process is running a log directory's run: `LOG_DIR/run.lock`.
 *
 * A run and a resume hold it while they work; it holds the holder's pid. It is
 * created with an exclusive create, so two processes never both take a free
 * lock. A lock whose pid is no longer alive (a run killed with SIGKILL, a
 * machine that went down) is stale and is taken over. `holder` reads it
 * without taking it: the viewer and `massgen status` use it to tell a live run.
 */
import { closeSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"

export const LOCK_FILE = "run.lock"

export class RunLockError extends Schema.TaggedError<RunLockError>()("RunLockError", {
  reason: Schema.Literal("held", "unwritable"),
  path: Schema.String,
  pid: Schema.NullOr(Schema.Number),
  detail: Schema.String,
}) {
  override get message(): string {
    return this.reason === "held"
      ? `${this.path} is being run by process ${this.pid}: stop it first, or wait`
      : `cannot lock ${this.path}: ${this.detail}`
  }
}

/** A killed process that its parent has not reaped yet still answers kill(0): Linux marks it Z. */
const isZombie = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z"
  } catch {
    return false
  }
}

export const isAlive = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return !isZombie(pid)
  } catch (e) {
    return (e as { code?: string }).code === "EPERM"
  }
}

/** The pid a lock file holds; null when it is missing, or just created and not written yet. */
const lockPid = (path: string): number | null => {
  try {
    const pid = Number(readFileSync(path, "utf8").trim())
    return Number.isInteger(pid) && pid > 0 ? pid : null
  } catch {
    return null
  }
}

/** The pid holding the lock of `logDir` if it is alive, else null. */
export const holder = (logDir: string): number | null => {
  try {
    const pid = Number(readFileSync(join(logDir, LOCK_FILE), "utf8").trim())
    return isAlive(pid) && pid !== process.pid ? pid : null
  } catch {
    return null
  }
}

const tryCreate = (path: string): boolean => {
  try {
    const fd = openSync(path, "wx")
    writeSync(fd, `${process.pid}\n`)
    closeSync(fd)
    return true
  } catch (e) {
    if ((e as { code?: string }).code === "EEXIST") return false
    throw e
  }
}

/** Blocks this thread for `ms`: the wait for another process's takeover is a few microseconds of file work. */
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/**
 * Replaces a stale lock, under a second lock (`run.lock.takeover`, exclusive
 * create) so that two processes that both found the same stale lock cannot
 * both take it: the one that gets the takeover lock checks again that the lock
 * is the stale one it saw, and only then replaces it (rename is atomic).
 */
const takeOver = (path: string, stalePid: number): "taken" | "retry" => {
  const guard = `${path}.takeover`
  if (!tryCreate(guard)) {
    // Someone is taking over; a takeover lock left by a dead process is removed.
    const guardPid = lockPid(guard)
    if (guardPid !== null && !isAlive(guardPid)) rmSync(guard, { force: true })
    pause(1)
    return "retry"
  }
  try {
    if (lockPid(path) !== stalePid) return "retry"
    const tmp = `${path}.${process.pid}.tmp`
    writeFileSync(tmp, `${process.pid}\n`)
    renameSync(tmp, path)
    return "taken"
  } finally {
    rmSync(guard, { force: true })
  }
}

/** Takes the lock of `logDir` for this process until the scope closes; a stale lock is taken over. */
export const acquireRunLock = (logDir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const path = join(logDir, LOCK_FILE)
        for (let attempt = 0; attempt < 200; attempt++) {
          if (tryCreate(path)) return path
          const pid = lockPid(path)
          if (pid === null) {
            pause(1)
            continue
          }
          if (pid !== process.pid && isAlive(pid)) return new RunLockError({ reason: "held", path: logDir, pid, detail: "" })
          if (takeOver(path, pid) === "taken") return path
        }
        return new RunLockError({ reason: "held", path: logDir, pid: lockPid(path), detail: "others keep taking it over" })
      },
      catch: (e) => new RunLockError({ reason: "unwritable", path: logDir, pid: null, detail: e instanceof Error ? e.message : String(e) }),
    }).pipe(Effect.flatMap((r) => (r instanceof RunLockError ? Effect.fail(r) : Effect.succeed(r)))),
    // Removed only while it is still ours: a lock taken over meanwhile stays.
    (path) => Effect.sync(() => (lockPid(path) === process.pid ? rmSync(path, { force: true }) : undefined)),
  )
