/**
 * Opening an existing log directory: its events, its config, its recorded calls.
 *
 * `openRunDir(dir)` reads the run's events through the event store and checks
 * it is a run (its first event is `run_started`); `refuseNewer(dir, read)`
 * fails when the log has lines of a newer schema (a writer must not append to
 * a log it cannot read whole); `runDirConfig` decodes the config
 * recorded in `execution_metadata.yaml`, or failing that the config file it
 * names; `recordedCall(dir)` looks up a call's log (`llm_log/`), `recordedToolResult(dir)` `tool_log/<n>.json`, `recordedBlob(dir)` a blob (`blobs/`). Nothing here writes.
 * A directory that is not a run is a `RunDirError` (exit 1).
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import { Effect, Either, Schema } from "effect"
import { parse as parseYaml } from "yaml"
import type { Config } from "../../domain/config/index.ts"
import { decodeConfig } from "../../domain/config/index.ts"
import { SCHEMA_VERSION } from "../../domain/events/index.ts"
import type { StoredEvent } from "../../domain/log/index.ts"
import type { RecordedCall } from "../../domain/replay/index.ts"
import { blobPath, METADATA_FILE } from "../../domain/run-paths.ts"
import { foldingInPlace, initialState, type State } from "../../domain/state/index.ts"
import type { Env } from "../../services/backends/index.ts"
import {
  EVENTS_FILE,
  EventStore,
  type EventStoreError,
  type EventStoreService,
  type StreamFold,
  type StreamRead,
} from "../../services/event-store/index.ts"
import { callLogTexts, expandJson } from "../../services/run-files/index.ts"

export class RunDirError extends Schema.TaggedError<RunDirError>()("RunDirError", {
  reason: Schema.Literal("missing", "not_a_run", "unreadable", "bad_config", "newer_schema"),
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    const what = {
      missing: "no such log directory",
      not_a_run: "not a massgen run",
      unreadable: "cannot read",
      bad_config: "cannot read the run's config",
      newer_schema: "a log written by a newer massgen",
    }[this.reason]
    return `${what}: ${this.path}${this.detail === "" ? "" : ` (${this.detail})`}`
  }
}

export interface RunDir {
  readonly path: string
  /** The run's stream as the store read it: its events once decoded, for the whole command. */
  readonly read: StreamRead
}

/** The run in `dir` as `readWith` reads its stream; `first`: the first event of what was read. */
const openWith = <R>(
  dir: string,
  readWith: (store: EventStoreService, path: string) => Effect.Effect<R, EventStoreError>,
  first: (read: R) => StoredEvent | null | undefined,
): Effect.Effect<{ readonly path: string; readonly read: R }, RunDirError, EventStore> =>
  Effect.gen(function* () {
    const path = resolve(dir)
    if (!existsSync(path)) return yield* new RunDirError({ reason: "missing", path, detail: "" })
    if (!statSync(path).isDirectory()) return yield* new RunDirError({ reason: "not_a_run", path, detail: "a file, not a directory" })
    const store = yield* EventStore
    const read = yield* readWith(store, path).pipe(
      Effect.mapError((e) =>
        e.reason === "missing"
          ? new RunDirError({ reason: "not_a_run", path, detail: "it has no events.jsonl" })
          : new RunDirError({ reason: "unreadable", path: join(path, EVENTS_FILE), detail: e.detail }),
      ),
    )
    const counted = read as R & Pick<StreamRead, "skippedByCause">
    if (first(read)?.event._tag !== "run_started") {
      if (counted.skippedByCause.newer_schema > 0) return yield* newer(path, counted, "and no run_started this massgen can read")
      return yield* new RunDirError({ reason: "not_a_run", path, detail: "its events.jsonl does not start with run_started" })
    }
    return { path, read }
  })

/** The run in `dir`, read through the command's event store. */
export const openRunDir = (dir: string): Effect.Effect<RunDir, RunDirError, EventStore> =>
  openWith(
    dir,
    (store, path) => store.read(path),
    (read) => read.events[0],
  )

/** The run in `dir` folded in one pass (`EventStore.fold`), its events not kept: for a command that needs only the state. */
export const foldRunDir = (
  dir: string,
): Effect.Effect<{ readonly path: string; readonly read: StreamFold<State> }, RunDirError, EventStore> =>
  openWith(
    dir,
    (store, path) => store.fold(path, initialState, stepState()),
    (read) => read.first,
  )

const newer = (dir: string, read: Pick<StreamRead, "skippedByCause">, consequence: string) => {
  const n = read.skippedByCause.newer_schema
  return new RunDirError({
    reason: "newer_schema",
    path: join(dir, EVENTS_FILE),
    detail: `${n} ${n === 1 ? "line has" : "lines have"} a schema after ${SCHEMA_VERSION}, ${consequence}`,
  })
}

/** Fails when the log read has lines of a newer schema: nothing may be appended to a log that is not read whole. */
export const refuseNewer = (dir: string, read: Pick<StreamRead, "skippedByCause">): Effect.Effect<void, RunDirError> =>
  read.skippedByCause.newer_schema > 0
    ? Effect.fail(newer(dir, read, "which this massgen cannot read: resume the run with that massgen"))
    : Effect.void

/** A step for `EventStore.fold` that folds with the fast fold (`foldingInPlace`): one per fold. */
const stepState = () => {
  let fold: ReturnType<typeof foldingInPlace> | null = null
  return (state: State, stored: StoredEvent): State => {
    fold ??= foldingInPlace(state)
    return fold.add(stored.event)
  }
}

export interface RecordedConfig {
  readonly config: Config
  readonly raw: unknown
  readonly configPath: string | null
}

const decodeWith = (raw: unknown, env: Env): Either.Either<Config, string> =>
  Either.mapLeft(decodeConfig(raw, env), (problems) => problems.map((p) => `${p.path}: ${p.message}`).join("; "))

/** A value with a secret masked out of it: a whole `***`, or one inside a string (a `base_url`'s credentials). */
const hasMasked = (value: unknown): boolean =>
  typeof value === "string" ? value.includes("***") : typeof value === "object" && value !== null && Object.values(value).some(hasMasked)

/**
 * The run's config: the copy in execution_metadata.yaml, or the file it was
 * read from when the copy had a secret masked out of it.
 */
export const runDirConfig = (dir: string, env: Env): Effect.Effect<RecordedConfig, RunDirError> =>
  Effect.suspend(() => {
    const fail = (detail: string) => Effect.fail(new RunDirError({ reason: "bad_config", path: dir, detail }))
    let meta: { config?: unknown; config_path?: unknown }
    try {
      meta = (parseYaml(readFileSync(join(dir, METADATA_FILE), "utf8")) ?? {}) as typeof meta
    } catch (e) {
      return fail(`execution_metadata.yaml: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
    }
    const configPath = typeof meta.config_path === "string" ? meta.config_path : null
    if (!hasMasked(meta.config)) {
      const decoded = decodeWith(meta.config, env)
      return Either.isRight(decoded) ? Effect.succeed({ config: decoded.right, raw: meta.config, configPath }) : fail(decoded.left)
    }
    if (configPath === null || !existsSync(configPath)) {
      return fail("its recorded config has a masked secret and the original config file is gone; use api_key: ${VAR} in configs")
    }
    let raw: unknown
    try {
      raw = parseYaml(readFileSync(configPath, "utf8"))
    } catch (e) {
      return fail(`${configPath}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
    }
    const decoded = decodeWith(raw, env)
    return Either.isRight(decoded) ? Effect.succeed({ config: decoded.right, raw, configPath }) : fail(decoded.left)
  })

/**
 * The text of blob `hash` of the run in `dir` (`blobs/<hash>.txt`), undefined when it is not there or the hash is not one.
 * A blob is read once per lookup function: calls of one run share most of their texts (the system prompt, the answers).
 */
export const recordedBlob = (dir: string) => {
  const blobs = new Map<string, string | undefined>()
  return (hash: string): string | undefined => {
    if (blobs.has(hash)) return blobs.get(hash)
    let text: string | undefined
    try {
      text = /^[0-9a-f]{64}$/.test(hash) ? readFileSync(join(dir, blobPath(hash)), "utf8") : undefined
    } catch {
      text = undefined
    }
    blobs.set(hash, text)
    return text
  }
}

/** The recorded request and reply of call `n`, if its call log holds them (its long texts from `blobs/`; `services/run-files/call-logs.ts`). */
export const recordedCall = (dir: string, blob: (hash: string) => string | undefined = recordedBlob(dir)) => {
  let texts: Map<number, string> | null = null
  return (n: number): RecordedCall | undefined => {
    texts ??= callLogTexts(dir)
    const text = texts.get(n)
    if (text === undefined) return undefined
    try {
      const record = expandJson(JSON.parse(text), blob) as Partial<RecordedCall>
      return { request: record.request ?? null, reply: record.reply ?? null, error: record.error ?? null }
    } catch {
      return undefined
    }
  }
}

/** The whole result of tool call `n`, from `tool_log/<n>.json`; undefined when it is not there. */
export const recordedToolResult =
  (dir: string) =>
  (n: number): string | undefined => {
    try {
      const record = JSON.parse(readFileSync(join(dir, "tool_log", `${n}.json`), "utf8")) as { readonly result?: unknown }
      return typeof record.result === "string" ? record.result : undefined
    } catch {
      return undefined
    }
  }
