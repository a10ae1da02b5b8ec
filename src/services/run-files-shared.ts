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
 * store does. No layer: a run keeps its files on its own disk only.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Context, Effect, Layer } from "effect"
import { clientFor, keyUnder, messageOf, withReconnect } from "./event-store-postgres.ts"
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./log-dir.ts"
import { RunFilesError, type RunFilesApi } from "./run-files.ts"

export const RUN_FILES_TABLE = "massgen_run_files"

export interface SharedRunFilesApi {
  /** Keeps a copy of `logDir`'s file `relativePath`; done when it is committed. */
  readonly put: (logDir: string, relativePath: string, text: string) => Effect.Effect<void, RunFilesError>
  /** Writes every shared file of `logDir`'s run that is not there; how many it wrote. */
  readonly restore: (logDir: string) => Effect.Effect<number, RunFilesError>
}

export class SharedRunFiles extends Context.Tag("massgen/SharedRunFiles")<SharedRunFiles, SharedRunFilesApi>() {}

const ensureTable = (url: string, reconnectMs: number): Promise<unknown> =>
  withReconnect(reconnectMs, () =>
    clientFor(url).unsafe(`CREATE TABLE IF NOT EXISTS ${RUN_FILES_TABLE} (stream text NOT NULL, path text NOT NULL, bytes bytea NOT NULL, PRIMARY KEY (stream, path))`),
  )

/** Writes `text` at `path` unless a file is there, making its folders; private, as the log directory is. */
const writeMissing = (path: string, bytes: Uint8Array): boolean => {
  if (existsSync(path)) return false
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE })
  writeFileSync(path, bytes, { mode: PRIVATE_FILE_MODE })
  return true
}

export interface SharedRunFilesOptions {
  /** Runs are named by their path under this directory, as the event store names their streams. */
  readonly root?: string
  /** How long a lost connection is tried again before an operation fails, in ms. */
  readonly reconnectMs?: number
}

/** The shared files in the Postgres server at `url`. */
export const postgresRunFiles = (url: string, options: SharedRunFilesOptions = {}): Layer.Layer<SharedRunFiles> =>
  Layer.effect(
    SharedRunFiles,
    Effect.gen(function* () {
      const reconnectMs = options.reconnectMs ?? 30_000
      const root = options.root
      const keyOf = keyUnder(root)
      yield* Effect.promise(() => ensureTable(url, reconnectMs))
      const sql = () => clientFor(url)
      return {
        put: (logDir, relativePath, text) =>
          Effect.tryPromise({
            try: () =>
              withReconnect(
                reconnectMs,
                () =>
                  sql()`INSERT INTO massgen_run_files (stream, path, bytes) VALUES (${keyOf(logDir)}, ${relativePath}, ${Buffer.from(text, "utf8")})
                        ON CONFLICT (stream, path) DO UPDATE SET bytes = EXCLUDED.bytes`,
              ),
            catch: (e) => new RunFilesError({ reason: "write_failed", path: join(logDir, relativePath), detail: `postgres: ${messageOf(e)}` }),
          }).pipe(Effect.asVoid),
        restore: (logDir) =>
          Effect.tryPromise({
            try: async () => {
              const rows: Array<{ path: string; bytes: Uint8Array }> = await withReconnect(
                reconnectMs,
                () => sql()`SELECT path, bytes FROM massgen_run_files WHERE stream = ${keyOf(logDir)}`,
              )
              return rows.filter((r) => writeMissing(join(logDir, r.path), r.bytes)).length
            },
            catch: (e) => new RunFilesError({ reason: "write_failed", path: logDir, detail: `shared files: ${messageOf(e)}` }),
          }),
      } satisfies SharedRunFilesApi
    }),
  )

/** `files`, each whole file of which is also put in `shared` before its write is done. */
export const sharingWrites = (files: RunFilesApi, shared: SharedRunFilesApi, logDir: string): RunFilesApi => ({
  ...files,
  write: (relativePath, text) => Effect.zipRight(files.write(relativePath, text), shared.put(logDir, relativePath, text)),
})

/** Writes the shared files of every run named `<prefix><rest>` into `<dir>/<rest>/`, those not there; how many. */
export const exportRunFiles = async (url: string, prefix: string, dir: string): Promise<number> => {
  await ensureTable(url, 30_000)
  const rows: Array<{ stream: string; path: string; bytes: Uint8Array }> = await withReconnect(
    30_000,
    () => clientFor(url)`SELECT stream, path, bytes FROM massgen_run_files WHERE left(stream, ${prefix.length}) = ${prefix}`,
  )
  return rows.filter((r) => writeMissing(join(dir, r.stream.slice(prefix.length), r.path), r.bytes)).length
}
