/**
 * bun:test helpers for Effect programs (a stand-in for @effect/vitest).
 *
 * `effect(name, body)` runs `body` with a Scope and the test services:
 * TestClock (time moves only through `TestClock.adjust`) and TestRandom.
 * `live(name, body)` runs it with a Scope and the real clock. A failed
 * `expect` inside the body is re-thrown as-is, so bun shows its diff.
 */
import { test } from "bun:test"
import { Cause, Effect, Exit, type Scope, TestContext, type TestServices } from "effect"

const runTest = <A, E>(self: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(self).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    const err = Cause.squash(exit.cause)
    throw err instanceof Error ? err : new Error(Cause.pretty(exit.cause))
  })

/** TestClock/TestRandom + Scope. Time moves only via TestClock. */
export const effect = <A, E>(name: string, body: () => Effect.Effect<A, E, Scope.Scope | TestServices.TestServices>, ms?: number) =>
  test(name, () => runTest(body().pipe(Effect.scoped, Effect.provide(TestContext.TestContext))), ms)

/** Real clock + Scope. */
export const live = <A, E>(name: string, body: () => Effect.Effect<A, E, Scope.Scope>, ms?: number) =>
  test(name, () => runTest(body().pipe(Effect.scoped)), ms)
