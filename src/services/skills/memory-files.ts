/**
 * The memory files of one workspace (or snapshot) as they are on disk: the `*.md` files of its
 * `memory/short_term/` and `memory/long_term/`, in name order, read by descriptor.
 *
 * `memoryFilesIn(root, allowHardLinks)` never follows a link (`confined-fs.ts`)
 * and leaves out what is not a regular file or cannot be read; a missing root
 * or folder has none. A file is read up to `MEMORY_READ_MAX` bytes (`cut`
 * then). `withDir` opens a folder for the time of one function.
 */
import type { MemoryTier } from "../../domain/events/index.ts"
import { MEMORY_DIRS } from "../../domain/skills/sections.ts"
import { closeDir, type Dir, listAt, openRoot, readFileAt, walk } from "../tools/confined-fs.ts"

export const MEMORY_TIERS: ReadonlyArray<MemoryTier> = ["short_term", "long_term"]
/** The bytes of one memory file read, at most. */
export const MEMORY_READ_MAX = 1_048_576

export interface MemoryOnDisk {
  readonly tier: MemoryTier
  readonly name: string
  readonly bytes: Buffer
  /** The file's size (more than `bytes` when it was cut). */
  readonly size: number
  readonly cut: boolean
}

/** `f` of the folder `open` gives, closed after; `none` when it cannot be opened. */
export const withDir = <A>(open: () => Dir, f: (dir: Dir) => A, none: A): A => {
  let dir: Dir
  try {
    dir = open()
  } catch {
    return none
  }
  try {
    return f(dir)
  } finally {
    closeDir(dir)
  }
}

export const memoryFilesIn = (root: string, allowHardLinks: boolean): ReadonlyArray<MemoryOnDisk> =>
  withDir(
    () => openRoot(root),
    (base) =>
      MEMORY_TIERS.flatMap((tier) =>
        withDir(
          () => walk(base, MEMORY_DIRS[tier].split("/"), false),
          (dir) =>
            listAt(dir)
              .filter((e) => e.isFile() && e.name.endsWith(".md"))
              .map((e) => e.name)
              .sort()
              .flatMap((name): ReadonlyArray<MemoryOnDisk> => {
                try {
                  const read = readFileAt(dir, name, MEMORY_READ_MAX, name, allowHardLinks)
                  return [{ tier, name, bytes: read.bytes, size: read.size, cut: read.cut }]
                } catch {
                  return []
                }
              }),
          [],
        ),
      ),
    [],
  )
