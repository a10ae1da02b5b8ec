/**
 * The JIT policy of the compiled binary over a command's life.
 *
 * The binary starts with the JIT reluctant (`--compile-jit-policy` in
 * `scripts/compile.ts`): most of a short command's code runs once, and
 * compiling it costs more than it saves. `main.ts` asks for the normal policy
 * after a while (`normalJitAfter`): a long fold (`massgen status` of a large
 * log) is faster with it. A coordination run from the command line makes the
 * JIT more reluctant still, for the rest of its process (`jitForRun`): its work
 * is many small steps through much code, which a JIT compiles for memory and
 * little time saved, the less so the fewer its agents (`runPolicy`). A run's
 * work per call grows with its agents (every vote round reads every answer):
 * at 200 scripted zero-delay agents, compiled, its span was 236 ms at a scale
 * of 300, 193 ms at 10 and 178 ms at 1, for a peak RSS of 75, 80 and 90 MB;
 * 3 agents took 51, 54 and 66 ms as a whole process.
 *
 * Only a process `main.ts` started is changed: a test that runs a command in
 * its own process keeps its JIT.
 */

/** The tier-up threshold scale of a run of `agents` agents (1 is the normal JIT): 300 up to 6 agents, 10 from 200. */
export const runPolicy = (agents: number): number => Math.min(300, Math.max(10, Math.round(2000 / Math.max(1, agents))))

let managed = false
let pending: ReturnType<typeof setTimeout> | null = null

/** The normal JIT policy `ms` from now, unless `jitForRun` comes first. */
export const normalJitAfter = (ms: number): void => {
  managed = true
  pending = setTimeout(() => {
    pending = null
    Bun.unsafe.setJITPolicy(1)
  }, ms)
  pending.unref()
}

/** The policy of a run of `agents` agents, from now to the end of the process. */
export const jitForRun = (agents: number): void => {
  if (!managed) return
  if (pending !== null) clearTimeout(pending)
  pending = null
  Bun.unsafe.setJITPolicy(runPolicy(agents))
}
