/**
 * The live terminal view: draws `renderFrame` on a terminal with log-update while events arrive.
 *
 * Contract: `terminalDisplay` is a scoped resource. While open it hides the
 * cursor and redraws at most every `REDRAW_MS` after a change, every second
 * for the elapsed time (wall clock) and when the terminal is resized; log-update
 * rewrites only the lines that changed. Frames are one line shorter than the
 * terminal so nothing scrolls. When the scope closes (the run ended, or it was
 * stopped) it erases the live frame, prints the summary (`renderSummary`,
 * with the whole final answer) and shows the cursor again; a process that
 * exits without closing the scope still gets its cursor back. Colours are
 * left out when `NO_COLOR` is set (no-color.org).
 *
 * Words: the *clock* says what "now" is for the elapsed time: `wall` for a run
 * being watched as it happens, `events` (the newest event's time) for a replay.
 */
import { Effect, type Scope } from "effect"
import { createLogUpdate } from "log-update"
import type { Event } from "../../domain/events/index.ts"
import { applyEvent, applyText, emptyViewModel, markProcessGone, type ViewModel, viewOf } from "../../domain/projections/view-model.ts"
import { renderFrame, renderSummary } from "./render.ts"

export const REDRAW_MS = 40

export interface TerminalOptions {
  readonly out: NodeJS.WriteStream
  readonly clock: "wall" | "events"
  /** Styles on or off; by default on unless `NO_COLOR` is set (`colorWanted`). */
  readonly color?: boolean
  /** The run's log directory, shown on every frame and in the summary. */
  readonly logDir?: string
}

/** Whether colour is wanted: not when `NO_COLOR` is set to anything but the empty string (no-color.org). */
export const colorWanted = (env: Readonly<Record<string, string | undefined>> = process.env): boolean => (env.NO_COLOR ?? "") === ""

const SHOW_CURSOR = "\x1b[?25h"

export const terminalDisplay = (options: TerminalOptions) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => openTerminal(options)),
      (t) => Effect.sync(() => t.close()),
    ),
    (t) => ({
      onEvent: (event: Event) => Effect.sync(() => t.update((m) => applyEvent(m, event))),
      onText: (agent: string, text: string) => Effect.sync(() => t.update((m) => applyText(m, agent, text))),
      onProcessGone: Effect.sync(() => t.update(markProcessGone)),
    }),
  ) satisfies Effect.Effect<unknown, never, Scope.Scope>

const openTerminal = ({ out, clock, color = colorWanted(), logDir }: TerminalOptions) => {
  const frame = logDir === undefined ? { color } : { color, logDir }
  const draw = createLogUpdate(out, { showCursor: false })
  let model: ViewModel = emptyViewModel
  let pending: ReturnType<typeof setTimeout> | null = null
  let closed = false
  const now = () => (clock === "wall" ? Date.now() : model.state.lastTime)
  const size = () => ({ columns: out.columns ?? 80, rows: out.rows ?? 24 })
  const redraw = () => {
    pending = null
    if (closed) return
    const { columns, rows } = size()
    draw(renderFrame(viewOf(model, now()), columns, Math.max(1, rows - 1), frame).join("\n"))
  }
  const ticker = setInterval(() => {
    if (model.state.finished === null) redraw()
  }, 1000)
  const onResize = () => {
    draw.clear()
    redraw()
  }
  const restoreCursor = () => {
    out.write(SHOW_CURSOR)
  }
  out.on("resize", onResize)
  process.once("exit", restoreCursor)
  redraw()
  return {
    update: (f: (m: ViewModel) => ViewModel) => {
      model = f(model)
      pending ??= setTimeout(redraw, REDRAW_MS)
    },
    close: () => {
      if (closed) return
      clearInterval(ticker)
      if (pending !== null) clearTimeout(pending)
      out.off("resize", onResize)
      draw.clear()
      closed = true
      draw.done()
      const lines = renderSummary(viewOf(model, now()), size().columns, frame)
      out.write(lines.length > 0 ? `${lines.join("\n")}\n${SHOW_CURSOR}` : SHOW_CURSOR)
      process.off("exit", restoreCursor)
    },
  }
}
