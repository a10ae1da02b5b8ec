/**
 * The memory files a round is shown (memory filesystem mode), read from the workspaces as `memory_loaded` records them.
 *
 * `loadMemory(logDir, anonId, shown)` makes the agent's `memory/short_term/`
 * and `memory/long_term/` folders when they are missing (MassGen makes them
 * in every workspace), then reads the `*.md` files of both, in its own
 * workspace and in the snapshot of each other agent's answer the round is
 * shown (their memories, as MassGen shows its agents theirs), in name order. A
 * short-term file's body is shown, its first `MEMORY_SHOWN_MAX_BYTES`; a
 * long-term one is listed by its description. A file is read by descriptor
 * and no link is followed (`confined-fs.ts`); one that is not a regular file
 * is left out.
 *
 * Words: *tier* is `short_term` or `long_term`.
 */
import { mkdirSync } from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { MemoryFile, MemoryTier } from "../../domain/events/index.ts"
import { memoryFrontmatter } from "../../domain/skills/frontmatter.ts"
import { MEMORY_DIRS } from "../../domain/skills/sections.ts"
import { snapshotDir, workspaceDir } from "../../domain/workspaces/facts.ts"
import { hashText } from "../../lib/sha256.ts"
import { closeDir, listAt, openRoot, readFileAt, walk } from "../tools/confined-fs.ts"

/** The bytes of one short-term memory file a prompt shows, at most; the rest is cut, and the prompt says so. */
export const MEMORY_SHOWN_MAX_BYTES = 16_384
/** The bytes of one memory file read, at most (its digest is of what was read). */
const READ_MAX = 1_048_576

const TIERS: ReadonlyArray<MemoryTier> = ["short_term", "long_term"]

const filesIn = (root: string, from: string): ReadonlyArray<MemoryFile> => {
  let base: ReturnType<typeof openRoot>
  try {
    base = openRoot(root)
  } catch {
    return []
  }
  try {
    return TIERS.flatMap((tier) => {
      let dir: ReturnType<typeof openRoot>
      try {
        dir = walk(base, MEMORY_DIRS[tier].split("/"), false)
      } catch {
        return []
      }
      try {
        return listAt(dir)
          .filter((e) => e.isFile() && e.name.endsWith(".md"))
          .map((e) => e.name)
          .sort()
          .flatMap((name): ReadonlyArray<MemoryFile> => {
            try {
              const read = readFileAt(dir, name, READ_MAX, name, from !== "workspace")
              const text = read.bytes.toString("utf8")
              const { meta, body } = memoryFrontmatter(text)
              const shownBytes = Buffer.from(body, "utf8")
              const cut = tier === "short_term" && shownBytes.length > MEMORY_SHOWN_MAX_BYTES
              return [
                {
                  from,
                  tier,
                  name,
                  description: (meta.description ?? "").replace(/\s+/g, " "),
                  sha256: hashText(read.bytes),
                  bytes: read.size,
                  content: tier === "short_term" ? (cut ? shownBytes.subarray(0, MEMORY_SHOWN_MAX_BYTES).toString("utf8") : body) : "",
                  ...(cut || read.cut ? { cut: true } : {}),
                },
              ]
            } catch {
              return []
            }
          })
      } finally {
        closeDir(dir)
      }
    })
  } finally {
    closeDir(base)
  }
}

/** The memory files of `anonId`'s workspace and of the snapshots of `shown` (answer labels), its folders made first. */
export const loadMemory = (logDir: string, anonId: string, shown: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<MemoryFile>> =>
  Effect.sync(() => {
    const workspace = nodePath.join(logDir, workspaceDir(anonId))
    for (const tier of TIERS) mkdirSync(nodePath.join(workspace, MEMORY_DIRS[tier]), { recursive: true, mode: 0o700 })
    return [
      ...filesIn(workspace, "workspace"),
      // Its own answers' snapshots hold what its workspace holds.
      ...shown
        .filter((label) => !label.startsWith(`${anonId}.`))
        .flatMap((label) => filesIn(nodePath.join(logDir, snapshotDir(label)), label)),
    ]
  })
