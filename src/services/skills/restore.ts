/**
 * Memory across the turns of a session: the previous turn's memory files copied into this turn's workspaces.
 *
 * `restoreMemory(from, logDir, anonIds)` finds the previous turn's final
 * workspace (`from`, its log directory: `final/<agent>/workspace/`, the first
 * agent's folder in name order that has one, the winner's, as MassGen takes
 * it) and copies the `*.md` files of its `memory/short_term/` and
 * `memory/long_term/` into the same folders of each workspace named, made if
 * missing. Files are read and written by descriptor, never through a link
 * (`confined-fs.ts`); a file that is not a regular one is left out. It gives
 * the files copied (none when `from` has no final workspace), for
 * `memory_restored`.
 */
import { existsSync, readdirSync } from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { RestoredMemoryFile } from "../../domain/events/index.ts"
import { MEMORY_DIRS } from "../../domain/skills/sections.ts"
import { workspaceDir } from "../../domain/workspaces/facts.ts"
import { hashText } from "../../lib/sha256.ts"
import { openRoot, walk, writeFileAt } from "../tools/confined-fs.ts"
import { MEMORY_TIERS, memoryFilesIn, withDir } from "./memory-files.ts"

/** The previous turn's final workspace: the first `final/<agent>/workspace/` there is. */
const finalWorkspace = (from: string): string | null => {
  const final = nodePath.join(from, "final")
  let agents: ReadonlyArray<string> = []
  try {
    agents = readdirSync(final).sort()
  } catch {
    return null
  }
  const agent = agents.find((a) => existsSync(nodePath.join(final, a, "workspace")))
  return agent === undefined ? null : nodePath.join(final, agent, "workspace")
}

export const restoreMemory = (
  from: string,
  logDir: string,
  anonIds: ReadonlyArray<string>,
): Effect.Effect<ReadonlyArray<RestoredMemoryFile>> =>
  Effect.sync(() => {
    const source = finalWorkspace(from)
    // A file cut at the read cap is not copied: the copy would not be the file.
    const files = source === null ? [] : memoryFilesIn(source, false).filter((f) => !f.cut)
    for (const anonId of anonIds) {
      withDir(
        () => openRoot(nodePath.join(logDir, workspaceDir(anonId))),
        (base) => {
          for (const tier of MEMORY_TIERS) {
            withDir(
              () => walk(base, MEMORY_DIRS[tier].split("/"), true),
              (dir) => {
                for (const f of files) if (f.tier === tier) writeFileAt(dir, f.name, f.bytes)
              },
              undefined,
            )
          }
        },
        undefined,
      )
    }
    return files.map((f) => ({ tier: f.tier, name: f.name, sha256: hashText(f.bytes), bytes: f.bytes.length }))
  })
