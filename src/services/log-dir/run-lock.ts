/**
 * The lock that says a process is running a log directory's run: `LOG_DIR/run.lock`.
 *
 * A run and a resume hold it while they work. It names its *owner*: the pid
 * and, where the system says (Linux's `/proc/<pid>/stat`), the process's start
 * time, so that a pid the system has since given to another process does not
 * make a dead run look alive, and the identity of its directory, so that a
 * lock copied with a run to another directory locks nothing there (a run moved
 * within its file system keeps it). It is created with an exclusive create, so two
 * processes never both take a free lock. A lock is *stale*, and is taken over,
 * when its owner is gone (a run killed with SIGKILL, a machine that went
 * down), or when it stays empty or unreadable for longer than a writer needs
 * to fill it (`STALE_EMPTY_MS`: its writer died between creating and writing
 * it, or the disk was full). The same holds for the takeover guard
 * (`run.lock.takeover`). `holder` reads the lock without taking it: the viewer
 * and `massgen status` use it to tell a live run.
 */
import { closeSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs"
import { dirname, join } from "node:path"
import { Effect, Schema } from "effect"

export const LOCK_FILE = "run.lock"
/** How long a lock file may stay empty before it is taken for a dead writer's. */
export const STALE_EMPTY_MS = 2000

export class RunLockError extends Schema.TaggedError<RunLockError>()("RunLockError", {
  reason: Schema.Literal("held", "unwritable"),
  path: Schema.String,
  pid: Schema.NullOr(Schema.Number),
  detail: Schema.String,
}) {
  override get message(): string {
    return this.reason === "held"
      ? `${this.path} is being run by process ${this.pid ?? "(unknown)"}: stop it first, or wait for it to finish`
      : `cannot lock ${this.path}: ${this.detail}`
  }
}

/** What `/proc/<pid>/stat` says of a process: its state letter and start time (clock ticks since boot); null without /proc. */
const procStat = (pid: number): { readonly state: string; readonly start: string } | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // After the command: state is field 3, starttime field 22.
    return { state: fields[0] ?? "", start: fields[19] ?? "" }
  } catch {
    return null
  }
}

/** A process, as a lock names it. */
export interface Owner {
  readonly pid: number
  /** Its start time, when the system tells; null otherwise. */
  readonly start: string | null
}

export const ownerOf = (pid: number): Owner => ({ pid, start: procStat(pid)?.start ?? null })

const SELF: Owner = ownerOf(process.pid)

/** Whether `owner` still runs: its pid answers, is not a zombie, and (when known) started when the lock says. */
export const isAlive = (owner: Owner | number): boolean => {
  const { pid, start } = typeof owner === "number" ? { pid: owner, start: null } : owner
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
  } catch (e) {
    if ((e as { code?: string }).code !== "EPERM") return false
  }
  const stat = procStat(pid)
  // A killed process that its parent has not reaped yet still answers kill(0): Linux marks it Z.
  if (stat === null) return true
  return stat.state !== "Z" && (start === null || stat.start === start)
}

/** The identity of a directory: a copy of it is another directory, a move within a file system is the same one. */
const dirIdentity = (dir: string): string | null => {
  try {
    const st = statSync(dir)
    return `${st.dev}:${st.ino}`
  } catch {
    return null
  }
}

/** A lock's text: `PID [START]`, then `dir DEV:INO` of the directory it locks. */
const ownerText = (o: Owner, lockPath: string): string => {
  const dir = dirIdentity(dirname(lockPath))
  return `${o.start === null ? o.pid : `${o.pid} ${o.start}`}\n${dir === null ? "" : `dir ${dir}\n`}`
}

/** A lock file's content. */
type Read =
  /** `elsewhere`: the lock names another directory: it was copied here with the run, and locks nothing here. */
  | { readonly _tag: "owner"; readonly owner: Owner; readonly text: string; readonly elsewhere: boolean }
  | { readonly _tag: "empty"; readonly ageMs: number; readonly text: string }
  | { readonly _tag: "missing" }

const readLock = (path: string): Read => {
  let text: string
  let ageMs = 0
  try {
    text = readFileSync(path, "utf8")
    ageMs = Date.now() - statSync(path).mtimeMs
  } catch (e) {
    return (e as { code?: string }).code === "ENOENT" ? { _tag: "missing" } : { _tag: "empty", ageMs: Number.POSITIVE_INFINITY, text: "" }
  }
  const [first = "", second = ""] = text.split("\n")
  const [pidText, start] = first.trim().split(/\s+/)
  const pid = Number(pidText)
  if (!Number.isInteger(pid) || pid <= 0) return { _tag: "empty", ageMs, text }
  const recorded = second.startsWith("dir ") ? second.slice(4).trim() : null
  const elsewhere = recorded !== null && recorded !== dirIdentity(dirname(path))
  return { _tag: "owner", owner: { pid, start: start === undefined || start === "" ? null : start }, text, elsewhere }
}

const sameOwner = (a: Owner, b: Owner): boolean => a.pid === b.pid && a.start === b.start

/** The pid holding the lock of `logDir` if its owner is alive (and not this process), else null. */
export const holder = (logDir: string): number | null => {
  const read = readLock(join(logDir, LOCK_FILE))
  return read._tag === "owner" && !read.elsewhere && isAlive(read.owner) && !sameOwner(read.owner, SELF) ? read.owner.pid : null
}

const tryCreate = (path: string): boolean => {
  try {
    const fd = openSync(path, "wx")
    try {
      writeSync(fd, ownerText(SELF, path))
    } finally {
      closeSync(fd)
    }
    return true
  } catch (e) {
    if ((e as { code?: string }).code === "EEXIST") return false
    throw e
  }
}

/** What a lock read shows: someone alive holds it, it is stale (with what it held), or it is being written. */
const judge = (
  read: Read,
): { readonly _tag: "live"; readonly pid: number } | { readonly _tag: "stale"; readonly seen: string } | { readonly _tag: "wait" } => {
  switch (read._tag) {
    case "missing":
      return { _tag: "wait" }
    case "empty":
      return read.ageMs > STALE_EMPTY_MS ? { _tag: "stale", seen: read.text } : { _tag: "wait" }
    case "owner":
      return !read.elsewhere && isAlive(read.owner) && !sameOwner(read.owner, SELF)
        ? { _tag: "live", pid: read.owner.pid }
        : { _tag: "stale", seen: read.text }
  }
}

const contentOf = (path: string): string | null => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return null
  }
}

/** Blocks this thread for `ms`: the wait for another process's takeover is a few microseconds of file work. */
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/**
 * Replaces a stale lock, under a second lock (`run.lock.takeover`, exclusive
 * create) so that two processes that both found the same stale lock cannot
 * both take it: the one that gets the takeover lock checks again that the lock
 * holds what it saw, and only then replaces it (rename is atomic).
 */
const takeOver = (path: string, seen: string): "taken" | "retry" => {
  const guard = `${path}.takeover`
  if (!tryCreate(guard)) {
    // Someone is taking over; a guard left by a dead process, or left empty, is removed.
    if (judge(readLock(guard))._tag === "stale") rmSync(guard, { force: true })
    pause(1)
    return "retry"
  }
  try {
    if ((contentOf(path) ?? "") !== seen) return "retry"
    const tmp = `${path}.${process.pid}.tmp`
    writeFileSync(tmp, ownerText(SELF, path))
    renameSync(tmp, path)
    return "taken"
  } finally {
    rmSync(guard, { force: true })
  }
}

/** Removes the lock of `logDir` if this process holds it: for a process exiting before its scopes close. */
export const releaseRunLockSync = (logDir: string): void => {
  const path = join(logDir, LOCK_FILE)
  const read = readLock(path)
  if (read._tag === "owner" && sameOwner(read.owner, SELF)) rmSync(path, { force: true })
}

/** Takes the lock of `logDir` for this process until the scope closes; a stale lock is taken over. */
export const acquireRunLock = (logDir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const path = join(logDir, LOCK_FILE)
        for (let attempt = 0; attempt < 5000; attempt++) {
          if (tryCreate(path)) return path
          const verdict = judge(readLock(path))
          if (verdict._tag === "live") return new RunLockError({ reason: "held", path: logDir, pid: verdict.pid, detail: "" })
          if (verdict._tag === "wait") {
            pause(1)
            continue
          }
          if (takeOver(path, verdict.seen) === "taken") return path
        }
        const read = readLock(path)
        return new RunLockError({ reason: "held", path: logDir, pid: read._tag === "owner" ? read.owner.pid : null, detail: "" })
      },
      catch: (e) => new RunLockError({ reason: "unwritable", path: logDir, pid: null, detail: e instanceof Error ? e.message : String(e) }),
    }).pipe(Effect.flatMap((r) => (r instanceof RunLockError ? Effect.fail(r) : Effect.succeed(r)))),
    // Removed only while it is still ours: a lock taken over meanwhile stays.
    (path) =>
      Effect.sync(() => {
        const read = readLock(path)
        if (read._tag === "owner" && sameOwner(read.owner, SELF)) rmSync(path, { force: true })
      }),
  )
