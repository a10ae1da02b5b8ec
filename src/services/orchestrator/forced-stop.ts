/**
 * The orchestrator's forced stop: what a second signal leaves of a run whose process exits at once.
 *
 * Contract: `onRunForcedStop(run)` registers, for as long as the run's scope
 * lasts, a synchronous hook (`forced-stop.ts`) that reads the run's log
 * itself (the clean stop may be halfway through its own appends), appends the
 * stop events `stopRun` judges (`interrupted`, "stopped by a second signal")
 * unless the run finished or a write already failed, and writes the last
 * `status.json` from that log.
 */
import { Effect } from "effect"
import { stopRun } from "../../domain/coordination/decide.ts"
import { project } from "../../domain/projections/status.ts"
import { evolve, foldEvents } from "../../domain/state/index.ts"
import { EventStore } from "../event-store/index.ts"
import { onForcedStop } from "../forced-stop.ts"
import { StatusWriter } from "../run-files/index.ts"
import type { RunContext } from "./types.ts"

export const onRunForcedStop = ({ input, fatal }: RunContext) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const status = yield* StatusWriter
    yield* onForcedStop(() => {
      // From the log itself: the clean stop may be halfway through its own appends.
      const read = Effect.runSync(store.read(input.logDir))
      let state = foldEvents(read.events.map((stored) => stored.event))
      let at = read.version
      if (state.finished === null && fatal.current === null) {
        const time = new Date(Math.max(Date.now(), state.lastTime)).toISOString()
        for (const event of stopRun(state, "interrupted", "stopped by a second signal", time)) {
          at = Effect.runSync(store.append(input.logDir, [event], at))
          state = evolve(state, event)
        }
      }
      status.writeNow(project(state, Date.now(), input.logDir))
    })
  })
