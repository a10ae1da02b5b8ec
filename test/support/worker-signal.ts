/**
 * A worker stopped in its set-up (test/worker-connect.test.ts,
 * test/worker-setup-race.test.ts): `stopInSetUp(worker)` sends SIGTERM and
 * expects the worker to end at once with exit 4 and its one line, having
 * taken no item. "At once" is the caller's bound on the child (`timeoutMs`),
 * not a timed assertion.
 */
import { expect } from "bun:test"
import type { RunningCli } from "./cli.ts"

export const stopInSetUp = async (worker: RunningCli): Promise<void> => {
  worker.proc.kill("SIGTERM")
  const r = await worker.done
  expect({ code: r.exitCode, stderr: r.stderr }).toEqual({
    code: 4,
    stderr: "massgen: worker stopped by SIGTERM before it took any item\n",
  })
}
