/**
 * Context paths inside one another, and reached through the user's links:
 * the innermost context path that holds a file decides whether the
 * presenter may write it, as written and on the real path, and a protected
 * path of any context path that holds it is never written.
 */
import { afterEach, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import type { ContextPathSetting } from "../src/domain/events/index.ts"
import { makeFileTools } from "../src/services/tools/file-tools.ts"
import { presenter } from "./support/presenter.ts"

const made: Array<string> = []
afterEach(() => {
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

const write = (contextPaths: ReadonlyArray<ContextPathSetting>, path: string) =>
  Effect.runPromise(
    Effect.either(
      makeFileTools({ workspace: null, snapshotPath: () => "/nowhere" }).run(
        "write_file",
        { path, content: "new\n" },
        presenter(contextPaths),
      ),
    ),
  )

describe("nested context paths", () => {
  test("a write folder inside a read one is written; a read folder inside a write one, or reached through a link, is not", async () => {
    const home = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-nest-")))
    made.push(home)
    for (const d of ["site/docs", "site/private", "notes"]) fs.mkdirSync(nodePath.join(home, d), { recursive: true })
    fs.symlinkSync(nodePath.join(home, "site", "docs"), nodePath.join(home, "docs-link"))
    const paths: ReadonlyArray<ContextPathSetting> = [
      { path: home, permission: "read", protected_paths: [] },
      { path: nodePath.join(home, "site"), permission: "write", protected_paths: ["private"] },
      { path: nodePath.join(home, "site", "docs"), permission: "read", protected_paths: [] },

      { path: nodePath.join(home, "notes"), permission: "write", protected_paths: [] },
    ]
    // The user's link to the read folder, given as a write path (before or after it): judged on where it leads.
    const link: ContextPathSetting = { path: nodePath.join(home, "docs-link"), permission: "write", protected_paths: [] }
    const outcome = async (p: string, linkFirst = false) => {
      const r = await write(linkFirst ? [link, ...paths] : [...paths, link], nodePath.join(home, p))
      return Either.isRight(r) ? r.right.replace(home, "~") : r.left.message.replace(home, "~")
    }
    expect(await outcome("site/index.html")).toBe("wrote 4 bytes to ~/site/index.html (created)")
    expect(await outcome("notes/n.md")).toBe("wrote 4 bytes to ~/notes/n.md (created)")
    expect(await outcome("site/docs/d.md")).toBe("refused: ~/site/docs/d.md is in a read-only context path")
    expect(await outcome("docs-link/d.md")).toBe("refused: ~/docs-link/d.md is in a read-only context path")
    expect(await outcome("docs-link/d.md", true)).toBe("refused: ~/docs-link/d.md is in a read-only context path")
    expect(await outcome("site/private/p.md")).toBe("refused: ~/site/private/p.md is protected (protected_paths: private)")
    expect(await outcome("top.md")).toBe("refused: ~/top.md is in a read-only context path")
    expect(fs.readdirSync(nodePath.join(home, "site", "docs"))).toEqual([])
    expect(fs.readdirSync(nodePath.join(home, "site", "private"))).toEqual([])
  })
})
