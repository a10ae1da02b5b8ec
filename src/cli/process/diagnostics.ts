/**
 * Diagnostics: what the program's effects log, as one line each on stderr.
 *
 * Contract: every `Effect.log*` of a command (a status.json or log file that
 * could not be written, ...) becomes one line on stderr, in every mode, never
 * on stdout, which belongs to the automation lines or the display:
 * `massgen: warning: TEXT` for a warning, `massgen: error: TEXT` for an error
 * or worse, `massgen: TEXT` for information. The text is folded to one line
 * and cleaned of escapes and controls (`foldedText`);
 * a cause, when the log has one, follows after a colon. Debug and trace logs
 * stay below Effect's default minimum level and are not printed.
 */
import { Cause, type Layer, Logger, LogLevel } from "effect"
import { foldedText } from "../../lib/plain-text.ts"

const textOf = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((p) => (typeof p === "string" ? p : p instanceof Error ? p.message : (JSON.stringify(p) ?? String(p)))).join(" ")
}

const prefixOf = (level: LogLevel.LogLevel): string =>
  LogLevel.greaterThanEqual(level, LogLevel.Error)
    ? "massgen: error: "
    : LogLevel.greaterThanEqual(level, LogLevel.Warning)
      ? "massgen: warning: "
      : "massgen: "

/** One diagnostic line: the level's prefix, then the message (and its cause) folded to one line. */
export const diagnosticLine = (level: LogLevel.LogLevel, message: unknown, cause: Cause.Cause<unknown> = Cause.empty): string => {
  const because = Cause.isEmpty(cause) ? "" : `: ${textOf(Cause.squash(cause))}`
  return `${prefixOf(level)}${foldedText(`${textOf(message)}${because}`)}`
}

/** Replaces Effect's default logger (which prints `level=WARN ...` on stdout) with diagnostic lines on `printError`. */
export const diagnosticsLogger = (printError: (line: string) => void): Layer.Layer<never> =>
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ logLevel, message, cause }) => printError(diagnosticLine(logLevel, message, cause))),
  )
