/**
 * Displays: what shows a run to a person while its events arrive, for a run and for the viewer.
 *
 * Contract: a `Display` takes every event of a run, in order, and the text the
 * agents stream (`onText`). `plainDisplay` prints a readable line per event
 * (`plainLine`), for pipes, `--no-display` and logs; the terminal view
 * (`terminal-view/live.ts`) and the web view (`web/server.ts`) redraw from the
 * view model. `runDisplay` picks the display of a run: none with
 * `--automation`, the terminal view when stdout is a terminal and
 * `--no-display` is not given, else the plain lines. A display that holds the
 * terminal lives in a scope: closing it restores the terminal. The terminal
 * view's module (and `log-update` with it) is imported only when a run shows it.
 */

import { Effect, type Scope } from "effect"
import type { Event } from "../../domain/events/index.ts"
import { advanceInPlace, initialState, type State } from "../../domain/state/index.ts"
import type { Observer } from "../../services/orchestrator/index.ts"
import type { RunArgs } from "../args/index.ts"
import { isatty } from "../process/tty.ts"
import { plainLine } from "./automation-output.ts"

export interface Display {
  readonly onEvent: (event: Event) => Effect.Effect<void>
  readonly onText: (agent: string, text: string) => Effect.Effect<void>
  /** The run followed did not finish and its process is gone (the viewer's views then show its agents `stopped`). */
  readonly onProcessGone?: Effect.Effect<void>
}

/** One readable line per event worth one, for the run in `logDir`; the state is folded here for the lines that need it. */
export const plainDisplay = (print: (line: string) => void, logDir: string): Display => {
  let state: State = initialState
  return {
    onEvent: (event) =>
      Effect.sync(() => {
        state = advanceInPlace(state, event)
        const line = plainLine(event, state, logDir)
        if (line !== null) print(line)
      }),
    onText: () => Effect.void,
  }
}

export const observerOf = (display: Display): Observer => ({
  onEvent: (event) => display.onEvent(event),
  onText: display.onText,
})

/** Whether a run shows the terminal view; `isatty(1)` rather than `process.stdout.isTTY`, which makes the stream. */
export const wantsTerminalView = (noDisplay: boolean, stdout: { readonly isTTY?: boolean } = { isTTY: isatty(1) }): boolean =>
  !noDisplay && stdout.isTTY === true

/** Whether `runDisplay` shows the terminal view, whose last screen ends with a stopped run's `resume with:` line. */
export const showsTerminalView = (args: Pick<RunArgs, "automation" | "noDisplay">): boolean =>
  !args.automation && wantsTerminalView(args.noDisplay)

/** The observer of a run started from the command line, or none in automation mode. */
export const runDisplay = (
  args: Pick<RunArgs, "automation" | "noDisplay">,
  print: (line: string) => void,
  logDir: string,
): Effect.Effect<Observer | undefined, never, Scope.Scope> =>
  args.automation
    ? Effect.succeed(undefined)
    : showsTerminalView(args)
      ? Effect.flatMap(
          Effect.promise(() => import("../terminal-view/live.ts")),
          (m) => Effect.map(m.terminalDisplay({ out: process.stdout, clock: "wall", logDir }), observerOf),
        )
      : Effect.succeed(observerOf(plainDisplay(print, logDir)))
