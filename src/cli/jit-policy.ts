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
 * little time saved. At 200 scripted agents, compiled, peak RSS went from
 * 98-108 MB (normal after 1 s) to 91-95 MB, CPU time no higher.
 *
 * Only a process `main.ts` started is changed: a test that runs a command in
 * its own process keeps its JIT.
 */

/** The tier-up threshold scale of a run's process (1 is the normal JIT). */
const RUN_POLICY = 300

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

/** A run's policy, from now to the end of the process. */
export const jitForRun = (): void => {
  if (!managed) return
  if (pending !== null) clearTimeout(pending)
  pending = null
  Bun.unsafe.setJITPolicy(RUN_POLICY)
}
