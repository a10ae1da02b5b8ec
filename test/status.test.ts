/** status.json as a projection: the time a run was not running is not counted; the log directory is where the run is now. */
import { describe, expect, test } from "bun:test"
import { automationFooter } from "../src/cli/run/automation-output.ts"
import { project } from "../src/domain/projections/status.ts"
import { foldEvents } from "../src/domain/state/index.ts"
import { answer, roundStarted, runStarted } from "./support/given.ts"

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString()

describe("elapsed time of a resumed run", () => {
  test("counts only the time processes ran it: the pause before a resume is left out", () => {
    const events = [
      { ...runStarted(["a"]), time: at(0) },
      { ...roundStarted("a", 1, []), time: at(1) },
      // The process dies here; 100 s later the run is resumed and finishes 2 s after that.
      {
        _tag: "run_resumed",
        time: at(101),
        dropped_lines: 0,
        torn_tail: false,
        restarted_rounds: [{ agent: "a", round: 1 }],
        presentation_restarted: false,
      },
      { ...roundStarted("a", 2, []), time: at(101) },
      { ...answer("a", 2, "agent1.1", "A"), time: at(102) },
      { _tag: "run_finished", time: at(103), reason: "timeout", winner: null, message: "t" },
    ] as const
    const state = foldEvents(events as never)
    const status = project(state, Date.parse(at(500)), "/moved/log_x")
    expect(status.meta.elapsed_seconds).toBe(3)
    expect(status.meta.log_dir).toBe("/moved/log_x")
    expect(status.meta.session_id).toBe("log_x")
    expect(automationFooter(state, "/moved/log_x").at(-1)).toBe("FAILED: timeout: t")
  })
})
