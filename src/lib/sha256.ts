/**
 * The SHA-256 of a text (a string as its UTF-8) or of bytes, in hex: Bun's hasher, as `node:crypto`
 * would give it without loading Bun's node streams (~2 ms of a run's start).
 *
 * The hashes of the last few long strings are remembered: a run hashes its long question where
 * its events, its call logs and its status file each name its blob, and hashing 20 MB costs a
 * copy of it as UTF-8 and tens of milliseconds each time.
 */
const REMEMBERED_FROM = 64 * 1024
const REMEMBERED = 16
const remembered = new Map<string, string>()

export const hashText = (text: string | Uint8Array): string => {
  if (typeof text !== "string" || text.length < REMEMBERED_FROM) return Bun.CryptoHasher.hash("sha256", text, "hex")
  let hash = remembered.get(text)
  if (hash === undefined) {
    hash = Bun.CryptoHasher.hash("sha256", text, "hex")
    if (remembered.size >= REMEMBERED) remembered.delete(remembered.keys().next().value!)
    remembered.set(text, hash)
  }
  return hash
}
