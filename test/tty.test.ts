/**
 * The cheap `isatty` (`cli/process/tty.ts`) answers as `node:tty`'s: for a file, a
 * pipe, `/dev/null`, a descriptor that is not open, and the three of a process
 * run in a pseudo-terminal.
 */
import { describe, expect, test } from "bun:test"
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { isatty as nodeIsatty } from "node:tty"
import { isatty } from "../src/cli/process/tty.ts"

const TTY_MODULE = join(import.meta.dir, "../src/cli/process/tty.ts")
const BOTH = `import { isatty } from ${JSON.stringify(TTY_MODULE)}; import { isatty as n } from "node:tty"; console.log(JSON.stringify([0, 1, 2].map((fd) => [isatty(fd), n(fd)])))`

describe("isatty", () => {
  test("a file, /dev/null and a closed descriptor: as node:tty", () => {
    const dir = mkdtempSync(join(tmpdir(), "tty-"))
    try {
      const fds = [openSync(join(dir, "f"), "w"), openSync("/dev/null", "r")]
      for (const fd of fds) expect([fd, isatty(fd)]).toEqual([fd, nodeIsatty(fd)])
      for (const fd of fds) closeSync(fd)
      expect(isatty(fds[0]!)).toBe(false)
      expect(isatty(987_654)).toBe(nodeIsatty(987_654))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test("pipes: as node:tty", () => {
    const run = Bun.spawnSync([process.execPath, "-e", BOTH], { stdin: "pipe", stdout: "pipe", stderr: "pipe" })
    const answers: Array<[boolean, boolean]> = JSON.parse(run.stdout.toString())
    expect(answers).toEqual([
      [false, false],
      [false, false],
      [false, false],
    ])
  })

  test("a pseudo-terminal: a terminal, as node:tty says", async () => {
    let out = ""
    const proc = Bun.spawn([process.execPath, "-e", BOTH], {
      terminal: { cols: 200, rows: 10, data: (_term, data) => (out += data.toString()) },
    })
    await proc.exited
    proc.terminal?.close()
    const answers: Array<[boolean, boolean]> = JSON.parse(/\[\[.*\]\]/.exec(out)?.[0] ?? "null")
    expect(answers).toEqual([
      [true, true],
      [true, true],
      [true, true],
    ])
  })
})
