/**
 * Reading an open descriptor up to a cap: at most `maxBytes + 1` bytes, so the caller knows whether there was more without reading it.
 *
 * Contract: `readFdUpTo(fd, maxBytes)` reads from the descriptor's position in
 * chunks of at most 64 KiB until the end or until it holds `maxBytes + 1`
 * bytes, and gives what it read; `over` is true when that is more than
 * `maxBytes`. A file whose size says 0 (as in `/proc`) is still read to the
 * cap. Used where a file is read whole but bounded: an input file the user
 * names (`services/input-file.ts`), a file a tool reads (`services/tools/confined-fs.ts`).
 */
import { readSync } from "node:fs"

const CHUNK = 64 * 1024

export const readFdUpTo = (fd: number, maxBytes: number): { readonly bytes: Buffer; readonly over: boolean } => {
  const chunks: Array<Buffer> = []
  let total = 0
  for (;;) {
    const room = Math.min(maxBytes + 1 - total, CHUNK)
    if (room <= 0) break
    const chunk = Buffer.allocUnsafe(room)
    const n = readSync(fd, chunk, 0, room, null)
    if (n === 0) break
    chunks.push(n === room ? chunk : chunk.subarray(0, n))
    total += n
  }
  return { bytes: Buffer.concat(chunks, total), over: total > maxBytes }
}
