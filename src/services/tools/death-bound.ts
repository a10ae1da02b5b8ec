/**
 * A child process that dies with massgen: the command line that starts a tool's
 * process (an MCP server, a command tool) so that the kernel kills it when
 * massgen dies, even by SIGKILL, and, when asked, in a process group of its own.
 *
 * Where util-linux's `setpriv` exists (Linux), the command runs under
 * `setpriv --pdeathsig SIGKILL`; elsewhere as it is, and a SIGKILL of massgen
 * leaves the process to end when its stdin closes.
 *
 * A process group of its own (so that stopping the process stops what it
 * started, and a Ctrl+C at the terminal does not reach it) comes from a short
 * Perl `setpgrp` before the command where Perl exists (every Debian has it),
 * and otherwise from a session of its own (`detached`). A session of its own
 * is the last resort: with the kernel's scheduler autogroups, a new session is
 * a new scheduling group, and on a busy machine each reply of such a process
 * took a third longer to reach massgen (measured on MCP calls).
 */
const setpriv: string | null = Bun.which("setpriv")
const perl: string | null = Bun.which("perl")

/** Puts itself in a process group of its own, then becomes the command (`execvp`), or says why it cannot. */
const OWN_GROUP = 'setpgrp(0, 0); exec { $ARGV[0] } @ARGV; print STDERR "failed to execute $ARGV[0]: $!\\n"; exit 127'

/** The command line that starts `command`: under `setpriv --pdeathsig SIGKILL` where there is one. */
export const deathBoundCommand = (command: string, args: ReadonlyArray<string>): ReadonlyArray<string> =>
  setpriv === null ? [command, ...args] : [setpriv, "--pdeathsig", "SIGKILL", "--", command, ...args]

/** How to start `command` in a process group of its own that dies with massgen: its command line, and whether to spawn it `detached`. */
export const groupLeaderCommand = (command: string, args: ReadonlyArray<string>): { readonly argv: ReadonlyArray<string>; readonly detached: boolean } =>
  perl === null
    ? { argv: deathBoundCommand(command, args), detached: true }
    : { argv: deathBoundCommand(perl, ["-e", OWN_GROUP, "--", command, ...args]), detached: false }
