/**
 * File operations that a symlink cannot redirect: every path is opened component by component from a descriptor.
 *
 * A *dir* (`Dir`) is a folder opened by descriptor. `openRoot(path)` opens a
 * confined root (a workspace, a snapshot, a context path: a folder the user or
 * massgen chose, so its own path may hold symlinks); `walk(root, parts)`
 * descends from it one name at a time with `O_NOFOLLOW | O_DIRECTORY`, so a
 * symlink anywhere below the root is refused (`ConfinedFsError` reason
 * `symlink`), never followed, whatever another process swaps in meanwhile.
 * Every other operation names one entry of an opened dir (`at(dir, name)`)
 * and acts on that entry, never on a path re-resolved from text:
 * - `readFileAt` reads only a regular file: the entry is looked at with
 *   `lstat` first (a FIFO, device or socket, reason `special`, or a folder is
 *   refused before any open that could block), opened with `O_NOFOLLOW | O_NONBLOCK`, checked
 *   again on the descriptor (same file, still regular), and read from that
 *   descriptor up to a cap, streaming: a 1 GB file costs the cap, not 1 GB.
 * - `writeFileAt` writes a temporary file created exclusively
 *   (`O_CREAT | O_EXCL | O_NOFOLLOW`, a random name) in the opened parent and
 *   renames it over the entry; a file it replaces keeps its mode and, where
 *   the process may set it, its owner.
 * - `removeAt` deletes a tree without following a link in it; `renameAt`,
 *   `mkdirAt`, `listAt`, `lstatAt` act on entries of opened dirs.
 *
 * How an entry is named: on Linux `at(dir, name)` is
 * `/proc/self/fd/<fd>/<name>`: the kernel resolves the folder from the
 * descriptor (what `openat(2)` does, without a native helper), and only the
 * last name is looked up, never followed where the call would follow it
 * (`O_NOFOLLOW`, `lstat`, `rename`, `unlink`, `mkdir` do not follow a last
 * name). Where `/proc/self/fd` is missing (macOS, Windows) a dir keeps the
 * real path it was opened at and `at` joins the name to it: each name is
 * still refused when it is a link, but a folder swapped for a link between
 * two steps is not seen (docs/workspaces.md says so).
 *
 * Names (`checkName`): one path component, not empty, `.` or `..`, without
 * `/`, `\` or a control character (C0, DEL, C1), since a name with a newline
 * forges lines of massgen's own output.
 */
import {
  closeSync,
  constants,
  type Dirent,
  fchmodSync,
  fchownSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  type Stats,
  unlinkSync,
  writeSync,
} from "node:fs"
import * as nodePath from "node:path"
import { Schema } from "effect"
import { hasControlCharacter } from "../../domain/workspaces/paths.ts"
import { readFdUpTo } from "../../lib/read-fd-up-to.ts"

export class ConfinedFsError extends Schema.TaggedError<ConfinedFsError>()("ConfinedFsError", {
  reason: Schema.Literal(
    "symlink",
    "bad_name",
    "not_folder",
    "not_regular",
    "special",
    "missing",
    "exists",
    "hard_link",
    "too_large",
    "io",
  ),
  /** The entry as the caller named it (a relative path, or the name). */
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `${this.path}: ${this.detail}`
  }
}

/** A folder opened by descriptor. `path` is where it was when opened (for messages and the fallback without `/proc`). */
export interface Dir {
  readonly fd: number
  readonly path: string
}

const O = constants
const DIR_FLAGS = O.O_RDONLY | O.O_DIRECTORY | (O.O_NOFOLLOW ?? 0)
const READ_FLAGS = O.O_RDONLY | (O.O_NOFOLLOW ?? 0) | (O.O_NONBLOCK ?? 0) | (O.O_NOCTTY ?? 0)
const CREATE_FLAGS = O.O_WRONLY | O.O_CREAT | O.O_EXCL | (O.O_NOFOLLOW ?? 0)

let procFd: boolean | undefined
/** Whether `/proc/self/fd/<fd>` names the descriptor's folder here (Linux). */
export const hasProcFd = (): boolean => {
  if (procFd === undefined) {
    let fd = -1
    try {
      fd = openSync(nodePath.resolve("/"), O.O_RDONLY | O.O_DIRECTORY)
      procFd = readlinkSync(`/proc/self/fd/${fd}`) === nodePath.resolve("/")
    } catch {
      procFd = false
    } finally {
      if (fd >= 0) closeSync(fd)
    }
  }
  return procFd
}

/** The path that names entry `name` of `dir` (the dir itself when `name` is empty), resolved from its descriptor where the system can. */
export const at = (dir: Dir, name = ""): string => {
  const base = hasProcFd() ? `/proc/self/fd/${dir.fd}` : dir.path
  return name === "" ? base : `${base}/${name}`
}

/** Throws unless `name` is one plain path component. */
export const checkName = (name: string, shown: string = name): void => {
  if (name === "" || name === "." || name === "..")
    throw new ConfinedFsError({ reason: "bad_name", path: shown, detail: `${JSON.stringify(name)} is not a file name` })
  if (name.includes("/") || name.includes("\\"))
    throw new ConfinedFsError({ reason: "bad_name", path: shown, detail: "a name may not hold a slash" })
  if (hasControlCharacter(name))
    throw new ConfinedFsError({ reason: "bad_name", path: JSON.stringify(shown), detail: "a file name may not hold a control character" })
}

const codeOf = (e: unknown): string | undefined => (e as { code?: string }).code

const ioError = (shown: string, e: unknown): ConfinedFsError => {
  if (e instanceof ConfinedFsError) return e
  const code = codeOf(e)
  if (code === "ENOENT") return new ConfinedFsError({ reason: "missing", path: shown, detail: "no such file" })
  if (code === "EEXIST") return new ConfinedFsError({ reason: "exists", path: shown, detail: "it exists" })
  if (code === "ENOTDIR") return new ConfinedFsError({ reason: "not_folder", path: shown, detail: "not a folder" })
  if (code === "ELOOP")
    return new ConfinedFsError({ reason: "symlink", path: shown, detail: "it is a symlink, which file tools do not follow" })
  return new ConfinedFsError({ reason: "io", path: shown, detail: code ?? (e instanceof Error ? e.message : String(e)) })
}

/** The entry's `lstat`, or undefined when there is none. */
export const lstatAt = (dir: Dir, name: string): Stats | undefined => {
  try {
    return lstatSync(at(dir, name))
  } catch (e) {
    if (codeOf(e) === "ENOENT") return undefined
    throw ioError(name, e)
  }
}

/** Opens the confined root `path` (its own path may hold symlinks: the user or massgen chose it). */
export const openRoot = (path: string): Dir => {
  try {
    const fd = openSync(path, O.O_RDONLY | O.O_DIRECTORY)
    return { fd, path: hasProcFd() ? path : realpathSync(path) }
  } catch (e) {
    throw ioError(path, e)
  }
}

export const closeDir = (dir: Dir): void => {
  try {
    closeSync(dir.fd)
  } catch {
    // already closed
  }
}

/** Opens the sub-folder `name` of `dir`, refusing a symlink (or anything but a folder). */
export const openDirAt = (dir: Dir, name: string, shown: string = name): Dir => {
  checkName(name, shown)
  try {
    return { fd: openSync(at(dir, name), DIR_FLAGS), path: nodePath.join(dir.path, name) }
  } catch (e) {
    const code = codeOf(e)
    if (code === "ENOTDIR" || code === "ELOOP") {
      const st = lstatAt(dir, name)
      if (st?.isSymbolicLink())
        throw new ConfinedFsError({ reason: "symlink", path: shown, detail: "it is a symlink, which file tools do not follow" })
    }
    throw ioError(shown, e)
  }
}

/** Makes the folder `name` in `dir` (`EEXIST` when anything, a link included, is there). */
export const mkdirAt = (dir: Dir, name: string, shown: string = name): void => {
  checkName(name, shown)
  try {
    mkdirSync(at(dir, name))
  } catch (e) {
    throw ioError(shown, e)
  }
}

/**
 * The folder `parts` below `root`, opened one name at a time (the caller
 * closes it; `root` itself is returned for no parts). `create` makes the
 * missing folders on the way, as `mkdir -p` does, still refusing links.
 */
export const walk = (root: Dir, parts: ReadonlyArray<string>, create = false): Dir => {
  let dir = root
  for (const [i, name] of parts.entries()) {
    const shown = parts.slice(0, i + 1).join("/")
    let next: Dir
    try {
      next = openDirAt(dir, name, shown)
    } catch (e) {
      if (!(create && e instanceof ConfinedFsError && e.reason === "missing")) {
        if (dir !== root) closeDir(dir)
        throw e
      }
      try {
        mkdirAt(dir, name, shown)
      } catch (made) {
        if (!(made instanceof ConfinedFsError && made.reason === "exists")) {
          if (dir !== root) closeDir(dir)
          throw made
        }
      }
      try {
        next = openDirAt(dir, name, shown)
      } catch (again) {
        if (dir !== root) closeDir(dir)
        throw again
      }
    }
    if (dir !== root) closeDir(dir)
    dir = next
  }
  return dir
}

/** The real path of an opened dir (where it is now). */
export const realPathOf = (dir: Dir): string => {
  try {
    return hasProcFd() ? readlinkSync(at(dir)) : realpathSync(dir.path)
  } catch (e) {
    throw ioError(dir.path, e)
  }
}

export interface ReadFile {
  readonly bytes: Buffer
  /** The file's size when opened. */
  readonly size: number
  /** True when the file holds more than was read. */
  readonly cut: boolean
  readonly stat: Stats
}

const notRegular = (shown: string, st: Stats): ConfinedFsError =>
  new ConfinedFsError({
    reason: st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "not_regular" : "special",
    path: shown,
    detail: st.isSymbolicLink()
      ? "it is a symlink, which file tools do not follow"
      : st.isDirectory()
        ? "it is a folder"
        : `it is ${st.isFIFO() ? "a named pipe" : st.isSocket() ? "a socket" : "a device"}, not a regular file`,
  })

/** Reads at most `maxBytes` of the regular file `name` of `dir`. `allowLinks`: a file with several names may be read (snapshots). */
export const readFileAt = (dir: Dir, name: string, maxBytes: number, shown: string = name, allowLinks = true): ReadFile => {
  checkName(name, shown)
  const before = lstatAt(dir, name)
  if (before === undefined) throw new ConfinedFsError({ reason: "missing", path: shown, detail: "no such file" })
  if (!before.isFile()) throw notRegular(shown, before)
  if (!allowLinks && before.nlink > 1)
    throw new ConfinedFsError({ reason: "hard_link", path: shown, detail: `it is a hard link (a file with ${before.nlink} names)` })
  let fd: number
  try {
    fd = openSync(at(dir, name), READ_FLAGS)
  } catch (e) {
    throw ioError(shown, e)
  }
  try {
    const st = fstatSync(fd)
    if (!st.isFile() || st.ino !== before.ino || st.dev !== before.dev)
      throw new ConfinedFsError({ reason: "not_regular", path: shown, detail: "it changed while it was opened" })
    const read = readFdUpTo(fd, maxBytes)
    const cut = read.over || st.size > maxBytes
    return { bytes: cut ? read.bytes.subarray(0, Math.min(read.bytes.length, maxBytes)) : read.bytes, size: st.size, cut, stat: st }
  } catch (e) {
    throw ioError(shown, e)
  } finally {
    closeSync(fd)
  }
}

const randomName = (name: string): string => {
  const bytes = crypto.getRandomValues(new Uint8Array(8))
  return `.${name.slice(0, 100)}.massgen-${Buffer.from(bytes).toString("hex")}.tmp`
}

/**
 * Whether `entry` is a temporary file a `writeFileAt` left (a stop mid-write),
 * or one of the older `<file>.massgen-<pid>.tmp`; with `of`, a temporary file
 * of the file named `of`. Such files are removed on resume.
 */
export const isWriteTemporary = (entry: string, of?: string): boolean => {
  const fresh = /^\.(.*)\.massgen-[0-9a-f]{16}\.tmp$/.exec(entry)
  const old = /^(.*)\.massgen-\d+\.tmp$/.exec(entry)
  if (of === undefined) return fresh !== null || old !== null
  return fresh?.[1] === of.slice(0, 100) || old?.[1] === of
}

export interface WriteOptions {
  /** Refuse to replace a file with more than one name. */
  readonly refuseHardLinks?: boolean
  /** The mode of a new file (a replaced one keeps its own). */
  readonly mode?: number
}

/**
 * Writes `data` as the file `name` of `dir` in one step: a temporary file made
 * exclusively in `dir`, renamed over the entry. Returns whether it created
 * or replaced the file. A folder, a symlink or (with `refuseHardLinks`) a
 * hard link there is refused; a replaced file keeps its mode and owner.
 */
export const writeFileAt = (
  dir: Dir,
  name: string,
  data: string | Uint8Array,
  shown: string = name,
  options: WriteOptions = {},
): "created" | "replaced" => {
  checkName(name, shown)
  const existing = lstatAt(dir, name)
  if (existing !== undefined) {
    if (existing.isDirectory()) throw new ConfinedFsError({ reason: "not_regular", path: shown, detail: "it is a folder" })
    if (!existing.isFile()) throw notRegular(shown, existing)
    if (options.refuseHardLinks === true && existing.nlink > 1)
      throw new ConfinedFsError({
        reason: "hard_link",
        path: shown,
        detail: `it is a hard link (a file with ${existing.nlink} names), which tools do not write`,
      })
  }
  const temp = randomName(name)
  let fd: number
  try {
    fd = openSync(at(dir, temp), CREATE_FLAGS, options.mode ?? 0o644)
  } catch (e) {
    throw ioError(shown, e)
  }
  try {
    const buffer = typeof data === "string" ? Buffer.from(data) : data
    let done = 0
    while (done < buffer.length) done += writeSync(fd, buffer, done, buffer.length - done)
    if (existing !== undefined) {
      fchmodSync(fd, existing.mode & 0o7777)
      try {
        fchownSync(fd, existing.uid, existing.gid)
      } catch {
        // not permitted (another owner): the file becomes this process's
      }
    }
    closeSync(fd)
    fd = -1
    renameSync(at(dir, temp), at(dir, name))
    return existing === undefined ? "created" : "replaced"
  } catch (e) {
    if (fd >= 0) closeSync(fd)
    try {
      unlinkSync(at(dir, temp))
    } catch {
      // gone already
    }
    throw ioError(shown, e)
  }
}

/** Deletes the entry `name` of `dir`: a file or link is unlinked, a folder removed with everything in it, never following a link. */
export const removeAt = (dir: Dir, name: string, shown: string = name): void => {
  checkName(name, shown)
  const st = lstatAt(dir, name)
  if (st === undefined) throw new ConfinedFsError({ reason: "missing", path: shown, detail: "no such file" })
  try {
    if (!st.isDirectory()) return unlinkSync(at(dir, name))
    const sub = openDirAt(dir, name, shown)
    try {
      for (const entry of readdirSync(at(sub))) removeEntry(sub, entry, `${shown}/${entry}`)
    } finally {
      closeDir(sub)
    }
    rmdirSync(at(dir, name))
  } catch (e) {
    throw ioError(shown, e)
  }
}

/** `removeAt` for names read from the disk (which may hold anything but a slash). */
const removeEntry = (dir: Dir, name: string, shown: string): void => {
  const st = lstatSync(at(dir, name))
  if (!st.isDirectory()) return unlinkSync(at(dir, name))
  const sub: Dir = { fd: openSync(at(dir, name), DIR_FLAGS), path: nodePath.join(dir.path, name) }
  try {
    for (const entry of readdirSync(at(sub))) removeEntry(sub, entry, `${shown}/${entry}`)
  } finally {
    closeDir(sub)
  }
  rmdirSync(at(dir, name))
}

/** Moves entry `from` of `fromDir` to `to` of `toDir`, refusing to replace anything there. */
export const renameAt = (fromDir: Dir, from: string, toDir: Dir, to: string, shownFrom: string = from, shownTo: string = to): void => {
  checkName(from, shownFrom)
  checkName(to, shownTo)
  if (lstatAt(fromDir, from) === undefined) throw new ConfinedFsError({ reason: "missing", path: shownFrom, detail: "no such file" })
  if (lstatAt(toDir, to) !== undefined) throw new ConfinedFsError({ reason: "exists", path: shownTo, detail: "it exists" })
  try {
    renameSync(at(fromDir, from), at(toDir, to))
  } catch (e) {
    throw ioError(shownFrom, e)
  }
}

/** The entries of an opened dir, by name. */
export const listAt = (dir: Dir): ReadonlyArray<Dirent> => {
  try {
    return readdirSync(at(dir), { withFileTypes: true })
  } catch (e) {
    throw ioError(dir.path, e)
  }
}
