/**
 * How many runs `massgen serve` runs at once, and how many requests wait.
 *
 * Contract: `runSlots(running, queued)` gives at most `running` slots at once.
 * `take(signal)` gives a slot at once when one is free, else waits in a FIFO
 * queue of at most `queued` requests; past that it answers `"full"` at once (the
 * server's 429). A wait ends with `"gone"` when `signal` aborts (the client
 * left: its place is freed) and with `"closed"` when `close()` is called (the
 * server drains: nothing waiting starts). Giving a slot back (`release`, once;
 * a second call does nothing) hands it to the longest-waiting request.
 * `idle()` resolves once no slot is taken. `retryAfterSeconds` is what a 429
 * asks a client to wait: the mean time of the last runs, at least 1 s.
 *
 * Words: a *slot* is the right to run one run; a request *waits* for one.
 */

export type Release = () => void
export type Taken = { readonly _tag: "slot"; readonly release: Release } | { readonly _tag: "full" | "gone" | "closed" }

interface Waiter {
  readonly resolve: (taken: Taken) => void
}

/** How many recent run times the retry-after estimate averages. */
const RECENT = 20

export const runSlots = (running: number, queued: number) => {
  let busy = 0
  let closed = false
  const waiting: Array<Waiter> = []
  const recent: Array<number> = []
  let idleWaiters: Array<() => void> = []

  const slot = (): Taken => {
    busy += 1
    const started = performance.now()
    let given = false
    return {
      _tag: "slot",
      release: () => {
        if (given) return
        given = true
        recent.push((performance.now() - started) / 1000)
        if (recent.length > RECENT) recent.shift()
        const next = closed ? undefined : waiting.shift()
        if (next !== undefined) {
          busy -= 1
          next.resolve(slot())
          return
        }
        busy -= 1
        if (busy === 0) {
          const woken = idleWaiters
          idleWaiters = []
          for (const wake of woken) wake()
        }
      },
    }
  }

  return {
    take: (signal?: AbortSignal): Promise<Taken> => {
      if (closed) return Promise.resolve({ _tag: "closed" })
      if (busy < running && waiting.length === 0) return Promise.resolve(slot())
      if (waiting.length >= queued) return Promise.resolve({ _tag: "full" })
      return new Promise<Taken>((resolve) => {
        const waiter: Waiter = {
          resolve: (taken) => {
            signal?.removeEventListener("abort", onAbort)
            resolve(taken)
          },
        }
        const onAbort = () => {
          const at = waiting.indexOf(waiter)
          if (at >= 0) waiting.splice(at, 1)
          waiter.resolve({ _tag: "gone" })
        }
        if (signal?.aborted) return resolve({ _tag: "gone" })
        signal?.addEventListener("abort", onAbort, { once: true })
        waiting.push(waiter)
      })
    },
    /** Stops giving slots: every request waiting gets `"closed"`, and so does every later `take`. */
    close: () => {
      closed = true
      for (const w of waiting.splice(0)) w.resolve({ _tag: "closed" })
    },
    idle: (): Promise<void> => (busy === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
    running: () => busy,
    queued: () => waiting.length,
    retryAfterSeconds: (): number => Math.max(1, Math.ceil(recent.length === 0 ? 1 : recent.reduce((a, b) => a + b, 0) / recent.length)),
  }
}

export type RunSlots = ReturnType<typeof runSlots>
