/**
 * `bun run release`, as a user downloading a binary meets it: every file is
 * in `dist/release/` and `SHA256SUMS` verifies; each binary is an executable
 * of its target's format and CPU (the headers are parsed here: ELF, Mach-O,
 * PE32+); the linux-x64 binary runs the offline demo with nothing around it
 * (`env -i`, an empty HOME, no bun or node on PATH, a fresh directory), and
 * its logs name the binary; the linux-arm64 binary does the same under
 * qemu-user (`qemu-aarch64-static -L /usr/aarch64-linux-gnu`, which
 * `scripts/test-deps.sh` installs; skipped, with the reason printed, only
 * where those are missing). The release is built once (`ensureRelease`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import pkg from "../package.json" with { type: "json" }
import { cleanupSandboxes, ROOT, sandbox } from "./support/cli.ts"
import { ensureRelease, RELEASE_DIR, RELEASE_TARGETS, releaseBinary, releaseFileName } from "./support/release.ts"

afterAll(cleanupSandboxes)

const BUILD_TIMEOUT_MS = 15 * 60_000
const RUN_TIMEOUT_MS = 120_000

beforeAll(() => ensureRelease().then(() => undefined), BUILD_TIMEOUT_MS)

const hashes = new Map<string, string>()
/** A file's SHA-256, computed once per test run (the binaries are large). */
const sha256 = (path: string): string => {
  const known = hashes.get(path)
  if (known !== undefined) return known
  const hash = createHash("sha256").update(fs.readFileSync(path)).digest("hex")
  hashes.set(path, hash)
  return hash
}

describe("dist/release", () => {
  test("holds every binary, install.sh, SHA256SUMS and RELEASE.md, and SHA256SUMS verifies", () => {
    const files = RELEASE_TARGETS.map(({ platform }) => releaseFileName(platform))
    expect(files).toEqual([
      `massgen-${pkg.version}-linux-x64`,
      `massgen-${pkg.version}-linux-arm64`,
      `massgen-${pkg.version}-linux-x64-musl`,
      `massgen-${pkg.version}-darwin-x64`,
      `massgen-${pkg.version}-darwin-arm64`,
      `massgen-${pkg.version}-windows-x64.exe`,
    ])
    expect(fs.readdirSync(RELEASE_DIR).sort()).toEqual([...files, "RELEASE.md", "SHA256SUMS", "install.sh"].sort())
    const sums = fs.readFileSync(nodePath.join(RELEASE_DIR, "SHA256SUMS"), "utf8")
    const lines = sums
      .trimEnd()
      .split("\n")
      .map((line) => /^([0-9a-f]{64}) {2}(\S+)$/.exec(line))
    expect(lines.every((m) => m !== null)).toBe(true)
    expect(lines.map((m) => m![2]).sort()).toEqual([...files, "install.sh"].sort())
    for (const m of lines)
      expect({ file: m![2]!, sha256: sha256(nodePath.join(RELEASE_DIR, m![2]!)) }).toEqual({ file: m![2]!, sha256: m![1]! })
    expect(fs.readFileSync(nodePath.join(RELEASE_DIR, "install.sh"), "utf8")).toBe(
      fs.readFileSync(nodePath.join(ROOT, "install.sh"), "utf8"),
    )
    for (const file of files) expect(fs.statSync(nodePath.join(RELEASE_DIR, file)).mode & 0o111).not.toBe(0)
  })

  test("sha256sum -c SHA256SUMS agrees", () => {
    const check = Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: RELEASE_DIR })
    expect({
      exitCode: check.exitCode,
      stdout: check.stdout
        .toString()
        .split("\n")
        .filter((l) => l !== "" && !l.endsWith(": OK")),
    }).toEqual({ exitCode: 0, stdout: [] })
  })

  test("no binary weighs over 125 MB", () => {
    const over = RELEASE_TARGETS.map(({ platform }) => ({
      file: releaseFileName(platform),
      bytes: fs.statSync(releaseBinary(platform)).size,
    })).filter((b) => b.bytes > 125_000_000)
    expect(over).toEqual([])
  })

  test("RELEASE.md gives each binary's exact size and checksum", () => {
    const notes = fs.readFileSync(nodePath.join(RELEASE_DIR, "RELEASE.md"), "utf8")
    expect(notes).toStartWith(`# massgen ${pkg.version}\n`)
    for (const { platform, target } of RELEASE_TARGETS) {
      const path = releaseBinary(platform)
      const row = notes.split("\n").find((l) => l.startsWith(`| ${releaseFileName(platform)} |`))
      expect(row).toContain(`| ${target} |`)
      expect(row).toContain(`(${fs.statSync(path).size} bytes)`)
      expect(row).toContain(sha256(path))
    }
  })
})

/** What a binary's header says it is: format, CPU, and for ELF the program interpreter (glibc or musl). */
const headerOf = (path: string): { format: string; cpu: string; interpreter?: string } => {
  const fd = fs.openSync(path, "r")
  try {
    const head = Buffer.alloc(4096)
    fs.readSync(fd, head, 0, head.length, 0)
    if (head.readUInt32BE(0) === 0x7f454c46) {
      const bits = head[4] === 2 ? 64 : 32
      const cpu =
        ({ 0x3e: "x86-64", 0xb7: "aarch64" } as Record<number, string>)[head.readUInt16LE(18)] ??
        `machine 0x${head.readUInt16LE(18).toString(16)}`
      // The program headers: PT_INTERP (3) names the loader, so the C library the binary is linked against.
      const phoff = Number(head.readBigUInt64LE(32))
      const phentsize = head.readUInt16LE(54)
      const phnum = head.readUInt16LE(56)
      const table = Buffer.alloc(phentsize * phnum)
      fs.readSync(fd, table, 0, table.length, phoff)
      let interpreter: string | undefined
      for (let i = 0; i < phnum; i++) {
        const at = i * phentsize
        if (table.readUInt32LE(at) !== 3) continue
        const text = Buffer.alloc(Number(table.readBigUInt64LE(at + 32)))
        fs.readSync(fd, text, 0, text.length, Number(table.readBigUInt64LE(at + 8)))
        interpreter = text.toString("latin1").replace(/\0+$/, "")
      }
      return { format: `ELF${bits}`, cpu, ...(interpreter === undefined ? {} : { interpreter }) }
    }
    if (head.readUInt32LE(0) === 0xfeedfacf) {
      const cpu =
        ({ 0x01000007: "x86-64", 0x0100000c: "arm64" } as Record<number, string>)[head.readUInt32LE(4)] ??
        `cputype 0x${head.readUInt32LE(4).toString(16)}`
      return { format: `Mach-O 64 ${head.readUInt32LE(12) === 2 ? "executable" : `filetype ${head.readUInt32LE(12)}`}`, cpu }
    }
    if (head.toString("latin1", 0, 2) === "MZ") {
      const pe = head.readUInt32LE(0x3c)
      if (head.toString("latin1", pe, pe + 4) !== "PE\0\0") return { format: "MZ without PE", cpu: "?" }
      const cpu =
        ({ 0x8664: "x86-64", 0xaa64: "arm64" } as Record<number, string>)[head.readUInt16LE(pe + 4)] ??
        `machine 0x${head.readUInt16LE(pe + 4).toString(16)}`
      const magic = head.readUInt16LE(pe + 24)
      return { format: magic === 0x20b ? "PE32+" : `PE optional header 0x${magic.toString(16)}`, cpu }
    }
    return { format: `unknown (${head.subarray(0, 4).toString("hex")})`, cpu: "?" }
  } finally {
    fs.closeSync(fd)
  }
}

describe("each binary's header matches its target", () => {
  const expected: Record<string, ReturnType<typeof headerOf>> = {
    "linux-x64": { format: "ELF64", cpu: "x86-64", interpreter: "/lib64/ld-linux-x86-64.so.2" },
    "linux-arm64": { format: "ELF64", cpu: "aarch64", interpreter: "/lib/ld-linux-aarch64.so.1" },
    "linux-x64-musl": { format: "ELF64", cpu: "x86-64", interpreter: "/lib/ld-musl-x86_64.so.1" },
    "darwin-x64": { format: "Mach-O 64 executable", cpu: "x86-64" },
    "darwin-arm64": { format: "Mach-O 64 executable", cpu: "arm64" },
    "windows-x64": { format: "PE32+", cpu: "x86-64" },
  }
  test.each(RELEASE_TARGETS.map(({ platform }) => platform))("%s", (platform) => {
    expect(headerOf(releaseBinary(platform))).toEqual(expected[platform]!)
  })
})

const DEMO_QUESTION = "What is the best way to learn a new programming language?"

/**
 * Runs `prefix + [binary, ...args]` with nothing inherited: `env -i`, HOME an
 * empty directory, PATH an empty directory (no bun, no node), in a fresh
 * directory holding only a copy of the offline demo's config.
 */
const runClean = async (prefix: ReadonlyArray<string>, binary: string, args: ReadonlyArray<string>) => {
  const cwd = sandbox()
  const home = nodePath.join(cwd, "home")
  const bin = nodePath.join(cwd, "empty-bin")
  fs.mkdirSync(home)
  fs.mkdirSync(bin)
  fs.copyFileSync(nodePath.join(ROOT, "examples", "demo.yaml"), nodePath.join(cwd, "demo.yaml"))
  const proc = Bun.spawn(["/usr/bin/env", "-i", `HOME=${home}`, `PATH=${bin}`, ...prefix, binary, ...args], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  })
  const [exitCode, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  return { cwd, exitCode, stdout, stderr }
}

/** The offline demo run by `prefix + binary` in a clean environment: it finishes, and its logs name the binary. */
const demoRunsClean = async (prefix: ReadonlyArray<string>, platform: string) => {
  const version = await runClean(prefix, releaseBinary(platform), ["--version"])
  expect({ exitCode: version.exitCode, stderr: version.stderr }).toEqual({ exitCode: 0, stderr: "" })
  expect(version.stdout).toMatch(
    new RegExp(
      `^massgen ${pkg.version.replaceAll(".", "\\.")}\ncommit: \\S+\nbuilt: \\S+Z\nbun: ${Bun.version.replaceAll(".", "\\.")}\ntarget: bun-${platform}\n$`,
    ),
  )

  const run = await runClean(prefix, releaseBinary(platform), ["--automation", "--config", "demo.yaml", DEMO_QUESTION])
  expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: "" })
  expect(run.stdout).toContain("WINNER: researcher")
  const logDir = /^LOG_DIR: (.+)$/m.exec(run.stdout)?.[1]
  expect(logDir).toStartWith(nodePath.join(run.cwd, ".massgen", "massgen_logs"))
  const status = JSON.parse(fs.readFileSync(nodePath.join(logDir!, "status.json"), "utf8"))
  expect({ complete: status.is_complete, reason: status.finish_reason }).toEqual({ complete: true, reason: "completed" })
  expect(fs.readFileSync(nodePath.join(logDir!, "final", "researcher", "answer.txt"), "utf8")).toContain("Learn by building")

  const commit = /^commit: (\S+)$/m.exec(version.stdout)![1]!
  const started = JSON.parse(fs.readFileSync(nodePath.join(logDir!, "events.jsonl"), "utf8").split("\n")[0]!)
  expect(started.meta.version).toStartWith(`${pkg.version} (commit ${commit}, built `)
  expect(started.meta.version).toEndWith(`, bun ${Bun.version}, bun-${platform})`)
  const metadata = fs.readFileSync(nodePath.join(logDir!, "execution_metadata.yaml"), "utf8")
  expect(metadata).toContain(`build:\n  version: ${pkg.version}\n  commit: ${commit}\n`)
  expect(metadata).toContain(`  target: bun-${platform}\n`)
}

describe("the binaries run with nothing installed", () => {
  test.if(process.platform === "linux" && process.arch === "x64")(
    "linux-x64: --version and the offline demo in an empty environment",
    () => demoRunsClean([], "linux-x64"),
    RUN_TIMEOUT_MS,
  )

  const QEMU = "/usr/bin/qemu-aarch64-static"
  const SYSROOT = "/usr/aarch64-linux-gnu"
  const missing = [QEMU, nodePath.join(SYSROOT, "lib", "ld-linux-aarch64.so.1")].filter((p) => !fs.existsSync(p))
  if (missing.length > 0)
    console.warn(
      `release.test.ts: skipping linux-arm64 under qemu: missing ${missing.join(", ")} (bash scripts/test-deps.sh installs qemu-user-static and libc6-arm64-cross)`,
    )
  test.skipIf(missing.length > 0)(
    "linux-arm64 under qemu-user: --version and the offline demo in an empty environment",
    () => demoRunsClean([QEMU, "-L", SYSROOT], "linux-arm64"),
    RUN_TIMEOUT_MS * 2,
  )
})
