/**
 * The memory files a round is shown (memory filesystem mode), read from the workspaces as `memory_loaded` records them.
 *
 * `loadMemory(logDir, anonId, shown)` makes the agent's `memory/short_term/`
 * and `memory/long_term/` folders when they are missing (MassGen makes them
 * in every workspace), then reads the `*.md` files of both
 * (`memory-files.ts`: by descriptor, no link followed), in its own workspace
 * and in the snapshot of each other agent's answer the round is shown (their
 * memories, as MassGen shows its agents theirs), in name order. A short-term
 * file's body is shown, its first `MEMORY_SHOWN_MAX_BYTES`; a long-term one is
 * listed by its description.
 *
 * Words: *tier* is `short_term` or `long_term`.
 */
import { mkdirSync } from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { MemoryFile } from "../../domain/events/index.ts"
import { memoryFrontmatter } from "../../domain/skills/frontmatter.ts"
import { MEMORY_DIRS } from "../../domain/skills/sections.ts"
import { snapshotDir, workspaceDir } from "../../domain/workspaces/facts.ts"
import { hashText } from "../../lib/sha256.ts"
import { MEMORY_TIERS, memoryFilesIn } from "./memory-files.ts"

/** The bytes of one short-term memory file a prompt shows, at most; the rest is cut, and the prompt says so. */
export const MEMORY_SHOWN_MAX_BYTES = 16_384

const filesIn = (root: string, from: string): ReadonlyArray<MemoryFile> =>
  memoryFilesIn(root, from !== "workspace").map((f) => {
    const { meta, body } = memoryFrontmatter(f.bytes.toString("utf8"))
    const shown = Buffer.from(body, "utf8")
    const cut = f.tier === "short_term" && shown.length > MEMORY_SHOWN_MAX_BYTES
    return {
      from,
      tier: f.tier,
      name: f.name,
      description: (meta.description ?? "").replace(/\s+/g, " "),
      sha256: hashText(f.bytes),
      bytes: f.size,
      content: f.tier === "short_term" ? (cut ? shown.subarray(0, MEMORY_SHOWN_MAX_BYTES).toString("utf8") : body) : "",
      ...(cut || f.cut ? { cut: true } : {}),
    }
  })

/** The memory files of `anonId`'s workspace and of the snapshots of `shown` (answer labels), its folders made first. */
export const loadMemory = (logDir: string, anonId: string, shown: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<MemoryFile>> =>
  Effect.sync(() => {
    const workspace = nodePath.join(logDir, workspaceDir(anonId))
    for (const tier of MEMORY_TIERS) mkdirSync(nodePath.join(workspace, MEMORY_DIRS[tier]), { recursive: true, mode: 0o700 })
    return [
      ...filesIn(workspace, "workspace"),
      // Its own answers' snapshots hold what its workspace holds.
      ...shown
        .filter((label) => !label.startsWith(`${anonId}.`))
        .flatMap((label) => filesIn(nodePath.join(logDir, snapshotDir(label)), label)),
    ]
  })
