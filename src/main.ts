/**
 * The `massgen` executable: the file mode mask and signal handlers first, then the program.
 *
 * The umask is 077 before anything is written: everything massgen creates
 * (log directories and their files: prompts and answers are private) is
 * readable by its owner only, whatever the user's umask.
 *
 * The handlers are installed before the rest of the code is even loaded, so a
 * SIGINT or SIGTERM that comes during start-up still stops a run cleanly (exit
 * 4) instead of killing the process. The first signal resolves `stopSignal`
 * (`cli/program.ts` turns it into a clean stop); a second one exits at once
 * with 4, after the runs' forced-stop hooks (`services/forced-stop.ts`) have
 * left their log directories complete. stdout and stderr go quiet, not fatal, once their reader has gone
 * (`massgen ... | head -1`).
 */
process.umask(0o077)

const stopSignal = new Promise<string>((resolve) => {
  let seen = 0
  const on = (signal: NodeJS.Signals) => () => {
    seen += 1
    // A second signal does not wait for the clean stop; the runs still leave their directories complete.
    if (seen > 1) {
      void import("./services/forced-stop.ts").then(
        (m) => (m.runForcedStop(), process.exit(4)),
        () => process.exit(4),
      )
      return
    }
    resolve(`stopped by ${signal}`)
  }
  process.on("SIGINT", on("SIGINT"))
  process.on("SIGTERM", on("SIGTERM"))
})

const quietly = (stream: NodeJS.WriteStream) => {
  let closed = false
  stream.on("error", () => {
    closed = true
  })
  return (line: string) => {
    if (closed) return
    try {
      stream.write(`${line}\n`)
    } catch {
      closed = true
    }
  }
}

const { runProgram } = await import("./cli/program.ts")
const code = await runProgram(process.argv.slice(2), { stopSignal, print: quietly(process.stdout), printError: quietly(process.stderr) })
process.exit(code)
