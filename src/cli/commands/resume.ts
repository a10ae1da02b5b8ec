/**
 * `massgen resume LOG_DIR`: continue a run whose process stopped.
 *
 * It reads `events.jsonl` once and folds it once (a line a crash cut short
 * is dropped and counted), keeping on the way the fold where the replay that
 * rebuilds the work in flight starts (`domain/replay/start.ts`),
 * and when the run is unfinished, or was stopped by a signal, continues it in
 * the same directory: every recorded answer and vote is kept, and the rounds
 * (and a presentation) that were in flight go on where they were, from their
 * recorded replies and tool results (`domain/replay/resume-plan.ts`). A run that
 * already finished is reported with the exit code it ended with (0 when it
 * completed) and not run again (one whose tools did not start says so, naming
 * the tool: nothing of it ran, so a new run is the way on); its status.json and derived files are written
 * again from the events, in case its process died before writing them. Nothing in the directory changes before the
 * config is read, every backend is built (keys present) and the lock is taken,
 * but for the half-made workspace copies of processes that are gone, removed
 * first (one may have filled the disk the lock is written to);
 * a directory that is not a run, or whose config cannot be read, is exit 1, and
 * so is a log with lines of a newer schema, which is not appended to. What the
 * read skipped of the log is said on stderr in one line (`cli/run/report.ts`).
 */

import { existsSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import type { Event } from "../../domain/events/index.ts"
import { project } from "../../domain/projections/status.ts"
import { agentFile } from "../../domain/run-paths.ts"
import type { State } from "../../domain/state/index.ts"
import { oneLine } from "../../lib/plain-text.ts"
import { EventStore, type StreamRead } from "../../services/event-store/index.ts"
import { holder } from "../../services/log-dir/run-lock.ts"
import { writeDerivedFiles, writeFileAtomic } from "../../services/run-files/index.ts"
import type { CliContext } from "../context.ts"
import { automationHeader } from "../run/automation-output.ts"
import { runDisplay, showsTerminalView } from "../run/display.ts"
import { canAskAtTerminal, terminalAsker } from "../run/permission-prompt.ts"
import { reportSkips } from "../run/report.ts"
import { prepareResume, resumedSession } from "../run/resume-input.ts"
import { EXIT_CODES, footerLines, runSession } from "../run/session.ts"

export interface ResumeArgs {
  readonly logDir: string
  readonly automation: boolean
}

export const resumeCommand = (args: ResumeArgs, ctx: CliContext) =>
  Effect.gen(function* () {
    /**
     * A finished run is not run again. Its process may have died after run_finished and
     * before its last files: when no live process holds the run, status.json and the
     * derived files (and a missing final answer file) are written again from the events (the same bytes when nothing was lost).
     */
    const reportFinished = (path: string, read: StreamRead, state: State, events: ReadonlyArray<Event>) =>
      Effect.gen(function* () {
        const finished = state.finished!
        reportSkips(ctx.printError, path, read, state.skippedEvents)
        if (holder(path) === null) {
          yield* writeFileAtomic(join(path, "status.json"), `${JSON.stringify(project(state, finished.time, path), null, 2)}\n`).pipe(
            Effect.ignore,
          )
          yield* writeDerivedFiles(path, events)
          // The final answer is in its event: a file lost since (or never written, by an older massgen) is written again.
          const final = state.final
          const answerFile = final === null ? null : join(path, agentFile(final.agent, "final_answer"))
          if (final !== null && answerFile !== null && !existsSync(answerFile))
            yield* writeFileAtomic(answerFile, final.content).pipe(Effect.ignore)
        }
        if (args.automation) {
          for (const line of [...automationHeader(path, state.run!.question), ...footerLines(state, path)]) ctx.print(line)
        } else if (state.toolsFailed !== null) {
          // Nothing of it ran: a new run, once its tool starts, is the way on.
          ctx.print(
            `The run in ${path} failed before its first model call: ${oneLine(state.toolsFailed.message)}; nothing to resume: start a new run once it starts (massgen doctor --config FILE tries it).`,
          )
        } else {
          ctx.print(`The run in ${path} already finished (${finished.reason}); nothing to resume.`)
        }
        return EXIT_CODES[finished.reason]
      })
    const prepared = yield* prepareResume(args.logDir, ctx.cwd, ctx.env)
    if (prepared._tag === "finished") return yield* reportFinished(prepared.path, prepared.read, prepared.state, prepared.events)
    const { path } = prepared
    reportSkips(ctx.printError, path, prepared.read, prepared.state.skippedEvents)
    if (args.automation) for (const line of automationHeader(path, prepared.question)) ctx.print(line)
    return yield* runSession({
      ...resumedSession(prepared),
      version: ctx.version,
      interrupt: ctx.interrupt,
      automation: args.automation,
      ...(canAskAtTerminal(args.automation) ? { asker: terminalAsker() } : {}),
      display: runDisplay({ automation: args.automation, noDisplay: false }, ctx.print, path),
      resumeHintShown: showsTerminalView({ automation: args.automation, noDisplay: false }),
      print: ctx.print,
      printError: ctx.printError,
    })
  }).pipe(Effect.scoped, Effect.provide(EventStore.file()))
