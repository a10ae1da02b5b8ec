/**
 * `install.sh` against a release served on loopback (`Bun.serve`), run by
 * `sh` (dash) with a PATH of its own: `uname` (and `ldd`) are shims that say
 * which machine this is, and the other tools are links to the real ones, so
 * a test also chooses between curl and wget. It installs the file
 * SHA256SUMS lists for the platform; a download whose checksum does not match
 * is refused (exit 1) and nothing is installed, an older massgen left as it
 * was; an unknown OS or CPU gets a message naming it; it tells how to put the
 * install directory on PATH. shellcheck finds nothing in it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, ROOT, sandbox } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const INSTALLER = nodePath.join(ROOT, "install.sh")
const VERSION = "9.8.7"
const PLATFORMS = ["linux-x64", "linux-arm64", "linux-x64-musl", "darwin-x64", "darwin-arm64", "windows-x64"] as const
const fileOf = (platform: string) => `massgen-${VERSION}-${platform}${platform.startsWith("windows") ? ".exe" : ""}`
/** Each fake binary's bytes: distinct per platform, so the test sees which one was installed. */
const contentOf = (platform: string) => `#!/bin/sh\necho "massgen ${VERSION} for ${platform}"\n`
const sha = (text: string) => createHash("sha256").update(text).digest("hex")
const SUMS = PLATFORMS.map((p) => `${sha(contentOf(p))}  ${fileOf(p)}\n`).join("")

/** Files the server answers with instead of the release's, by path (a corrupted download). */
const tampered = new Map<string, string>()
const requested: Array<string> = []
let server: ReturnType<typeof Bun.serve>
let base = ""

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const path = new URL(request.url).pathname
      requested.push(path)
      const override = tampered.get(path)
      if (override !== undefined) return new Response(override)
      if (path === "/release/SHA256SUMS") return new Response(SUMS)
      const platform = PLATFORMS.find((p) => path === `/release/${fileOf(p)}`)
      return platform === undefined ? new Response("not found", { status: 404 }) : new Response(contentOf(platform))
    },
  })
  base = `http://127.0.0.1:${server.port}/release`
})
afterAll(() => server.stop(true))

const TOOLS = ["grep", "head", "cut", "sed", "sha256sum", "mktemp", "rm", "mkdir", "cp", "chmod", "mv", "cat"]

interface Machine {
  readonly os: string
  readonly arch: string
  /** What `ldd --version` prints; no ldd on PATH when absent. */
  readonly ldd?: string
  readonly downloader?: "curl" | "wget"
}

/**
 * Runs install.sh as on `machine`, installing into a fresh directory (or
 * `MASSGEN_INSTALL_DIR` of `extraEnv`, put on PATH too with `onPath`); the
 * result and the install directory.
 */
const install = async (machine: Machine, extraEnv: Record<string, string> = {}, onPath = false) => {
  const cwd = sandbox()
  const bin = nodePath.join(cwd, "bin")
  fs.mkdirSync(bin)
  const shim = (name: string, body: string) => fs.writeFileSync(nodePath.join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 })
  shim("uname", `case "$1" in -s) echo '${machine.os}' ;; -m) echo '${machine.arch}' ;; *) echo '${machine.os}' ;; esac`)
  if (machine.ldd !== undefined) shim("ldd", `echo '${machine.ldd}' >&2; exit 1`)
  for (const tool of [...TOOLS, machine.downloader ?? "curl"]) fs.symlinkSync(Bun.which(tool)!, nodePath.join(bin, tool))
  const dir = extraEnv.MASSGEN_INSTALL_DIR ?? nodePath.join(cwd, "home", ".local", "bin")
  const proc = Bun.spawn(["/bin/sh", INSTALLER], {
    cwd,
    env: {
      PATH: onPath ? `${bin}:${dir}` : bin,
      HOME: nodePath.join(cwd, "home"),
      MASSGEN_INSTALL_BASE: base,
      SHELL: "/bin/bash",
      ...extraEnv,
    },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  })
  const [exitCode, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  return { exitCode, stdout, stderr, dir, cwd }
}

const installed = (dir: string): Array<string> => (fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [])

describe("install.sh", () => {
  test.each([
    [{ os: "Linux", arch: "x86_64", ldd: "ldd (Debian GLIBC 2.36-9) 2.36" }, "linux-x64", "massgen"],
    [{ os: "Linux", arch: "aarch64", ldd: "ldd (GNU libc) 2.39" }, "linux-arm64", "massgen"],
    [{ os: "Linux", arch: "x86_64", ldd: "musl libc (x86_64)\nVersion 1.2.5" }, "linux-x64-musl", "massgen"],
    [{ os: "Darwin", arch: "x86_64" }, "darwin-x64", "massgen"],
    [{ os: "Darwin", arch: "arm64", downloader: "wget" as const }, "darwin-arm64", "massgen"],
    [{ os: "MINGW64_NT-10.0-22631", arch: "x86_64" }, "windows-x64", "massgen.exe"],
  ])("%o installs %s as %s, checked, and says how to put it on PATH", async (machine, platform, name) => {
    const result = await install(machine)
    expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" })
    expect(installed(result.dir)).toEqual([name])
    const target = nodePath.join(result.dir, name)
    expect(fs.readFileSync(target, "utf8")).toBe(contentOf(platform))
    expect(fs.statSync(target).mode & 0o777).toBe(0o755)
    expect(result.stdout).toContain(`installed ${fileOf(platform)} as ${target} (sha256 ${sha(contentOf(platform))})`)
    expect(result.stdout).toContain(`${result.dir} is not on your PATH`)
    expect(result.stdout).toContain(`echo 'export PATH="${result.dir}:$PATH"' >> ~/.profile`)
  })

  test("MASSGEN_INSTALL_DIR, already on PATH: installs there, over an older massgen, and says to run massgen", async () => {
    const dir = nodePath.join(sandbox(), "tools")
    fs.mkdirSync(dir)
    fs.writeFileSync(nodePath.join(dir, "massgen"), "the old one", { mode: 0o755 })
    const result = await install({ os: "Linux", arch: "x86_64" }, { MASSGEN_INSTALL_DIR: dir }, true)
    expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" })
    expect(installed(dir)).toEqual(["massgen"])
    expect(fs.readFileSync(nodePath.join(dir, "massgen"), "utf8")).toBe(contentOf("linux-x64"))
    expect(result.stdout).toContain("Run: massgen --version")
    expect(result.stdout).not.toContain("not on your PATH")
  })

  test("a download whose checksum does not match is refused: exit 1, nothing installed, an older massgen kept", async () => {
    const path = `/release/${fileOf("linux-x64")}`
    tampered.set(path, `${contentOf("linux-x64")}# and something else\n`)
    try {
      const fresh = await install({ os: "Linux", arch: "x86_64" })
      expect(fresh.exitCode).toBe(1)
      expect(fresh.stderr).toBe(
        `massgen install: checksum mismatch for ${fileOf("linux-x64")}: expected ${sha(contentOf("linux-x64"))}, got ${sha(`${contentOf("linux-x64")}# and something else\n`)}; nothing was installed\n`,
      )
      expect(installed(fresh.dir)).toEqual([])
      expect(fresh.stdout).not.toContain("installed ")

      const cwd = sandbox()
      const dir = nodePath.join(cwd, "bin-dir")
      fs.mkdirSync(dir)
      fs.writeFileSync(nodePath.join(dir, "massgen"), "the old one", { mode: 0o755 })
      const over = await install({ os: "Linux", arch: "x86_64" }, { MASSGEN_INSTALL_DIR: dir })
      expect(over.exitCode).toBe(1)
      expect(installed(dir)).toEqual(["massgen"])
      expect(fs.readFileSync(nodePath.join(dir, "massgen"), "utf8")).toBe("the old one")
    } finally {
      tampered.delete(path)
    }
  })

  test("a SHA256SUMS that lists no binary for the platform: a clear message, nothing installed", async () => {
    tampered.set(
      "/release/SHA256SUMS",
      SUMS.split("\n")
        .filter((l) => !l.endsWith("-darwin-arm64"))
        .join("\n"),
    )
    try {
      const result = await install({ os: "Darwin", arch: "arm64" })
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({
        exitCode: 1,
        stderr: `massgen install: SHA256SUMS at ${base} lists no massgen binary for darwin-arm64\n`,
      })
      expect(installed(result.dir)).toEqual([])
    } finally {
      tampered.delete("/release/SHA256SUMS")
    }
  })

  test.each([
    [
      { os: "FreeBSD", arch: "amd64" },
      "no massgen binary for this operating system (FreeBSD); there are binaries for Linux, macOS and Windows",
    ],
    [{ os: "Linux", arch: "riscv64" }, "no massgen binary for this architecture (riscv64); there are binaries for x86-64 and arm64"],
    [{ os: "Linux", arch: "aarch64", ldd: "musl libc (aarch64)" }, "no massgen binary for musl on arm64"],
  ])("an unknown platform %o: exit 1, a message naming it, nothing downloaded or installed", async (machine, message) => {
    const before = requested.length
    const result = await install(machine)
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toStartWith(`massgen install: ${message}`)
    expect(result.stderr.split("\n").filter((l) => l !== "")).toHaveLength(1)
    expect(installed(result.dir)).toEqual([])
    expect(requested.length).toBe(before)
  })

  test("an unreachable base URL: exit 1 naming the URL, nothing installed", async () => {
    const result = await install({ os: "Linux", arch: "x86_64" }, { MASSGEN_INSTALL_BASE: `${base}/nothing-here` })
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toEndWith(`massgen install: could not download ${base}/nothing-here/SHA256SUMS\n`)
    expect(installed(result.dir)).toEqual([])
  })

  test("shellcheck finds nothing", () => {
    const check = Bun.spawnSync(["shellcheck", "-s", "sh", INSTALLER])
    expect({ exitCode: check.exitCode, output: check.stdout.toString() }).toEqual({ exitCode: 0, output: "" })
  })
})
