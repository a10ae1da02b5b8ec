/**
 * Confinement of the paths an agent's file tools are given: which real file a path names, or why it is refused.
 *
 * An agent names files three ways (`docs/workspaces.md`):
 * - a relative path (`notes.md`, `src/a.ts`): in its own workspace;
 * - `temp_workspaces/<label>/...`: in the snapshot of answer `<label>`, when
 *   its round shows that answer (read only);
 * - `.agent/skills/<skill>/...`: in the copies of the skills the run offers
 *   (`use_skills`), read only;
 * - an absolute path inside a context path (read only, but for the presenter
 *   after the vote on a `write` path, outside its `protected_paths`); where
 *   context paths lie inside one another, the innermost that holds it decides.
 * Any other path is refused: a control character (a newline, an escape: it
 * would forge lines of massgen's output), a `..` segment, an absolute path
 * outside every context path, a snapshot the agent was not shown, a write
 * where writing is not allowed. A refusal's message quotes the path as the
 * agent gave it (JSON-escaped when it holds a control character) and never a
 * real path of the log directory. This is the lexical half: the file tools
 * then walk the path by descriptor, refusing every symlink, and judge a
 * context write again on the real path (`services/tools/file-tools.ts`). Pure.
 *
 * Words: the *roots* of an agent are the folders its tools may touch; a
 * path's *kind* says which root it is in.
 */
import * as path from "node:path"
import type { ContextPathSetting } from "../events/index.ts"

/** The top folder under which an agent finds the snapshots of the answers it is shown. */
export const TEMP_WORKSPACES = "temp_workspaces"

export interface AgentRoots {
  /** The agent's own workspace (absolute), or null when its backend sets no `cwd`. */
  readonly workspace: string | null
  /** The snapshots the agent may read: answer label to absolute folder. */
  readonly snapshots: ReadonlyMap<string, string>
  readonly contextPaths: ReadonlyArray<ContextPathSetting>
  /** True for the presenter, after the vote: it may write to `write` context paths. */
  readonly mayWriteContext: boolean
  /** The copies of the skills a run offers (`use_skills`), absolute; read-only as `.agent/skills/...`. Absent: none. */
  readonly skills?: string | null
}

export type Access = "read" | "write"

export type PathKind = "workspace" | "snapshot" | "context" | "skills" | "snapshots_root"

export type Resolved =
  | {
      readonly _tag: "ok"
      readonly kind: PathKind
      /** The path (absolute), as written below its root: no symlink is followed to make it. */
      readonly real: string
      /** The root it is in (absolute): the workspace, the snapshot's folder, or the context path. */
      readonly root: string
    }
  | { readonly _tag: "refused"; readonly reason: string }

const refused = (reason: string): Resolved => ({ _tag: "refused", reason })

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** Whether `text` holds a control character (C0, DEL, C1), which no file name the tools take may hold. */
export const hasControlCharacter = (text: string): boolean => CONTROL.test(text)

/** `given` as a message quotes it: as written, or JSON-escaped when it holds a control character. */
export const shownPath = (given: string): string => (CONTROL.test(given) ? JSON.stringify(given) : given)

/** Whether `child` is `parent` or inside it (both absolute and normalised). */
export const isInside = (child: string, parent: string): boolean => {
  const rel = path.relative(parent, child)
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel))
}

/** Resolves `given` (as the model wrote it) for `access` within `roots`, or says why not. */
export const resolveToolPath = (raw: string, roots: AgentRoots, access: Access): Resolved => {
  const given = shownPath(raw)
  const text = raw.trim()
  if (text === "") return refused("an empty path")
  if (text.includes("\0")) return refused(`${given} holds a NUL character`)
  if (CONTROL.test(text)) return refused(`${given}: a file name may not hold a control character`)
  const segments = text.split(/[/\\]+/)
  if (segments.includes("..")) return refused(`${given}: a path may not contain ".."`)
  if (path.isAbsolute(text)) return resolveAbsolute(given, path.normalize(text), roots, access)
  const parts = segments.filter((s) => s !== "" && s !== ".")
  if (parts[0] === TEMP_WORKSPACES) {
    if (parts.length === 1)
      return access === "read" ? { _tag: "ok", kind: "snapshots_root", real: "", root: "" } : refused(`${given} is read-only`)
    const label = parts[1]!
    const dir = roots.snapshots.get(label)
    if (dir === undefined) return refused(`${TEMP_WORKSPACES}/${label} is not the snapshot of an answer you were shown`)
    if (access === "write") return refused(`${given} is read-only: it is in the snapshot of answer ${label}`)
    return { _tag: "ok", kind: "snapshot", real: path.join(dir, ...parts.slice(2)), root: dir }
  }
  if (parts[0] === ".agent" && parts[1] === "skills" && roots.skills != null) {
    if (access === "write") return refused(`${given} is read-only: it is in the skills the run offers`)
    return { _tag: "ok", kind: "skills", real: path.join(roots.skills, ...parts.slice(2)), root: roots.skills }
  }
  if (roots.workspace === null)
    return refused(`${given}: you have no workspace (the agent's backend sets no cwd); use an absolute path in a context path`)
  return { _tag: "ok", kind: "workspace", real: path.join(roots.workspace, ...parts), root: roots.workspace }
}

const resolveAbsolute = (given: string, abs: string, roots: AgentRoots, access: Access): Resolved => {
  // The innermost context path that holds it decides (a `write` folder inside a `read` one, or the reverse).
  const context = roots.contextPaths
    .filter((c) => isInside(abs, c.path))
    .reduce<ContextPathSetting | undefined>((best, c) => (best === undefined || c.path.length > best.path.length ? c : best), undefined)
  if (context === undefined) return refused(`${given} is outside your workspace and every context path`)
  if (access === "read") return { _tag: "ok", kind: "context", real: abs, root: context.path }
  if (!roots.mayWriteContext) return refused(`${given} is in a context path, which only the presenter may write to, after the vote`)
  if (context.permission !== "write") return refused(`${given} is in a read-only context path`)
  const guarded = context.protected_paths.find((p) => isInside(abs, path.resolve(context.path, p)))
  if (guarded !== undefined) return refused(`${given} is protected (protected_paths: ${guarded})`)
  return { _tag: "ok", kind: "context", real: abs, root: context.path }
}
