/**
 * Workspaces on disk: the agents' folders in the log directory, their snapshots, and the final copy.
 *
 * `Workspaces` (a service; the live layer is `Workspaces.live(logDir, agents, limits)`)
 * knows which agents have a workspace (their backend sets `cwd`) and where it
 * is (`domain/workspaces/facts.ts` has the layout). `snapshot(agent, label)` copies
 * the agent's workspace to `snapshot_storage/<label>/` and `finalize` copies
 * the winner's files to `final/<agent>/workspace/`; each copy is made in a
 * temporary folder (`<target>.tmp-<pid>`) and renamed into place, so a folder
 * under its final name is whole. The orchestrator appends the event that
 * names a copy after it, so a copy a crash left without its event is an
 * orphan, replaced when the answer is judged again. A half-made temporary
 * folder of any process is removed: when its process is gone
 * (`removeOrphanCopies`, which `resume` calls before it takes the run's lock,
 * so a disk such a copy filled is freed for the lock), and at every copy (the
 * run's lock is held then: no other process copies).
 *
 * The copy itself is `tree-copy.ts`: by descriptor, never following a link
 * (a symlink is copied as a symlink, its text unchanged), within the bounds
 * `limits` (`workspace_limits`), asynchronous and abortable. A snapshot never
 * changes after: its files are copies (reflinks where the filesystem has
 * them), and files unchanged since the agent's previous snapshot in this
 * process (same size, times and inode) are hard links to that snapshot's
 * files, which nothing writes either. A workspace over a bound is not copied:
 * the error's reason names the bound (`too_many_files`, `too_deep`,
 * `too_large`), and the orchestrator goes on without the copy.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs"
import * as nodePath from "node:path"
import { Context, Effect, Layer, Schema } from "effect"
import type { Agent } from "../../domain/config/index.ts"
import { FINAL_LISTING_MAX, finalWorkspaceDir, SNAPSHOTS_DIR, snapshotDir, workspaceDir } from "../../domain/workspaces/facts.ts"
import { copyTree, DEFAULT_TREE_LIMITS, type Manifest, type TreeCopy, type TreeLimits, TreeOverLimit } from "./tree-copy.ts"

export class WorkspaceError extends Schema.TaggedError<WorkspaceError>()("WorkspaceError", {
  /** `copy_failed`: the disk refused (full, read-only); the others: the workspace is over a bound of `workspace_limits`. */
  reason: Schema.Literal("copy_failed", "too_many_files", "too_deep", "too_large"),
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `cannot copy the workspace to ${this.path}: ${this.detail}`
  }
}

/** Whether the copy was refused for a bound: the run goes on without it. */
export const isOverLimit = (e: WorkspaceError): boolean => e.reason !== "copy_failed"

/** What one copy made: its folder (relative to the log directory), its files and their bytes. */
export interface CopyFacts {
  readonly path: string
  readonly files: number
  readonly bytes: number
}

const TEMPORARY = /\.tmp-(\d+)$/

const processGone = (pid: number): boolean => {
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return false
  } catch (e) {
    return (e as { code?: string }).code === "ESRCH"
  }
}

/** Removes the half-made copies (`<name>.tmp-<pid>`) in the folder `dir`: all of them, or only those whose process is gone. */
const removeTemporaries = (dir: string, which: "all" | "orphans"): void => {
  let names: ReadonlyArray<string>
  try {
    names = readdirSync(dir)
  } catch {
    return
  }
  for (const name of names) {
    const pid = TEMPORARY.exec(name)?.[1]
    if (pid === undefined || (which === "orphans" && !processGone(Number(pid)))) continue
    // rm does not follow a link inside the tree: a link is removed as a link.
    rmSync(nodePath.join(dir, name), { recursive: true, force: true })
  }
}

/** The folders where copies are made: `snapshot_storage/` and each `final/<agent>/`. */
const copyFolders = (logDir: string): ReadonlyArray<string> => {
  const snapshots = nodePath.join(logDir, SNAPSHOTS_DIR)
  const finals = nodePath.join(logDir, "final")
  let agents: ReadonlyArray<string> = []
  try {
    agents = readdirSync(finals).filter((a) => lstatSync(nodePath.join(finals, a)).isDirectory())
  } catch {
    // no final copy yet
  }
  return [snapshots, ...agents.map((a) => nodePath.join(finals, a))]
}

/** Removes the half-made copies in `logDir` of processes that are gone (any time: a live process's copies are kept). */
export const removeOrphanCopies = (logDir: string): void => {
  for (const folder of copyFolders(logDir)) removeTemporaries(folder, "orphans")
}

/** Copies `src` to `dst` (relative to `logDir`) through a temporary folder renamed into place; an orphan at `dst` is replaced. */
const copyInto = (
  logDir: string,
  src: string,
  dst: string,
  limits: TreeLimits,
  previous?: { readonly dir: string; readonly manifest: Manifest },
) =>
  Effect.tryPromise({
    try: async (signal): Promise<TreeCopy & { path: string }> => {
      const target = nodePath.join(logDir, dst)
      mkdirSync(nodePath.dirname(target), { recursive: true })
      removeTemporaries(nodePath.dirname(target), "all")
      const temp = `${target}.tmp-${process.pid}`
      try {
        const made = await copyTree(src, temp, { limits, signal, ...(previous ? { previous } : {}) })
        rmSync(target, { recursive: true, force: true })
        renameSync(temp, target)
        return { ...made, path: dst }
      } catch (e) {
        rmSync(temp, { recursive: true, force: true })
        throw e
      }
    },
    catch: (e) =>
      e instanceof TreeOverLimit
        ? new WorkspaceError({ reason: e.reason, path: dst, detail: e.message })
        : new WorkspaceError({ reason: "copy_failed", path: dst, detail: e instanceof Error ? e.message : String(e) }),
  })

export interface WorkspacesService {
  /** The agent's workspace (absolute), or null when its backend sets no `cwd`. */
  readonly root: (agentId: string) => string | null
  /** Copies the agent's workspace for its answer `label`; null when it has none. */
  readonly snapshot: (agentId: string, label: string) => Effect.Effect<CopyFacts | null, WorkspaceError>
  /** Copies the winner's files to `final/<agent>/workspace/`: its workspace, or the snapshot of `label`; null when there is none. */
  readonly finalize: (
    agentId: string,
    label: string,
    source: "workspace" | "snapshot",
  ) => Effect.Effect<(CopyFacts & { readonly listing: ReadonlyArray<string> }) | null, WorkspaceError>
}

/** The absolute workspace of `agent` in `logDir`, or null when its backend sets no `cwd`. */
export const agentWorkspace = (logDir: string, agent: Agent): string | null =>
  agent.backend.cwd === undefined ? null : nodePath.join(logDir, workspaceDir(agent.anonId))

export class Workspaces extends Context.Tag("massgen/Workspaces")<Workspaces, WorkspacesService>() {
  /** The workspaces of `agents` in `logDir`, each made (empty) if missing; copies within `limits`. */
  static live(logDir: string, agents: ReadonlyArray<Agent>, limits: TreeLimits = DEFAULT_TREE_LIMITS): Layer.Layer<Workspaces> {
    return Layer.sync(Workspaces, () => makeWorkspaces(logDir, agents, limits))
  }
}

export const makeWorkspaces = (
  logDir: string,
  agents: ReadonlyArray<Agent>,
  limits: TreeLimits = DEFAULT_TREE_LIMITS,
): WorkspacesService => {
  const roots = new Map(
    agents.flatMap((a) => {
      const root = agentWorkspace(logDir, a)
      return root === null ? [] : [[a.id, root] as const]
    }),
  )
  for (const root of roots.values()) mkdirSync(root, { recursive: true, mode: 0o700 })
  removeOrphanCopies(logDir)
  /** The latest snapshot each agent made in this process, for the files it can share. */
  const latest = new Map<string, { readonly dir: string; readonly manifest: Manifest }>()
  return {
    root: (id) => roots.get(id) ?? null,
    snapshot: (id, label) => {
      const root = roots.get(id)
      if (root === undefined) return Effect.succeed(null)
      return Effect.map(copyInto(logDir, root, snapshotDir(label), limits, latest.get(id)), (made) => {
        latest.set(id, { dir: nodePath.join(logDir, made.path), manifest: made.manifest })
        return { path: made.path, files: made.files, bytes: made.bytes }
      })
    },
    finalize: (id, label, source) => {
      const from = source === "workspace" ? roots.get(id) : nodePath.join(logDir, snapshotDir(label))
      if (from === undefined || !existsSync(from)) return Effect.succeed(null)
      return Effect.map(copyInto(logDir, from, finalWorkspaceDir(id), limits), (made) => ({
        path: made.path,
        files: made.files,
        bytes: made.bytes,
        listing: [...made.manifest.keys()]
          .map((p) => p.split(nodePath.sep).join("/"))
          .sort()
          .slice(0, FINAL_LISTING_MAX),
      }))
    },
  }
}
