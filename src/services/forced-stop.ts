/**
 * What must still be done when the process is made to exit at once.
 *
 * A second Ctrl+C (or SIGTERM) does not wait for the run's clean stop: `main.ts`
 * calls `runForcedStop()` and exits with 4. Each run registers, for as long as
 * it runs (`onForcedStop`, scoped), a synchronous hook that leaves its log
 * directory as a clean stop would: the stop events appended, status.json
 * complete, the lock released. Hooks run newest first, each in isolation: one
 * that throws does not keep the others from running.
 */
import { Effect } from "effect"

const hooks: Array<() => void> = []

/** Registers `hook` until the scope closes. */
export const onForcedStop = (hook: () => void) =>
  Effect.acquireRelease(
    Effect.sync(() => void hooks.push(hook)),
    () =>
      Effect.sync(() => {
        const i = hooks.lastIndexOf(hook)
        if (i >= 0) hooks.splice(i, 1)
      }),
  )

/** Runs every registered hook, newest first. */
export const runForcedStop = (): void => {
  for (const hook of hooks.slice().reverse()) {
    try {
      hook()
    } catch {
      // The process is exiting: what could be done is done.
    }
  }
}
