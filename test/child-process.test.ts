/**
 * The tool processes' groups (`services/tools/child-process.ts`): a group
 * killed at once after its start, before its leader made the group, still
 * ends (a kill sent only to the group then missed the leader, which ran on:
 * a tool left running by a stopped run). Once massgen has started a tool
 * process it is not dumpable: a process of its user (as root, one without
 * the capabilities a contained command lacks) cannot open its
 * `/proc/<pid>/environ`, even from the host's `/proc`.
 */
import { describe, expect, test } from "bun:test"
import { hideOwnMemory, killGroup, spawnInGroup } from "../src/services/tools/child-process.ts"

describe("process groups of tools", () => {
  test("a group killed right after it started ends, leader and all, every time", async () => {
    for (let i = 0; i < 20; i++) {
      const proc = spawnInGroup("sh", ["-c", "sleep 1000 & sleep 1000"], {
        cwd: "/",
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
        stdin: "ignore",
      })
      killGroup(proc.pid)
      const ended = await Promise.race([proc.exited.then(() => true), Bun.sleep(5_000).then(() => false)])
      if (!ended) proc.kill("SIGKILL")
      expect({ i, ended }).toEqual({ i, ended: true })
    }
  }, 60_000)
})

describe("massgen's memory", () => {
  test("once hidden, /proc/<massgen>/environ does not open for the user's processes (for root: without CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON)", () => {
    hideOwnMemory()
    const reader = ["cat", `/proc/${process.pid}/environ`]
    const argv = process.getuid?.() === 0 ? ["setpriv", "--bounding-set=-sys_ptrace,-sys_admin,-perfmon", "--", ...reader] : reader
    const r = Bun.spawnSync(argv, { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } })
    expect({ code: r.exitCode, out: r.stdout.length, err: r.stderr.toString() }).toEqual({
      code: 1,
      out: 0,
      err: expect.stringContaining("Permission denied"),
    })
  })
})
