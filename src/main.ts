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
 *
 * Start-up is lazy: `massgen --help` and `--version` print from `cli/help.ts`
 * alone (no parser, no Effect, no node streams: Bun takes about 7 ms to make
 * `process.stdout`), and the program (`cli/program.ts`) loads each command's
 * code only when it runs. `process.stdout` and `process.stderr` are made at
 * their first line.
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

/** Lines to a standard stream, which is made at the first line; they go quiet, not fatal, once its reader has gone. */
const quietly = (open: () => NodeJS.WriteStream) => {
  let stream: NodeJS.WriteStream | null = null
  let closed = false
  return (line: string) => {
    if (closed) return
    if (stream === null) {
      stream = open()
      stream.on("error", () => {
        closed = true
      })
    }
    try {
      stream.write(`${line}\n`)
    } catch {
      closed = true
    }
  }
}

const argv = process.argv.slice(2)
const { HELP, VERSION, plainInvocation } = await import("./cli/help.ts")
const plain = plainInvocation(argv)
if (plain !== null) {
  // The whole of stdout, with nothing else writing to it: console.log needs no stream and stays quiet once the reader has gone.
  console.log("%s", plain === "help" ? HELP : `massgen ${VERSION}`)
  process.exit(0)
}
const { runProgram } = await import("./cli/program.ts")
const code = await runProgram(argv, { stopSignal, print: quietly(() => process.stdout), printError: quietly(() => process.stderr) })
process.exit(code)
