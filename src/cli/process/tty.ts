/**
 * Whether a file descriptor is a terminal, without loading `node:tty` for one that is not.
 *
 * `node:tty` brings Bun's node streams with it: about 2.5 ms of a run's start.
 * A terminal is always a character device, so a descriptor that is not one
 * (a pipe or a file: the output of every automation run) is answered from
 * `fstat` alone; `node:tty` is loaded, and asked, only for a character
 * device (a terminal, `/dev/null`). A descriptor that is not open is no terminal.
 */
import { fstatSync } from "node:fs"

export const isatty = (fd: number): boolean => {
  try {
    if (!fstatSync(fd).isCharacterDevice()) return false
  } catch {
    return false
  }
  return (require("node:tty") as typeof import("node:tty")).isatty(fd)
}
