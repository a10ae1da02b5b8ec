/**
 * `massgen viewer [LOG_DIR] [--pick] [--replay-speed X] [--web [--port N] [--no-browser]]`: watch or replay a run, read-only.
 *
 * It resolves the run (LOG_DIR; else the newest run under the log base; with
 * `--pick`, the run whose number the user types from the list of recent
 * runs, from the event store's list), reads its events through the store
 * once, then feeds them to a display: the web view with `--web`, the
 * terminal view when stdout is a terminal, else plain lines. A complete run
 * is replayed (`--replay-speed`); a run still going is followed until it
 * completes. With `--web` the page stays served after the feed ends, until
 * Ctrl+C; a replay at a given speed waits for the first page. Ctrl+C stops the viewer at any time, restoring the terminal; the
 * viewer returns 0. A bad directory or choice is a `ViewerError` (exit 1), and
 * so is a run with no events to show (a run killed before its first event
 * leaves an empty `events.jsonl`). When the viewer ends it says on stderr, in
 * one line, what it skipped of the log (`cli/run/report.ts`); a run it followed
 * whose process is gone, with the command that resumes it (its views then show
 * the agents that were at work `stopped`). The list of
 * `--pick` marks each run `[DONE]`, `[LIVE]` or `[STOPPED]` (`progressOf`),
 * with the command that resumes a stopped run.
 */
import * as nodePath from "node:path"
import { Effect } from "effect"
import { resumeHint } from "../../domain/run-paths.ts"
import { foldEvents } from "../../domain/state/index.ts"
import { foldedText } from "../../lib/plain-text.ts"
import { EventStore, eventsOf, type RunSummary, type StreamRead } from "../../services/event-store/index.ts"
import { checkRunDir, latestRun, progressOf, ViewerError } from "../../services/log-dir/catalog.ts"
import { logBaseDir } from "../../services/log-dir/create.ts"
import { type FeedItem, follow, recordedTexts, replay } from "../../services/log-dir/feed.ts"
import type { ViewerArgs } from "../args/index.ts"
import { type Display, plainDisplay, wantsTerminalView } from "../run/display.ts"
import { reportSkips } from "../run/report.ts"
import { terminalDisplay } from "../terminal-view/live.ts"
import { ellipsis } from "../terminal-view/text.ts"

export interface ViewerContext {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string
  readonly interrupt: Effect.Effect<string>
  readonly print: (line: string) => void
  readonly printError: (line: string) => void
  /** One line typed by the user, or null at the end of input. */
  readonly readLine: Effect.Effect<string | null>
}

export const pickLine = (n: number, run: RunSummary, progress = progressOf(run)): string => {
  const head = `${String(n).padStart(2)}. [${progress.toUpperCase()}] ${run.name}  `
  if (!run.started) return `${head}${progress === "live" ? "starting: no events yet" : "no events: stopped before its first event"}`
  const line = `${head}${run.agents} agent${run.agents === 1 ? "" : "s"}  ${ellipsis(foldedText(run.question), 60)}`
  return progress === "stopped" ? `${line}  (resume: ${resumeHint(run.stream)})` : line
}

const pick = (base: string, ctx: ViewerContext) =>
  Effect.gen(function* () {
    const runs = yield* Effect.flatMap(EventStore, (store) => store.list(base, 20))
    if (runs.length === 0) return yield* new ViewerError({ reason: "no_runs", path: base, detail: "" })
    ctx.print(`Recent runs under ${base} (newest first):`)
    runs.forEach((run, i) => ctx.print(pickLine(i + 1, run)))
    // A bad entry is said and asked again; only the end of input gives up.
    for (;;) {
      ctx.print(`Which run? [1-${runs.length}, Enter for 1]`)
      const answer = yield* ctx.readLine
      if (answer === null) return yield* new ViewerError({ reason: "bad_choice", path: base, detail: "no input" })
      const n = answer.trim() === "" ? 1 : Number(answer.trim())
      const run = Number.isInteger(n) ? runs[n - 1] : undefined
      if (run !== undefined) return run.stream
      ctx.printError(`massgen: expected a number from 1 to ${runs.length}, found ${JSON.stringify(answer.trim())}`)
    }
  })

const feedTo = (display: Display) => (item: FeedItem) =>
  item._tag === "event" ? display.onEvent(item.event) : display.onText(item.agent, item.text)

export const viewerCommand = (args: ViewerArgs, ctx: ViewerContext) =>
  Effect.gen(function* () {
    const base = logBaseDir(ctx.env, ctx.cwd)
    const dir =
      args.logDir !== null
        ? yield* checkRunDir(nodePath.resolve(ctx.cwd, args.logDir))
        : args.pick
          ? yield* pick(base, ctx)
          : yield* latestRun(base)
    // Read once: the store keeps it, so following from the first event decodes nothing again.
    const store = yield* EventStore
    const read = yield* store.read(dir)
    if (read.events[0]?.event._tag !== "run_started") return yield* noEvents(dir, read)
    const events = eventsOf(read)
    const live = events[events.length - 1]?._tag !== "run_finished"
    const clock = live ? "wall" : "events"
    const feed = (display: Display, before: Effect.Effect<void> = Effect.void) =>
      live
        ? Effect.flatMap(follow(dir, feedTo(display)), (end) =>
            end === "process_gone"
              ? Effect.zipRight(
                  display.onProcessGone ?? Effect.void,
                  Effect.sync(() =>
                    ctx.printError(
                      `massgen: the run's process is gone; it stopped without finishing: ${dir} (continue it with: ${resumeHint(dir)})`,
                    ),
                  ),
                )
              : Effect.void,
          )
        : Effect.zipRight(before, replay(events, args.replaySpeed, feedTo(display), recordedTexts(dir, events)))
    /** What was skipped of the log, once the viewer is done with it: a followed run may have grown meanwhile. */
    const reportEnd = Effect.map(
      store.read(dir),
      (last) => void reportSkips(ctx.printError, dir, last, foldEvents(eventsOf(last)).skippedEvents),
    )
    const untilInterrupted = <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.raceFirst(Effect.asVoid(work), Effect.asVoid(ctx.interrupt))

    const inBrowser = Effect.gen(function* () {
      // Loaded only here: the server and its HTTP library cost start-up time every other command would pay.
      const { openBrowser, webDisplay } = yield* Effect.promise(() => import("../web/server.ts"))
      return yield* Effect.scoped(
        Effect.gen(function* () {
          const web = yield* webDisplay({ port: args.port, clock })
          ctx.print(`Serving the ${live ? "live run" : "replay"} of ${nodePath.basename(dir)} at ${web.url} (Ctrl+C to stop)`)
          if (args.openBrowser && !openBrowser(web.url)) ctx.print(`Open ${web.url} in a browser.`)
          if (!live && args.replaySpeed > 0) ctx.print("The replay starts when a page connects.")
          const plain = plainDisplay(ctx.print, dir)
          const both: Display = {
            onEvent: (e) => Effect.zipRight(web.onEvent(e), plain.onEvent(e)),
            onText: web.onText,
            onProcessGone: web.onProcessGone,
          }
          yield* untilInterrupted(
            Effect.zipRight(
              feed(both, args.replaySpeed > 0 ? web.firstClient : Effect.void),
              Effect.zipRight(
                Effect.sync(() => ctx.print("The run is complete; still serving (Ctrl+C to stop).")),
                Effect.never,
              ),
            ),
          )
          return 0
        }),
      )
    })
    const inTerminal = Effect.scoped(
      Effect.flatMap(terminalDisplay({ out: process.stdout, clock }), (display) => Effect.as(untilInterrupted(feed(display)), 0)),
    )
    const inLines = Effect.as(untilInterrupted(feed(plainDisplay(ctx.print, dir))), 0)
    return yield* Effect.zipLeft(args.web ? inBrowser : wantsTerminalView(false) ? inTerminal : inLines, reportEnd)
  }).pipe(Effect.provide(EventStore.file()))

/** A run with no run_started to show: killed before its first event, or its lines are not this massgen's. */
const noEvents = (dir: string, read: StreamRead) =>
  new ViewerError({
    reason: "no_events",
    path: dir,
    detail:
      read.events.length > 0
        ? "its events.jsonl does not start with run_started"
        : `the run stopped before its first event: events.jsonl ${read.skipped === 0 ? "is empty" : "holds no event this massgen can read"}`,
  })

/** One line from stdin (without its newline), or null when stdin ends first with nothing typed. */
/** What standard input sent after the last line taken, and whether it has ended: a reply may hold several lines. */
const stdinRest = { text: "", ended: false }

export const readStdinLine: Effect.Effect<string | null> = Effect.async<string | null>((resume) => {
  const stdin = process.stdin
  const take = (): boolean => {
    const nl = stdinRest.text.indexOf("\n")
    if (nl >= 0) {
      const line = stdinRest.text.slice(0, nl).replace(/\r$/, "")
      stdinRest.text = stdinRest.text.slice(nl + 1)
      resume(Effect.succeed(line))
      return true
    }
    if (!stdinRest.ended) return false
    const last = stdinRest.text
    stdinRest.text = ""
    resume(Effect.succeed(last === "" ? null : last))
    return true
  }
  if (take()) return
  const cleanup = () => {
    stdin.off("data", onData)
    stdin.off("end", onEnd)
    stdin.pause()
  }
  const onData = (chunk: Buffer | string) => {
    stdinRest.text += chunk.toString()
    if (stdinRest.text.includes("\n")) {
      cleanup()
      take()
    }
  }
  const onEnd = () => {
    stdinRest.ended = true
    cleanup()
    take()
  }
  stdin.on("data", onData)
  stdin.on("end", onEnd)
  stdin.resume()
  return Effect.sync(cleanup)
})
