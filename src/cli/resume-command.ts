/**
 * `massgen resume LOG_DIR`: continue a run whose process stopped.
 *
 * It folds `events.jsonl` (a line a crash cut short is dropped and counted),
 * and when the run is unfinished, or was stopped by a signal, continues it in
 * the same directory: every recorded answer and vote is kept, the rounds that
 * were in flight start again with the context they would get now. A run that
 * already finished is reported with the exit code it ended with (0 when it
 * completed) and not run again. Nothing in the directory changes before the
 * config is read, every backend is built (keys present) and the lock is taken;
 * a directory that is not a run, or whose config cannot be read, is exit 1.
 */
import { Effect } from "effect"
import { foldEvents } from "../domain/state.ts"
import { makeBackends } from "./run-setup.ts"
import { loadDotEnv } from "../services/backends/keys.ts"
import { holder } from "../services/run-lock.ts"
import { automationFooter, automationHeader } from "./automation-output.ts"
import { RunDirError, openRunDir, runDirConfig } from "./run-dir.ts"
import type { CliContext } from "./run-command.ts"
import { EXIT_CODES, runSession } from "./run-session.ts"
import { runDisplay } from "./display.ts"

export interface ResumeArgs {
  readonly logDir: string
  readonly automation: boolean
}

export const resumeCommand = (args: ResumeArgs, ctx: CliContext) =>
  Effect.gen(function* () {
    const dir = yield* openRunDir(args.logDir)
    const state = foldEvents(dir.read.events)
    const run = state.run!
    if (state.finished !== null && state.finished.reason !== "interrupted") {
      if (args.automation) {
        for (const line of [...automationHeader(dir.path, run.question), ...automationFooter(state)]) ctx.print(line)
      } else {
        ctx.print(`The run in ${dir.path} already finished (${state.finished.reason}); nothing to resume.`)
      }
      return EXIT_CODES[state.finished.reason]
    }
    const live = holder(dir.path)
    if (live !== null) {
      return yield* new RunDirError({ reason: "busy", path: dir.path, detail: `process ${live} is running it` })
    }
    const env = yield* loadDotEnv(ctx.cwd, ctx.env).pipe(Effect.orElseSucceed(() => ctx.env))
    const { config } = yield* runDirConfig(dir.path, env)
    const backends = yield* makeBackends(config, env)
    if (args.automation) for (const line of automationHeader(dir.path, run.question)) ctx.print(line)
    return yield* runSession({
      logDir: dir.path,
      config,
      backends,
      question: run.question,
      version: ctx.version,
      interrupt: ctx.interrupt,
      automation: args.automation,
      display: runDisplay({ automation: args.automation, noDisplay: false }, ctx.print),
      resume: { events: dir.read.events, skipped: dir.read.skipped, tornTail: dir.read.tornTail },
      print: ctx.print,
      printError: ctx.printError,
    })
  })
