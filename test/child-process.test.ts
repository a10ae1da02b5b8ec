/**
 * The tool processes' groups (`services/tools/child-process.ts`): a group
 * killed at once after its start, before its leader made the group, still
 * ends (a kill sent only to the group then missed the leader, which ran on:
 * a tool left running by a stopped run).
 */
import { describe, expect, test } from "bun:test"
import { killGroup, spawnInGroup } from "../src/services/tools/child-process.ts"

describe("process groups of tools", () => {
  test("a group killed right after it started ends, leader and all, every time", async () => {
    for (let i = 0; i < 20; i++) {
      const proc = spawnInGroup("sh", ["-c", "sleep 1000 & sleep 1000"], { cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, stdin: "ignore" })
      killGroup(proc.pid)
      const ended = await Promise.race([proc.exited.then(() => true), Bun.sleep(5_000).then(() => false)])
      if (!ended) proc.kill("SIGKILL")
      expect({ i, ended }).toEqual({ i, ended: true })
    }
  }, 60_000)
})
