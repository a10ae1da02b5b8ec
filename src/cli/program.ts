/**
 * The program behind `massgen`: parses the arguments, runs the command, and
 * renders errors.
 *
 * Errors are rendered only here, as one line on stderr (`massgen: ...`), and
 * mapped to exit codes: 1 for usage and configuration errors (a bad flag, a bad
 * config, a missing API key), 2 for execution errors; a finished run returns
 * its own code (`cli/commands/run.ts`). `AppError` is the closed union of the
 * errors a command may fail with, and `ERROR_EXIT_CODES` gives each its code:
 * a command that can fail with another error class does not compile until the
 * class is added to both. `stopSignal` resolves on the first SIGINT or
 * SIGTERM (`main.ts` owns the handlers): a run then stops cleanly (final
 * status.json, a stop event, exit 4); `massgen viewer` stops and exits 0.
 * Whatever the commands log goes to stderr too, one line each
 * (`diagnostics.ts`): stdout carries only what a command prints. Every line
 * printed, on stdout or stderr, is `plainText` (`lib/plain-text.ts`): the
 * commands clean what they quote, and this is the last guard.
 *
 * Each command's module is imported when that command runs (a run does not
 * load the viewer, `--validate` does not load the orchestrator), so a command
 * pays at start-up only for the code it uses; `main.ts` prints `--help` and
 * `--version` without loading this file at all.
 */

import { Effect, Either } from "effect"
import { plainText } from "../lib/plain-text.ts"
import type { BackendError, DotEnvError, MissingKeyError } from "../services/backends/index.ts"
import type { BatchError, BatchStorageError } from "../services/batch/batch-folder.ts"
import type { EventStoreConflict, EventStoreError } from "../services/event-store/index.ts"
import type { DatabaseError } from "../services/event-store/postgres.ts"
import type { RunStorageError } from "../services/io-errors.ts"
import type { ViewerError } from "../services/log-dir/catalog.ts"
import type { LogDirError } from "../services/log-dir/create.ts"
import type { RunLockError } from "../services/log-dir/run-lock.ts"
import type { RunFilesError, StatusWriteError } from "../services/run-files/index.ts"
import type { McpStartError } from "../services/tools/mcp-servers.ts"
import type { CommandLineStartError } from "../services/tools/sandbox.ts"
import type { ToolStartError } from "../services/tools/tool-provider.ts"
import { parseInvocation, type UsageError } from "./args/index.ts"
import { HELP } from "./help.ts"
import { diagnosticsLogger } from "./process/diagnostics.ts"
import { identityLine, versionText } from "./process/identity.ts"
import { isatty } from "./process/tty.ts"
import type { ConfigError } from "./run/load-config.ts"
import type { StdinSource } from "./run/question.ts"
import type { RunDirError } from "./run/run-dir.ts"
import type { ServeError } from "./serve/serve-command.ts"

/** Every error the program renders: what the arguments and the commands can fail with. */
export type AppError =
  | UsageError
  | ConfigError
  | MissingKeyError
  | DotEnvError
  | ViewerError
  | RunDirError
  | RunLockError
  | LogDirError
  | EventStoreError
  | EventStoreConflict
  | RunStorageError
  | RunFilesError
  | StatusWriteError
  | BackendError
  | McpStartError
  | CommandLineStartError
  | ToolStartError
  | ServeError
  | BatchError
  | BatchStorageError
  | DatabaseError

/** The exit code of each error class: 1 for usage and configuration errors, 2 for execution errors. */
export const ERROR_EXIT_CODES: { readonly [Tag in AppError["_tag"]]: 1 | 2 } = {
  UsageError: 1,
  ConfigError: 1,
  MissingKeyError: 1,
  DotEnvError: 1,
  ViewerError: 1,
  RunDirError: 1,
  RunLockError: 1,
  LogDirError: 2,
  EventStoreError: 2,
  EventStoreConflict: 2,
  RunStorageError: 2,
  RunFilesError: 2,
  StatusWriteError: 2,
  BackendError: 2,
  McpStartError: 1,
  CommandLineStartError: 1,
  ToolStartError: 1,
  ServeError: 1,
  BatchError: 1,
  BatchStorageError: 2,
  DatabaseError: 2,
}

export const exitCodeOf = (error: AppError): 1 | 2 => ERROR_EXIT_CODES[error._tag]

export interface ProgramIo {
  readonly stopSignal: Promise<string>
  readonly print: (line: string) => void
  readonly printError: (line: string) => void
  /** Where `-` (or a piped run with no question) reads the question; the process's standard input by default. */
  readonly stdin?: StdinSource
}

/** A command's module, imported when the command runs. */
const load = <M>(module: () => Promise<M>): Effect.Effect<M> => Effect.promise(module)

/** Runs `massgen` with `argv`; resolves with the exit code. */
export const runProgram = (argv: ReadonlyArray<string>, io: ProgramIo): Promise<number> => {
  // Whatever a command prints, no escape sequence of a model or a tool reaches the terminal through it.
  const plain = { ...io, print: (line: string) => io.print(plainText(line)), printError: (line: string) => io.printError(plainText(line)) }
  return Effect.runPromise(program(argv, plain).pipe(Effect.provide(diagnosticsLogger(plain.printError))))
}

const program = (argv: ReadonlyArray<string>, { stopSignal, print, printError, stdin }: ProgramIo): Effect.Effect<number> => {
  const parsed = parseInvocation(argv)
  const env = process.env
  const cwd = process.cwd()
  // The identity line is made only when a command asks for it: from source, it asks git.
  const cli = {
    env,
    cwd,
    argv,
    get version() {
      return identityLine()
    },
    interrupt: Effect.promise(() => stopSignal),
    print,
    printError,
  }
  const command: Effect.Effect<number, AppError> = (() => {
    if (Either.isLeft(parsed)) return Effect.fail(parsed.left)
    const invocation = parsed.right
    switch (invocation._tag) {
      case "help":
        return Effect.sync(() => (print(HELP), 0))
      case "version":
        return Effect.sync(() => (print(versionText()), 0))
      case "validate":
        return Effect.flatMap(
          load(() => import("./commands/validate.ts")),
          (m) => m.validateCommand(invocation, env, cwd, print),
        )
      case "viewer":
        return Effect.flatMap(
          load(() => import("./commands/viewer.ts")),
          (m) =>
            m.viewerCommand(invocation, {
              env,
              cwd,
              interrupt: cli.interrupt,
              print,
              printError,
              readLine: m.readStdinLine,
            }),
        )
      case "run":
        // No question on a terminal: the interactive prompt (without one, the usage error stays).
        if (
          invocation.question._tag === "stdin" &&
          !invocation.question.explicit &&
          !invocation.automation &&
          (stdin?.isTTY ?? isatty(0)) &&
          isatty(1)
        ) {
          return Effect.flatMap(
            load(() => import("./interactive/interactive-command.ts")),
            (m) => m.interactiveCommand(invocation, cli),
          )
        }
        return Effect.flatMap(
          load(() => import("./run/question.ts")),
          (q) =>
            Effect.flatMap(q.readQuestion(invocation.question, stdin ?? q.processStdin, invocation.maxQuestionBytes), (question) =>
              Effect.flatMap(
                load(() => import("./commands/run.ts")),
                (m) => m.runCommand({ ...invocation, question }, cli),
              ),
            ),
        )
      case "resume":
        return Effect.flatMap(
          load(() => import("./commands/resume.ts")),
          (m) => m.resumeCommand(invocation, cli),
        )
      case "replay":
        return Effect.flatMap(
          load(() => import("./commands/replay.ts")),
          (m) => m.replayCommand(invocation, cli),
        )
      case "doctor":
        return Effect.flatMap(
          load(() => import("./commands/doctor.ts")),
          (m) => m.doctorCommand(invocation.configPath, { env, cwd, print, printError }),
        )
      case "serve":
        return Effect.flatMap(
          load(() => import("./serve/serve-command.ts")),
          (m) => m.serveCommand(invocation, cli),
        )
      case "sessions":
        return Effect.flatMap(
          load(() => import("./sessions/sessions-command.ts")),
          (m) => m.sessionsCommand(invocation.json, { env, cwd, print }),
        )
      case "status":
        return Effect.flatMap(
          load(() => import("./commands/status.ts")),
          (m) => m.statusCommand(invocation.logDir, invocation.json, print, printError),
        )
      case "batch":
        return Effect.flatMap(
          load(() => import("./batch/batch-command.ts")),
          (m) => m.batchCommand(invocation, cli),
        )
      case "batch_status":
      case "batch_export":
        return Effect.flatMap(
          load(() => import("./batch/shared-batch-command.ts")),
          (m) => m.sharedBatchCommand(invocation, cli),
        )
      case "worker":
        return Effect.flatMap(
          load(() => import("./batch/worker-command.ts")),
          (m) => m.workerCommand(invocation, cli),
        )
    }
  })()
  return command.pipe(
    Effect.catchAll((error) =>
      Effect.sync(() => {
        for (const line of plainText(error.message).split("\n")) printError(`massgen: ${line}`)
        return exitCodeOf(error)
      }),
    ),
    Effect.catchAllDefect((defect) =>
      Effect.sync(() => {
        printError(`massgen: internal error: ${defect instanceof Error ? defect.message : String(defect)}`)
        return 2
      }),
    ),
  )
}
