/**
 * One request of `massgen serve` as a run: its own log directory, its own
 * backends, the orchestrator, and what it ended with.
 *
 * Contract: `openServedRun(model, request, ctx)` builds the backends of the
 * served config (a scripted agent keeps state per run, so every run gets its
 * own) and creates the run's log directory with its `execution_metadata.yaml`,
 * exactly as a run from the command line does, so `status`, `resume`,
 * `replay` and the viewer work on it; it fails with the error's one-line
 * message; the request's sampling and answer format go to the presenter's calls
 * (`presenter-backends.ts`). `run(stop, onEvent, onText)` runs the coordination with the request's
 * conversation (each event and each streamed text delta to the callbacks), until it finishes or `stop` resolves (the run is then recorded
 * `interrupted`, resumable with `massgen resume`), and gives the outcome, or
 * the message of the error that kept it from running.
 *
 * Words: a *served model* is one config served under a model id (its file's
 * name without `.yaml`).
 */
import { Cause, Effect, Exit } from "effect"
import type { Event } from "../../domain/events/index.ts"
import type { State } from "../../domain/state/index.ts"
import { EventStore } from "../../services/event-store/index.ts"
import type { RunOutcome } from "../../services/orchestrator/index.ts"
import { newRunDir } from "../run/new-run.ts"
import { questionMedia } from "../run/question-media.ts"
import { runSessionOutcome } from "../run/session.ts"
import { makeAgentTools, makeBackends, type RunConfig } from "../run/setup.ts"
import type { ChatRequest } from "./openai-wire.ts"
import { presenterBackends } from "./presenter-backends.ts"
import { NO_FIELDS } from "./request-fields.ts"
import { servedMetadata } from "./served-resume.ts"

export interface ServedModel {
  readonly id: string
  readonly loaded: RunConfig
}

export interface ServeContext {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string
  readonly argv: ReadonlyArray<string>
  readonly version: string
  readonly printError: (line: string) => void
}

/** How a served run ended: its outcome, or the message of the error that kept it from running. */
export type ServedOutcome = RunOutcome | { readonly failed: string }

export interface ServedRun {
  readonly logDir: string
  readonly runId: string
  readonly run: (
    stop: Promise<string>,
    onEvent: (event: Event, state: State) => void,
    onText?: (agent: string, text: string) => void,
  ) => Promise<ServedOutcome>
}

export const messageOf = <E>(exit: Exit.Exit<unknown, E>): string => {
  if (Exit.isSuccess(exit)) return ""
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "Some") {
    const e = failure.value as { readonly message?: unknown }
    return typeof e.message === "string" ? e.message : String(failure.value)
  }
  return Cause.pretty(exit.cause).split("\n")[0] ?? "internal error"
}

/** How a served run (new or resumed) is shown and stopped: no terminal, its events and text deltas to the callbacks, until `stop`. */
export const servedSession = (
  ctx: ServeContext,
  stop: Promise<string>,
  onEvent: (event: Event, state: State) => void,
  onText: (agent: string, text: string) => void,
) => ({
  version: ctx.version,
  interrupt: Effect.promise(() => stop),
  automation: false,
  display: Effect.succeed({
    onEvent: (event: Event, state: State) => Effect.sync(() => onEvent(event, state)),
    onText: (agent: string, text: string) => Effect.sync(() => onText(agent, text)),
  }),
  print: () => {},
  printError: ctx.printError,
})

export const openServedRun = async (
  model: ServedModel,
  request: ChatRequest,
  ctx: ServeContext,
): Promise<ServedRun | { readonly failed: string }> => {
  const { loaded } = model
  const opened = await Effect.runPromiseExit(
    Effect.all({
      backends: Effect.flatMap(makeBackends(loaded.config, loaded.env, loaded.where), (backends) =>
        presenterBackends(backends, loaded.config, loaded.env, loaded.where, request.fields ?? NO_FIELDS),
      ),
      media: questionMedia(request.question, [], loaded.config, ctx.cwd, loaded.where, false),
      logDir: newRunDir(loaded, request.question, ctx, servedMetadata(request.fields ?? NO_FIELDS)),
    }),
  )
  if (Exit.isFailure(opened)) return { failed: messageOf(opened) }
  const { backends, media, logDir } = opened.value
  const runId = logDir.split(/[/\\]/).pop() ?? logDir
  return {
    logDir,
    runId,
    run: async (stop, onEvent, onText = () => {}) => {
      const exit = await Effect.runPromiseExit(
        runSessionOutcome({
          logDir,
          config: loaded.config,
          backends,
          tools: (servers) => makeAgentTools(loaded.config, loaded.env, logDir, loaded.where, servers),
          question: request.question,
          conversation: request.conversation,
          ...(media.length > 0 ? { media } : {}),
          ...servedSession(ctx, stop, onEvent, onText),
          env: loaded.env,
        }).pipe(Effect.provide(EventStore.file())),
      )
      return Exit.isSuccess(exit) ? exit.value : { failed: messageOf(exit) }
    },
  }
}
