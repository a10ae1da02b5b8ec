/**
 * Reading a file the user names or puts in the working directory (a config,
 * a question file, a batch's items file, `.env`): a regular file, checked
 * before it is read, and read to at most a maximum number of bytes.
 *
 * Contract: `readInputFile(path, maxBytes, noun)` never blocks on what is not
 * a regular file: the path is looked at (`stat`) before any open, and opened
 * without blocking (`O_NONBLOCK`, so a named pipe swapped in between cannot
 * hold it either), then checked again on the open descriptor. A named pipe, a
 * device (`/dev/zero`), a socket or a directory is refused naming what it is;
 * a file over `maxBytes` is refused naming the limit, without reading the
 * rest (a file that says it is empty, as in `/proc`, is still read only to
 * the limit). Each refusal is one line in plain words (`problem`), without
 * the path: the caller says which file and flag. The maxima of each kind are
 * `INPUT_LIMITS`; the question's is `--max-question-bytes`.
 */
import * as fs from "node:fs"
import { readFdUpTo } from "../lib/read-fd-up-to.ts"

const MIB = 1024 * 1024

/** The largest config file, batch items file and `.env` read, in bytes. */
export const INPUT_LIMITS = { config: 4 * MIB, items: 256 * MIB, dotEnv: MIB } as const

export type InputReason = "missing" | "not_regular" | "too_large" | "unreadable"

export type InputRead =
  | { readonly _tag: "read"; readonly text: string }
  | { readonly _tag: "refused"; readonly reason: InputReason; readonly problem: string }

/** Why a file could not be opened or read, in plain words rather than an errno. */
export const readProblem = (e: unknown): string => {
  switch ((e as { code?: string }).code) {
    case "ENOENT":
      return "no such file"
    case "EISDIR":
      return "is a directory, not a file"
    case "EACCES":
    case "EPERM":
      return "cannot be read: permission denied"
    default:
      return `cannot be read: ${e instanceof Error ? e.message : String(e)}`
  }
}

/** What a path that is not a regular file is, in words. */
const kindOf = (stat: fs.Stats): string =>
  stat.isFIFO()
    ? "a named pipe (FIFO)"
    : stat.isCharacterDevice()
      ? "a character device"
      : stat.isBlockDevice()
        ? "a block device"
        : stat.isSocket()
          ? "a socket"
          : "not a regular file"

/** "4 MiB", "1048576 bytes": a limit as the user would write it. */
export const formatBytes = (n: number): string => (n % MIB === 0 ? `${n / MIB} MiB` : `${n} bytes`)

type Refused = Extract<InputRead, { _tag: "refused" }>

const refused = (reason: InputReason, problem: string): Refused => ({ _tag: "refused", reason, problem })

const notRegular = (stat: fs.Stats, noun: string): Refused | null => {
  if (stat.isFile()) return null
  if (stat.isDirectory()) return refused("not_regular", `is a directory, not a ${noun}`)
  const kind = kindOf(stat)
  return refused("not_regular", kind === "not a regular file" ? `is ${kind}` : `is ${kind}, not a regular file`)
}

const overLimit = (maxBytes: number, limitName: string): Refused =>
  refused("too_large", `is over the limit of ${formatBytes(maxBytes)} ${limitName}`)

/**
 * The text of `path` (UTF-8), or why it is refused. `noun` names what the file
 * should be ("file", "config file"); `limitName` says whose limit it is
 * ("for a config file", "(--max-question-bytes)").
 */
export const readInputFile = (path: string, maxBytes: number, noun: string, limitName: string): InputRead => {
  const read = readInputBytes(path, maxBytes, noun, limitName)
  return read._tag === "read" ? { _tag: "read", text: read.bytes.toString("utf8") } : read
}

/** The bytes of `path`, or why it is refused, as `readInputFile` reads it (an image given with the question). */
export const readInputBytes = (
  path: string,
  maxBytes: number,
  noun: string,
  limitName: string,
): { readonly _tag: "read"; readonly bytes: Buffer } | Refused => {
  let stat: fs.Stats
  try {
    stat = fs.statSync(path)
  } catch (e) {
    return refused((e as { code?: string }).code === "ENOENT" ? "missing" : "unreadable", readProblem(e))
  }
  const before = notRegular(stat, noun)
  if (before !== null) return before
  if (stat.size > maxBytes) return overLimit(maxBytes, limitName)
  let fd: number
  try {
    fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY)
  } catch (e) {
    return refused((e as { code?: string }).code === "ENOENT" ? "missing" : "unreadable", readProblem(e))
  }
  try {
    const after = notRegular(fs.fstatSync(fd), noun)
    if (after !== null) return after
    const read = readFdUpTo(fd, maxBytes)
    return read.over ? overLimit(maxBytes, limitName) : { _tag: "read", bytes: read.bytes }
  } catch (e) {
    return refused("unreadable", readProblem(e))
  } finally {
    fs.closeSync(fd)
  }
}
