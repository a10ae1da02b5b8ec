/**
 * What every command of the CLI is given: the environment, the working directory, argv, the build identity, the interrupt, and the two printers.
 *
 * `print` writes a line to stdout (the automation lines, the display),
 * `printError` a diagnostic to stderr; `interrupt` succeeds with the reason
 * when a signal asks the command to stop (`cli/program.ts` makes it).
 */
import type { Effect } from "effect"

export interface CliContext {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string
  readonly argv: ReadonlyArray<string>
  /** The build identity on one line (`identityLine`), for the events' meta. */
  readonly version: string
  readonly interrupt: Effect.Effect<string>
  readonly print: (line: string) => void
  readonly printError: (line: string) => void
}
