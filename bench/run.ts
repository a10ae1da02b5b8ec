/**
 * The benchmark (`bun run bench`): prints labelled numbers; a line with a goal
 * prints its median, max, ratio, goal and "met" or "NOT MET" (bench/support.ts `targetLine`).
 * 0. start-up: the compiled binary's `--version` and a whole 3-agent run, each
 *    a cold process, over a compiled hello-world floor (bench/start-up.ts);
 * 1. whole-run wall time of zero-delay scripted runs in process, and where a
 *    3-agent run's time goes (bench/whole-run.ts);
 * 2. events folded per second, and the CPU time of 10 x the answers over the fewer (bench/fold.ts);
 * 3. wall time over the ideal for agents replying after 200 ms (bench/critical-path.ts);
 * 4. resume of a 100,000-event log, and replay time over a run's wall time (bench/resume-replay.ts);
 * 5. logs at scale: status, resume and replay of dense logs as whole processes
 *    of the binary, read + decode + fold at 10k and 1M events (bench/scale-logs.ts);
 * 6. many agents: 50 and 200 agents as whole processes of the binary, beside the
 *    seed orchestrator; extra calls, peak RSS, log size (bench/scale-agents.ts);
 * 7. an MCP stdio tool call through massgen's provider over the bare SDK client (bench/mcp.ts).
 * 8. tool calls: massgen's own overhead per tool call, the tool excluded (bench/tool-calls.ts).
 * 9. injection against restart: wasted calls, tokens and tool calls on a staggered 10-agent run with tool steps (bench/injection.ts).
 * 10. massgen serve: added latency per request over the same run in process, requests/s at concurrency 8, RSS growth over 1,000 requests after a warm-up at that concurrency (bench/serve.ts).
 * 10c. massgen serve under faults: runs started per client call of the openai SDK, the AI SDK and LangChain (bench/serve-faults.ts).
 * 11. workspace snapshots: a 10 MB, 1,000-file workspace, first and later snapshot, over `cp -a` (bench/snapshots.ts).
 * 12. batches: `massgen batch` throughput at concurrency 1 and 3, and the Postgres event store's cost per event over the file store's (bench/batch.ts).
 * 13. a 20 MB question: peak RSS, and the log directory over the question's size (bench/long-question.ts).
 * Live runs write to a temp directory that is removed at the end.
 */
import { availableParallelism, loadavg } from "node:os"
import { batchBench } from "./batch.ts"
import { criticalPathBench } from "./critical-path.ts"
import { foldBench } from "./fold.ts"
import { injectionBench } from "./injection.ts"
import { longQuestionBench } from "./long-question.ts"
import { mcpBench } from "./mcp.ts"
import { replayBench, resumeBench } from "./resume-replay.ts"
import { scaleAgentsBench } from "./scale-agents.ts"
import { scaleLogsBench } from "./scale-logs.ts"
import { serveBench } from "./serve.ts"
import { serveFaultsBench } from "./serve-faults.ts"
import { snapshotBench } from "./snapshots.ts"
import { startUpBench } from "./start-up.ts"
import { cleanUp, fmt } from "./support.ts"
import { toolCallBench } from "./tool-calls.ts"
import { whereTimeGoesBench, wholeRunBench } from "./whole-run.ts"

const started = performance.now()
const load = () =>
  loadavg()
    .map((n) => fmt(n))
    .join(" ")
// Other processes on the machine inflate wall times (and ratios): the load average says how busy it was.
console.log(
  `massgen bench: bun ${Bun.version}, ${process.platform}/${process.arch}, ${availableParallelism()} CPUs, load average ${load()}`,
)
/** The sections in order, each printed after a blank line but the first. */
const SECTIONS: ReadonlyArray<() => Promise<void>> = [
  startUpBench,
  wholeRunBench,
  whereTimeGoesBench,
  foldBench,
  criticalPathBench,
  async () => {
    console.log("# 4. Resume and replay")
    await resumeBench()
    await replayBench()
  },
  scaleLogsBench,
  scaleAgentsBench,
  mcpBench,
  toolCallBench,
  injectionBench,
  serveBench,
  serveFaultsBench,
  snapshotBench,
  batchBench,
  longQuestionBench,
]
try {
  for (const [i, section] of SECTIONS.entries()) {
    if (i > 0) console.log("")
    await section()
  }
} finally {
  cleanUp()
}
console.log("")
console.log(`bench total: ${fmt((performance.now() - started) / 1000, 1)} s, load average ${load()}`)
