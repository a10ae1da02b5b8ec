/**
 * `bun run release`: massgen for every platform it ships on, into
 * `dist/release/`:
 *
 * - one binary per target, `massgen-<version>-<os>-<arch>[-musl][.exe]`,
 *   each stamped with the same commit and build date, built with the flags
 *   of `bun run build` less the source maps and the bytecode (`scripts/compile.ts`,
 *   which builds each in a temporary directory and moves only the binary here);
 * - `SHA256SUMS`, one `<hex>  <file>` line per binary (`sha256sum -c` reads it;
 *   `install.sh` checks a download against it);
 * - `install.sh`, the installer, a copy of the repository's;
 * - `RELEASE.md`: the identity, and each file's target, size and checksum.
 *
 * `dist/release.key` then holds the `sourceKey()` the release was built from,
 * so a test run can tell a release that is still current from a stale one.
 *
 * Every target builds from this machine: Bun fetches a target's runtime from
 * the npm registry the first time and keeps it in its install cache
 * (`$BUN_INSTALL_CACHE_DIR`, by default `~/.bun/install/cache`), so later
 * runs need no network. Builds run `RELEASE_JOBS` at a time, by default one
 * per two CPUs: each build is itself parallel, and on 2 CPUs two at once took
 * longer than one after the other (144-169 s against 96-126 s for all six).
 * The directory is emptied first: it holds one release only.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import pkg from "../package.json" with { type: "json" }
import { buildDate, checkoutCommit, compile, ROOT, releaseFlags, sourceKey } from "./compile.ts"

/** Each released target: the `bun build --target` and the platform part of its file name. */
export const RELEASE_TARGETS = [
  { target: "bun-linux-x64", platform: "linux-x64" },
  { target: "bun-linux-arm64", platform: "linux-arm64" },
  { target: "bun-linux-x64-musl", platform: "linux-x64-musl" },
  { target: "bun-darwin-x64", platform: "darwin-x64" },
  { target: "bun-darwin-arm64", platform: "darwin-arm64" },
  { target: "bun-windows-x64", platform: "windows-x64" },
] as const

export const RELEASE_DIR = nodePath.join(ROOT, "dist", "release")
export const RELEASE_KEY_FILE = nodePath.join(ROOT, "dist", "release.key")

export const releaseFileName = (platform: string): string =>
  `massgen-${pkg.version}-${platform}${platform.startsWith("windows") ? ".exe" : ""}`

const MiB = 1024 * 1024

const sha256 = async (path: string): Promise<string> => {
  const hash = createHash("sha256")
  for await (const chunk of fs.createReadStream(path)) hash.update(chunk as Buffer)
  return hash.digest("hex")
}

/** Runs `work` on every item, at most `jobs` at a time. */
const inParallel = async <A, B>(items: ReadonlyArray<A>, jobs: number, work: (item: A) => Promise<B>): Promise<Array<B>> => {
  const results: Array<B> = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await work(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, items.length)) }, worker))
  return results
}

interface Built {
  readonly file: string
  readonly target: string
  readonly bytes: number
  readonly sha256: string
  readonly seconds: number
}

const main = async () => {
  const started = performance.now()
  const key = sourceKey()
  const commit = checkoutCommit()
  const built = buildDate()
  const jobs = Number(process.env.RELEASE_JOBS ?? Math.max(1, Math.floor(os.availableParallelism() / 2)))
  fs.rmSync(RELEASE_DIR, { recursive: true, force: true })
  fs.rmSync(RELEASE_KEY_FILE, { force: true })
  fs.mkdirSync(RELEASE_DIR, { recursive: true })
  const results = await inParallel(RELEASE_TARGETS, jobs, async ({ target, platform }): Promise<Built> => {
    const t0 = performance.now()
    const file = releaseFileName(platform)
    const path = nodePath.join(RELEASE_DIR, file)
    await compile({ target, outfile: path, commit, built, flags: releaseFlags(target) })
    fs.chmodSync(path, 0o755)
    const seconds = (performance.now() - t0) / 1000
    const result = { file, target, bytes: fs.statSync(path).size, sha256: await sha256(path), seconds }
    console.log(`${file}  ${(result.bytes / MiB).toFixed(1)} MiB  ${seconds.toFixed(1)} s`)
    return result
  })
  const installer = nodePath.join(RELEASE_DIR, "install.sh")
  fs.copyFileSync(nodePath.join(ROOT, "install.sh"), installer)
  fs.chmodSync(installer, 0o755)
  const sums = [...results.map((r) => [r.sha256, r.file]), [await sha256(installer), "install.sh"]]
  fs.writeFileSync(nodePath.join(RELEASE_DIR, "SHA256SUMS"), sums.map(([sum, file]) => `${sum}  ${file}\n`).join(""))
  fs.writeFileSync(nodePath.join(RELEASE_DIR, "RELEASE.md"), releaseNotes(results, commit, built))
  fs.writeFileSync(RELEASE_KEY_FILE, `${key}\n`)
  console.log(
    `dist/release: ${RELEASE_TARGETS.length} binaries, SHA256SUMS, RELEASE.md in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  )
}

const releaseNotes = (results: ReadonlyArray<Built>, commit: string, built: string): string =>
  [
    `# massgen ${pkg.version}`,
    "",
    `Commit ${commit}, built ${built} with Bun ${Bun.version}. Check a download with \`sha256sum -c SHA256SUMS --ignore-missing\`.`,
    "",
    "| file | target | size | sha256 |",
    "| --- | --- | --- | --- |",
    ...results.map((r) => `| ${r.file} | ${r.target} | ${(r.bytes / MiB).toFixed(1)} MiB (${r.bytes} bytes) | \`${r.sha256}\` |`),
    "",
  ].join("\n")

if (import.meta.main) await main()
