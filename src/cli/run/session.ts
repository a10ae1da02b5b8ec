/**
 * Running the orchestrator on a log directory with the live layers, for a new run or a resumed one.
 *
 * `runSession` holds the directory's lock for the whole run (a resumed run
 * first removes the temporary files a stop mid-write left beside the context
 * files its log names: `removeWriteTemporaries`), opens the display, and runs
 * the coordination, which starts the agents' tools once the run is on record
 * and before any call (`RunInput.startTools`): the MCP servers (stopped at the
 * run's end), the command tools (each program found), `execute_command` (its
 * execution mode tried). A tool that does not start is recorded
 * (`tool_start_failed`) and the run fails (exit 2, `FAILED: error: ...`); a
 * resumed run's tools that do not start stop the resume (exit 1), its log
 * unchanged. It keeps the files derived from the events up to date
 * (`coordination_events.json`, `snapshot_mappings.json`, `snapshots/`;
 * `services/run-files/derived-files.ts`) while the log is quiet and at the end (with
 * `SharedRunFiles`, a worker's, every whole file the run writes is also
 * shared: `services/run-files/shared.ts`), prints
 * the automation footer when asked, reports a run that did not complete on
 * stderr (with how to resume it, unless the display's last screen said so:
 * `resumeHintShown`), and returns the exit code of its finish reason (`runSessionOutcome`
 * does the same work and returns the outcome itself, printing nothing).
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { Context, Duration, Effect, Fiber, Layer, Option, type Scope } from "effect"
import { type Config, isCliAgent } from "../../domain/config/index.ts"
import type { ConversationMessage, FinishReason, QuestionMedia } from "../../domain/events/index.ts"
import { failureText } from "../../domain/projections/status.ts"
import { resumeHint } from "../../domain/run-paths.ts"
import { isResumable, type State } from "../../domain/state/index.ts"
import { foldedText } from "../../lib/plain-text.ts"
import { type Backend, Backends } from "../../services/backends/index.ts"
import { EventStore, eventsOf } from "../../services/event-store/index.ts"
import { onForcedStop } from "../../services/forced-stop.ts"
import { acquireRunLock, releaseRunLockSync } from "../../services/log-dir/run-lock.ts"
import { type Observer, type ResumeInput, runCoordination } from "../../services/orchestrator/index.ts"
import { liveRunFiles, openDerivedFiles, RunFiles, SharedRunFiles, StatusWriter, sharingWrites } from "../../services/run-files/index.ts"
import { skillSourcesOf } from "../../services/skills/offer.ts"
import { removeWriteTemporaries } from "../../services/tools/file-paths.ts"
import type { McpStartError } from "../../services/tools/mcp-servers.ts"
import { PermissionAsker } from "../../services/tools/permission-gate.ts"
import type { CommandLineStartError } from "../../services/tools/sandbox.ts"
import { type ToolProvider, ToolStartError } from "../../services/tools/tool-provider.ts"
import { agentWorkspace, Workspaces } from "../../services/tools/workspace.ts"
import { automationFooter } from "./automation-output.ts"
import type { ConfigError } from "./load-config.ts"
import { priceOf } from "./setup.ts"

/** The user's home folder (`HOME`), or null. */
const homeDir = (): string | null => process.env.HOME ?? null

export const EXIT_CODES: Record<FinishReason, number> = {
  completed: 0,
  error: 2,
  timeout: 3,
  budget: 3,
  interrupted: 4,
}

export interface SessionInput {
  readonly logDir: string
  readonly config: Config
  readonly backends: ReadonlyMap<string, Backend>
  /**
   * Each agent's own tools, given its MCP servers' providers once they have
   * started (`makeAgentTools`); an agent without an entry has none.
   */
  readonly tools?: (
    servers: ReadonlyMap<string, ReadonlyArray<ToolProvider>>,
  ) => Effect.Effect<ReadonlyMap<string, ToolProvider>, ConfigError | CommandLineStartError | ToolStartError>
  readonly question: string
  /** The conversation the question continues (a session's earlier turns, a `serve` request's messages). */
  readonly conversation?: ReadonlyArray<ConversationMessage>
  /** The log directory of the session's previous turn with a final answer, whose memory a turn in memory filesystem mode starts with. */
  readonly previousTurn?: string
  /** The files sent with the question. */
  readonly media?: ReadonlyArray<QuestionMedia>
  readonly version: string
  readonly interrupt: Effect.Effect<string>
  readonly automation: boolean
  /** The display of the run, alive for the run's scope (the terminal view restores the terminal when it closes). */
  readonly display: Effect.Effect<Observer | undefined, never, Scope.Scope>
  /** The display's last screen ends with the `resume with:` line (the terminal view), so stderr does not say it again. */
  readonly resumeHintShown?: boolean
  readonly resume?: ResumeInput
  /** The person who answers the permission engine's asks (`permission-prompt.ts`); without one, the automation policy does. */
  readonly asker?: PermissionAsker["Type"]
  readonly print: (line: string) => void
  readonly printError: (line: string) => void
  /** Where the `${VAR}` of MCP server entries come from: the run's environment, `.env` included. */
  readonly env: Readonly<Record<string, string | undefined>>
}

/** The one-line account of a run that did not complete, for stderr; a run a signal stopped says how to resume it, unless `withHint` is false. */
export const unfinishedMessage = (state: State, logDir: string, withHint = true): string => {
  const hint = withHint && isResumable(state.finished) ? `; resume with: ${resumeHint(logDir)}` : ""
  return `massgen: run ${state.finished?.reason ?? "stopped"}: ${foldedText(failureText(state) ?? "")}${hint}`
}

/**
 * How often a run looks whether to bring its derived files up to its events:
 * often enough that they are written while the run waits for its models, not
 * all at its end (200 agents with 200 ms replies: 276 -> 116 ms from
 * run_finished to exit, with 1 s).
 */
const DERIVED_FILES_EVERY = Duration.millis(100)
/**
 * They are written only when the log took no event for this long: while the
 * run waits for its models. A run busy with replies is not slowed by them (200
 * zero-delay agents: they took a quarter of the run's time); they wait for a
 * quiet moment or the run's end.
 */
const QUIET = Duration.millis(15)

/** The automation footer, without an `ANSWER_FILE:` line for a file that is not there. */
export const footerLines = (state: State, logDir: string): ReadonlyArray<string> => automationFooter(state, logDir, existsSync)

/** What did not start, as the run records it. */
const toolStartError = (e: McpStartError | ConfigError | CommandLineStartError | ToolStartError): ToolStartError => {
  switch (e._tag) {
    case "ToolStartError":
      return e
    case "McpStartError":
      return new ToolStartError({ kind: "mcp_server", name: e.server, problem: e.message })
    case "CommandLineStartError":
      return new ToolStartError({ kind: "execute_command", name: e.agent, problem: e.message })
    case "ConfigError":
      return new ToolStartError({ kind: "tool_names", name: e.problems[0]?.path ?? e.path, problem: e.message })
  }
}

/** Runs the session and returns the exit code of its finish reason, after the automation footer and the stderr line of a run that did not complete. */
export const runSession = (input: SessionInput) =>
  Effect.map(runSessionOutcome(input), (outcome) => {
    if (input.automation) for (const line of footerLines(outcome.state, input.logDir)) input.print(line)
    if (outcome.reason !== "completed") input.printError(unfinishedMessage(outcome.state, input.logDir, input.resumeHintShown !== true))
    return EXIT_CODES[outcome.reason]
  })

/** Needs the command's `EventStore`, so that what the command read of the run is not decoded again. */
export const runSessionOutcome = (input: SessionInput) =>
  Effect.gen(function* () {
    const { logDir } = input
    const inRun = new Map([...input.backends].map(([id, b]) => [id, b.inRun?.(logDir) ?? b]))
    // A worker on Postgres keeps a shared copy of every whole file, for the worker that may take the run over.
    const shared = Option.getOrNull(yield* Effect.serviceOption(SharedRunFiles))
    const runFiles =
      shared === null
        ? liveRunFiles(logDir)
        : Layer.map(liveRunFiles(logDir), (c) => Context.make(RunFiles, sharingWrites(Context.get(c, RunFiles), shared, logDir)))
    const layer = Layer.mergeAll(
      StatusWriter.live(join(logDir, "status.json")),
      runFiles,
      Layer.succeed(Backends, { forAgent: (id: string) => inRun.get(id)! }),
      Workspaces.live(logDir, input.config.agents, input.config.workspaceLimits),
    )
    const outcome = yield* Effect.gen(function* () {
      yield* acquireRunLock(logDir)
      yield* onForcedStop(() => releaseRunLockSync(logDir))
      // A stop mid-write may have left a temporary file beside a context file the log names: ours to remove, under the lock.
      const resumed = input.resume?.state
      if (resumed !== undefined)
        yield* Effect.sync(() =>
          removeWriteTemporaries(
            resumed.run?.settings.context_paths ?? [],
            resumed.workspaces.contextWrites.map((w) => w.path),
          ),
        )
      // Started by the run once it is on record, before any call; the servers stop when this scope closes.
      const startTools = Effect.gen(function* () {
        // A CLI agent's servers are the CLI's to start (`claude-code-mcp.ts`), not massgen's.
        const withServers = input.config.agents.filter((a) => a.backend.mcp_servers !== undefined && !isCliAgent(a.backend.type))
        const servers: ReadonlyMap<string, ToolProvider> =
          withServers.length > 0
            ? yield* Effect.flatMap(
                Effect.promise(() => import("../../services/tools/mcp-servers.ts")),
                (m) => m.startMcpServers(withServers, { cwd: logDir, cwdOf: (agent) => agentWorkspace(logDir, agent), env: input.env }),
              )
            : new Map()
        return input.tools
          ? yield* input.tools(new Map([...servers].map(([agent, provider]) => [agent, [provider]])))
          : (servers as ReadonlyMap<string, ToolProvider>)
      }).pipe(Effect.mapError(toolStartError))
      const observe = yield* input.display
      // The derived files follow the events as they come, and at the end: a run killed midway leaves them nearly whole.
      const store = yield* EventStore
      const derived = openDerivedFiles(logDir)
      let next = 0
      const catchUp = Effect.gen(function* () {
        const read = yield* store.read(logDir, next)
        derived.add(eventsOf(read))
        next += read.events.length
        yield* derived.write
      }).pipe(Effect.ignore)
      const version = Effect.map(store.read(logDir, Number.MAX_SAFE_INTEGER), (read) => read.version)
      const whenQuiet = Effect.gen(function* () {
        const before = yield* version
        if (before === next) return
        yield* Effect.sleep(QUIET)
        if ((yield* version) === before) yield* catchUp
      }).pipe(Effect.ignore)
      const follower = yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(DERIVED_FILES_EVERY), whenQuiet)))
      const result = yield* runCoordination({
        config: input.config,
        question: input.question,
        ...(input.conversation ? { conversation: input.conversation } : {}),
        ...(input.media ? { media: input.media } : {}),
        logDir,
        runId: logDir.split(/[/\\]/).pop() ?? logDir,
        version: input.version,
        pid: process.pid,
        interrupt: input.interrupt,
        priceOf: priceOf(input.config),
        ...(observe ? { observe } : {}),
        ...(input.resume ? { resume: input.resume } : {}),
        ...(input.previousTurn !== undefined ? { previousTurn: input.previousTurn } : {}),
        ...(input.config.skills ? { skillSources: skillSourcesOf(input.config.skills, process.cwd(), homeDir(), logDir) } : {}),
        startTools,
      }).pipe(input.asker === undefined ? (e) => e : Effect.provideService(PermissionAsker, input.asker))
      yield* Fiber.interrupt(follower)
      yield* catchUp
      yield* derived.warn
      return result
    }).pipe(Effect.scoped, Effect.provide(layer))
    return outcome
  })
