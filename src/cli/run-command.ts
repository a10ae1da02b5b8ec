/**
 * `massgen ... "question"`: one coordination run from the command line.
 *
 * It loads the config (or builds one from `--model`/`--models`), makes every
 * backend (a missing API key stops here, before any call or file), creates the
 * log directory, records `execution_metadata.yaml`, runs the orchestrator with
 * the live layers, writes the files derived from the events, prints the
 * automation lines or the plain display, and returns the exit code: 0
 * completed, 2 every agent failed, 3 timeout or budget, 4 interrupted.
 */
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { stringify as toYaml } from "yaml"
import { maskSecrets } from "../domain/config.ts"
import { coordinationEvents, snapshots } from "../domain/derived-logs.ts"
import type { FinishReason } from "../domain/events.ts"
import { Backends } from "../services/backend.ts"
import { EventLog } from "../services/event-log.ts"
import { createLogDir, logBaseDir } from "../services/log-dir.ts"
import { type Observer, runCoordination } from "../services/orchestrator.ts"
import { RunFiles, liveRunFiles } from "../services/run-files.ts"
import { StatusWriter } from "../services/status-writer.ts"
import type { RunArgs } from "./args.ts"
import { automationFooter, automationHeader, plainLine } from "./automation-output.ts"
import { makeBackends, priceOf, resolveRunConfig } from "./run-setup.ts"

export const EXIT_CODES: Record<FinishReason, number> = {
  completed: 0,
  error: 2,
  timeout: 3,
  budget: 3,
  interrupted: 4,
}

export interface CliContext {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string
  readonly argv: ReadonlyArray<string>
  readonly version: string
  readonly interrupt: Effect.Effect<string>
  readonly print: (line: string) => void
  readonly printError: (line: string) => void
}

export const runCommand = (args: RunArgs, ctx: CliContext) =>
  Effect.gen(function* () {
    const loaded = yield* resolveRunConfig(args, ctx.env, ctx.cwd)
    const backends = yield* makeBackends(loaded.config, loaded.env)
    const logDir = yield* createLogDir(logBaseDir(ctx.env, ctx.cwd))
    const runId = logDir.split(/[/\\]/).pop() ?? logDir
    const files = liveRunFiles(logDir)

    const metadata = {
      question: args.question,
      timestamp: new Date().toISOString(),
      config_path: loaded.path,
      config: maskSecrets(loaded.raw),
      cli_args: maskSecrets({ argv: ctx.argv }),
      massgen_version: ctx.version,
      runtime: `bun ${Bun.version}`,
      working_directory: ctx.cwd,
      log_dir: logDir,
    }
    yield* Effect.flatMap(RunFiles, (f) => f.write("execution_metadata.yaml", toYaml(metadata))).pipe(Effect.provide(files))

    if (args.automation) for (const line of automationHeader(logDir, args.question)) ctx.print(line)
    const observe: Observer | undefined = args.automation
      ? undefined
      : {
          onEvent: (event, state) =>
            Effect.sync(() => {
              const line = plainLine(event, state)
              if (line !== null) ctx.print(line)
            }),
          onText: () => Effect.void,
        }

    const layer = Layer.mergeAll(
      EventLog.live(join(logDir, "events.jsonl")),
      StatusWriter.live(join(logDir, "status.json")),
      files,
      Layer.succeed(Backends, { forAgent: (id: string) => backends.get(id)! }),
    )
    const outcome = yield* Effect.gen(function* () {
      const result = yield* runCoordination({
        config: loaded.config,
        question: args.question,
        logDir,
        runId,
        version: ctx.version,
        pid: process.pid,
        interrupt: ctx.interrupt,
        priceOf: priceOf(loaded.config),
        ...(observe ? { observe } : {}),
      })
      const log = yield* EventLog
      const read = yield* log.read(log.path)
      const runFiles = yield* RunFiles
      yield* runFiles.write("coordination_events.json", `${JSON.stringify(coordinationEvents(read.events), null, 2)}\n`)
      const snaps = snapshots(read.events)
      yield* runFiles.write("snapshot_mappings.json", `${JSON.stringify(snaps.mappings, null, 2)}\n`)
      for (const file of snaps.files) yield* runFiles.write(file.path, file.text)
      return result
    }).pipe(Effect.scoped, Effect.provide(layer))

    const state = outcome.state
    if (args.automation) for (const line of automationFooter(state)) ctx.print(line)
    if (outcome.reason !== "completed") {
      const failures = state.agents.filter((a) => a.failure !== null).map((a) => `${a.info.id}: ${a.failure!.message}`)
      ctx.printError(`massgen: run ${outcome.reason}: ${state.finished?.message ?? ""}${failures.length > 0 ? ` (${failures.join("; ")})` : ""}`)
    }
    return EXIT_CODES[outcome.reason]
  })
