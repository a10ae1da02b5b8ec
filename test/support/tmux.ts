/**
 * A tmux server of a test file's own, for driving massgen on a real terminal.
 *
 * `tmuxServer(prefix)` names a server socket after the test process; `start`
 * runs a command line in a new 120x40 session in `cwd` (the shell prints
 * `EXIT=<code>` when it ends, then stays), `screen` captures what a session
 * shows (with `scrollback` lines above it), `waitFor` polls the screen until a
 * check holds, within a bound, and `kill` ends the server.
 */
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

export const tmuxServer = (prefix: string) => {
  const socket = `${prefix}-${process.pid}`
  let sessions = 0
  const tmux = (...args: ReadonlyArray<string>): string => {
    const result = Bun.spawnSync(["tmux", "-L", socket, ...args], { stdout: "pipe", stderr: "pipe" })
    if (result.exitCode !== 0) throw new Error(`tmux ${args.join(" ")}: ${result.stderr.toString()}`)
    return result.stdout.toString()
  }
  const start = (cwd: string, argv: ReadonlyArray<string>): string => {
    const name = `s${++sessions}`
    tmux(
      "new-session",
      "-d",
      "-s",
      name,
      "-x",
      "120",
      "-y",
      "40",
      `cd ${quote(cwd)} && env -u MASSGEN_LOG_BASE_DIR ${argv.map(quote).join(" ")}; echo EXIT=$?; sleep 600`,
    )
    return name
  }
  const screen = (name: string, scrollback = 0) =>
    tmux("capture-pane", "-p", ...(scrollback > 0 ? ["-S", `-${scrollback}`] : []), "-t", name)
  const waitFor = async (name: string, check: (s: string) => boolean, what: string, timeoutMs: number, scrollback = 0) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const s = screen(name, scrollback)
      if (check(s)) return s
      if (Date.now() > deadline) throw new Error(`screen never showed ${what}:\n${s}`)
      await Bun.sleep(20)
    }
  }
  const kill = () => {
    try {
      tmux("kill-server")
    } catch {
      // No server left.
    }
  }
  return { tmux, start, screen, waitFor, kill }
}
