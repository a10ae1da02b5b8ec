/**
 * `SharedRunFiles` in Postgres (`postgresRunFiles`), and the export of a
 * batch's shared files (`exportRunFiles`): what `shared.ts`
 * describes, apart from it so that a run does not load the Postgres client.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Effect, Layer } from "effect"
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../domain/run-paths.ts"
import { clientFor, ensureTables, keyUnder, messageOf, withReconnect } from "../event-store/postgres.ts"
import { RunFilesError } from "./run-files.ts"
import { RUN_FILES_TABLE, SharedRunFiles, type SharedRunFilesApi } from "./shared.ts"

const ensureTable = (url: string, reconnectMs: number): Promise<unknown> =>
  withReconnect(reconnectMs, () =>
    ensureTables(clientFor(url), [
      `CREATE TABLE IF NOT EXISTS ${RUN_FILES_TABLE} (stream text NOT NULL, path text NOT NULL, bytes bytea NOT NULL, PRIMARY KEY (stream, path))`,
    ]),
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
            catch: (e) =>
              new RunFilesError({ reason: "write_failed", path: join(logDir, relativePath), detail: `postgres: ${messageOf(e)}` }),
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

/** Writes the shared files of every run named `<prefix><rest>` into `<dir>/<rest>/`, those not there; how many. */
export const exportRunFiles = async (url: string, prefix: string, dir: string): Promise<number> => {
  await ensureTable(url, 30_000)
  const rows: Array<{ stream: string; path: string; bytes: Uint8Array }> = await withReconnect(
    30_000,
    () => clientFor(url)`SELECT stream, path, bytes FROM massgen_run_files WHERE left(stream, ${prefix.length}) = ${prefix}`,
  )
  return rows.filter((r) => writeMissing(join(dir, r.stream.slice(prefix.length), r.path), r.bytes)).length
}
