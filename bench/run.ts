/**
 * The benchmark (`bun run bench`): prints plain labelled numbers, no pass/fail.
 * 0. start-up: the compiled binary's `--version` and a whole 3-agent run, each
 *    a cold process, over a compiled hello-world floor (bench/start-up.ts);
 * 1. whole-run wall time of zero-delay scripted runs in process, and where a
 *    3-agent run's time goes (bench/whole-run.ts);
 * 2. events folded per second (bench/fold.ts);
 * 3. wall time over the ideal for agents replying after 200 ms (bench/critical-path.ts);
 * 4. resume of a 100,000-event log, and replay time over a run's wall time (bench/resume-replay.ts).
 * Live runs write to a temp directory that is removed at the end.
 */
import { availableParallelism, loadavg } from "node:os"
import { criticalPathBench } from "./critical-path.ts"
import { foldBench } from "./fold.ts"
import { replayBench, resumeBench } from "./resume-replay.ts"
import { startUpBench } from "./start-up.ts"
import { cleanUp, fmt } from "./support.ts"
import { whereTimeGoesBench, wholeRunBench } from "./whole-run.ts"

const started = performance.now()
const load = () => loadavg().map((n) => fmt(n)).join(" ")
// Other processes on the machine inflate wall times (and ratios): the load average says how busy it was.
console.log(`massgen bench: bun ${Bun.version}, ${process.platform}/${process.arch}, ${availableParallelism()} CPUs, load average ${load()}`)
try {
  await startUpBench()
  console.log("")
  await wholeRunBench()
  console.log("")
  await whereTimeGoesBench()
  console.log("")
  await foldBench()
  console.log("")
  await criticalPathBench()
  console.log("")
  console.log("# 4. Resume and replay")
  await resumeBench()
  await replayBench()
} finally {
  cleanUp()
}
console.log("")
console.log(`bench total: ${fmt((performance.now() - started) / 1000, 1)} s, load average ${load()}`)
