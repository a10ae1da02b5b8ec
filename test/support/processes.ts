/**
 * Processes found from the host by an argument of theirs, for tests of what a
 * command leaves running: a command in a PID namespace of its own (the
 * sandbox, a contained local command) sees other pids than the host, so its
 * processes are named by a *marker*, an argument no other process has (a
 * `sleep` of `markerSeconds()`).
 *
 * `processesWith(marker)` lists the live processes (not zombies) with it;
 * `waitUntilNoneWith(marker)` waits until there are none, bounded (there is
 * no event for another process's end); `killAllWith(marker)` cleans up after
 * a test that failed.
 */
import * as fs from "node:fs"
import { isGone } from "./mcp.ts"

let markers = 0
/** A number of seconds no other process sleeps: `3000.<pid><n>`, far past any test. */
export const markerSeconds = (): string => `3000.${process.pid}${(markers++).toString().padStart(3, "0")}`

export const processesWith = (marker: string): ReadonlyArray<number> =>
  fs.readdirSync("/proc").flatMap((p) => {
    if (!/^\d+$/.test(p)) return []
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0").includes(marker) && !isGone(Number(p)) ? [Number(p)] : []
    } catch {
      return []
    }
  })

export const waitUntilNoneWith = async (marker: string, ms = 10_000): Promise<ReadonlyArray<number>> => {
  const deadline = Date.now() + ms
  let left = processesWith(marker)
  while (left.length > 0 && Date.now() < deadline) {
    await Bun.sleep(20)
    left = processesWith(marker)
  }
  return left
}

export const killAllWith = (marker: string): void => {
  for (const pid of processesWith(marker)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // Gone meanwhile.
    }
  }
}
