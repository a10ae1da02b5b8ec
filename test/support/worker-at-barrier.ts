/**
 * One `massgen worker --engine URL` held at a barrier (test/worker-setup-race.test.ts):
 * the program and the worker's modules loaded first, then `ready` on stdout,
 * then nothing until a byte on stdin; then the worker's whole set-up, as
 * `main.ts` runs it (`runProgram`), so that every process of a round starts
 * its set-up within the same moment, not a module load apart. Once the worker
 * says it takes items, it is stopped as by a signal; the process exits with
 * the program's code, its lines on stderr as the worker printed them.
 */
import { runProgram } from "../../src/cli/program.ts"

await import("../../src/cli/batch/worker-command.ts")
process.stdout.write("ready\n")
await new Promise((released) => process.stdin.once("data", released))
let stop: (why: string) => void = () => undefined
const stopSignal = new Promise<string>((resolve) => (stop = resolve))
const code = await runProgram(["worker", "--engine", process.argv[2]!, "--concurrency", "1"], {
  stopSignal,
  print: (line) => console.log("%s", line),
  printError: (line) => {
    console.error("%s", line)
    if (line.includes(" takes items from ")) stop("stopped by the test")
  },
})
process.exit(code)
