/**
 * The build identity: which massgen this is. `massgen --version` prints it,
 * `execution_metadata.yaml` keeps it (`build`), and `run_started` and
 * `run_resumed` carry its one-line form in their meta (`version`), so a log
 * says which binary wrote it.
 *
 * A binary is stamped when it is built (`scripts/build.ts` defines
 * `MASSGEN_BUILD`: the git commit, the build date and the target); the Bun
 * version is the runtime's own, which in a binary is the one it was built
 * with. Run from source (`bun src/main.ts`) nothing is stamped, and the
 * identity says so: the commit is the checkout's (`git rev-parse`, "unknown"
 * without git), `built` is null, and the target is `source`.
 *
 * Words: **stamp** (what the build defines), **target** (the `bun build
 * --target` a binary was made for, e.g. `bun-linux-x64-musl`).
 */
import pkg from "../../../package.json" with { type: "json" }

/** What `scripts/build.ts` defines at build time; absent when running from source. */
declare const MASSGEN_BUILD: BuildStamp | undefined

export interface BuildStamp {
  /** The commit built, abbreviated, with `-dirty` when the tree had uncommitted changes. */
  readonly commit: string
  /** When it was built, ISO 8601 UTC to the second. */
  readonly built: string
  readonly target: string
}

export interface BuildIdentity {
  readonly version: string
  readonly commit: string
  /** Null when running from source. */
  readonly built: string | null
  readonly bun: string
  readonly target: string
}

const stamp: BuildStamp | null = typeof MASSGEN_BUILD === "undefined" ? null : MASSGEN_BUILD

/** The commit of the source checkout this file is in, or "unknown" (no git, not a checkout). */
const sourceCommit = (): string => {
  try {
    const run = (args: ReadonlyArray<string>) => Bun.spawnSync(["git", ...args], { cwd: import.meta.dir, stdout: "pipe", stderr: "ignore" })
    const head = run(["rev-parse", "--short=12", "HEAD"])
    if (head.exitCode !== 0) return "unknown"
    const dirty = run(["status", "--porcelain", "--untracked-files=no"]).stdout.toString().trim() !== ""
    return `${head.stdout.toString().trim()}${dirty ? "-dirty" : ""}`
  } catch {
    return "unknown"
  }
}

let identity: BuildIdentity | undefined

/** This process's identity (computed once; from source it asks git). */
export const buildIdentity = (): BuildIdentity =>
  (identity ??= {
    version: pkg.version,
    commit: stamp?.commit ?? sourceCommit(),
    built: stamp?.built ?? null,
    bun: Bun.version,
    target: stamp?.target ?? "source",
  })

/** The identity on one line: `0.1.0 (commit abc123, built 2026-..., bun 1.4.4, bun-linux-x64)`. */
export const identityLine = (id: BuildIdentity = buildIdentity()): string =>
  `${id.version} (commit ${id.commit}, ${id.built === null ? "not built: run from source" : `built ${id.built}`}, bun ${id.bun}, ${id.target})`

/** What `massgen --version` prints. */
export const versionText = (id: BuildIdentity = buildIdentity()): string =>
  [
    `massgen ${id.version}`,
    `commit: ${id.commit}`,
    `built: ${id.built ?? "not built: run from source"}`,
    `bun: ${id.bun}`,
    `target: ${id.target === "source" ? `source, on bun-${process.platform}-${process.arch}` : id.target}`,
  ].join("\n")
