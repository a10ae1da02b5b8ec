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
 * left their log directories complete. Lines go out through `console.log` and
 * `console.error`: they go quiet, not fatal, once their reader has gone
 * (`massgen ... | head -1`), and a slow reader gets every line before exit.
 *
 * Start-up is lazy: `massgen --help` and `--version` print from `cli/help.ts`
 * and `cli/process/identity.ts` alone (no parser, no Effect), and the program (`cli/program.ts`) loads each
 * command's code only when it runs. No node stream is made unless a command
 * needs one (the terminal view, the viewer): Bun takes about as long to make
 * `process.stdout` as to start a whole program, and Effect's logger module
 * asks for it while it loads (to pick the colours of a logger massgen does not
 * use), so the program is imported with `process.stdout` hidden from it.
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

/**
 * Imports `load()` with `process.stdout` reading as undefined, so that module
 * code run meanwhile does not make the stream; everything else of `process` is
 * as it was, and `process` itself again once the import is done.
 */
const withoutStdout = async <M>(load: () => Promise<M>): Promise<M> => {
  const real = globalThis.process
  globalThis.process = new Proxy(real, { get: (target, key) => (key === "stdout" ? undefined : Reflect.get(target, key)) })
  try {
    return await load()
  } finally {
    globalThis.process = real
  }
}

/** How long a command runs before the JIT is back to its normal policy. */
const JIT_NORMAL_AFTER_MS = 1000

const argv = process.argv.slice(2)
const { HELP, plainInvocation } = await import("./cli/help.ts")
const plain = plainInvocation(argv)
if (plain !== null) {
  // The whole of stdout, with nothing else writing to it: console.log needs no stream and stays quiet once the reader has gone.
  console.log("%s", plain === "help" ? HELP : (await import("./cli/process/identity.ts")).versionText())
  process.exit(0)
}
// The binary starts with the JIT reluctant (`cli/process/jit-policy.ts`): most of a short command's code runs
// once, and compiling it costs more than it saves. Past a second, the normal JIT (but for a run).
const { normalJitAfter } = await import("./cli/process/jit-policy.ts")
normalJitAfter(JIT_NORMAL_AFTER_MS)
const { runProgram } = await withoutStdout(() => import("./cli/program.ts"))
const code = await runProgram(argv, {
  stopSignal,
  print: (line) => console.log("%s", line),
  printError: (line) => console.error("%s", line),
})
process.exit(code)
