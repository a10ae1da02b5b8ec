/**
 * A child process that dies with massgen: the command line that starts a tool's
 * process (an MCP server, a command tool) so that the kernel kills it when
 * massgen dies, even by SIGKILL.
 *
 * Where util-linux's `setpriv` exists (Linux), the command runs under
 * `setpriv --pdeathsig SIGKILL`; elsewhere as it is, and a SIGKILL of massgen
 * leaves the process to end when its stdin closes.
 */
const setpriv: string | null = Bun.which("setpriv")

/** The command line that starts `command`: under `setpriv --pdeathsig SIGKILL` where there is one. */
export const deathBoundCommand = (command: string, args: ReadonlyArray<string>): ReadonlyArray<string> =>
  setpriv === null ? [command, ...args] : [setpriv, "--pdeathsig", "SIGKILL", "--", command, ...args]
