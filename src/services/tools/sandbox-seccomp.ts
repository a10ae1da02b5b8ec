/**
 * The sandbox's seccomp filter: no Unix socket can be made inside it.
 *
 * A Unix socket's file is reached through the mount namespace, not the
 * network one, and a read-only bind does not stop a `connect()` (only
 * regular files, folders and links are read-only there). So a socket under a
 * folder the sandbox shows (a read-only context path, `/opt`, `/etc`) would
 * reach the host service that listens on it. `bwrap --seccomp 3` loads this
 * classic-BPF program: `socket(AF_UNIX, ...)` fails with `EACCES`, and so do
 * `io_uring_setup`, `io_uring_enter` and `io_uring_register` (io_uring makes
 * and connects sockets without the `socket` system call), and every call of
 * another ABI (32-bit, x32), which has its own numbers. `socketpair` stays
 * allowed: its two ends are connected only to each other.
 *
 * `unixSocketFilter(arch)` is the program for `process.arch` (`x64`,
 * `arm64`), or null on another (no filter is loaded: docs/commands.md says
 * so). `filterFile()` writes it once per process into a folder of its own
 * (mode 0700) under the system's temporary folder, removed when massgen
 * exits; `bwrap` reads it from descriptor 3 (`SANDBOX_FILTER_FD`).
 *
 * Words: *BPF* is the kernel's packet-filter bytecode seccomp runs on each
 * system call's number, ABI and arguments (`struct seccomp_data`).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"

export const SANDBOX_FILTER_FD = 3

interface Abi {
  readonly audit: number
  readonly socket: number
  readonly ioUring: ReadonlyArray<number>
}

/** The ABI seccomp reports (`AUDIT_ARCH_*`) and the numbers of the calls denied. */
const ABIS: Readonly<Record<string, Abi>> = {
  x64: { audit: 0xc000003e, socket: 41, ioUring: [425, 426, 427] },
  arm64: { audit: 0xc00000b7, socket: 198, ioUring: [425, 426, 427] },
}

const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const RET_K = 0x06
const ALLOW = 0x7fff0000
const DENY = 0x00050000 | 13 // SECCOMP_RET_ERRNO | EACCES
const AF_UNIX = 1
/** x32's calls are x86-64's numbers with this bit set. */
const X32_BIT = 0x40000000
/** Offsets in `struct seccomp_data`: nr, arch, then the low half of args[0] (little-endian). */
const NR = 0
const ARCH = 4
const ARG0 = 16

type Insn = readonly [code: number, jt: number, jf: number, k: number]

/** The program for `arch`, 8 bytes an instruction, or null when the ABI is not known here. */
export const unixSocketFilter = (arch: string): Uint8Array | null => {
  const abi = ABIS[arch]
  if (abi === undefined) return null
  const n = abi.ioUring.length
  // Layout: 0 ld arch; 1 jeq; 2 ld nr; 3 jge x32; 4..4+n-1 jeq io_uring; 4+n jeq socket; 5+n ld arg0; 6+n jeq AF_UNIX; 7+n allow; 8+n deny.
  const deny = 8 + n
  const allow = 7 + n
  const jumpTo = (from: number, to: number) => to - from - 1
  const program: Array<Insn> = [
    [LD_W_ABS, 0, 0, ARCH],
    [JEQ_K, 0, jumpTo(1, deny), abi.audit],
    [LD_W_ABS, 0, 0, NR],
    [JGE_K, jumpTo(3, deny), 0, X32_BIT],
    ...abi.ioUring.map((nr, i): Insn => [JEQ_K, jumpTo(4 + i, deny), 0, nr]),
    [JEQ_K, 0, jumpTo(4 + n, allow), abi.socket],
    [LD_W_ABS, 0, 0, ARG0],
    [JEQ_K, jumpTo(6 + n, deny), 0, AF_UNIX],
    [RET_K, 0, 0, ALLOW],
    [RET_K, 0, 0, DENY],
  ]
  const bytes = new Uint8Array(program.length * 8)
  const view = new DataView(bytes.buffer)
  program.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true)
    view.setUint8(i * 8 + 2, jt)
    view.setUint8(i * 8 + 3, jf)
    view.setUint32(i * 8 + 4, k >>> 0, true)
  })
  return bytes
}

let written: string | null = null

/** The path of this process's filter file, written on the first call; null where there is no filter for this ABI. */
export const filterFile = (): string | null => {
  if (written !== null) return written
  const program = unixSocketFilter(process.arch)
  if (program === null) return null
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-seccomp-"))
  const path = nodePath.join(dir, "no-unix-sockets.bpf")
  fs.writeFileSync(path, program, { mode: 0o600, flag: "wx" })
  process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }))
  written = path
  return path
}
