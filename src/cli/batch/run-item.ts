/**
 * One item of a batch: its run, started, resumed, or found finished, in its own log directory.
 *
 * `runItem` looks at `items/<id>/` first. A run there that finished (other
 * than stopped by a signal) is not run again: its fold is the item's outcome.
 * A run there that did not finish is resumed as `massgen resume` would: its
 * recorded config, its backends from its history, its continued rounds fed
 * their recorded replies (`domain/replay/resume-plan.ts`), so no recorded answer is
 * asked again. A directory with no event yet (a kill before `run_started`)
 * and no directory at all start a new run with the item's config; an item with
 * a `session_id` starts as the next turn of that session (under the working
 * directory's `.massgen/sessions/`, as `--session-id` would), continuing the
 * conversation of its earlier turns (a resumed run has it in its events). The run
 * goes through `runSession` as any run does, with no display but the batch's
 * observer, and nothing printed on stdout. With `SharedRunFiles` (a worker on
 * Postgres), a new run's config is shared, and a run resumed here gets the
 * shared files of the worker that started it first.
 */
import * as fs from "node:fs"
import { join } from "node:path"
import { Effect, Option } from "effect"
import type { BatchItem } from "../../domain/batch.ts"
import type { ConversationMessage } from "../../domain/events/index.ts"
import { METADATA_FILE, PRIVATE_DIR_MODE } from "../../domain/run-paths.ts"
import type { State } from "../../domain/state/index.ts"
import { foldEvents, isResumable } from "../../domain/state/index.ts"
import { itemDir } from "../../services/batch/batch-folder.ts"
import { EventStore, eventsOf } from "../../services/event-store/index.ts"
import type { Observer } from "../../services/orchestrator/index.ts"
import { SharedRunFiles } from "../../services/run-files/index.ts"
import type { CliContext } from "../context.ts"
import { writeRunMetadata } from "../run/new-run.ts"
import { questionMedia } from "../run/question-media.ts"
import { RunDirError, recordedBlob, recordedToolResult, refuseNewer, runDirConfig } from "../run/run-dir.ts"
import { EXIT_CODES, runSession } from "../run/session.ts"
import { makeAgentTools, makeBackends, type RunConfig } from "../run/setup.ts"
import { addTurn, conversationOf, previousTurnDir, sessionsDir, turnRecords, turnsOf } from "../sessions/session-store.ts"

export interface ItemContext extends Pick<CliContext, "cwd" | "env" | "argv" | "version" | "interrupt"> {
  readonly dir: string
  /** The conversation a new run continues, given: no local session is read or written (a worker's, from the shared results). */
  readonly conversation?: ReadonlyArray<ConversationMessage>
  /** Diagnostics of the item's run (a run that did not complete says why). */
  readonly printError: (line: string) => void
}

export interface ItemOutcome {
  readonly state: State
  readonly exitCode: number
  readonly logDir: string
  /** The run was found finished: nothing ran now. */
  readonly found: boolean
}

const discard = () => undefined

/** The conversation a new run of `item` continues, its turn recorded first (once: a run that never started is not a second turn). */
const turnOf = (item: BatchItem, logDir: string, ctx: ItemContext) => {
  if (ctx.conversation !== undefined) return { conversation: ctx.conversation }
  if (item.sessionId === null) return {}
  const dir = sessionsDir(ctx.env, ctx.cwd)
  const earlier = turnsOf(dir, item.sessionId).filter((t) => t.log_dir !== logDir)
  const conversation = conversationOf(earlier)
  const previousTurn = previousTurnDir(earlier)
  if (!turnRecords(dir, item.sessionId).some((t) => t.log_dir === logDir)) addTurn(dir, item.sessionId, logDir)
  return { conversation, ...(previousTurn !== undefined ? { previousTurn } : {}) }
}

export const runItem = (item: BatchItem, loaded: RunConfig, observer: Observer, ctx: ItemContext) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const shared = Option.getOrNull(yield* Effect.serviceOption(SharedRunFiles))
    const logDir = itemDir(ctx.dir, item.id)
    const session = {
      logDir,
      question: item.question,
      version: ctx.version,
      interrupt: ctx.interrupt,
      automation: false,
      display: Effect.succeed(observer),
      print: discard,
      printError: ctx.printError,
    }
    const read = yield* store.read(logDir).pipe(
      Effect.catchIf(
        (e) => e.reason === "missing",
        () => Effect.succeed(null),
      ),
    )
    const events = read === null ? [] : eventsOf(read)
    if (read !== null && events.length > 0) {
      yield* refuseNewer(logDir, read)
      const recorded = foldEvents(events)
      if (recorded.run === null)
        return yield* new RunDirError({ reason: "not_a_run", path: logDir, detail: "its first event is not run_started" })
      if (!isResumable(recorded.finished))
        return { state: recorded, exitCode: EXIT_CODES[recorded.finished!.reason], logDir, found: true } satisfies ItemOutcome
      // A run another worker started: its config, recorded calls and long tool results, from the shared copies;
      // its config as queued when none was shared (a run begun before its files were).
      if (shared !== null) {
        fs.mkdirSync(logDir, { recursive: true, mode: PRIVATE_DIR_MODE })
        yield* shared.restore(logDir)
        if (!fs.existsSync(join(logDir, METADATA_FILE))) yield* writeRunMetadata(logDir, item.question, loaded, ctx)
      }
      const { config } = yield* runDirConfig(logDir, loaded.env)
      const backends = yield* makeBackends(config, loaded.env, logDir, events)
      yield* runSession({
        ...session,
        config,
        backends,
        env: loaded.env,
        tools: (servers) => makeAgentTools(config, loaded.env, logDir, logDir, servers),
        resume: {
          events,
          skipped: read.skipped,
          tornTail: read.tornTail,
          state: recorded,
          toolResultOf: recordedToolResult(logDir),
          blobOf: recordedBlob(logDir),
        },
      })
    } else {
      fs.mkdirSync(logDir, { recursive: true, mode: PRIVATE_DIR_MODE })
      const backends = yield* makeBackends(loaded.config, loaded.env, loaded.where)
      const media = yield* questionMedia(item.question, [], loaded.config, ctx.cwd, loaded.where, false)
      yield* writeRunMetadata(logDir, item.question, loaded, ctx)
      if (shared !== null) yield* shared.put(logDir, METADATA_FILE, fs.readFileSync(join(logDir, METADATA_FILE), "utf8"))
      yield* runSession({
        ...session,
        ...turnOf(item, logDir, ctx),
        ...(media.length > 0 ? { media } : {}),
        config: loaded.config,
        backends,
        env: loaded.env,
        tools: (servers) => makeAgentTools(loaded.config, loaded.env, logDir, loaded.where, servers),
      })
    }
    const state = foldEvents(eventsOf(yield* store.read(logDir)))
    return { state, exitCode: EXIT_CODES[state.finished?.reason ?? "interrupted"], logDir, found: false } satisfies ItemOutcome
  })
