/**
 * One process contending for a run's lock (test/run-lock.test.ts): prints
 * "won" or "held" once it knows, keeps what it won until its stdin closes.
 */
import { Effect, Exit, Scope } from "effect"
import { acquireRunLock } from "../../src/services/log-dir/run-lock.ts"

const scope = Effect.runSync(Scope.make())
const exit = await Effect.runPromiseExit(acquireRunLock(process.argv[2]!).pipe(Scope.extend(scope)))
process.stdout.write(Exit.isSuccess(exit) ? "won\n" : "held\n")
for await (const _ of Bun.stdin.stream()) {
  // wait for the test to close stdin
}
await Effect.runPromise(Scope.close(scope, Exit.void))
