/**
 * `copyTree` on trees a model could make: generated trees with symlinks of
 * every shape (to `.`, `..`, absolute paths inside and outside, chains,
 * dangling, to themselves) are copied to the end, every link as a link with
 * its text unchanged, and no byte from outside the tree; the bounds of
 * `workspace_limits` fail with their closed reason; a FIFO is left out
 * without a wait; a file of the previous copy is shared only when unchanged.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import fc from "fast-check"
import { copyTree, DEFAULT_TREE_LIMITS, TreeOverLimit } from "../src/services/tools/tree-copy.ts"

const dirs: Array<string> = []
const tempDir = () => {
  const d = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-tree-")))
  dirs.push(d)
  return d
}
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

type Entry =
  | { readonly kind: "dir" }
  | { readonly kind: "file"; readonly text: string }
  | { readonly kind: "link"; readonly target: string }

/** Every entry under `dir`, by relative path, never following a link. */
const entries = (dir: string, rel = ""): Map<string, Entry> => {
  const out = new Map<string, Entry>()
  for (const name of fs.readdirSync(nodePath.join(dir, rel))) {
    const path = nodePath.join(rel, name)
    const st = fs.lstatSync(nodePath.join(dir, path))
    if (st.isSymbolicLink()) out.set(path, { kind: "link", target: fs.readlinkSync(nodePath.join(dir, path)) })
    else if (st.isDirectory()) {
      out.set(path, { kind: "dir" })
      for (const [p, e] of entries(dir, path)) out.set(p, e)
    } else if (st.isFile()) out.set(path, { kind: "file", text: fs.readFileSync(nodePath.join(dir, path), "utf8") })
  }
  return out
}

const NAMES = ["a", "b", "c", "d"]
const SECRET = "outside secret"

/** A tree: a list of (folder path, name, kind), made in order; a name already taken is skipped. */
const treeArb = (outside: string) =>
  fc.array(
    fc.record({
      at: fc.array(fc.constantFrom(...NAMES), { maxLength: 3 }),
      name: fc.constantFrom(...NAMES, "e", "f"),
      what: fc.oneof(
        fc.constant<Entry>({ kind: "dir" }),
        fc.string({ maxLength: 8 }).map((text): Entry => ({ kind: "file", text })),
        fc
          .constantFrom(
            ".",
            "..",
            "../..",
            "../../..",
            "/",
            "/proc/self/root",
            "/etc",
            outside,
            `${outside}/secret.txt`,
            "a",
            "a/b",
            "../a",
            "e",
            "f",
            "nope/x",
            "",
          )
          .map((target): Entry => ({ kind: "link", target })),
      ),
    }),
    { maxLength: 30 },
  )

const make = (root: string, spec: ReadonlyArray<{ at: ReadonlyArray<string>; name: string; what: Entry }>) => {
  for (const { at, name, what } of spec) {
    const parent = nodePath.join(root, ...at)
    // Only inside real folders: the tree itself follows no link.
    if (
      !fs.existsSync(parent) ||
      !fs.lstatSync(parent).isDirectory() ||
      at.some((_, i) => fs.lstatSync(nodePath.join(root, ...at.slice(0, i + 1))).isSymbolicLink())
    )
      continue
    const path = nodePath.join(parent, name)
    if (
      fs.existsSync(path) ||
      (() => {
        try {
          fs.lstatSync(path)
          return true
        } catch {
          return false
        }
      })()
    )
      continue
    if (what.kind === "dir") fs.mkdirSync(path)
    else if (what.kind === "file") fs.writeFileSync(path, what.text)
    else fs.symlinkSync(what.target === "" ? name : what.target, path)
  }
}

describe("copyTree", () => {
  test("property: any tree of links terminates, copies each link as a link with its text, and nothing from outside", async () => {
    const base = tempDir()
    const outside = nodePath.join(base, "outside")
    fs.mkdirSync(outside)
    fs.writeFileSync(nodePath.join(outside, "secret.txt"), SECRET)
    let n = 0
    await fc.assert(
      fc.asyncProperty(treeArb(outside), async (spec) => {
        n += 1
        const src = nodePath.join(base, `src${n}`, "ws")
        const dst = nodePath.join(base, `dst${n}`, "deeper", "copy")
        fs.mkdirSync(src, { recursive: true })
        make(src, spec)
        const made = await copyTree(src, dst)
        const before = entries(src)
        const after = entries(dst)
        expect(after).toEqual(before)
        for (const e of after.values()) if (e.kind === "file") expect(e.text).not.toBe(SECRET)
        expect(made.files).toBe([...before.values()].filter((e) => e.kind === "file").length)
        expect(fs.readdirSync(outside)).toEqual(["secret.txt"])
        expect(fs.readFileSync(nodePath.join(outside, "secret.txt"), "utf8")).toBe(SECRET)
      }),
      { numRuns: 60 },
    )
  }, 120_000)

  test("a tree over a bound fails with the bound's reason", async () => {
    const src = tempDir()
    for (let i = 0; i < 4; i++) fs.writeFileSync(nodePath.join(src, `f${i}`), "12345")
    fs.mkdirSync(nodePath.join(src, "d1", "d2", "d3"), { recursive: true })
    const over = (limits: Partial<typeof DEFAULT_TREE_LIMITS>) =>
      copyTree(src, nodePath.join(tempDir(), "c"), { limits: { ...DEFAULT_TREE_LIMITS, ...limits } }).then(
        () => null,
        (e: unknown) => (e instanceof TreeOverLimit ? e.reason : String(e)),
      )
    expect(await over({ maxFiles: 6 })).toBe("too_many_files")
    expect(await over({ maxFiles: 7 })).toBeNull()
    expect(await over({ maxDepth: 2 })).toBe("too_deep")
    expect(await over({ maxDepth: 3 })).toBeNull()
    expect(await over({ maxBytes: 19 })).toBe("too_large")
    expect(await over({ maxBytes: 20 })).toBeNull()
  })

  test("a FIFO, a socket's kind of entry, is left out without waiting on it; a hard-linked file too", async () => {
    const src = tempDir()
    execFileSync("mkfifo", [nodePath.join(src, "fifo")])
    fs.writeFileSync(nodePath.join(src, "one"), "1")
    fs.linkSync(nodePath.join(src, "one"), nodePath.join(src, "two"))
    fs.writeFileSync(nodePath.join(src, "plain"), "p")
    const dst = nodePath.join(tempDir(), "c")
    const made = await copyTree(src, dst)
    expect(fs.readdirSync(dst)).toEqual(["plain"])
    expect(made).toMatchObject({ files: 1, bytes: 1 })
  })

  test("a link's target is copied to the byte, even one that is not UTF-8", async () => {
    const src = tempDir()
    const target = Buffer.from([0x2e, 0x2e, 0x2f, 0xff, 0xfe, 0x61])
    fs.symlinkSync(target, nodePath.join(src, "odd"))
    const dst = nodePath.join(tempDir(), "c")
    await copyTree(src, dst)
    expect(fs.readlinkSync(nodePath.join(dst, "odd"), { encoding: "buffer" })).toEqual(target)
  })

  test("a sparse file is copied byte for byte, its holes left holes", async () => {
    const src = tempDir()
    const file = nodePath.join(src, "sparse.bin")
    const fd = fs.openSync(file, "w")
    fs.writeSync(fd, "abc", 2 * 1024 * 1024)
    fs.ftruncateSync(fd, 64 * 1024 * 1024)
    fs.closeSync(fd)
    const dst = nodePath.join(tempDir(), "c")
    await copyTree(src, dst)
    const copy = nodePath.join(dst, "sparse.bin")
    expect(fs.statSync(copy).size).toBe(64 * 1024 * 1024)
    expect(fs.statSync(copy).blocks * 512).toBeLessThan(4 * 1024 * 1024)
    expect(Bun.hash(fs.readFileSync(copy))).toBe(Bun.hash(fs.readFileSync(file)))
  })

  test("an aborted copy stops with the abort's reason", async () => {
    const src = tempDir()
    for (let i = 0; i < 50; i++) fs.writeFileSync(nodePath.join(src, `f${i}`), "x")
    const controller = new AbortController()
    controller.abort(new Error("stopped"))
    const outcome = await copyTree(src, nodePath.join(tempDir(), "c"), { signal: controller.signal }).then(
      () => "copied",
      (e: unknown) => (e as Error).message,
    )
    expect(outcome).toBe("stopped")
  })

  test("a file unchanged since the previous copy is shared with it; a changed one is copied", async () => {
    const src = tempDir()
    fs.writeFileSync(nodePath.join(src, "same"), "same")
    fs.writeFileSync(nodePath.join(src, "changed"), "v1")
    const first = nodePath.join(tempDir(), "c1")
    const made = await copyTree(src, first)
    fs.writeFileSync(nodePath.join(src, "changed"), "v2")
    const second = nodePath.join(tempDir(), "c2")
    await copyTree(src, second, { previous: { dir: first, manifest: made.manifest } })
    expect(fs.statSync(nodePath.join(second, "same")).ino).toBe(fs.statSync(nodePath.join(first, "same")).ino)
    expect(fs.readFileSync(nodePath.join(second, "changed"), "utf8")).toBe("v2")
    expect(fs.readFileSync(nodePath.join(first, "changed"), "utf8")).toBe("v1")
  })
})
