/**
 * The descriptor-walking file operations (`services/tools/confined-fs.ts`): no symlink below a root is followed, whatever is swapped in;
 * a FIFO, a socket or a device is refused before any open that could block; a replaced file keeps its mode and owner.
 */
import { afterEach, describe, expect, test } from "bun:test"
import { execFileSync } from "node:child_process"
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import * as nodePath from "node:path"
import fc from "fast-check"
import {
  ConfinedFsError,
  closeDir,
  isWriteTemporary,
  listAt,
  openRoot,
  readFileAt,
  removeAt,
  renameAt,
  walk,
  writeFileAt,
} from "../src/services/tools/confined-fs.ts"

const made: string[] = []
const scratch = (): string => {
  const dir = mkdtempSync(nodePath.join(tmpdir(), "confined-"))
  made.push(dir)
  return dir
}
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true })
})

const reasonOf = (f: () => unknown): string => {
  try {
    f()
  } catch (e) {
    if (e instanceof ConfinedFsError) return e.reason
    throw e
  }
  return "none"
}

describe("walk", () => {
  test("refuses a symlinked folder anywhere on the way, and makes missing folders with create", () => {
    const base = scratch()
    mkdirSync(nodePath.join(base, "ws/a"), { recursive: true })
    mkdirSync(nodePath.join(base, "outside"))
    symlinkSync(nodePath.join(base, "outside"), nodePath.join(base, "ws/a/link"))
    const root = openRoot(nodePath.join(base, "ws"))
    expect(reasonOf(() => walk(root, ["a", "link"]))).toBe("symlink")
    expect(reasonOf(() => walk(root, ["a", "link", "deeper"], true))).toBe("symlink")
    const made = walk(root, ["a", "b", "c"], true)
    expect(statSync(nodePath.join(base, "ws/a/b/c")).isDirectory()).toBe(true)
    closeDir(made)
    closeDir(root)
  })

  test("a name with a control character, a slash, or .. is refused", () => {
    const root = openRoot(scratch())
    for (const bad of ["a\nWINNER: x", "..", "a/b", "x\u0085y", "\u001b]0;t"])
      expect(reasonOf(() => writeFileAt(root, bad, "x"))).toBe("bad_name")
    closeDir(root)
  })
})

describe("readFileAt", () => {
  test("refuses a symlink to a file outside, a FIFO (without blocking), and reads a big file only up to the cap", () => {
    const base = scratch()
    writeFileSync(nodePath.join(base, "secret"), "HOST ONLY")
    mkdirSync(nodePath.join(base, "ws"))
    symlinkSync(nodePath.join(base, "secret"), nodePath.join(base, "ws/l"))
    execFileSync("mkfifo", [nodePath.join(base, "ws/p")])
    writeFileSync(nodePath.join(base, "ws/big"), "")
    truncateSync(nodePath.join(base, "ws/big"), 1 << 30)
    const root = openRoot(nodePath.join(base, "ws"))
    expect(reasonOf(() => readFileAt(root, "l", 100))).toBe("symlink")
    expect(reasonOf(() => readFileAt(root, "p", 100))).toBe("special")
    const big = readFileAt(root, "big", 1000)
    expect(big.cut).toBe(true)
    expect(big.bytes.length).toBe(1000)
    expect(big.size).toBe(1 << 30)
    closeDir(root)
  })
})

describe("special files", () => {
  test("a FIFO, a Unix socket and a device (where mknod works) are refused by reads and writes, naming the kind, without blocking", () => {
    const base = scratch()
    const ws = nodePath.join(base, "ws")
    mkdirSync(ws)
    execFileSync("mkfifo", [nodePath.join(ws, "fifo")])
    execFileSync("python3", ["-c", "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])", nodePath.join(ws, "sock")])
    const kinds: Array<readonly [string, string]> = [
      ["fifo", "a named pipe"],
      ["sock", "a socket"],
    ]
    try {
      // /dev/zero's numbers: a read of it would never end, a write would vanish.
      execFileSync("mknod", [nodePath.join(ws, "zero"), "c", "1", "5"], { stdio: "ignore" })
      kinds.push(["zero", "a device"])
    } catch {
      // Not allowed to make device nodes here: the FIFO and the socket alone.
    }
    const root = openRoot(ws)
    const detail = (f: () => unknown): string => {
      try {
        f()
      } catch (e) {
        if (e instanceof ConfinedFsError) return `${e.reason}: ${e.detail}`
        throw e
      }
      return "none"
    }
    for (const [name, kind] of kinds) {
      const refused = `special: it is ${kind}, not a regular file`
      expect({ name, read: detail(() => readFileAt(root, name, 100)) }).toEqual({ name, read: refused })
      expect({ name, write: detail(() => writeFileAt(root, name, "x")) }).toEqual({ name, write: refused })
    }
    closeDir(root)
    expect(lstatSync(nodePath.join(ws, "fifo")).isFIFO()).toBe(true)
  })
})

describe("writeFileAt", () => {
  test("a spray of symlinks under every old temporary name does not redirect the write", () => {
    const base = scratch()
    writeFileSync(nodePath.join(base, "victim"), "the user's file")
    mkdirSync(nodePath.join(base, "ws"))
    for (const pid of [process.pid, ...Array.from({ length: 200 }, (_, i) => i + 1)]) {
      symlinkSync(nodePath.join(base, "victim"), nodePath.join(base, `ws/f.massgen-${pid}.tmp`))
    }
    const root = openRoot(nodePath.join(base, "ws"))
    expect(writeFileAt(root, "f", "written by a model")).toBe("created")
    expect(readFileSync(nodePath.join(base, "victim"), "utf8")).toBe("the user's file")
    expect(readFileSync(nodePath.join(base, "ws/f"), "utf8")).toBe("written by a model")
    closeDir(root)
  })

  test("a file that is a symlink is refused, not written through", () => {
    const base = scratch()
    writeFileSync(nodePath.join(base, "victim"), "the user's file")
    mkdirSync(nodePath.join(base, "ws"))
    symlinkSync(nodePath.join(base, "victim"), nodePath.join(base, "ws/f"))
    const root = openRoot(nodePath.join(base, "ws"))
    expect(reasonOf(() => writeFileAt(root, "f", "x"))).toBe("symlink")
    expect(readFileSync(nodePath.join(base, "victim"), "utf8")).toBe("the user's file")
    closeDir(root)
  })

  test("a replaced file keeps its mode and owner (as root: another user's file); no temporary file is left", () => {
    const base = scratch()
    writeFileSync(nodePath.join(base, "run.sh"), "#!/bin/sh\necho old\n")
    chmodSync(nodePath.join(base, "run.sh"), 0o755)
    if (process.getuid?.() === 0) chownSync(nodePath.join(base, "run.sh"), 65534, 65534)
    const owner = statSync(nodePath.join(base, "run.sh"))
    const root = openRoot(base)
    expect(writeFileAt(root, "run.sh", "#!/bin/sh\necho new\n")).toBe("replaced")
    const after = statSync(nodePath.join(base, "run.sh"))
    expect({ mode: after.mode & 0o777, uid: after.uid, gid: after.gid }).toEqual({ mode: 0o755, uid: owner.uid, gid: owner.gid })
    expect(readdirSync(base)).toEqual(["run.sh"])
    closeDir(root)
  })

  test("its temporary names are recognised as such, and few others are", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !s.includes("/")),
        (name) => {
          expect(isWriteTemporary(`.${name}.massgen-0123456789abcdef.tmp`)).toBe(true)
          expect(isWriteTemporary(name.replace(/massgen-/g, ""))).toBe(false)
        },
      ),
    )
  })
})

describe("removeAt and renameAt", () => {
  test("deleting a folder that holds a link to an outside folder removes the link, not the outside files", () => {
    const base = scratch()
    mkdirSync(nodePath.join(base, "ws/d"), { recursive: true })
    mkdirSync(nodePath.join(base, "outside"))
    writeFileSync(nodePath.join(base, "outside/keep"), "keep")
    symlinkSync(nodePath.join(base, "outside"), nodePath.join(base, "ws/d/l"))
    const root = openRoot(nodePath.join(base, "ws"))
    removeAt(root, "d")
    expect(readFileSync(nodePath.join(base, "outside/keep"), "utf8")).toBe("keep")
    expect(listAt(root).length).toBe(0)
    closeDir(root)
  })

  test("a move does not replace what is at the destination", () => {
    const base = scratch()
    writeFileSync(nodePath.join(base, "a"), "a")
    writeFileSync(nodePath.join(base, "b"), "b")
    const root = openRoot(base)
    expect(reasonOf(() => renameAt(root, "a", root, "b"))).toBe("exists")
    renameAt(root, "a", root, "c")
    expect(lstatSync(nodePath.join(base, "c")).isFile()).toBe(true)
    closeDir(root)
  })
})
