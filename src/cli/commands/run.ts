/**
 * `massgen ... "question"`: one coordination run from the command line.
 *
 * It loads the config (or builds one from `--model`/`--models`), makes every
 * backend (a missing API key stops here, before any call or file), creates the
 * log directory, records `execution_metadata.yaml` (secrets masked), prints the
 * automation header (and `SESSION: <id>` after it when the run is a turn of a
 * session: `--session-id`, `--continue`), and hands over to `runSession`, which runs the orchestrator
 * with the run's display and returns the exit code. From there, its
 * process keeps the JIT reluctant to the end (`jit-policy.ts`).
 */

import { Effect } from "effect"
import { formatProblem, unknownKeys } from "../../domain/config/index.ts"
import { EventStore } from "../../services/event-store/index.ts"
import { type RunArgs, UsageError } from "../args/index.ts"
import type { CliContext } from "../context.ts"
import { jitForRun } from "../process/jit-policy.ts"
import { automationHeader } from "../run/automation-output.ts"
import { runDisplay, showsTerminalView } from "../run/display.ts"
import { newRunDir } from "../run/new-run.ts"
import { canAskAtTerminal, terminalAsker } from "../run/permission-prompt.ts"
import { questionMedia } from "../run/question-media.ts"
import { runSession } from "../run/session.ts"
import { makeAgentTools, makeBackends, resolveRunConfig, unpricedUnderBudget } from "../run/setup.ts"
import { addTurn, conversationOf, latestSession, previousTurnDir, sessionsDir, turnsOf } from "../sessions/session-store.ts"

/** The session a run is a turn of, and the conversation it continues; `--continue` with no session is a usage error. */
const openSession = (session: NonNullable<RunArgs["session"]>, ctx: Pick<CliContext, "env" | "cwd">) =>
  Effect.gen(function* () {
    const dir = sessionsDir(ctx.env, ctx.cwd)
    const id = session._tag === "id" ? session.id : latestSession(dir)
    if (id === null)
      return yield* new UsageError({
        reason: "missing_value",
        detail: `--continue: no session to continue under ${dir}; start one with --session-id ID`,
      })
    const turns = turnsOf(dir, id)
    return { dir, id, conversation: conversationOf(turns), previousTurn: previousTurnDir(turns) }
  })

export const runCommand = (args: RunArgs, ctx: CliContext) =>
  Effect.gen(function* () {
    const loaded = yield* resolveRunConfig(args, ctx.env, ctx.cwd)
    // On stderr: stdout is the automation lines' alone.
    for (const w of unknownKeys(loaded.raw)) ctx.printError(`massgen: warning: config ${loaded.where}: ${formatProblem(w)}`)
    const backends = yield* makeBackends(loaded.config, loaded.env, loaded.where)
    const media = yield* questionMedia(args.question, args.images ?? [], loaded.config, ctx.cwd, loaded.where)
    const unpriced = unpricedUnderBudget(loaded.config, backends)
    if (unpriced.length > 0) {
      ctx.printError(
        `massgen: warning: budget_usd is set, but these agents' models have no price, so their calls add nothing to it: ${unpriced.join(", ")}; give them a price under pricing:`,
      )
    }
    const session = args.session ? yield* openSession(args.session, ctx) : null
    const logDir = yield* newRunDir(loaded, args.question, ctx)
    if (session !== null) addTurn(session.dir, session.id, logDir)
    if (args.automation) for (const line of automationHeader(logDir, args.question)) ctx.print(line)
    if (args.automation && session !== null) ctx.print(`SESSION: ${session.id}`)
    // The coordination's many small steps gain little from the JIT but its memory, unless it has many agents.
    jitForRun(loaded.config.agents.length)
    // `ui.display_type: none | simple` is `--no-display`.
    const shown = { ...args, noDisplay: args.noDisplay || loaded.config.display === "plain" }
    return yield* runSession({
      logDir,
      config: loaded.config,
      backends,
      tools: (servers) => makeAgentTools(loaded.config, loaded.env, logDir, loaded.where, servers),
      question: args.question,
      ...(session !== null ? { conversation: session.conversation } : {}),
      ...(session?.previousTurn !== undefined ? { previousTurn: session.previousTurn } : {}),
      ...(media.length > 0 ? { media } : {}),
      version: ctx.version,
      interrupt: ctx.interrupt,
      automation: args.automation,
      ...(canAskAtTerminal(args.automation) ? { asker: terminalAsker() } : {}),
      display: runDisplay(shown, ctx.print, logDir),
      resumeHintShown: showsTerminalView(shown),
      print: ctx.print,
      printError: ctx.printError,
      env: loaded.env,
    })
  }).pipe(Effect.provide(EventStore.file()))
