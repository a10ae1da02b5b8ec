/**
 * A served run found again by its request key (`run-registry.ts`): one that
 * finished is answered from its log; one that stopped (its server killed,
 * drained, or its client gone with `--cancel-on-disconnect`) is resumed in
 * its own log directory, as `massgen resume` does (`run/resume-input.ts`):
 * every recorded answer, vote, model reply and tool result is kept, no
 * recorded model call is made again, and the rounds in flight go on.
 *
 * Contract: `recordedRun(logDir)` reads the log once: `finished` with the
 * outcome (a run that is not resumable), `stopped` (resumable), or `not_a_run` (a server
 * killed before the run's first event: a new run is started instead).
 * `resumedServedRun(logDir, ctx)` is a `ServedRun` whose `run` takes the
 * run's lock, shows its recorded events, then goes on until it ends or
 * `stop` resolves; an error that keeps it from going on (the lock held, its
 * config unreadable) is the outcome's `failed`.
 */
import { Effect, Exit } from "effect"
import { foldEvents, isResumable } from "../../domain/state/index.ts"
import { EventStore, eventsOf } from "../../services/event-store/index.ts"
import type { RunOutcome } from "../../services/orchestrator/index.ts"
import { prepareResume, resumedSession } from "../run/resume-input.ts"
import { openRunDir } from "../run/run-dir.ts"
import { runSessionOutcome } from "../run/session.ts"
import { messageOf, type ServeContext, type ServedOutcome, type ServedRun, servedSession } from "./served-run.ts"

export type RecordedRun = { readonly _tag: "finished"; readonly outcome: RunOutcome } | { readonly _tag: "stopped" | "not_a_run" }

export const recordedRun = async (logDir: string): Promise<RecordedRun> => {
  const read = await Effect.runPromiseExit(openRunDir(logDir).pipe(Effect.provide(EventStore.file())))
  if (Exit.isFailure(read)) return { _tag: "not_a_run" }
  const events = eventsOf(read.value.read)
  const state = foldEvents(events)
  if (isResumable(state.finished)) return { _tag: "stopped" }
  return { _tag: "finished", outcome: { state, reason: state.finished!.reason } }
}

export const resumedServedRun = (logDir: string, ctx: ServeContext): ServedRun => ({
  logDir,
  runId: logDir.split(/[/\\]/).pop() ?? logDir,
  run: async (stop, onEvent, onText = () => {}): Promise<ServedOutcome> => {
    const exit = await Effect.runPromiseExit(
      Effect.gen(function* () {
        const prepared = yield* prepareResume(logDir, ctx.cwd, ctx.env)
        // Another process finished it meanwhile: its outcome is the answer.
        if (prepared._tag === "finished") return { state: prepared.state, reason: prepared.state.finished!.reason } satisfies RunOutcome
        return yield* runSessionOutcome({
          ...resumedSession(prepared),
          ...servedSession(ctx, stop, onEvent, onText),
        })
      }).pipe(Effect.scoped, Effect.provide(EventStore.file())),
    )
    return Exit.isSuccess(exit) ? exit.value : { failed: messageOf(exit) }
  },
})
