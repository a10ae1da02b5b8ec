/**
 * `removeWriteTemporaries` (what a resumed run does first): the temporary
 * files of the recorded context files go, in those files' folders; nothing
 * else does, and no symlink on the way is followed.
 */
import { afterEach, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { removeWriteTemporaries } from "../src/services/tools/file-paths.ts"

const made: Array<string> = []
afterEach(() => {
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

describe("removeWriteTemporaries", () => {
  test("removes only regular temporary files of the recorded files, never through a symlinked folder", () => {
    const base = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-temps-")))
    made.push(base)
    const ctx = nodePath.join(base, "site")
    const elsewhere = nodePath.join(base, "elsewhere")
    fs.mkdirSync(nodePath.join(ctx, "docs"), { recursive: true })
    fs.mkdirSync(elsewhere)
    fs.symlinkSync(elsewhere, nodePath.join(ctx, "linked"))
    const put = (p: string) => fs.writeFileSync(p, "partial")
    // Temporaries of the recorded files: removed.
    put(nodePath.join(ctx, "index.html.massgen-77.tmp"))
    put(nodePath.join(ctx, "docs", ".guide.md.massgen-00112233aabbccdd.tmp"))
    // Not ours to remove: another file's temporary, a folder under a temporary name, the files themselves,
    // and a temporary reached only through a link.
    put(nodePath.join(ctx, "index.html"))
    put(nodePath.join(ctx, "about.html.massgen-77.tmp"))
    fs.mkdirSync(nodePath.join(ctx, ".index.html.massgen-0123456789abcdef.tmp"))
    put(nodePath.join(elsewhere, "x.md.massgen-77.tmp"))
    const contextPaths = [{ path: ctx, permission: "write" as const, protected_paths: [] }]
    const paths = [
      nodePath.join(ctx, "index.html"),
      nodePath.join(ctx, "docs", "guide.md"),
      nodePath.join(ctx, "linked", "x.md"),
      nodePath.join(base, "outside", "y.md"),
    ]
    expect(removeWriteTemporaries(contextPaths, paths)).toBe(2)
    expect(fs.readdirSync(ctx).sort()).toEqual([
      ".index.html.massgen-0123456789abcdef.tmp",
      "about.html.massgen-77.tmp",
      "docs",
      "index.html",
      "linked",
    ])
    expect(fs.readdirSync(nodePath.join(ctx, "docs"))).toEqual([])
    expect(fs.readdirSync(elsewhere)).toEqual(["x.md.massgen-77.tmp"])
  })
})
