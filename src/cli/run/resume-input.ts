/**
 * What continuing a stopped run needs, read from its log directory: for
 * `massgen resume` and for `massgen serve` (a retry of a request whose run a
 * killed server left unfinished).
 *
 * Contract: `prepareResume(logDir, cwd, env)` reads `events.jsonl` once and
 * folds it once (keeping where the replay of the work in flight starts), and
 * gives either `finished` (the run already ended and is not resumable: its
 * read, events and state) or `resumable`: the recorded config (with the
 * context paths the run recorded), its backends built with every key present,
 * and the `ResumeInput` for the orchestrator, read under the run's lock (taken
 * in the caller's scope), so what another resume appended meanwhile is in it.
 * Before the lock, nothing in the directory changes but the half-made
 * workspace copies of processes that are gone. A directory that is not a run,
 * a log with lines of a newer schema, a run a live process holds, a config
 * that cannot be read or whose agents differ from the run's are errors.
 * `resumedSession(prepared)` is what a resumed session is given of its run.
 */
import { Effect } from "effect"
import type { Config } from "../../domain/config/index.ts"
import type { Event } from "../../domain/events/index.ts"
import { foldWithStart } from "../../domain/replay/index.ts"
import { foldEvents, isResumable, type State } from "../../domain/state/index.ts"
import { type Backend, type Env, loadDotEnv } from "../../services/backends/index.ts"
import { EventStore, eventsOf, type StreamRead } from "../../services/event-store/index.ts"
import { acquireRunLock, holder, RunLockError } from "../../services/log-dir/run-lock.ts"
import type { ResumeInput } from "../../services/orchestrator/index.ts"
import type { ToolProvider } from "../../services/tools/tool-provider.ts"
import { removeOrphanCopies } from "../../services/tools/workspace.ts"
import { openRunDir, RunDirError, recordedBlob, recordedToolResult, refuseNewer, runDirConfig } from "./run-dir.ts"
import { makeAgentTools, makeBackends } from "./setup.ts"

export type PreparedResume =
  | {
      readonly _tag: "finished"
      readonly path: string
      readonly read: StreamRead
      readonly state: State
      readonly events: ReadonlyArray<Event>
    }
  | {
      readonly _tag: "resumable"
      readonly path: string
      /** What was read under the lock (its skips are the ones to report). */
      readonly read: StreamRead
      readonly state: State
      readonly question: string
      readonly config: Config
      readonly env: Env
      readonly backends: ReadonlyMap<string, Backend>
      readonly resume: ResumeInput
    }

export const prepareResume = (logDir: string, cwd: string, baseEnv: Env) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const dir = yield* openRunDir(logDir)
    yield* refuseNewer(dir.path, dir.read)
    const events = eventsOf(dir.read)
    // One fold of the log, which keeps on the way where the resume's replay starts.
    const { state, start } = foldWithStart(events)
    const run = state.run!
    if (!isResumable(state.finished)) return { _tag: "finished", path: dir.path, read: dir.read, state, events } as PreparedResume
    const live = holder(dir.path)
    if (live !== null) return yield* new RunLockError({ reason: "held", path: dir.path, pid: live, detail: "" })
    const env = yield* loadDotEnv(cwd, baseEnv).pipe(Effect.orElseSucceed(() => baseEnv))
    const recordedConfig = (yield* runDirConfig(dir.path, env)).config
    // The context paths as the run recorded them: absolute, from the directory it started in.
    const config = { ...recordedConfig, settings: { ...recordedConfig.settings, context_paths: run.settings.context_paths } }
    const recordedIds = state.agents.map((a) => a.info.id).join(", ")
    const configIds = config.agents.map((a) => a.id).join(", ")
    if (configIds !== recordedIds) {
      return yield* new RunDirError({
        reason: "bad_config",
        path: dir.path,
        detail: `its config has agents ${configIds}, the run has ${recordedIds}`,
      })
    }
    const backends = yield* makeBackends(config, env, dir.path, events)
    yield* Effect.sync(() => removeOrphanCopies(dir.path))
    // Under the lock, read what was appended since the read above: another resume
    // may have taken the run further (or finished it) meanwhile.
    yield* acquireRunLock(dir.path)
    const since = yield* store.read(dir.path, dir.read.version)
    yield* refuseNewer(dir.path, since)
    const current = foldEvents(eventsOf(since), state)
    const all = [...events, ...eventsOf(since)]
    if (!isResumable(current.finished))
      return { _tag: "finished", path: dir.path, read: since, state: current, events: all } as PreparedResume
    return {
      _tag: "resumable",
      path: dir.path,
      read: since,
      state: current,
      question: run.question,
      config,
      env,
      backends,
      resume: {
        events: all,
        skipped: since.skipped,
        tornTail: since.tornTail,
        state: current,
        // Events appended meanwhile may change where the replay can start: it finds that itself then.
        ...(since.events.length === 0 ? { replayStart: start } : {}),
        toolResultOf: recordedToolResult(dir.path),
        blobOf: recordedBlob(dir.path),
      },
    } as PreparedResume
  })

/** What every resumed session is given of its run: its directory, config, backends, tools, question and recorded events. */
export const resumedSession = (prepared: Extract<PreparedResume, { readonly _tag: "resumable" }>) => {
  const { path, config, env } = prepared
  return {
    logDir: path,
    config,
    backends: prepared.backends,
    tools: (servers: ReadonlyMap<string, ReadonlyArray<ToolProvider>>) => makeAgentTools(config, env, path, path, servers),
    question: prepared.question,
    resume: prepared.resume,
    env,
  }
}
