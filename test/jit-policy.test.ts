/**
 * `cli/process/jit-policy.ts`: a run's JIT is the more reluctant the fewer its agents, within 10 and 300.
 */
import { expect, test } from "bun:test"
import { runPolicy } from "../src/cli/process/jit-policy.ts"

test("a run's JIT policy: 300 for a few agents, 10 from 200, never rising with more agents", () => {
  expect([1, 3, 6, 20, 50, 200, 1000].map(runPolicy)).toEqual([300, 300, 300, 100, 40, 10, 10])
  for (let n = 1; n < 500; n++) expect(runPolicy(n + 1)).toBeLessThanOrEqual(runPolicy(n))
})
