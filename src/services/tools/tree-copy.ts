/**
 * Copying a folder tree that a model filled: by descriptor, never following a link, bounded, off the event loop.
 *
 * Contract: `copyTree(src, dst, options)` copies the tree `src` into `dst`
 * (made here; it must not exist). Each folder is opened from its parent's
 * descriptor with `O_NOFOLLOW | O_DIRECTORY` (`confined-fs.ts`, `at`), each
 * entry is looked at with `lstat`, and only real folders are entered:
 * - a symlink is copied as a symlink, its target text unchanged (`readlink`,
 *   `symlink`), never resolved, wherever it points (`.`, `..`, `/`, itself);
 * - a regular file is read from a descriptor opened with
 *   `O_NOFOLLOW | O_NONBLOCK` and checked on that descriptor (still regular,
 *   still the entry that was looked at), so a file swapped for a link or a
 *   FIFO meanwhile is left out, never followed nor waited on; a file with
 *   more than one name (a hard link) is left out, as is one that cannot be
 *   read (the agent made it so, or removed it meanwhile);
 * - a file over 1 MiB whose allocated blocks are fewer than half its size
 *   (*sparse*) is copied sparse: its first `size` bytes are read, runs of
 *   zeros are not written, and the size is set at the end, so a 2 GB hole
 *   costs no disk; other files are copied by the kernel (`copyFile` from the
 *   opened descriptor, a reflink where the filesystem has them), as many
 *   bytes as the file had when the copy began (a file that grows meanwhile
 *   costs no more);
 * - devices, sockets and FIFOs are left out, never opened.
 *
 * Bounds (`TreeLimits`): the entries copied (files, folders and links),
 * the depth of folders, and the bytes of files, each file counted by its size
 * (a sparse file by its whole size: the copy still reads every byte). A tree
 * over a bound fails with `TreeOverLimit` (a closed reason) as soon as the
 * walk sees it, and leaves `dst` half made. Every step is an asynchronous
 * call, so timers and signals act during a copy; `signal` aborts it between
 * two steps.
 *
 * `previous` (an earlier copy made by massgen, which nothing else writes):
 * a file whose identity (size, times, inode) is the one `previous.manifest`
 * has for its path is hard-linked from there instead of copied.
 */
import { type BigIntStats, constants } from "node:fs"
import { copyFile, type FileHandle, link, lstat, mkdir, open, readdir, readlink, symlink } from "node:fs/promises"
import * as nodePath from "node:path"
import { DEFAULT_WORKSPACE_LIMITS, type WorkspaceLimits } from "../../domain/config/index.ts"
import { at, type Dir, hasProcFd } from "./confined-fs.ts"

/** `maxFiles`: entries (files, folders, links); `maxDepth`: folders inside folders (a file at the top is at depth 0); `maxBytes`: the files' sizes. */
export type TreeLimits = WorkspaceLimits
export const DEFAULT_TREE_LIMITS: TreeLimits = DEFAULT_WORKSPACE_LIMITS

export type OverLimitReason = "too_many_files" | "too_deep" | "too_large"

/** A tree over one of its bounds. */
export class TreeOverLimit extends Error {
  constructor(
    readonly reason: OverLimitReason,
    readonly limit: number,
  ) {
    super(
      reason === "too_many_files"
        ? `the workspace has more than ${limit} files, folders and links (workspace_limits.max_files)`
        : reason === "too_deep"
          ? `the workspace has folders more than ${limit} deep (workspace_limits.max_depth)`
          : `the workspace's files hold more than ${limit} bytes (workspace_limits.max_bytes)`,
    )
  }
}

/** A file's identity at a copy: when it is the same at the next copy, the file did not change. */
export type Manifest = ReadonlyMap<string, string>

export interface TreeCopy {
  readonly files: number
  readonly bytes: number
  /** The regular files copied, by path relative to the tree (platform separators). */
  readonly manifest: Manifest
}

export interface CopyOptions {
  readonly limits?: TreeLimits
  readonly previous?: { readonly dir: string; readonly manifest: Manifest }
  readonly signal?: AbortSignal
}

const O = constants
const DIR_FLAGS = O.O_RDONLY | O.O_DIRECTORY | (O.O_NOFOLLOW ?? 0)
const READ_FLAGS = O.O_RDONLY | (O.O_NOFOLLOW ?? 0) | (O.O_NONBLOCK ?? 0) | (O.O_NOCTTY ?? 0)
const CREATE_FLAGS = O.O_WRONLY | O.O_CREAT | O.O_EXCL | (O.O_NOFOLLOW ?? 0)

/** Files copied at once: the copies wait on the disk, not on this thread. */
const COPY_CONCURRENCY = 16
const CHUNK = 1 << 20
const ZEROS = Buffer.alloc(CHUNK)

/** A file is sparse when fewer than half its bytes have blocks. */
const isSparse = (st: BigIntStats): boolean => st.size > BigInt(CHUNK) && st.blocks * 512n < st.size / 2n

const identity = (st: BigIntStats): string => `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`

/** The codes of an entry the agent made unreadable, removed, or swapped meanwhile: it is left out. */
const LEFT_OUT = new Set(["EACCES", "EPERM", "ENOENT", "ELOOP", "ENOTDIR", "ENXIO", "EISDIR"])
const leftOut = (e: unknown): boolean => LEFT_OUT.has((e as { code?: string }).code ?? "")
/** What `work` gives, or null when its entry is left out. */
const unlessLeftOut = <T>(work: Promise<T>): Promise<T | null> => work.catch((e: unknown) => (leftOut(e) ? null : Promise.reject(e)))

const limiter = (n: number) => {
  let active = 0
  const waiting: Array<() => void> = []
  return async <T>(work: () => Promise<T>): Promise<T> => {
    while (active >= n) await new Promise<void>((resolve) => waiting.push(resolve))
    active += 1
    try {
      return await work()
    } finally {
      active -= 1
      waiting.shift()?.()
    }
  }
}

const openDir = async (path: string): Promise<{ readonly handle: FileHandle; readonly dir: Dir }> => {
  const handle = await open(path, DIR_FLAGS)
  return { handle, dir: { fd: handle.fd, path } }
}

/** Copies the first `size` bytes of `from` to `to` (a file that grows meanwhile costs no more), writing no run of zeros: a hole stays a hole. */
const copyBytes = async (from: FileHandle, to: FileHandle, size: number, signal?: AbortSignal): Promise<void> => {
  const buffer = Buffer.allocUnsafe(Math.max(1, Math.min(CHUNK, size)))
  let written = 0
  for (let position = 0; position < size; ) {
    signal?.throwIfAborted()
    const { bytesRead } = await from.read(buffer, 0, Math.min(buffer.length, size - position), position)
    if (bytesRead === 0) break
    const part = buffer.subarray(0, bytesRead)
    if (!part.equals(ZEROS.subarray(0, bytesRead))) {
      await to.write(part, 0, bytesRead, position)
      written = position + bytesRead
    }
    position += bytesRead
  }
  if (written < size) await to.truncate(size)
}

/** Copies the tree `src` to `dst` (which must not exist). */
export const copyTree = async (src: string, dst: string, options: CopyOptions = {}): Promise<TreeCopy> => {
  const limits = options.limits ?? DEFAULT_TREE_LIMITS
  const { previous, signal } = options
  const manifest = new Map<string, string>()
  const sizes = new Map<string, number>()
  const limit = limiter(COPY_CONCURRENCY)
  let entries = 0
  let bytes = 0
  const copyFileAt = async (from: Dir, to: Dir, name: string, rel: string, st: BigIntStats): Promise<void> => {
    signal?.throwIfAborted()
    const id = identity(st)
    if (previous?.manifest.get(rel) === id) {
      const linked = await link(nodePath.join(previous.dir, rel), at(to, name)).then(
        () => true,
        () => false,
      )
      if (linked) return void (manifest.set(rel, id), sizes.set(rel, Number(st.size)))
    }
    const source = await unlessLeftOut(open(at(from, name), READ_FLAGS))
    if (source === null) return
    try {
      const now = await source.stat({ bigint: true })
      if (!now.isFile() || now.ino !== st.ino || now.dev !== st.dev || now.nlink > 1n) return
      const size = Number(now.size)
      if (!hasProcFd() || isSparse(now)) {
        const target = await open(at(to, name), CREATE_FLAGS, Number(now.mode & 0o777n))
        try {
          await copyBytes(source, target, size, signal)
        } finally {
          await target.close()
        }
      } else {
        // By the kernel, from the descriptor itself (no name is looked up again), as many bytes as the file had when it began.
        await copyFile(`/proc/self/fd/${source.fd}`, at(to, name), O.COPYFILE_EXCL | O.COPYFILE_FICLONE)
      }
      manifest.set(rel, identity(now))
      sizes.set(rel, size)
    } catch (e) {
      if (!leftOut(e)) throw e
    } finally {
      await source.close()
    }
  }

  const copyDir = async (from: Dir, to: Dir, relDir: string, depth: number): Promise<void> => {
    const names = (await readdir(at(from))).sort()
    const files: Array<Promise<void>> = []
    try {
      for (const name of names) {
        signal?.throwIfAborted()
        const rel = relDir === "" ? name : nodePath.join(relDir, name)
        const st = await unlessLeftOut(lstat(at(from, name), { bigint: true }))
        if (st === null) continue
        if (!(st.isDirectory() || st.isSymbolicLink() || st.isFile())) continue
        if (st.isFile() && st.nlink > 1n) continue
        entries += 1
        if (entries > limits.maxFiles) throw new TreeOverLimit("too_many_files", limits.maxFiles)
        if (st.isSymbolicLink()) {
          // As bytes: the target is copied to the letter, whatever its encoding.
          const target = await unlessLeftOut(readlink(at(from, name), { encoding: "buffer" }))
          if (target !== null) await symlink(target, at(to, name))
        } else if (st.isFile()) {
          bytes += Number(st.size)
          if (bytes > limits.maxBytes) throw new TreeOverLimit("too_large", limits.maxBytes)
          files.push(limit(() => copyFileAt(from, to, name, rel, st)))
        } else {
          if (depth + 1 > limits.maxDepth) throw new TreeOverLimit("too_deep", limits.maxDepth)
          const child = await unlessLeftOut(openDir(at(from, name)))
          if (child === null) continue
          try {
            await mkdir(at(to, name), { mode: 0o700 })
            const made = await openDir(at(to, name))
            try {
              await copyDir(child.dir, made.dir, rel, depth + 1)
            } finally {
              await made.handle.close()
            }
          } finally {
            await child.handle.close()
          }
        }
      }
    } finally {
      // Every copy started from this folder's descriptors ends before they close.
      const settled = await Promise.allSettled(files)
      const failed = settled.find((s) => s.status === "rejected")
      if (failed !== undefined) throw failed.reason
    }
  }

  await mkdir(dst, { recursive: true, mode: 0o700 })
  // A workspace that is gone, or was swapped for a link (local mode), is copied as empty.
  const root = await unlessLeftOut(openDir(src))
  if (root !== null) {
    const made = await openDir(dst)
    try {
      await copyDir(root.dir, made.dir, "", 0)
    } finally {
      await made.handle.close()
      await root.handle.close()
    }
  }
  return { files: sizes.size, bytes: [...sizes.values()].reduce((a, b) => a + b, 0), manifest }
}
