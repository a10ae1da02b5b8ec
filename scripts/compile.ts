/**
 * One `bun build --compile` of massgen, stamped: the flags `bun run build`
 * and `bun run release` share, and the build stamp (`src/cli/process/identity.ts`
 * reads it as `MASSGEN_BUILD`).
 *
 * `compile({ target, outfile })` builds `src/main.ts` for `target` (a `bun
 * build --target`, e.g. `bun-linux-arm64`) into `outfile`. The flags are the
 * same for every target: the binary is split into chunks loaded on demand,
 * minified, with bytecode and source maps, and a reluctant JIT at
 * start (see `src/main.ts`); it reads no `.env` of its own accord (massgen
 * loads `.env` itself). A release leaves out the source maps and the bytecode
 * (`RELEASE_FLAGS`): the maps are 3.3 MB of each binary, and serve only to map an
 * internal stack trace back to the source, which massgen never prints. A cross-compile's runtime is fetched from the npm
 * registry once and cached under `$BUN_INSTALL_CACHE_DIR` (by default
 * `~/.bun/install/cache/bun-<os>-<arch>[-musl]-v<bun version>`).
 *
 * Only the binary reaches `outfile`. Bun writes the executable first as
 * `.<hash>-00000000.bun-build` in its working directory, then renames it into
 * place (or copies it, across file systems); a build that is stopped leaves
 * that temporary behind. So the build runs in a temporary directory of its
 * own, removed afterwards, and never in the repository. With `--compile`, Bun
 * (1.4.4) embeds the source maps in the executable (a stack trace maps to the
 * source with no file beside it) and also writes one `.map` file per chunk
 * beside it: those stay in the temporary directory. A stack trace names the
 * source files relative to that directory (`../../<checkout>/src/...`).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"

export const ROOT = nodePath.resolve(import.meta.dir, "..")

/** The flags of every build, after `bun build --compile`. */
export const BUILD_FLAGS = [
  "--splitting",
  "--minify",
  "--sourcemap=linked",
  "--bytecode",
  "--compile-jit-policy=30",
  "--format=esm",
  "--no-compile-autoload-dotenv",
] as const

/**
 * The flags of a release binary: the build's, without the source maps and
 * without bytecode. The Bun runtime alone is 104 to 110 MiB; the bytecode
 * added 11 MB and put the binaries over the 120 MB a download may weigh
 * (linux-x64: 122.8 MB with it, 111.9 MB without). The price: a whole run
 * starts about 90 ms later (`--version` does not change); `bun run build`
 * keeps the bytecode.
 */
export const RELEASE_FLAGS = BUILD_FLAGS.filter((flag) => !flag.startsWith("--sourcemap") && flag !== "--bytecode")

/** The flags of a release binary for `target`: the same for every target. */
export const releaseFlags = (_target: string): ReadonlyArray<string> => RELEASE_FLAGS

const git = (args: ReadonlyArray<string>): string | null => {
  const run = Bun.spawnSync(["git", ...args], { cwd: ROOT, stdout: "pipe", stderr: "ignore" })
  return run.exitCode === 0 ? run.stdout.toString().trim() : null
}

/** The commit of the checkout, abbreviated, `-dirty` when tracked files changed; "unknown" without git. */
export const checkoutCommit = (): string => {
  const head = git(["rev-parse", "--short=12", "HEAD"])
  if (head === null) return "unknown"
  return git(["status", "--porcelain", "--untracked-files=no"]) === "" ? head : `${head}-dirty`
}

/** Now, ISO 8601 UTC to the second. */
export const buildDate = (): string => `${new Date().toISOString().slice(0, 19)}Z`

/** The target of this machine, as `bun build --target` names it. */
export const hostTarget = (): string => {
  const os = process.platform === "win32" ? "windows" : process.platform
  const header =
    process.platform === "linux"
      ? (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header
      : undefined
  const musl = process.platform === "linux" && header?.glibcVersionRuntime === undefined
  return `bun-${os}-${process.arch}${musl ? "-musl" : ""}`
}

export interface CompileInput {
  readonly target: string
  readonly outfile: string
  readonly commit: string
  readonly built: string
  /** `BUILD_FLAGS` when not given. */
  readonly flags?: ReadonlyArray<string>
}

/** Moves `from` to `to`, replacing it by a rename (a running `to` keeps its old file); across file systems by a copy beside `to`, renamed. */
const moveFile = (from: string, to: string): void => {
  try {
    fs.renameSync(from, to)
  } catch (e) {
    if ((e as { code?: unknown }).code !== "EXDEV") throw e
    const partial = `${to}.partial-${process.pid}`
    fs.copyFileSync(from, partial)
    fs.chmodSync(partial, fs.statSync(from).mode)
    fs.renameSync(partial, to)
  }
}

/** Compiles massgen for `target` into `outfile`, in a temporary working directory; throws with bun's output when the build fails. */
export const compile = async ({ target, outfile, commit, built, flags = BUILD_FLAGS }: CompileInput): Promise<void> => {
  const stamp = JSON.stringify({ commit, built, target })
  const scratch = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-build-"))
  try {
    const scratchOut = nodePath.join(scratch, "out", nodePath.basename(outfile))
    const entry = nodePath.join(ROOT, "src", "main.ts")
    const proc = Bun.spawn(
      [
        process.execPath,
        "build",
        "--compile",
        `--target=${target}`,
        ...flags,
        `--define=MASSGEN_BUILD=${stamp}`,
        entry,
        "--outfile",
        scratchOut,
      ],
      { cwd: scratch, stdout: "pipe", stderr: "pipe" },
    )
    const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
    if (code !== 0) throw new Error(`bun build --target=${target} failed (exit ${code}):\n${out}${err}`)
    fs.mkdirSync(nodePath.dirname(outfile), { recursive: true })
    moveFile(scratchOut, outfile)
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true })
  }
}

/** What a build is made from: every file a binary depends on. */
const BUILD_INPUTS = ["src", "scripts", "package.json", "bun.lock", "tsconfig.json", "install.sh"]

/** A hash of every build input's path and content: equal keys, equal binaries (but for the stamp). */
export const sourceKey = (): string => {
  const hash = createHash("sha256")
  const add = (path: string): void => {
    if (!fs.existsSync(path)) return
    if (fs.statSync(path).isDirectory()) {
      for (const entry of fs.readdirSync(path).sort()) add(nodePath.join(path, entry))
      return
    }
    hash.update(`${nodePath.relative(ROOT, path)}\0`)
    hash.update(fs.readFileSync(path))
  }
  for (const input of BUILD_INPUTS) add(nodePath.join(ROOT, input))
  return hash.digest("hex")
}
