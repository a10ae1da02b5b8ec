/**
 * What a failed file operation means, in the words a user acts on.
 *
 * `ioCause(error)` names the cause of a Node file-system error by its code:
 * `disk full (ENOSPC)`, `permission denied (EACCES)`, ...; any other error
 * gives its own message. `RunStorageError` is the error a run stops with when
 * it cannot keep its record: a file it must write (the event log, status.json,
 * a final answer, a call log) could not be written. The run stops within a
 * second, and `massgen resume` takes it up again once the cause is gone. A
 * run whose log directory itself is gone (`log_dir`: deleted, or moved away
 * while it ran) says that, whatever write found it out.
 */
import { Schema } from "effect"
import { resumeHint } from "../domain/run-paths.ts"

const CAUSES: Readonly<Record<string, string>> = {
  ENOSPC: "disk full",
  EDQUOT: "disk quota exceeded",
  EROFS: "read-only file system",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EIO: "I/O error",
  ENOENT: "no such file or directory",
  ENOTDIR: "a path component is not a directory",
  EISDIR: "is a directory",
  EMFILE: "too many open files",
  ENAMETOOLONG: "file name too long",
}

/** The code of a Node system error, if it has one. */
export const errorCode = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === "string" ? code : undefined
}

/** The cause of a failed file operation, as a user reads it. */
export const ioCause = (error: unknown): string => {
  const code = errorCode(error)
  const known = code === undefined ? undefined : CAUSES[code]
  if (known !== undefined) return `${known} (${code})`
  return error instanceof Error ? error.message.split("\n")[0]! : String(error)
}

/** What could not be written; `log_dir`: the log directory itself is gone (deleted or moved during the run). */
export const StorageKind = Schema.Literal("event_log", "status", "final_answer", "call_log", "tool_log", "workspace", "log_dir")
export type StorageKind = typeof StorageKind.Type

/** The run could not write a file it must keep; it stopped, and can be resumed once the cause is gone. */
export class RunStorageError extends Schema.TaggedError<RunStorageError>()("RunStorageError", {
  kind: StorageKind,
  path: Schema.String,
  cause: Schema.String,
  /** The log directory, for the resume hint. */
  logDir: Schema.String,
}) {
  override get message(): string {
    // Nothing is left there to resume; a moved directory is resumed where it is now.
    if (this.kind === "log_dir") return `the log directory ${this.logDir} was deleted or moved during the run; the run stopped`
    return `cannot write ${this.path}: ${this.cause}; the run stopped (resume with: ${resumeHint(this.logDir)})`
  }
}
