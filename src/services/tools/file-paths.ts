/**
 * The paths of the file tools, walked by descriptor: what a path names once it is opened, or why it is refused.
 *
 * `locate(roots, path, access)` checks a path lexically
 * (`domain/workspaces/paths.ts`), then opens its root (the workspace, the
 * snapshot, or the context path, following the user's own links to it; a
 * `write` context path not made yet is opened at its deepest existing
 * folder) and walks the folders below it one name at a time, refusing a
 * symlink (`confined-fs.ts`), as far as they exist: an `Opened` path holds
 * the descriptor of its deepest folder there, the folders still missing
 * (made only when a write is done: `folderOf`), and its last name. A context
 * write is judged again on the real path the walk reached
 * (`realPathOf(folder)`, the missing folders, the name) against every
 * context path and protected path resolved to its real path. Outside
 * snapshots a file with more than one name is refused. `toolError` turns a
 * `ConfinedFsError` into the tool's `ToolRunError`, naming the path as given
 * and never an absolute one. `removeWriteTemporaries` clears, on resume,
 * the temporary files a stop left beside the recorded context writes.
 *
 * Words: a path's *root* is the folder its kind names; `rel` is the path
 * below it, as messages show it.
 */
import { realpathSync } from "node:fs"
import * as nodePath from "node:path"
import type { ContextPathSetting } from "../../domain/events/index.ts"
import { type Access, type AgentRoots, isInside, resolveToolPath, shownPath } from "../../domain/workspaces/paths.ts"
import {
  ConfinedFsError,
  closeDir,
  type Dir,
  isWriteTemporary,
  listAt,
  lstatAt,
  openDirAt,
  openRoot,
  realPathOf,
  removeAt,
  walk,
} from "./confined-fs.ts"
import { ToolRunError } from "./tool-provider.ts"

export const fail = (reason: "failed" | "refused" | "bad_arguments", detail: string) => new ToolRunError({ reason, detail })

/**
 * A path walked as far as it exists: `dir` is its deepest folder there
 * (`root` when none below), `missing` the folders after it that are not
 * there yet (a write makes them), `name` its last part (null: the root
 * itself). `rel` is the path below the root, for messages; `path` the
 * absolute path as written (the context-write events name it).
 */
export interface Opened {
  readonly kind: "workspace" | "snapshot" | "context" | "skills"
  readonly given: string
  readonly path: string
  readonly rel: string
  readonly root: Dir
  readonly dir: Dir
  readonly missing: ReadonlyArray<string>
  readonly name: string | null
}

export const close = (o: Opened): void => {
  if (o.dir !== o.root) closeDir(o.dir)
  closeDir(o.root)
}

/** A `ConfinedFsError` (or anything thrown) as the tool's error, naming the path as given. */
export const toolError = (e: unknown, given: string, rel: string, verb: string): ToolRunError => {
  if (e instanceof ToolRunError) return e
  if (!(e instanceof ConfinedFsError)) return fail("failed", `cannot ${verb} ${given}: ${(e as { code?: string }).code ?? String(e)}`)
  // A part of the path as given; never an absolute path (a folder of the log directory).
  const where = e.path === rel || e.path === "" || nodePath.isAbsolute(e.path) ? "" : `${e.path}: `
  switch (e.reason) {
    case "symlink":
    case "bad_name":
    case "special":
    case "hard_link":
    case "too_large":
      return fail("refused", `${given}: ${where}${e.detail}`)
    case "exists":
      return fail("failed", `${given} exists`)
    default:
      return fail("failed", `cannot ${verb} ${given}: ${where}${e.detail}`)
  }
}

/** The real path of `p`: its deepest existing part with symlinks followed, and the rest as written (the user's own paths). */
const realOf = (p: string): string => {
  for (let at = p; ; ) {
    try {
      return nodePath.join(realpathSync(at), nodePath.relative(at, p))
    } catch {
      const up = nodePath.dirname(at)
      if (up === at) return p
      at = up
    }
  }
}

/**
 * Refuses a context write whose real target is not in a `write` context path
 * (the innermost context path that holds it decides, each resolved to its
 * real path) or is in a protected path of any context path that holds it.
 */
const guardContextWrite = (contextPaths: ReadonlyArray<ContextPathSetting>, real: string, given: string): void => {
  const holding = contextPaths.map((c) => ({ c, root: realOf(c.path) })).filter((h) => isInside(real, h.root))
  // Of two that are the same folder, a read one wins.
  const innermost = holding.reduce<(typeof holding)[number] | undefined>(
    (best, h) =>
      best === undefined || h.root.length > best.root.length || (h.root.length === best.root.length && h.c.permission !== "write")
        ? h
        : best,
    undefined,
  )
  if (innermost !== undefined && innermost.c.permission !== "write") throw fail("refused", `${given} is in a read-only context path`)
  for (const { c } of holding) {
    const guarded = c.protected_paths.find((p) => isInside(real, realOf(nodePath.resolve(c.path, p))))
    if (guarded !== undefined) throw fail("refused", `${given} is protected (protected_paths: ${guarded})`)
  }
}

/** Opens the root at `path`; a missing context root of a write is opened at its deepest existing folder, the rest to be made. */
const openBase = (path: string, mayBeMissing: boolean, given: string): { readonly root: Dir; readonly above: ReadonlyArray<string> } => {
  const above: Array<string> = []
  for (let at = path; ; ) {
    try {
      return { root: openRoot(at), above }
    } catch (e) {
      const up = nodePath.dirname(at)
      const missing = e instanceof ConfinedFsError && e.reason === "missing"
      if (!missing || !mayBeMissing || up === at)
        throw fail("failed", `cannot reach ${given}: ${missing ? "no such file" : "its folder cannot be opened"}`)
      above.unshift(nodePath.basename(at))
      at = up
    }
  }
}

/** Walks `given` for `access` (lexical check first), or throws the refusal; null for `temp_workspaces` itself. The caller closes what it returns. */
export const locate = (roots: AgentRoots, raw: string, access: Access): Opened | null => {
  const resolved = resolveToolPath(raw, roots, access)
  if (resolved._tag === "refused") throw fail("refused", resolved.reason)
  if (resolved.kind === "snapshots_root") return null
  const kind = resolved.kind
  const given = shownPath(raw)
  const rel = nodePath.relative(resolved.root, resolved.real)
  const parts = rel === "" ? [] : rel.split(nodePath.sep)
  const shown = rel.split(nodePath.sep).join("/")
  const { root, above } = openBase(resolved.root, kind === "context" && access === "write", given)
  const way = [...above, ...parts.slice(0, -1)]
  const name = parts.length === 0 ? null : parts[parts.length - 1]!
  let dir = root
  try {
    let i = 0
    for (; i < way.length && lstatAt(dir, way[i]!) !== undefined; i++) {
      const next = openDirAt(dir, way[i]!, [...way.slice(above.length, i + 1)].join("/") || given)
      if (dir !== root) closeDir(dir)
      dir = next
    }
    const opened: Opened = { kind, given, path: resolved.real, rel: shown, root, dir, missing: way.slice(i), name }
    if (kind === "context" && access === "write")
      guardContextWrite(roots.contextPaths, nodePath.join(realPathOf(dir), ...opened.missing, name ?? ""), given)
    const st = name === null || opened.missing.length > 0 ? undefined : lstatAt(dir, name)
    if (kind !== "snapshot" && st?.isFile() === true && st.nlink > 1) {
      throw fail("refused", `${given} is a hard link (a file with ${st.nlink} names), which tools do not ${access}`)
    }
    return opened
  } catch (e) {
    if (dir !== root) closeDir(dir)
    closeDir(root)
    throw toolError(e, given, shown, access)
  }
}

/** The opened folder that holds `o`'s file; with `make`, the missing folders are made first (never through a link). */
export const folderOf = <A>(o: Opened, make: boolean, verb: string, f: (dir: Dir, name: string) => A): A => {
  if (o.name === null) throw fail("failed", `cannot ${verb} ${o.given}: it is a folder`)
  if (o.missing.length > 0 && !make) throw fail("failed", `cannot ${verb} ${o.given}: no such file`)
  const dir = o.missing.length === 0 ? o.dir : walk(o.dir, o.missing, true)
  try {
    return f(dir, o.name)
  } finally {
    if (dir !== o.dir) closeDir(dir)
  }
}

/**
 * Removes, by descriptor, the temporary files that writes of the context
 * files `paths` left (a stop mid-write) in each file's folder: only names
 * `isWriteTemporary` gives as a temporary file of that file, and only
 * regular files. A folder that cannot be reached is skipped. Returns how many
 * were removed.
 */
export const removeWriteTemporaries = (contextPaths: ReadonlyArray<ContextPathSetting>, paths: ReadonlyArray<string>): number => {
  let removed = 0
  const byFolder = new Map<string, Set<string>>()
  for (const p of paths) byFolder.set(nodePath.dirname(p), (byFolder.get(nodePath.dirname(p)) ?? new Set()).add(nodePath.basename(p)))
  for (const [folder, names] of byFolder) {
    const context = contextPaths.find((c) => isInside(folder, c.path))
    if (context === undefined) continue
    let root: Dir | undefined
    let dir: Dir | undefined
    try {
      root = openRoot(context.path)
      const rel = nodePath.relative(context.path, folder)
      dir = walk(root, rel === "" ? [] : rel.split(nodePath.sep))
      for (const entry of listAt(dir)) {
        if (![...names].some((n) => isWriteTemporary(entry.name, n)) || lstatAt(dir, entry.name)?.isFile() !== true) continue
        removeAt(dir, entry.name)
        removed += 1
      }
    } catch {
      // gone, or not a plain folder any more: nothing of ours to remove there
    } finally {
      if (dir !== undefined && dir !== root) closeDir(dir)
      if (root !== undefined) closeDir(root)
    }
  }
  return removed
}
