/**
 * Interactive mode: `massgen --config team.yaml` on a terminal with no question opens a prompt.
 *
 * Contract: each line typed is a turn of the prompt's session (a new session
 * id, `.massgen/sessions/<id>/`, like `--session-id`): a run with the live
 * view, whose summary shows the final answer, and then the prompt again. A
 * line that starts with `/` is a command: `/help`, `/quit` (`/exit`, `/q`),
 * `/history` (the session's questions and answers), `/cost` (its tokens and
 * cost), `/status` (the session, its turns, the config, the last run
 * directory), `/reset` (a new session: the next turn starts a new
 * conversation); an unknown command says so. Ctrl+C during a turn stops that
 * turn (recorded interrupted, resumable with the command it prints) and comes
 * back to the prompt; a second Ctrl+C in the same turn stops at once (exit 4),
 * as a run does. At the prompt, Ctrl+D, or Ctrl+C twice in a row, quits (exit
 * 0); SIGTERM quits after stopping the turn going on. The config is loaded and
 * every key checked once, before the first prompt. What it prints of the
 * session's turns (`/history`) is previews (`preview`: folded, no escape
 * or control character), and every line it prints goes through the
 * program's `print`, which cleans it (`program.ts`).
 *
 * This command owns SIGINT while it runs (the process's first-signal handler
 * would end the whole program): it takes the process's SIGINT listeners off
 * and puts its own.
 */

import { createInterface } from "node:readline"
import { Effect } from "effect"
import { formatProblem, unknownKeys } from "../../domain/config/index.ts"
import { count, formatCost } from "../../lib/text.ts"
import { utf8Bytes } from "../../lib/utf8-bytes.ts"
import { EventStore } from "../../services/event-store/index.ts"
import { formatBytes } from "../../services/input-file.ts"
import type { RunArgs } from "../args/index.ts"
import type { CliContext } from "../context.ts"
import { DEFAULT_MAX_QUESTION_BYTES } from "../help.ts"
import { preview } from "../run/automation-output.ts"
import { runDisplay, showsTerminalView } from "../run/display.ts"
import { newRunDir } from "../run/new-run.ts"
import { canAskAtTerminal, terminalAsker } from "../run/permission-prompt.ts"
import { questionMedia } from "../run/question-media.ts"
import { runSession } from "../run/session.ts"
import { makeAgentTools, makeBackends, resolveRunConfig } from "../run/setup.ts"
import {
  addTurn,
  answerOf,
  conversationOf,
  latestSession,
  newSessionId,
  previousTurnDir,
  sessionsDir,
  turnsOf,
} from "../sessions/session-store.ts"

export const PROMPT = "massgen> "

export const HELP_TEXT = [
  "Type a question and press Enter: the council answers it, seeing the earlier questions and answers of this session.",
  "  /history   the questions and answers so far",
  "  /cost      tokens and cost of this session",
  "  /status    the session, its turns, the config, the last run directory",
  "  /reset     start a new session (a new conversation)",
  "  /help      this help",
  "  /quit      leave (also /exit, /q, Ctrl+D, or Ctrl+C twice at the prompt)",
  "Ctrl+C during a turn stops that turn; it can be resumed with massgen resume.",
].join("\n")

type Typed = { readonly _tag: "line"; readonly text: string } | { readonly _tag: "eof" } | { readonly _tag: "interrupt" }

/** One line from the terminal, or Ctrl+D (eof), or Ctrl+C (interrupt). */
const readLine = (): Promise<Typed> =>
  new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true, prompt: PROMPT })
    let done = false
    const finish = (typed: Typed) => {
      if (done) return
      done = true
      rl.close()
      resolve(typed)
    }
    rl.on("line", (text) => finish({ _tag: "line", text }))
    rl.on("SIGINT", () => {
      process.stdout.write("\n")
      finish({ _tag: "interrupt" })
    })
    rl.on("close", () => finish({ _tag: "eof" }))
    rl.prompt()
  })

export const interactiveCommand = (args: Omit<RunArgs, "question"> & { readonly maxQuestionBytes?: number }, ctx: CliContext) =>
  Effect.gen(function* () {
    const loaded = yield* resolveRunConfig({ ...args, question: "" }, ctx.env, ctx.cwd)
    for (const w of unknownKeys(loaded.raw)) ctx.printError(`massgen: warning: config ${loaded.where}: ${formatProblem(w)}`)
    yield* makeBackends(loaded.config, loaded.env, loaded.where)
    const dir = sessionsDir(ctx.env, ctx.cwd)
    let session =
      args.session?._tag === "id"
        ? args.session.id
        : args.session?._tag === "continue"
          ? (latestSession(dir) ?? newSessionId())
          : newSessionId()
    let quitting = false
    // SIGTERM (through the program's stop signal) ends the prompt after the turn going on stops.
    let stopTurn: ((why: string) => void) | null = null
    void Effect.runPromise(ctx.interrupt).then((why) => {
      quitting = true
      stopTurn?.(why)
      process.stdin.destroy()
    })
    const sigints = process.listeners("SIGINT")
    process.removeAllListeners("SIGINT")
    let turnSignals = 0
    const onSigint = () => {
      turnSignals += 1
      if (turnSignals > 1) {
        void import("../../services/forced-stop.ts").then((m) => (m.runForcedStop(), process.exit(4)))
        return
      }
      stopTurn?.("stopped by SIGINT")
    }
    process.on("SIGINT", onSigint)

    ctx.print(`massgen interactive: session ${session}, config ${loaded.where}. /help for commands, /quit to leave.`)
    const turn = (question: string) =>
      Effect.gen(function* () {
        const earlier = turnsOf(dir, session)
        const conversation = conversationOf(earlier)
        const previousTurn = previousTurnDir(earlier)
        const logDir = yield* newRunDir(loaded, question, ctx)
        addTurn(dir, session, logDir)
        const backends = yield* makeBackends(loaded.config, loaded.env, loaded.where)
        const media = yield* questionMedia(question, [], loaded.config, ctx.cwd, loaded.where)
        const stopped = new Promise<string>((resolve) => (stopTurn = resolve))
        turnSignals = 0
        return yield* runSession({
          logDir,
          config: loaded.config,
          backends,
          tools: (servers) => makeAgentTools(loaded.config, loaded.env, logDir, loaded.where, servers),
          question,
          conversation,
          ...(previousTurn !== undefined ? { previousTurn } : {}),
          ...(media.length > 0 ? { media } : {}),
          version: ctx.version,
          interrupt: Effect.promise(() => stopped),
          automation: false,
          ...(canAskAtTerminal(false) ? { asker: terminalAsker() } : {}),
          display: runDisplay({ automation: false, noDisplay: args.noDisplay }, ctx.print, logDir),
          resumeHintShown: showsTerminalView({ automation: false, noDisplay: args.noDisplay }),
          print: ctx.print,
          printError: ctx.printError,
          env: loaded.env,
        }).pipe(Effect.provide(EventStore.file()))
      }).pipe(Effect.ensuring(Effect.sync(() => (stopTurn = null))))

    let interruptsAtPrompt = 0
    while (!quitting) {
      const typed = yield* Effect.promise(readLine)
      if (quitting || typed._tag === "eof") break
      if (typed._tag === "interrupt") {
        interruptsAtPrompt += 1
        if (interruptsAtPrompt > 1) break
        ctx.print("(Ctrl+C again or Ctrl+D to quit)")
        continue
      }
      interruptsAtPrompt = 0
      const text = typed.text.trim()
      if (text === "") continue
      if (text.startsWith("/")) {
        const [command] = text.split(/\s+/)
        if (command === "/quit" || command === "/exit" || command === "/q") break
        ctx.print(slashCommand(command!, { session, dir, where: loaded.where }) ?? `unknown command ${command}; /help lists the commands`)
        if (command === "/reset") {
          session = newSessionId()
          ctx.print(`New session ${session}: the next question starts a new conversation.`)
        }
        continue
      }
      const max = args.maxQuestionBytes ?? DEFAULT_MAX_QUESTION_BYTES
      if (utf8Bytes(text) > max) {
        ctx.print(`That question is over the question limit of ${formatBytes(max)} (--max-question-bytes ${max}); nothing was run.`)
        continue
      }
      yield* turn(text)
    }
    process.removeListener("SIGINT", onSigint)
    for (const l of sigints) process.on("SIGINT", l as () => void)
    ctx.print(`Bye. Session ${session}: continue it with --session-id ${session}.`)
    return 0
  })

/** What a slash command prints; null for an unknown one. `/reset` prints nothing here: its line names the new session. */
const slashCommand = (command: string, s: { readonly session: string; readonly dir: string; readonly where: string }): string | null => {
  const turns = turnsOf(s.dir, s.session)
  switch (command) {
    case "/help":
    case "/h":
      return HELP_TEXT
    case "/history": {
      if (turns.length === 0) return "No turns yet in this session."
      return turns
        .map((t) => {
          const answer = answerOf(t)
          return `${t.turn}. ${preview(t.state?.run?.question ?? "?", 100)}\n   → ${answer !== null ? preview(answer, 100) : `(no answer: ${t.state?.finished?.reason ?? "stopped"})`}`
        })
        .join("\n")
    }
    case "/cost": {
      const tokens = turns.reduce((n, t) => n + (t.state ? t.state.usage.inputTokens + t.state.usage.outputTokens : 0), 0)
      const costs = turns.flatMap((t) => (t.state?.usage.cost != null ? [t.state.usage.cost] : []))
      return `Session ${s.session}: ${count(turns.length, "turn")}, ${count(tokens, "token")}, cost ${formatCost(costs.length === 0 ? null : costs.reduce((a, b) => a + b, 0))}`
    }
    case "/status": {
      const last = turns.at(-1)
      return [
        `Session ${s.session}: ${count(turns.length, "turn")}`,
        `Config: ${s.where}`,
        `Last run: ${last ? `${last.log_dir} (${last.state?.finished?.reason ?? "in progress"})` : "none"}`,
      ].join("\n")
    }
    case "/reset":
      return ""
    default:
      return null
  }
}
