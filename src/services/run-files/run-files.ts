/**
 * The files of a log directory other than `events.jsonl` and `status.json`.
 *
 * `RunFiles` writes what a run leaves for people and scripts: each agent's
 * streamed output and reasoning (`agent_outputs/<agent_id>.txt`, appended as
 * it arrives), the final answer and what the winner saw (`final/<agent>/answer.txt`,
 * `context.txt`, each written whole before the event that announces them),
 * every call's request and reply (`llm_log/<n>.json`, its long texts in
 * `blobs/`, see `blobs.ts`), and whole files derived
 * at the end (`execution_metadata.yaml`, `coordination_events.json`, ...).
 * Paths are relative to the log directory; an agent's come from `agentFile`
 * (`domain/run-paths.ts`). The memory layer keeps everything in a map for tests.
 *
 * `write` has the file in place when it returns: a call's log exists before
 * its `call_end` is appended, and replay relies on it. A call log
 * (`llm_log/<n>.json`) is a line of `llm_log/calls.jsonl` on disk
 * (`call-logs.ts`), appended through a descriptor held open until the
 * layer's scope closes. `append` only
 * queues the text: a file's appends are written from the next turn of the
 * event loop, with one write in flight at a time, each taking every text
 * queued until it starts, so that a stream of small appends never holds up
 * the run (at 200 agents, some 800 writes become 400); appends to one file
 * land in the order made, and `flush`, which a run does before its final
 * status, waits for them all.
 *
 * A call's log is appended in one write (no file made per call, no temporary
 * file and rename: each cost a millisecond or more on a busy virtual disk), not
 * atomically: that write comes before the `call_end` that makes the log
 * readable to replay, so a cut line can only belong to a call the events
 * never closed, which replay does not read. A line a crash cut is ended
 * before the next process appends. A tool call's whole result (`tool_log/`)
 * is written in place too; every other whole file is written atomically,
 * but a blob already there (its name is its text's hash), which is left as it is.
 *
 * Every directory and file it makes is private (0700, 0600), as the log
 * directory is (`services/log-dir/create.ts`).
 */
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readSync, writeFileSync } from "node:fs"
import { appendFile } from "node:fs/promises"
import { join } from "node:path"
import { Context, Effect, Layer, Schema } from "effect"
import { AGENT_OUTPUTS_DIR, BLOBS_DIR, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../domain/run-paths.ts"
import { writeAllSync } from "../event-store/index.ts"
import { ioCause } from "../io-errors.ts"
import { CALL_LOG_FILE, CALL_LOGS_DIR, isCallLogPath } from "./call-logs.ts"
import { writeFileAtomicSync } from "./status-writer.ts"

/** A whole file of the log directory could not be written. */
export class RunFilesError extends Schema.TaggedError<RunFilesError>()("RunFilesError", {
  reason: Schema.Literal("write_failed"),
  path: Schema.String,
  /** The cause, as `ioCause` words it. */
  detail: Schema.String,
}) {
  override get message(): string {
    return `cannot write ${this.path}: ${this.detail}`
  }
}

export interface RunFilesApi {
  /** Appends to a file of `agent_outputs/`. */
  readonly append: (relativePath: string, text: string) => Effect.Effect<void>
  /** Writes a whole file, atomically, creating its directory; done when the file is in place, or failed with why not. */
  readonly write: (relativePath: string, text: string) => Effect.Effect<void, RunFilesError>
  /** Waits for every append started; failures are logged as warnings, one per file. */
  readonly flush: Effect.Effect<void>
}

/** Where the whole results of tool calls go: written in place, before their tool_call_finished. */
const TOOL_LOGS = "tool_log/"

export class RunFiles extends Context.Tag("massgen/RunFiles")<RunFiles, RunFilesApi>() {}

/** The call log file, open for appends; a last line a crash cut short is ended first, so the next line stands alone. */
const openCallLog = (path: string): number => {
  const fd = openSync(path, "a+", PRIVATE_FILE_MODE)
  const size = fstatSync(fd).size
  if (size > 0) {
    const last = Buffer.alloc(1)
    readSync(fd, last, 0, 1, size - 1)
    if (last[0] !== 0x0a) writeAllSync(fd, "\n")
  }
  return fd
}

export const liveRunFiles = (logDir: string): Layer.Layer<RunFiles> =>
  Layer.scoped(
    RunFiles,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => ({ fd: null as number | null })),
        (callLog) => Effect.sync(() => callLog.fd !== null && closeSync(callLog.fd)),
      ),
      (callLog) => liveApi(logDir, callLog),
    ),
  )

const liveApi = (logDir: string, callLog: { fd: number | null }): RunFilesApi => {
  const outputs = join(logDir, AGENT_OUTPUTS_DIR)
  const madeDirs = new Set<string>()
  const pending = new Set<Promise<void>>()
  // One warning per file that failed, however many of its writes did.
  const failures = new Map<string, string>()
  const fail = (label: string) => (e: unknown) => void (failures.has(label) || failures.set(label, `${label}: ${ioCause(e)}`))
  const track = (write: Promise<void>) => {
    pending.add(write)
    void write.finally(() => pending.delete(write))
  }
  /** Per file with appends under way: the texts its next write takes, all in one. */
  const waiting = new Map<string, Array<string>>()
  const appendNext = (path: string, relativePath: string): Promise<void> => {
    const texts = waiting.get(path)!
    if (texts.length === 0) return Promise.resolve(void waiting.delete(path))
    waiting.set(path, [])
    return appendFile(path, texts.join(""), { mode: PRIVATE_FILE_MODE })
      .catch(fail(relativePath))
      .then(() => appendNext(path, relativePath))
  }
  // Made now, with the log directory: a new directory costs milliseconds on some disks, and not in a reply's way.
  for (const dir of [outputs, join(logDir, CALL_LOGS_DIR), join(logDir, BLOBS_DIR)]) {
    try {
      mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
      madeDirs.add(dir)
    } catch (e) {
      fail(dir)(e)
    }
  }
  return {
    append: (relativePath, text) =>
      Effect.sync(() => {
        const path = join(logDir, relativePath)
        // One write in flight per file, from the next turn of the event loop: what comes until then (a call's
        // heading, its text and what it did) and while it is in flight goes in the next write, in the order made.
        const queued = waiting.get(path)
        if (queued !== undefined) return void queued.push(text)
        waiting.set(path, [text])
        track(new Promise<void>((resolve) => setImmediate(resolve)).then(() => appendNext(path, relativePath)))
      }),
    write: (relativePath, text) =>
      Effect.try({
        try: () => {
          const path = join(logDir, relativePath)
          // No event names such a file until it is whole: a crash mid-write leaves a file nothing reads.
          // Synchronous: written on the I/O threads, the replies of calls that ended together reached the
          // orchestrator up to 50 ms apart on a loaded machine, in separate scheduling windows (extra calls).
          if (isCallLogPath(relativePath)) {
            callLog.fd ??= openCallLog(join(logDir, CALL_LOG_FILE))
            try {
              writeAllSync(callLog.fd, text.endsWith("\n") ? text : `${text}\n`)
            } catch (e) {
              // Opened again for the next line, which then starts on a line of its own.
              closeSync(callLog.fd)
              callLog.fd = null
              throw e
            }
          } else if (relativePath.startsWith(TOOL_LOGS)) {
            const dir = join(logDir, TOOL_LOGS)
            if (!madeDirs.has(dir)) {
              mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
              madeDirs.add(dir)
            }
            writeFileSync(path, text, { mode: PRIVATE_FILE_MODE })
          } else if (relativePath.startsWith(`${BLOBS_DIR}/`) && existsSync(path)) {
            // A blob is named by its text's hash: one already there (an event's long text) holds this text.
          } else writeFileAtomicSync(path, text, madeDirs)
        },
        catch: (e) =>
          new RunFilesError({
            reason: "write_failed",
            path: join(logDir, isCallLogPath(relativePath) ? CALL_LOG_FILE : relativePath),
            detail: ioCause(e),
          }),
      }),
    flush: Effect.gen(function* () {
      yield* Effect.promise(async () => {
        while (pending.size > 0) await Promise.all([...pending])
      })
      const warnings = [...failures.values()]
      failures.clear()
      yield* Effect.forEach(warnings, (w) => Effect.logWarning(w), { discard: true })
    }),
  }
}

export const memoryRunFiles = (): { readonly layer: Layer.Layer<RunFiles>; readonly files: Map<string, string> } => {
  const files = new Map<string, string>()
  const api: RunFilesApi = {
    append: (relativePath, text) => Effect.sync(() => void files.set(relativePath, (files.get(relativePath) ?? "") + text)),
    write: (relativePath, text) => Effect.sync(() => void files.set(relativePath, text)),
    flush: Effect.void,
  }
  return { layer: Layer.succeed(RunFiles, api), files }
}
