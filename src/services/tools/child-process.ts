/**
 * Tool processes: how massgen starts a process for a tool (an MCP server, a
 * command tool, a command of `execute_command`), reads its output and stops it.
 *
 * - It dies with massgen, even by SIGKILL: where util-linux's `setpriv` exists
 *   (Linux), the program runs under `setpriv --pdeathsig SIGKILL`, so the
 *   kernel kills it when massgen dies (`deathBoundCommand`).
 * - It runs in a process group of its own (`spawnInGroup`), so that stopping
 *   it stops what it started (`killGroup`), and a Ctrl+C at the terminal
 *   reaches massgen alone, which stops its tools itself. A group still running
 *   when massgen exits (`process.exit`, a second Ctrl+C) is killed then.
 *   The group comes from a short Perl `setpgrp` before the program where Perl
 *   exists (every Debian has it), and otherwise from a session of its own
 *   (`detached`). A session of its own is the last resort: with the kernel's
 *   scheduler autogroups a new session is a new scheduling group, and on a
 *   busy machine each reply of such a process took a third longer to reach
 *   massgen (measured on MCP calls).
 * - What it prints is held only as far as the caller wants: the first bytes
 *   (`readUpTo`, `readHead`) or the last characters (`readTail`).
 * - A *command* (a command tool, a local `execute_command`) runs contained
 *   (`containedCommand`): in a PID namespace of its own (util-linux's
 *   `unshare --pid --fork --kill-child`), with a `/proc` of its own where it
 *   can mount one (`--mount-proc`; some containers refuse it), and for a user
 *   other than root in a user namespace of its own as well, mapped to the
 *   same user. Its pids are its own (its shell is pid 1). When its first
 *   process ends, or is killed, the kernel kills every process of the
 *   namespace, so what it started in a session of its own (`setsid`), with
 *   `nohup`, or through a double fork ends with it too. Where `unshare`
 *   cannot make one (no util-linux, user namespaces off), the command runs as
 *   it is, and only its group is killed (`containment()` says which).
 * - A command does not read massgen's environment or memory through
 *   `/proc/<pid>`: massgen makes itself not dumpable (`prctl(PR_SET_DUMPABLE,
 *   0)`, `hideOwnMemory`) before it starts its first tool process, which
 *   stops any process of an ordinary user. Root keeps that access while it
 *   has `CAP_SYS_PTRACE`, `CAP_SYS_ADMIN` or `CAP_PERFMON` (measured on Linux
 *   6.18: each of them alone still opens `/proc/<pid>/environ`), so a command
 *   of root runs without those three capabilities (`setpriv --bounding-set`).
 *   Root has other ways into massgen's memory (`CAP_SYS_RAWIO`, a kernel
 *   module): this is not a boundary against a root command.
 *
 * Words: a *group* is a process group, named by the pid of its first process.
 */
import { dlopen } from "bun:ffi"

const setpriv: string | null = Bun.which("setpriv")
const perl: string | null = Bun.which("perl")
const unshare: string | null = Bun.which("unshare")

const PR_SET_DUMPABLE = 4
let memoryHidden = false
/** Makes massgen not dumpable (Linux): its `/proc/<pid>/environ` and `mem` are closed to its own user's other processes. Once; nothing elsewhere. */
export const hideOwnMemory = (): void => {
  if (memoryHidden) return
  memoryHidden = true
  if (process.platform !== "linux") return
  try {
    const libc = dlopen("libc.so.6", { prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" } })
    libc.symbols.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.close()
  } catch {
    // Not glibc (musl): the environment stays readable to the user's processes, as docs/commands.md says.
  }
}

/** The capabilities a command of root runs without: any one of them opens another process's `/proc/<pid>/environ`. */
const ROOT_DROPS = "--bounding-set=-sys_ptrace,-sys_admin,-perfmon"

/** The wrappers that contain a command, most confining first, for this user: a `/proc` of its own where it can mount one. */
const containers = (): ReadonlyArray<ReadonlyArray<string>> => {
  if (unshare === null || process.platform !== "linux") return []
  const pids = [
    ["--pid", "--fork", "--kill-child", "--mount-proc"],
    ["--pid", "--fork", "--kill-child"],
  ]
  if (process.getuid?.() !== 0) return pids.map((pid) => [unshare, "--user", "--map-current-user", ...pid, "--"])
  return pids.flatMap((pid) => [...(setpriv === null ? [] : [[unshare, ...pid, "--", setpriv, ROOT_DROPS, "--"]]), [unshare, ...pid, "--"]])
}

let container: ReadonlyArray<string> | null | undefined
/** The wrapper that contains a command here, tried once (null: none works). */
export const containment = (): ReadonlyArray<string> | null => {
  if (container !== undefined) return container
  container = null
  for (const wrapper of containers()) {
    try {
      const tried = Bun.spawnSync([...wrapper, "/bin/sh", "-c", "exit 0"], { stdin: "ignore", stdout: "ignore", stderr: "ignore", env: {} })
      if (tried.exitCode === 0) {
        container = wrapper
        break
      }
    } catch {
      // Not this one.
    }
  }
  return container
}

/** The command line that runs `program args` contained (the docstring), or as it is where nothing contains it. */
export const containedCommand = (program: string, args: ReadonlyArray<string>): ReadonlyArray<string> => [
  ...(containment() ?? []),
  program,
  ...args,
]

/** Puts itself in a process group of its own, then becomes the program (`execvp`), or says why it cannot. */
const OWN_GROUP = 'setpgrp(0, 0); exec { $ARGV[0] } @ARGV; print STDERR "failed to execute $ARGV[0]: $!\\n"; exit 127'

/** The command line that starts `command`: under `setpriv --pdeathsig SIGKILL` where there is one. */
export const deathBoundCommand = (command: string, args: ReadonlyArray<string>): ReadonlyArray<string> =>
  setpriv === null ? [command, ...args] : [setpriv, "--pdeathsig", "SIGKILL", "--", command, ...args]

/** Groups still running, by their leader's pid: killed when massgen exits, however it exits. */
const running = new Map<number, Bun.Subprocess>()
let exitHookInstalled = false

/**
 * Signals every process of the group `pid` leads, and the leader itself while
 * it runs: a leader signalled before it made its group (between its start and
 * its `setpgrp`) is not in it yet. Nothing when it is gone. Never a pid of 0
 * or less (that is massgen's own group).
 */
export const killGroup = (pid: number, signal: NodeJS.Signals = "SIGKILL"): void => {
  if (pid <= 0) return
  try {
    process.kill(-pid, signal)
  } catch {
    // Gone already, or not made yet.
  }
  const leader = running.get(pid)
  if (leader !== undefined && leader.exitCode === null && leader.signalCode === null) leader.kill(signal)
}

/** Forgets a group: it is not killed at massgen's exit. */
export const forgetGroup = (pid: number): void => {
  running.delete(pid)
}

export interface SpawnOptions<In extends "pipe" | "ignore"> {
  readonly cwd: string
  readonly env: Record<string, string>
  readonly stdin: In
}

export type GroupProcess<In extends "pipe" | "ignore"> = Bun.Subprocess<In, "pipe", "pipe">

/**
 * Starts `program` with `args` (death-bound) as the leader of a new group,
 * with stdout and stderr piped; killed with its group at massgen's exit until
 * `forgetGroup`. Throws when it cannot start.
 */
export const spawnInGroup = <In extends "pipe" | "ignore">(
  program: string,
  args: ReadonlyArray<string>,
  options: SpawnOptions<In>,
): GroupProcess<In> => {
  hideOwnMemory()
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on("exit", () => {
      for (const pid of running.keys()) killGroup(pid)
    })
  }
  const argv = perl === null ? deathBoundCommand(program, args) : deathBoundCommand(perl, ["-e", OWN_GROUP, "--", program, ...args])
  const proc = Bun.spawn([...argv], {
    cwd: options.cwd,
    env: options.env,
    stdin: options.stdin,
    stdout: "pipe",
    stderr: "pipe",
    detached: perl === null,
  })
  running.set(proc.pid, proc)
  return proc
}

/** A stream's text, at most `max` bytes of it; `over` is called once when it brings more, and reading stops. */
export const readUpTo = async (stream: ReadableStream<Uint8Array>, max: number, over: () => void): Promise<string> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  for await (const chunk of stream) {
    chunks.push(chunk)
    size += chunk.byteLength
    if (size > max) {
      over()
      break
    }
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, max))
}

/** A stream's first `max` bytes as text, reading it to its end; `bytes` is how many it brought in all. */
export const readHead = async (
  stream: ReadableStream<Uint8Array>,
  max: number,
): Promise<{ readonly text: string; readonly bytes: number }> => {
  const chunks: Array<Uint8Array> = []
  let kept = 0
  let bytes = 0
  for await (const chunk of stream) {
    bytes += chunk.byteLength
    if (kept < max) {
      chunks.push(chunk)
      kept += chunk.byteLength
    }
  }
  // A character cut by the cap decodes as U+FFFD; the caller says the text was cut.
  return { text: new TextDecoder().decode(Buffer.concat(chunks).subarray(0, max)), bytes }
}

/** A stream's last `max` characters (what an error message quotes), however much it brings. */
export const readTail = async (stream: ReadableStream<Uint8Array>, max: number): Promise<string> => {
  const decoder = new TextDecoder()
  let text = ""
  for await (const chunk of stream) text = (text + decoder.decode(chunk, { stream: true })).slice(-max)
  return text
}
