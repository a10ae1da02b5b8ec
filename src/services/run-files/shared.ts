/**
 * A shared home for the files of a run that another process needs to take it up or to replay it.
 *
 * The events are shared by the Postgres event store; the whole files a run
 * writes through `RunFiles.write` (call logs, `llm_log/<n>.json` as `RunFiles`
 * names them: a line of `llm_log/calls.jsonl` on disk, a file when restored; the `blobs/` they
 * name, `tool_log/<n>.json`, the final files) and its
 * `execution_metadata.yaml` stay on the disk of the worker that wrote them.
 * `SharedRunFiles` keeps a copy of each in Postgres:
 * `massgen_run_files(stream, path, bytes)`, `(stream, path)` the primary key,
 * `stream` named as the event store names the run's stream (its path under
 * `root`: `<batch>/items/<id>`), `path` relative to the log directory.
 *
 * Contract: `put` is done when the copy is committed (a later `put` of the
 * same path replaces it), so a file written before the event that names it
 * is shared before that event is, and before anything depends on it.
 * `restore(logDir)` writes into the log directory every shared file of its
 * run that is not there (a worker taking over a dead worker's item: its long
 * tool results and recorded calls), and says how many. `exportRunFiles`
 * writes a batch's shared files into an exported batch folder, for `replay`.
 * A lost connection is tried again for `reconnectMs` (30 s), as the event
 * store does. No layer: a run keeps its files on its own disk only. The
 * Postgres layer and the export are in `shared-postgres.ts`, so
 * that a run, which only asks whether there is a `SharedRunFiles`, does not
 * load the Postgres client.
 */
import { Context, Effect } from "effect"
import type { RunFilesApi, RunFilesError } from "./run-files.ts"

export const RUN_FILES_TABLE = "massgen_run_files"

export interface SharedRunFilesApi {
  /** Keeps a copy of `logDir`'s file `relativePath`; done when it is committed. */
  readonly put: (logDir: string, relativePath: string, text: string) => Effect.Effect<void, RunFilesError>
  /** Writes every shared file of `logDir`'s run that is not there; how many it wrote. */
  readonly restore: (logDir: string) => Effect.Effect<number, RunFilesError>
}

export class SharedRunFiles extends Context.Tag("massgen/SharedRunFiles")<SharedRunFiles, SharedRunFilesApi>() {}

/** `files`, each whole file of which is also put in `shared` before its write is done. */
export const sharingWrites = (files: RunFilesApi, shared: SharedRunFilesApi, logDir: string): RunFilesApi => ({
  ...files,
  write: (relativePath, text) => Effect.zipRight(files.write(relativePath, text), shared.put(logDir, relativePath, text)),
})
