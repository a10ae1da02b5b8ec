/**
 * The orchestrator's words: what a run is given (`RunInput`) and gives back
 * (`RunOutcome`), and what its parts share (`RunContext`).
 *
 * Words: *work* is a round or a presentation in flight, named by its *work key*
 * (`agent#round`, or `agent#present`); the *inbox* is where the replies of work
 * and the stops from outside come in; the run is *broken* once a file it must
 * keep could not be written (`fatal` holds why), and then appends nothing more.
 * A *cell* holds a value the run's fibers share: they run one at a time, so
 * it is read and set without an Effect (a `Ref` cost each read two steps of
 * the fiber runtime, some 30 per model call).
 */

import { statSync } from "node:fs"
import { Effect, Queue, type Scope } from "effect"
import type { Config } from "../../domain/config/index.ts"
import type { Reply } from "../../domain/coordination/decide.ts"
import { workKey } from "../../domain/coordination/work-key.ts"
import type { ConversationMessage, Event, FinishReason, QuestionMedia, RunSettings } from "../../domain/events/index.ts"
import type { LlmRequest, TokenUsage } from "../../domain/llm.ts"
import type { ReplayStart } from "../../domain/replay/index.ts"
import { initialState, type State } from "../../domain/state/index.ts"
import { instantText } from "../../lib/instant.ts"
import { RunStorageError, type StorageKind } from "../io-errors.ts"
import type { SkillSources } from "../skills/offer.ts"
import type { ToolProvider, ToolStartError } from "../tools/tool-provider.ts"

export interface RunInput {
  readonly config: Config
  readonly question: string
  /** The conversation the question continues, oldest first; recorded on `run_started` when not empty. */
  readonly conversation?: ReadonlyArray<ConversationMessage>
  /** The files sent with the question (`--image`, `@path`, `upload_files`); recorded on `run_started` when not empty. */
  readonly media?: ReadonlyArray<QuestionMedia>
  readonly logDir: string
  readonly runId: string
  readonly version: string
  readonly pid: number
  /** Completes when the run must stop from outside (a signal); its value names why. */
  readonly interrupt: Effect.Effect<string>
  readonly observe?: Observer
  readonly priceOf?: (model: string | null, usage: TokenUsage) => number | null
  /** Take up a recorded run instead of starting one: its events, and what the reader skipped. */
  readonly resume?: ResumeInput
  /**
   * Starts the agents' own tools (MCP servers, command tools, `execute_command`),
   * alive for the run's scope: each agent's provider. A new run calls it after
   * `run_started`, and records a failure (`tool_start_failed`), which finishes
   * the run; a resumed run calls it before `run_resumed` and fails with it,
   * appending nothing. Absent: the tools are the `AgentTools` service's.
   */
  readonly startTools?: Effect.Effect<ReadonlyMap<string, ToolProvider>, ToolStartError, Scope.Scope>
  /** Where `use_skills` looks (`services/skills/offer.ts`); absent: no skill is found. */
  readonly skillSources?: SkillSources
  /** The log directory of the previous turn of the session this run is a turn of (memory filesystem mode carries its memory). */
  readonly previousTurn?: string
}

export interface ResumeInput {
  /** Every event of the run's stream: their number is the version the first append expects. */
  readonly events: ReadonlyArray<Event>
  readonly skipped: number
  readonly tornTail: boolean
  /** The fold of `events`, when the caller has it already. */
  readonly state?: State
  /** Where the replay that rebuilds the work in flight may start, with the fold before it, when the caller has it (`foldWithStart`). */
  readonly replayStart?: ReplayStart
  /** The whole result of tool call `n` (`tool_log/<n>.json`), for results the events do not hold. */
  readonly toolResultOf?: (n: number) => string | undefined
  /** The text of blob `hash` (`blobs/<hash>.txt`), for the long tool-call arguments the events reference. */
  readonly blobOf?: (hash: string) => string | undefined
}

export interface Observer {
  /**
   * Each event, with the run's state after it, to read during the call: a
   * resumed run first shows its recorded events with states that are advanced
   * in place (`advanceInPlace`), so a state kept past its call may change.
   */
  readonly onEvent: (event: Event, state: State) => Effect.Effect<void>
  readonly onText: (agent: string, text: string) => Effect.Effect<void>
}

export interface RunOutcome {
  readonly state: State
  readonly reason: FinishReason
}

export type Input =
  | { readonly _tag: "reply"; readonly reply: Reply }
  /** A file the run must keep could not be written (`fatal` holds why): the run stops at once. */
  | { readonly _tag: "fatal" }
  | { readonly _tag: "stop"; readonly reason: Exclude<FinishReason, "completed">; readonly message: string }
  /** The state changed in a way the decider must see (a call spent the budget). */
  | { readonly _tag: "wake" }

export const replyKey = (reply: Reply): string =>
  workKey(reply.agent, "round" in reply ? reply.round : reply._tag === "evaluated" ? "evaluate" : "present")

export const isoNow = Effect.clockWith((c) => c.currentTimeMillis).pipe(Effect.map(instantText))

/** A value the fibers of one run share (see *cell* above). */
export interface Cell<A> {
  current: A
}

/** What the parts of one run's orchestration share. */
export interface RunContext {
  readonly input: RunInput
  /** The run's settings: a resumed run keeps those it was started with. */
  readonly settings: RunSettings
  /** The fold of every event appended: it changes only when an event is. */
  readonly state: Cell<State>
  readonly inbox: Queue.Queue<Input>
  /** The first failure to write a file the run must keep; once set, nothing more is appended and the run stops. */
  readonly fatal: Cell<RunStorageError | null>
  /** Records a failure to write a file the run must keep (the first one only) and wakes the run to stop. */
  readonly failStorage: (kind: StorageKind, path: string, cause: string) => Effect.Effect<void>
  readonly isBroken: () => boolean
  /** The base request of each piece of work, by `workKey`: what the winner saw, for `final/<winner>/context.txt`. */
  readonly contexts: Map<string, LlmRequest>
  /** When the latest call of each piece of work went out (the Effect clock, ms), by `workKey`: when its reply may be due. */
  readonly callSentAt: Map<string, number>
}

/** A directory's identity (device and inode), `missing`, or `unknown` when it cannot be looked at. */
const identityOf = (dir: string): string => {
  try {
    const stat = statSync(dir, { throwIfNoEntry: false })
    return stat === undefined ? "missing" : `${stat.dev}:${stat.ino}`
  } catch {
    return "unknown"
  }
}

/**
 * Whether the directory the run started in (`startedAs`) is no longer at `dir`: deleted, or moved
 * (a write that makes its parents may have made a new directory of that name since).
 */
const isGone = (dir: string, startedAs: string): boolean => {
  if (startedAs === "missing" || startedAs === "unknown") return false
  const now = identityOf(dir)
  return now !== "unknown" && now !== startedAs
}

export const makeRunContext = (input: RunInput, settings: RunSettings): Effect.Effect<RunContext> =>
  Effect.gen(function* () {
    const startedAs = identityOf(input.logDir)
    const inbox = yield* Queue.unbounded<Input>()
    const fatal: Cell<RunStorageError | null> = { current: null }
    const failStorage = (kind: StorageKind, path: string, cause: string) =>
      Effect.suspend(() => {
        if (fatal.current !== null) return Effect.void
        // Whichever write finds it out, a log directory gone is said as such, not as that write's failure.
        fatal.current = isGone(input.logDir, startedAs)
          ? new RunStorageError({ kind: "log_dir", path: input.logDir, cause: "deleted or moved", logDir: input.logDir })
          : new RunStorageError({ kind, path, cause, logDir: input.logDir })
        return Queue.offer(inbox, { _tag: "fatal" })
      })
    return {
      input,
      settings,
      state: { current: initialState },
      inbox,
      fatal,
      failStorage,
      isBroken: () => fatal.current !== null,
      contexts: new Map(),
      callSentAt: new Map(),
    }
  })
