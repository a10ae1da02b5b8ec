/**
 * Property: whatever symlinks a command plants in a workspace (to a file or a
 * folder outside, to `..`, chains of links, relative or absolute targets, at
 * any depth of the path, or under the old temporary name of a file), every
 * file tool refuses a path through a link or acts on the link itself, and
 * never reads, writes or removes anything outside the workspace. The same
 * holds for the presenter in a `write` context path where such links are.
 */
import { afterEach, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import fc from "fast-check"
import { makeFileTools } from "../src/services/tools/file-tools.ts"
import type { ToolContext } from "../src/services/tools/tool-provider.ts"
import { presenter } from "./support/presenter.ts"

const made: Array<string> = []
afterEach(() => {
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

const SENTINEL = "SENTINEL outside the workspace"
const FOLDERS = ["a", "b", "c"]

/** Every file under `dir` with its content (links as `-> target`), for comparing before and after. */
const tree = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const visit = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = nodePath.join(d, e.name)
      if (e.isSymbolicLink()) out[p] = `-> ${fs.readlinkSync(p)}`
      else if (e.isDirectory()) visit(p)
      else out[p] = fs.readFileSync(p, "utf8")
    }
  }
  visit(dir)
  return out
}

type Shape =
  | "file_out_abs"
  | "file_out_rel"
  | "dir_out_abs"
  | "dir_out_rel"
  | "up"
  | "up_up"
  | "inside_abs"
  | "inside_dot"
  | "chain_out"
  | "chain_in"
const SHAPES: ReadonlyArray<Shape> = [
  "file_out_abs",
  "file_out_rel",
  "dir_out_abs",
  "dir_out_rel",
  "up",
  "up_up",
  "inside_abs",
  "inside_dot",
  "chain_out",
  "chain_in",
]
const TOOLS = ["read_file", "write_file", "edit_file", "list_directory", "create_directory", "delete_file", "move_from", "move_to"] as const
const SUFFIXES = ["", "sentinel.txt", "inner.txt", "dir/inner.txt", "new.txt", "x/y.txt"]

/** A workspace `ws/a/b/c` with a file at each level, beside `out/` (a folder) and `sentinel.txt` outside it. */
const layout = () => {
  const base = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-links-")))
  made.push(base)
  const ws = nodePath.join(base, "ws")
  fs.mkdirSync(nodePath.join(ws, ...FOLDERS), { recursive: true })
  for (let d = 0; d <= FOLDERS.length; d++)
    fs.writeFileSync(nodePath.join(ws, ...FOLDERS.slice(0, d), "file.txt"), "inside SENTINEL-free\n")
  fs.mkdirSync(nodePath.join(base, "out", "dir"), { recursive: true })
  fs.writeFileSync(nodePath.join(base, "sentinel.txt"), SENTINEL)
  fs.writeFileSync(nodePath.join(base, "out", "sentinel.txt"), SENTINEL)
  fs.writeFileSync(nodePath.join(base, "out", "inner.txt"), SENTINEL)
  fs.writeFileSync(nodePath.join(base, "out", "dir", "inner.txt"), SENTINEL)
  return { base, ws }
}

/** Plants the link `name` in `dir`, its target of the given shape (a chain plants a second link, `<name>.2`). */
const plant = (base: string, ws: string, dir: string, name: string, shape: Shape): void => {
  const link = nodePath.join(dir, name)
  const rel = (to: string) => nodePath.relative(dir, to)
  const target: Record<Shape, () => string> = {
    file_out_abs: () => nodePath.join(base, "sentinel.txt"),
    file_out_rel: () => rel(nodePath.join(base, "sentinel.txt")),
    dir_out_abs: () => nodePath.join(base, "out"),
    dir_out_rel: () => rel(nodePath.join(base, "out")),
    up: () => "..",
    up_up: () => "../..",
    inside_abs: () => nodePath.join(ws, "a"),
    inside_dot: () => ".",
    chain_out: () => {
      fs.symlinkSync(nodePath.join(base, "out"), nodePath.join(dir, `${name}.2`))
      return `${name}.2`
    },
    chain_in: () => {
      fs.symlinkSync(".", nodePath.join(dir, `${name}.2`))
      return `${name}.2`
    },
  }
  fs.symlinkSync(target[shape](), link)
}

const argsOf = (tool: (typeof TOOLS)[number], path: string): [string, Record<string, unknown>] => {
  switch (tool) {
    case "write_file":
      return [tool, { path, content: "PWNED" }]
    case "edit_file":
      return [tool, { path, edits: [{ oldText: "SENTINEL", newText: "PWNED" }] }]
    case "move_from":
      return ["move_file", { source: path, destination: "moved" }]
    case "move_to":
      return ["move_file", { source: "file.txt", destination: path }]
    default:
      return [tool, { path }]
  }
}

const call = (ws: string, name: string, args: Record<string, unknown>, context?: ToolContext) =>
  Effect.runPromise(
    Effect.either(makeFileTools({ workspace: ws, snapshotPath: (l) => nodePath.join(ws, "..", "snapshots", l) }).run(name, args, context)),
  )

describe("file tools and planted symlinks", () => {
  test("a path through a link is refused; a tool on the link itself acts on the link; nothing outside changes or is read", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: FOLDERS.length }),
        fc.constantFrom(...SHAPES),
        fc.constantFrom(...TOOLS),
        fc.constantFrom(...SUFFIXES),
        async (depth, shape, tool, suffix) => {
          const { base, ws } = layout()
          const dir = nodePath.join(ws, ...FOLDERS.slice(0, depth))
          plant(base, ws, dir, "l", shape)
          const outside = tree(nodePath.join(base, "out"))
          const path = [...FOLDERS.slice(0, depth), "l", ...(suffix === "" ? [] : suffix.split("/"))].join("/")
          const [name, args] = argsOf(tool, path)
          const r = await call(ws, name, args)
          expect(fs.readFileSync(nodePath.join(base, "sentinel.txt"), "utf8")).toBe(SENTINEL)
          expect(tree(nodePath.join(base, "out"))).toEqual(outside)
          expect(fs.readdirSync(base).sort()).toEqual(["out", "sentinel.txt", "ws"])
          if (Either.isRight(r)) expect(r.right).not.toContain("SENTINEL")
          const onLink = suffix === "" && (tool === "delete_file" || tool === "move_from")
          if (onLink) {
            // The link itself goes; what it names stays.
            expect(Either.isRight(r)).toBe(true)
            expect(fs.readdirSync(dir)).not.toContain("l")
          } else if (!(tool === "move_to" && suffix === "")) {
            expect(Either.isLeft(r) && r.left.reason).toBe("refused")
            expect(Either.isLeft(r) && r.left.detail).toContain("a symlink")
          } else {
            // Moving onto the link's name: it exists, so nothing moves.
            expect(Either.isLeft(r)).toBe(true)
            expect(fs.lstatSync(nodePath.join(dir, "l")).isSymbolicLink()).toBe(true)
          }
        },
      ),
      { numRuns: 150 },
    )
  }, 120_000)

  test("in a write context path, the presenter's reads, writes, edits and listings through or of a link are refused", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: FOLDERS.length }),
        fc.constantFrom(...SHAPES),
        fc.constantFrom("read_file", "write_file", "edit_file", "list_directory" as const),
        fc.constantFrom(...SUFFIXES),
        async (depth, shape, tool, suffix) => {
          // The context path is the folder the layout calls the workspace: the user's, links and all.
          const { base, ws: ctx } = layout()
          const dir = nodePath.join(ctx, ...FOLDERS.slice(0, depth))
          plant(base, ctx, dir, "l", shape)
          const before = { ctx: tree(ctx), out: tree(nodePath.join(base, "out")) }
          const path = nodePath.join(dir, "l", ...(suffix === "" ? [] : suffix.split("/")))
          const r = await call(
            nodePath.join(base, "own-workspace"),
            ...argsOf(tool, path),
            presenter([{ path: ctx, permission: "write", protected_paths: [] }]),
          )
          expect(Either.isLeft(r) && r.left.reason).toBe("refused")
          expect(Either.isLeft(r) && r.left.detail).toContain("a symlink")
          expect(fs.readFileSync(nodePath.join(base, "sentinel.txt"), "utf8")).toBe(SENTINEL)
          expect({ ctx: tree(ctx), out: tree(nodePath.join(base, "out")) }).toEqual(before)
        },
      ),
      { numRuns: 100 },
    )
  }, 120_000)

  test("links under a file's old temporary name (every nearby pid) do not redirect write_file or edit_file", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: FOLDERS.length }),
        fc.constantFrom("write_file", "edit_file"),
        fc.boolean(),
        async (depth, tool, absolute) => {
          const { base, ws } = layout()
          const dir = nodePath.join(ws, ...FOLDERS.slice(0, depth))
          const victim = nodePath.join(base, "sentinel.txt")
          for (let pid = Math.max(1, process.pid - 50); pid <= process.pid + 50; pid++) {
            fs.symlinkSync(absolute ? victim : nodePath.relative(dir, victim), nodePath.join(dir, `file.txt.massgen-${pid}.tmp`))
          }
          const path = [...FOLDERS.slice(0, depth), "file.txt"].join("/")
          const r = await call(
            ws,
            tool,
            tool === "write_file" ? { path, content: "PWNED" } : { path, edits: [{ oldText: "SENTINEL-free", newText: "edited" }] },
          )
          expect(Either.isRight(r)).toBe(true)
          expect(fs.readFileSync(victim, "utf8")).toBe(SENTINEL)
          expect(fs.readFileSync(nodePath.join(dir, "file.txt"), "utf8")).toBe(tool === "write_file" ? "PWNED" : "inside edited\n")
        },
      ),
      { numRuns: 40 },
    )
  }, 120_000)
})
