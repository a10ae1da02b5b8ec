/** The run lock across processes: one holder at a time, a dead holder's lock taken over by exactly one. */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"

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
