/** The run lock across processes: one holder at a time, a dead holder's lock taken over by exactly one. */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Cause, Effect, Exit } from "effect"
import { acquireRunLock, holder, ownerOf, STALE_EMPTY_MS } from "../src/services/log-dir/run-lock.ts"

const dirs: Array<string> = []
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})

const contender = nodePath.join(import.meta.dir, "support", "lock-contender.ts")

/** Starts `n` processes at once contending for the lock of `dir`; their first lines, and a way to let them go. */
const contend = async (dir: string, n: number) => {
  const procs = Array.from({ length: n }, () => Bun.spawn(["bun", contender, dir], { stdin: "pipe", stdout: "pipe" }))
  const firstLine = async (p: (typeof procs)[number]) => {
    const reader = p.stdout.getReader()
    let text = ""
    while (!text.includes("\n")) {
      const { value, done } = await reader.read()
      if (done) break
      text += new TextDecoder().decode(value)
    }
    reader.releaseLock()
    return text.trim()
  }
  const results = await Promise.all(procs.map(firstLine))
  const release = async () => {
    for (const p of procs) p.stdin.end()
    await Promise.all(procs.map((p) => p.exited))
  }
  return { results, release }
}

const deadPid = async () => {
  const p = Bun.spawn(["true"])
  await p.exited
  return p.pid
}

describe("run lock", () => {
  test("six processes at once on a free lock: exactly one wins; it is free again after", async () => {
    const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-lock-"))
    dirs.push(dir)
    const { results, release } = await contend(dir, 6)
    expect(results.filter((r) => r === "won")).toHaveLength(1)
    expect(results.filter((r) => r === "held")).toHaveLength(5)
    await release()
    expect(fs.existsSync(nodePath.join(dir, "run.lock"))).toBe(false)
  }, 60_000)

  test("six processes at once on a lock left by a dead process: exactly one takes it over", async () => {
    for (let round = 0; round < 3; round++) {
      const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-lock-"))
      dirs.push(dir)
      fs.writeFileSync(nodePath.join(dir, "run.lock"), `${await deadPid()}\n`)
      const { results, release } = await contend(dir, 6)
      expect(results.filter((r) => r === "won")).toHaveLength(1)
      await release()
      expect(fs.readdirSync(dir)).toEqual([])
    }
  }, 60_000)
})

describe("stale locks a crash or a full disk leaves", () => {
  const freshDir = () => {
    const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-lock-"))
    dirs.push(dir)
    return dir
  }
  /** Sets a file's times back by `ms`. */
  const age = (path: string, ms: number) => {
    const t = new Date(Date.now() - ms)
    fs.utimesSync(path, t, t)
  }
  const take = (dir: string) => Effect.runPromiseExit(Effect.scoped(Effect.asVoid(acquireRunLock(dir))))

  test("an empty run.lock older than a writer needs is taken over; a fresh empty one is waited for", async () => {
    const dir = freshDir()
    const lock = nodePath.join(dir, "run.lock")
    fs.writeFileSync(lock, "")
    age(lock, STALE_EMPTY_MS + 1000)
    expect(Exit.isSuccess(await take(dir))).toBe(true)
    expect(fs.readdirSync(dir)).toEqual([])
  })

  test("an unreadable run.lock (garbage) that stays so is taken over", async () => {
    const dir = freshDir()
    const lock = nodePath.join(dir, "run.lock")
    fs.writeFileSync(lock, "\u0000\u0000garbage")
    age(lock, STALE_EMPTY_MS + 1000)
    expect(Exit.isSuccess(await take(dir))).toBe(true)
  })

  test("a leftover run.lock.takeover, empty or of a dead process, does not block the lock for good", async () => {
    for (const content of ["", `${await deadPid()}\n`]) {
      const dir = freshDir()
      fs.writeFileSync(nodePath.join(dir, "run.lock"), `${await deadPid()}\n`)
      const guard = nodePath.join(dir, "run.lock.takeover")
      fs.writeFileSync(guard, content)
      age(guard, STALE_EMPTY_MS + 1000)
      expect(Exit.isSuccess(await take(dir))).toBe(true)
      expect(fs.readdirSync(dir)).toEqual([])
    }
  })

  test("a lock naming a live pid with another start time (the pid was reused) is stale", async () => {
    const dir = freshDir()
    // This test's own pid is alive; the start time says the lock's owner was another process.
    fs.writeFileSync(nodePath.join(dir, "run.lock"), `${process.ppid} 1\n`)
    expect(holder(dir)).toBeNull()
    expect(Exit.isSuccess(await take(dir))).toBe(true)
  })

  test("a lock naming a live process with its own start time is held, and says by whom", async () => {
    const dir = freshDir()
    const owner = ownerOf(process.ppid)
    expect(owner.start).not.toBeNull()
    fs.writeFileSync(nodePath.join(dir, "run.lock"), `${owner.pid} ${owner.start}\n`)
    expect(holder(dir)).toBe(process.ppid)
    const exit = await take(dir)
    expect(Exit.isFailure(exit) && String(Cause.squash(exit.cause))).toContain(
      `is being run by process ${process.ppid}: stop it first, or wait for it to finish`,
    )
  })

  test("a lock in the old format (a pid alone) still names a live holder", () => {
    const dir = freshDir()
    fs.writeFileSync(nodePath.join(dir, "run.lock"), `${process.ppid}\n`)
    expect(holder(dir)).toBe(process.ppid)
  })
})

describe("a lock copied with its run", () => {
  test("locks nothing in the copy: the copy's holder is none and its lock is taken; the original stays held", async () => {
    const original = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-lock-"))
    const copy = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-lock-"))
    dirs.push(original, copy)
    const { results, release } = await contend(original, 1)
    expect(results).toEqual(["won"])
    fs.copyFileSync(nodePath.join(original, "run.lock"), nodePath.join(copy, "run.lock"))
    expect(holder(original)).not.toBeNull()
    expect(holder(copy)).toBeNull()
    expect(Exit.isSuccess(await Effect.runPromiseExit(Effect.scoped(Effect.asVoid(acquireRunLock(copy)))))).toBe(true)
    expect(holder(original)).not.toBeNull()
    await release()
  }, 60_000)

  test("a run moved within its file system keeps its lock", async () => {
    const parent = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-lock-"))
    dirs.push(parent)
    const before = nodePath.join(parent, "before")
    fs.mkdirSync(before)
    const { results, release } = await contend(before, 1)
    expect(results).toEqual(["won"])
    const after = nodePath.join(parent, "after")
    fs.renameSync(before, after)
    expect(holder(after)).not.toBeNull()
    await release()
  }, 60_000)
})
