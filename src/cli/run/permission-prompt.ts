/**
 * The person at the terminal answers the permission engine's asks: `terminalAsker(stdin)`, for a run that is not `--automation` and reads a terminal.
 *
 * Contract: one question at a time (a second ask waits for the first
 * answer). The question itself is on the screen already: the display shows
 * the `permission_asked` event as its line (`permission asked (human): ...:
 * allow? press y or n`), in the live view and the plain lines alike. The
 * answer is one key, read with the terminal in raw mode (no echo, so the
 * live view is not disturbed): `y` allows, `n` denies, any other key is
 * ignored; Ctrl+C is passed on as the SIGINT it would have been. The
 * terminal is put back as it was when the answer comes or the ask is
 * interrupted (the turn stopped, the run's timeout).
 */
import { Effect } from "effect"
import type { PermissionAsker } from "../../services/tools/permission-gate.ts"

/** Whether this process can ask a person: its standard input is a terminal. */
export const canAskAtTerminal = (automation: boolean, stdin: NodeJS.ReadStream = process.stdin): boolean =>
  !automation && stdin.isTTY === true

export const terminalAsker = (stdin: NodeJS.ReadStream = process.stdin): PermissionAsker["Type"] => {
  const one = Effect.unsafeMakeSemaphore(1)
  const key = Effect.async<boolean>((resume) => {
    const wasRaw = stdin.isRaw
    const onData = (data: Buffer) => {
      const typed = data.toString("utf8")
      if (typed.includes("\u0003")) {
        process.kill(process.pid, "SIGINT")
        return
      }
      const answer = /^[yY]/.test(typed) ? true : /^[nN]/.test(typed) ? false : null
      if (answer === null) return
      done()
      resume(Effect.succeed(answer))
    }
    const done = () => {
      stdin.off("data", onData)
      stdin.setRawMode(wasRaw)
      stdin.pause()
    }
    stdin.setRawMode(true)
    stdin.on("data", onData)
    stdin.resume()
    return Effect.sync(done)
  })
  return { ask: () => one.withPermits(1)(key) }
}
