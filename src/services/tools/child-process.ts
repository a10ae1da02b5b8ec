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
 *
 * Words: a *group* is a process group, named by the pid of its first process.
 */
const setpriv: string | null = Bun.which("setpriv")
const perl: string | null = Bun.which("perl")

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
export const spawnInGroup = <In extends "pipe" | "ignore">(program: string, args: ReadonlyArray<string>, options: SpawnOptions<In>): GroupProcess<In> => {
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
export const readHead = async (stream: ReadableStream<Uint8Array>, max: number): Promise<{ readonly text: string; readonly bytes: number }> => {
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
