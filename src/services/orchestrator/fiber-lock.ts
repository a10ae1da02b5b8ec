/**
 * A lock for the fibers of one process: what holds it runs to its end, uninterrupted, before another may take it.
 *
 * Contract: `withLock(body)` runs `body` once the lock is free, uninterruptibly:
 * an interrupt that comes meanwhile lands when the body is done (an append
 * that took the lock leaves the log and the run's state agreeing). Waiting for
 * the lock may be interrupted, and a fiber interrupted while it waits never
 * takes it. A body that fails or dies releases it. When the lock is released,
 * every waiter is woken and tries again, in the order they came: no waiter is
 * left behind one that was interrupted after it was woken.
 *
 * Why not `Semaphore.withPermits`: a free lock costs 7 steps of the fiber
 * runtime here, against some 25 (masks, permits, a finalizer), and a run
 * takes its emit lock once or twice per model call: a third of a 200-agent
 * run's steps went to it.
 */
import { Effect } from "effect"

export interface FiberLock {
  readonly withLock: <A, E, R>(body: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export const makeFiberLock = (): FiberLock => {
  let busy = false
  let waiters: Array<() => void> = []

  const release = (): void => {
    busy = false
    const woken = waiters
    waiters = []
    for (const wake of woken) wake()
  }

  /** Done when the lock is released next; interruptible, and then forgotten. */
  const released = Effect.async<void>((resume) => {
    const wake = () => resume(Effect.void)
    waiters.push(wake)
    return Effect.sync(() => {
      waiters = waiters.filter((w) => w !== wake)
    })
  })

  const withLock = <A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    const attempt: Effect.Effect<A, E, R> = Effect.suspend(() => {
      if (busy) return Effect.zipRight(Effect.interruptible(released), attempt)
      busy = true
      return Effect.flatMap(Effect.exit(body), (exit) => {
        release()
        return exit
      })
    })
    return Effect.uninterruptible(attempt)
  }

  return { withLock }
}
