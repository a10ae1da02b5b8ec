/**
 * The orchestrator's work in flight: each round or presentation in a fiber of its own, and the watchdog.
 *
 * Contract: `spawn(key, work, timedOut)` runs `work` under its work key until
 * it replies (into the run's inbox) or its `agent_timeout_seconds` run out:
 * then the `watchdog` ends it, as a timeout inside it would (its cut-off call
 * recorded), and `timedOut` is its reply. `stopWork(keys)` ends the work
 * under `keys` at once, each recording its cut-off call before it returns;
 * `replied(key)` forgets work whose reply came in. One watchdog fiber serves
 * the whole run, not a timer fiber and a race per round (at 200 zero-delay
 * agents, those took a fifth of the run's time).
 *
 * Words: a *spawn* is one start of work under a key (a key is spawned again
 * when its agent's next round starts); a *deadline* names its spawn.
 */
import { Clock, Duration, Effect, Fiber, Queue } from "effect"
import type { Reply } from "../../domain/coordination/decide.ts"
import type { RunContext } from "./types.ts"

export const makeWork = ({ inbox, settings, callSentAt }: RunContext) =>
  Effect.gen(function* () {
    const fibers = new Map<string, Fiber.RuntimeFiber<void>>()
    /**
     * The work to end at `agent_timeout_seconds`, in the order it started: every piece has the
     * same timeout, so its deadlines come in that order too.
     */
    const deadlines = yield* Queue.unbounded<{
      readonly key: string
      readonly spawned: number
      readonly at: number
      readonly reply: Reply
    }>()
    /** Which spawn the fiber under each key is (a deadline holds that number, not the fiber: nothing of finished work is kept). */
    const spawnOf = new Map<string, number>()
    let spawns = 0

    /** Forgets the work under `key` (its fiber, its spawn, its call's time) and gives its fiber, if any. */
    const forget = (key: string) => {
      const fiber = fibers.get(key)
      fibers.delete(key)
      spawnOf.delete(key)
      callSentAt.delete(key)
      return fiber
    }

    /** Runs a round or a presentation in a fiber of its own, under its `workKey`, until its reply or its timeout. */
    const spawn = (key: string, work: Effect.Effect<Reply>, timedOut: Reply) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(
          work.pipe(
            Effect.flatMap((reply) => Queue.offer(inbox, { _tag: "reply", reply })),
            Effect.asVoid,
          ),
        )
        const spawned = ++spawns
        fibers.set(key, fiber)
        spawnOf.set(key, spawned)
        const at = (yield* Clock.currentTimeMillis) + settings.agent_timeout_seconds * 1000
        yield* Queue.offer(deadlines, { key, spawned, at, reply: timedOut })
      })

    /** Ends work still running at its deadline, as a timeout inside it would: its cut-off call is recorded, then its timeout is its reply. */
    const watchdog = Effect.forever(
      Effect.gen(function* () {
        const next = yield* Queue.take(deadlines)
        const wait = next.at - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
        // Work that replied (its reply may wait in the inbox) or was stopped is not this deadline's.
        const fiber = fibers.get(next.key)
        if (fiber === undefined || spawnOf.get(next.key) !== next.spawned || fiber.unsafePoll() !== null) return
        forget(next.key)
        yield* Fiber.interrupt(fiber)
        yield* Queue.offer(inbox, { _tag: "reply", reply: next.reply })
      }),
    )

    /** Ends the work under `keys` all at once; each records its cut-off call before this returns. */
    const stopWork = (keys: ReadonlyArray<string>) =>
      Effect.suspend(() => {
        const stopping = keys.flatMap((key) => {
          const fiber = forget(key)
          return fiber === undefined ? [] : [fiber]
        })
        return stopping.length === 0 ? Effect.void : Fiber.interruptAll(stopping)
      })

    const stopAll = Effect.suspend(() => stopWork([...fibers.keys()]))

    return { spawn, watchdog, stopWork, stopAll, replied: (key: string) => void forget(key), count: () => fibers.size }
  })

/** The work in flight of one run (`makeWork`). */
export type Work = Effect.Effect.Success<ReturnType<typeof makeWork>>
