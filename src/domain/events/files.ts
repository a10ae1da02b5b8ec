/**
 * The events of files (`index.ts`, `domain/workspaces/facts.ts`): an answer's workspace snapshotted, the winner's
 * files finalized, a write to a context path intended and done.
 *
 * Contract: paths of snapshots and of the final workspace are relative to the log directory; a context
 * path's file is absolute. An intent is appended before its write, so that a resumed run can tell a
 * write already done (`sha256`). Words as in `index.ts`.
 */
import { Schema } from "effect"
import { AgentId, Count, defineEvent, Label } from "./fields.ts"

/**
 * An agent's workspace was copied whole for its answer `label`: the snapshot
 * (at `path`, relative to the log directory) that the agents shown `label` may
 * read, and that no later write changes. Appended with the answer, after the copy.
 */
export const WorkspaceSnapshotted = defineEvent("workspace_snapshotted", {
  agent: AgentId,
  label: Label,
  path: Schema.String,
  files: Count,
  bytes: Count,
})

/**
 * The winner's files were copied to `path` (`final/<agent>/workspace`, relative
 * to the log directory): from its live workspace after its presentation
 * (`source: workspace`), or from the snapshot of the winning answer.
 */
export const WorkspaceFinalized = defineEvent("workspace_finalized", {
  agent: AgentId,
  label: Label,
  source: Schema.Literal("workspace", "snapshot"),
  path: Schema.String,
  files: Count,
  bytes: Count,
  /** The files' paths, relative to `path`, sorted; the first `FINAL_LISTING_MAX` of them. */
  listing: Schema.Array(Schema.String),
})

export const ContextChange = Schema.Literal("created", "replaced")
export type ContextChange = typeof ContextChange.Type

const contextWriteFields = {
  /** The tool call that writes. */
  tool_call: Count,
  /** The id the model gave that tool call: a call run again after a stop has a new `tool_call` and the same `call_id`. */
  call_id: Schema.String,
  agent: AgentId,
  /** The file's absolute path, inside a context path. */
  path: Schema.String,
  bytes: Count,
  /** SHA-256 (hex) of the file's new content. */
  sha256: Schema.String,
  /** Whether the file is new or was there before. */
  change: ContextChange,
}

/**
 * The presenter is about to write a file of a context path: recorded before
 * the write, so that a resumed run that finds the file already holding
 * `sha256` records the write instead of doing it again.
 */
export const ContextWriteIntended = defineEvent("context_write_intended", contextWriteFields)

/** A file of a context path was written (the intent of the same agent, path and digest is done): it now holds `bytes` bytes with digest `sha256`. */
export const ContextPathWritten = defineEvent("context_path_written", contextWriteFields)
