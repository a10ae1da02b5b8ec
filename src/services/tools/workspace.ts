/**
 * Workspaces on disk: the agents' folders in the log directory, their snapshots, and the final copy.
 *
 * `Workspaces` (a service; the live layer is `Workspaces.live(logDir, agents)`)
 * knows which agents have a workspace (their backend sets `cwd`) and where it
 * is (`domain/workspaces.ts` has the layout). `snapshot(agent, label)` copies
 * the agent's workspace to `snapshot_storage/<label>/` and `finalize` copies
 * the winner's files to `final/<agent>/workspace/`; each copy is made in a
 * temporary folder and renamed into place, so a folder under its final name
 * is whole. The orchestrator appends the event that names a copy after it,
 * so a copy a crash left without its event is an orphan, replaced when the
 * answer is judged again. A snapshot never changes after: its files are
 * copies (reflinks where the filesystem has them), and files unchanged since
 * the agent's previous snapshot in this process (same size, times and inode)
 * are hard links to that snapshot's files, which nothing writes either. A file
 * of the workspace with more than one name (a hard link, maybe to a file
 * outside) and anything that is neither a file, a folder nor a symlink is
 * left out, and so is a file that cannot be read (the agent made it so, or
 * removed it meanwhile); symlinks are copied as they are (the file tools
 * never follow one: `file-tools.ts`).
 */
import {
  type Dirent,
  constants,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs"
import { copyFile } from "node:fs/promises"
import * as nodePath from "node:path"
import { Context, Effect, Layer, Schema } from "effect"
import type { Agent } from "../../domain/config.ts"
import { FINAL_LISTING_MAX, finalWorkspaceDir, snapshotDir, workspaceDir } from "../../domain/workspaces.ts"

export class WorkspaceError extends Schema.TaggedError<WorkspaceError>()("WorkspaceError", {
  reason: Schema.Literal("copy_failed"),
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `cannot copy the workspace to ${this.path}: ${this.detail}`
  }
}

/** What one copy made: its folder (relative to the log directory), its files and their bytes. */
export interface CopyFacts {
  readonly path: string
  readonly files: number
  readonly bytes: number
}

/** A file's identity at a copy: when it is the same at the next copy, the file did not change. */
type Manifest = ReadonlyMap<string, string>

interface TreeCopy {
  readonly files: number
  readonly bytes: number
  readonly manifest: Manifest
}

const identity = (st: { size: bigint; mtimeNs: bigint; ctimeNs: bigint; ino: bigint }): string => `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`

/** Files copied at once: the copies wait on the disk, not on this thread. */
const COPY_CONCURRENCY = 16

/** Copies the tree `src` to `dst` (which must not exist); files `previous` has with the same identity are linked from its folder. */
export const copyTree = async (src: string, dst: string, previous?: { readonly dir: string; readonly manifest: Manifest }): Promise<TreeCopy> => {
  mkdirSync(dst, { recursive: true })
  const manifest = new Map<string, string>()
  const copies: Array<readonly [string, string]> = []
  const sizes = new Map<string, number>()
  const entries: ReadonlyArray<Dirent> = existsSync(src) ? readdirSync(src, { recursive: true, withFileTypes: true }) : []
  for (const entry of entries) {
    const from = nodePath.join(entry.parentPath, entry.name)
    const rel = nodePath.relative(src, from)
    const to = nodePath.join(dst, rel)
    if (entry.isDirectory()) {
      mkdirSync(to, { recursive: true })
      continue
    }
    if (entry.isSymbolicLink()) {
      symlinkSync(readlinkSync(from), to)
      continue
    }
    if (!entry.isFile()) continue
    const st = lstatSync(from, { bigint: true })
    if (st.nlink > 1n) continue
    const id = identity(st)
    if (!(previous?.manifest.get(rel) === id && tryLink(nodePath.join(previous.dir, rel), to))) copies.push([from, to])
    manifest.set(rel, id)
    sizes.set(rel, Number(st.size))
  }
  let next = 0
  const worker = async () => {
    while (next < copies.length) {
      const [from, to] = copies[next++]!
      await copyFile(from, to, constants.COPYFILE_FICLONE).catch((e: unknown) => {
        // A file the agent made unreadable, or removed meanwhile, is left out; a full disk is the run's problem.
        const code = (e as { code?: string }).code
        if (code !== "EACCES" && code !== "EPERM" && code !== "ENOENT") throw e
        const rel = nodePath.relative(dst, to)
        manifest.delete(rel)
        sizes.delete(rel)
      })
    }
  }
  await Promise.all(Array.from({ length: Math.min(COPY_CONCURRENCY, copies.length) }, worker))
  return { files: sizes.size, bytes: [...sizes.values()].reduce((a, b) => a + b, 0), manifest }
}

const tryLink = (from: string, to: string): boolean => {
  try {
    linkSync(from, to)
    return true
  } catch {
    return false
  }
}

/** Copies `src` to `dst` (relative to `logDir`) through a temporary folder renamed into place; an orphan at `dst` is replaced. */
const copyInto = (logDir: string, src: string, dst: string, previous?: { readonly dir: string; readonly manifest: Manifest }) =>
  Effect.tryPromise({
    try: async (): Promise<TreeCopy & { path: string }> => {
      const target = nodePath.join(logDir, dst)
      const temp = `${target}.tmp-${process.pid}`
      rmSync(temp, { recursive: true, force: true })
      mkdirSync(nodePath.dirname(target), { recursive: true })
      const made = await copyTree(src, temp, previous)
      rmSync(target, { recursive: true, force: true })
      renameSync(temp, target)
      return { ...made, path: dst }
    },
    catch: (e) => new WorkspaceError({ reason: "copy_failed", path: dst, detail: e instanceof Error ? e.message : String(e) }),
  })

export interface WorkspacesService {
  /** The agent's workspace (absolute), or null when its backend sets no `cwd`. */
  readonly root: (agentId: string) => string | null
  /** Copies the agent's workspace for its answer `label`; null when it has none. */
  readonly snapshot: (agentId: string, label: string) => Effect.Effect<CopyFacts | null, WorkspaceError>
  /** Copies the winner's files to `final/<agent>/workspace/`: its workspace, or the snapshot of `label`; null when there is none. */
  readonly finalize: (agentId: string, label: string, source: "workspace" | "snapshot") => Effect.Effect<(CopyFacts & { readonly listing: ReadonlyArray<string> }) | null, WorkspaceError>
}

/** The absolute workspace of `agent` in `logDir`, or null when its backend sets no `cwd`. */
export const agentWorkspace = (logDir: string, agent: Agent): string | null =>
  agent.backend.cwd === undefined ? null : nodePath.join(logDir, workspaceDir(agent.anonId))

export class Workspaces extends Context.Tag("massgen/Workspaces")<Workspaces, WorkspacesService>() {
  /** The workspaces of `agents` in `logDir`, each made (empty) if missing. */
  static live(logDir: string, agents: ReadonlyArray<Agent>): Layer.Layer<Workspaces> {
    return Layer.sync(Workspaces, () => makeWorkspaces(logDir, agents))
  }
}

export const makeWorkspaces = (logDir: string, agents: ReadonlyArray<Agent>): WorkspacesService => {
  const roots = new Map(agents.flatMap((a) => {
    const root = agentWorkspace(logDir, a)
    return root === null ? [] : [[a.id, root] as const]
  }))
  for (const root of roots.values()) mkdirSync(root, { recursive: true, mode: 0o700 })
  /** The latest snapshot each agent made in this process, for the files it can share. */
  const latest = new Map<string, { readonly dir: string; readonly manifest: Manifest }>()
  return {
    root: (id) => roots.get(id) ?? null,
    snapshot: (id, label) => {
      const root = roots.get(id)
      if (root === undefined) return Effect.succeed(null)
      return Effect.map(copyInto(logDir, root, snapshotDir(label), latest.get(id)), (made) => {
        latest.set(id, { dir: nodePath.join(logDir, made.path), manifest: made.manifest })
        return { path: made.path, files: made.files, bytes: made.bytes }
      })
    },
    finalize: (id, label, source) => {
      const from = source === "workspace" ? roots.get(id) : nodePath.join(logDir, snapshotDir(label))
      if (from === undefined || !existsSync(from)) return Effect.succeed(null)
      return Effect.map(copyInto(logDir, from, finalWorkspaceDir(id)), (made) => ({
        path: made.path,
        files: made.files,
        bytes: made.bytes,
        listing: [...made.manifest.keys()].map((p) => p.split(nodePath.sep).join("/")).sort().slice(0, FINAL_LISTING_MAX),
      }))
    },
  }
}
