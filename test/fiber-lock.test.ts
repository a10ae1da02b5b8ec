/**
 * `services/orchestrator/fiber-lock.ts`: one body at a time, run to its end once begun;
 * waiting is interruptible and an interrupted waiter never takes the lock.
 */
import { describe, expect, test } from "bun:test"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { makeFiberLock } from "../src/services/orchestrator/fiber-lock.ts"

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

describe("FiberLock", () => {
  test("bodies that suspend never overlap, and run in the order they asked", async () => {
    const lock = makeFiberLock()
    const trace: Array<string> = []
    const body = (i: number) =>
      lock.withLock(
        Effect.gen(function* () {
          trace.push(`in ${i}`)
          yield* Effect.yieldNow()
          yield* Effect.yieldNow()
          trace.push(`out ${i}`)
          return i
        }),
      )
    const results = await run(Effect.all([0, 1, 2, 3, 4].map(body), { concurrency: "unbounded" }))
    expect(results).toEqual([0, 1, 2, 3, 4])
    expect(trace).toEqual([0, 1, 2, 3, 4].flatMap((i) => [`in ${i}`, `out ${i}`]))
  })

  test("a body that has begun runs to its end though its fiber is interrupted; the interrupt lands after it", async () => {
    const lock = makeFiberLock()
    const outcome = await run(
      Effect.gen(function* () {
        const started = yield* Deferred.make<void>()
        const go = yield* Deferred.make<void>()
        let finished = false
        const fiber = yield* Effect.fork(
          lock.withLock(
            Effect.gen(function* () {
              yield* Deferred.succeed(started, undefined)
              yield* Deferred.await(go)
              finished = true
            }),
          ),
        )
        yield* Deferred.await(started)
        const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
        yield* Effect.yieldNow()
        const before = finished
        yield* Deferred.succeed(go, undefined)
        const exit = yield* Fiber.join(interrupting)
        // The lock is free again.
        const next = yield* lock.withLock(Effect.succeed("next"))
        return { before, finished, interrupted: Exit.isInterrupted(exit), next }
      }),
    )
    expect(outcome).toEqual({ before: false, finished: true, interrupted: true, next: "next" })
  })

  test("a waiter interrupted while it waits never runs its body, and the waiters behind it still get the lock", async () => {
    const lock = makeFiberLock()
    const ran: Array<string> = []
    await run(
      Effect.gen(function* () {
        const go = yield* Deferred.make<void>()
        const holder = yield* Effect.fork(lock.withLock(Deferred.await(go)))
        yield* Effect.yieldNow()
        const doomed = yield* Effect.fork(lock.withLock(Effect.sync(() => ran.push("doomed"))))
        const patient = yield* Effect.fork(lock.withLock(Effect.sync(() => ran.push("patient"))))
        yield* Effect.yieldNow()
        yield* Fiber.interrupt(doomed)
        yield* Deferred.succeed(go, undefined)
        yield* Fiber.join(holder)
        yield* Fiber.join(patient)
      }),
    )
    expect(ran).toEqual(["patient"])
  })

  test("a body that fails or dies releases the lock, and its failure is the caller's", async () => {
    const lock = makeFiberLock()
    const failed = await run(Effect.either(lock.withLock(Effect.fail("no"))))
    const died = await run(Effect.exit(lock.withLock(Effect.die(new Error("boom")))))
    const after = await run(lock.withLock(Effect.succeed(1)))
    expect(failed._tag).toBe("Left")
    expect(Exit.isFailure(died)).toBe(true)
    expect(after).toBe(1)
  })
})
