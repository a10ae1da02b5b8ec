/**
 * The release build for the tests: `ensureRelease()` runs `bun run release`
 * once per test process, and not at all when `dist/release.key` says the
 * release in `dist/release/` was built from the sources as they are
 * (`sourceKey()`: CI builds it in a step of its own, and the tests reuse it).
 * The build takes every child slot (`withSlots`): it is the slowest thing a
 * test waits for.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { ROOT, sourceKey } from "../../scripts/compile.ts"
import { RELEASE_DIR, RELEASE_KEY_FILE, RELEASE_TARGETS, releaseFileName } from "../../scripts/release.ts"
import { SLOTS, withSlots } from "./cli.ts"

export { RELEASE_DIR, RELEASE_TARGETS, releaseFileName }

/** The release's path of the binary for `platform` (`linux-x64`, ...). */
export const releaseBinary = (platform: string): string => nodePath.join(RELEASE_DIR, releaseFileName(platform))

const isCurrent = (): boolean =>
  fs.existsSync(RELEASE_KEY_FILE) &&
  fs.readFileSync(RELEASE_KEY_FILE, "utf8").trim() === sourceKey() &&
  RELEASE_TARGETS.every(({ platform }) => fs.existsSync(releaseBinary(platform)))

let building: Promise<string> | null = null

/** `dist/release/`, built now unless it is current; once per test process. */
export const ensureRelease = (): Promise<string> => {
  building ??= (async () => {
    if (isCurrent()) return RELEASE_DIR
    return withSlots(SLOTS, async () => {
      const proc = Bun.spawn([process.execPath, "run", "release"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
      const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      if (code !== 0) throw new Error(`bun run release failed (${code}):\n${out}\n${err}`)
      return RELEASE_DIR
    })
  })()
  return building
}
