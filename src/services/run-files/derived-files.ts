/**
 * Writing the files derived from a run's events (`domain/projections/derived-logs.ts`) a piece at a time.
 *
 * `coordination_events.json`, `snapshot_mappings.json` and the snapshot files
 * under `snapshots/` are extended as events come, never made again whole: what
 * a write costs grows with the events added since the last write, not with the
 * run. `openDerivedFiles(logDir)` reads how far the files go (`PROGRESS_FILE`:
 * how many of the stream's events they hold, and where each JSON file's `end`
 * starts); `add(events)` takes the stream's events in order, from position 0
 * (the ones the files hold already only update what the next pieces depend
 * on: vote numbers, the session metadata); `write` puts what was added since
 * in the files, then the progress (snapshot files several at a time). A run
 * writes while it waits for its models (`cli/run/session.ts`) and once at its
 * end, so a run killed midway leaves its files nearly whole and a resume only
 * adds to them.
 *
 * A JSON file is extended by cutting its `end` and writing the new entries and
 * the `end` again; when `coordination_events.json`'s head changes (the run
 * starts or finishes), the file is written anew from the new head, its old
 * entries as bytes and the new ones (a copy, no JSON work). When the files are
 * not what the progress says (a file gone or changed by hand, no progress
 * file: a run of an older massgen, or a write cut short), they are written
 * whole from every event, as they were before this writer existed: the same
 * bytes. So are the mappings when a label comes twice (a later one replaces
 * the earlier in place, as in a JSON object).
 *
 * A file that cannot be written stops the writes of the process and is one
 * warning at its end (`warn`): the events stay, and a later `massgen resume`
 * of a finished run writes the files again. Directories are made 0700 and
 * files 0600, as the log directory's.
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import { dirname, join } from "node:path"
import { Effect } from "effect"
import type { Event } from "../../domain/events/index.ts"
import { coordinationLayout, derivation, mappingsLayout, type SnapshotOf } from "../../domain/projections/derived-logs.ts"
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../domain/run-paths.ts"
import { ioCause } from "../io-errors.ts"

export const COORDINATION_FILE = "coordination_events.json"
export const MAPPINGS_FILE = "snapshot_mappings.json"
/** How far the derived files go. */
export const PROGRESS_FILE = ".derived_files.json"

/** Where a JSON file's entries end (its `end` starts there), in bytes, and whether it has any. */
interface Extent {
  readonly bodyEnd: number
  readonly empty: boolean
}

interface Progress {
  /** How many of the stream's events the files hold. */
  readonly events: number
  /** `coordination_events.json`'s head, as written. */
  readonly head: string
  readonly coordination: Extent
  readonly mappings: Extent
  /** The snapshot file of the last answer or vote held: it is there when the snapshots are. */
  readonly lastSnapshot: string | null
}

/** How many snapshot files are written at once. */
const SNAPSHOTS_AT_ONCE = 16

const NOTHING: Progress = {
  events: 0,
  head: "",
  coordination: { bodyEnd: 0, empty: true },
  mappings: { bodyEnd: 0, empty: true },
  lastSnapshot: null,
}

const sizeOf = (path: string): number | null => fs.statSync(path, { throwIfNoEntry: false })?.size ?? null

/** The progress file's word, when the files are as it says; else nothing is held. */
const readProgress = (logDir: string): Progress => {
  try {
    const p = JSON.parse(fs.readFileSync(join(logDir, PROGRESS_FILE), "utf8")) as Progress
    const fits = (file: string, extent: Extent, end: string) => sizeOf(join(logDir, file)) === extent.bodyEnd + Buffer.byteLength(end)
    const holds =
      Number.isInteger(p.events) &&
      fits(COORDINATION_FILE, p.coordination, coordinationLayout.end(p.coordination.empty)) &&
      fits(MAPPINGS_FILE, p.mappings, mappingsLayout.end(p.mappings.empty)) &&
      (p.lastSnapshot === null || fs.existsSync(join(logDir, p.lastSnapshot)))
    return holds ? p : NOTHING
  } catch {
    return NOTHING
  }
}

const writeWhole = async (path: string, text: string | Buffer): Promise<void> => {
  const temp = `${path}.${process.pid}.tmp`
  try {
    await fsp.writeFile(temp, text, { mode: PRIVATE_FILE_MODE })
    await fsp.rename(temp, path)
  } catch (cause) {
    await fsp.rm(temp, { force: true }).catch(() => undefined)
    throw cause
  }
}

/** Cuts the file at `at` and writes `text` there. */
const extend = async (path: string, at: number, text: string): Promise<void> => {
  const file = await fsp.open(path, "r+")
  try {
    await file.truncate(at)
    await file.write(text, at, "utf8")
  } finally {
    await file.close()
  }
}

class WriteFailed {
  constructor(
    readonly path: string,
    readonly cause: unknown,
  ) {}
}

export interface DerivedFiles {
  /** Takes the next events of the stream, in order (the first call from position 0). */
  readonly add: (events: ReadonlyArray<Event>) => void
  /** Writes what was added since the last write; one at a time (a write is not interrupted midway). */
  readonly write: Effect.Effect<void>
  /** The warning of a file that could not be written, once. */
  readonly warn: Effect.Effect<void>
}

export const openDerivedFiles = (logDir: string): DerivedFiles => {
  let progress = readProgress(logDir)
  /** The files must be written whole: they hold nothing, or not what the progress says. */
  let whole = progress.events === 0
  let seen = 0
  const d = derivation()
  // The labels the mappings hold, for a label that comes twice; the texts the files do not hold yet.
  const mapped = new Map<string, Pick<SnapshotOf, "label" | "mapping">>()
  let newEntries: Array<string> = []
  let newMappings: Array<string> = []
  let newFiles: Array<SnapshotOf["file"]> = []
  let lastSnapshot = progress.lastSnapshot
  let remapped = false
  let failure: WriteFailed | null = null
  let warned = false

  const add = (events: ReadonlyArray<Event>): void => {
    for (const event of events) {
      const held = seen < progress.events
      seen += 1
      const { entry, snapshot } = d.add(event)
      if (entry !== null && !held) newEntries.push(coordinationLayout.entryText(entry))
      if (snapshot === null) continue
      if (!held && mapped.has(snapshot.label)) remapped = true
      mapped.set(snapshot.label, snapshot)
      if (held) continue
      newMappings.push(mappingsLayout.entryText(snapshot))
      newFiles.push(snapshot.file)
      lastSnapshot = snapshot.file.path
    }
  }

  const madeDirs = new Set<string>()
  const writeSnapshot = async (file: SnapshotOf["file"]): Promise<void> => {
    const path = join(logDir, file.path)
    const dir = dirname(path)
    if (!madeDirs.has(dir)) {
      await fsp.mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
      madeDirs.add(dir)
    }
    await fsp.writeFile(path, file.text, { mode: PRIVATE_FILE_MODE })
  }

  /** Extends a JSON file that holds `held` with `added`, or writes it whole (`held` null) with `added` as its entries; its new extent. */
  const writeJson = async (
    name: string,
    head: string,
    end: (empty: boolean) => string,
    added: ReadonlyArray<string>,
    held: (Extent & { readonly head: string }) | null,
  ): Promise<Extent> => {
    const path = join(logDir, name)
    const more = (held === null || held.empty || added.length === 0 ? "" : ",") + added.join(",")
    const empty = (held === null || held.empty) && added.length === 0
    if (held === null) {
      await writeWhole(path, head + more + end(empty))
      return { bodyEnd: Buffer.byteLength(head + more), empty }
    }
    if (held.head === head) {
      if (added.length > 0) await extend(path, held.bodyEnd, more + end(empty))
      return { bodyEnd: held.bodyEnd + Buffer.byteLength(more), empty }
    }
    // A new head: the entries held are copied as they are.
    const old = await fsp.readFile(path)
    const entriesHeld = old.subarray(Buffer.byteLength(held.head), held.bodyEnd)
    const text = Buffer.concat([Buffer.from(head), entriesHeld, Buffer.from(more + end(empty))])
    await writeWhole(path, text)
    return { bodyEnd: text.length - Buffer.byteLength(end(empty)), empty }
  }

  const writeAll = async (): Promise<void> => {
    const head = coordinationLayout.head(d.metadata())
    if (!whole && !remapped && newEntries.length === 0 && newMappings.length === 0 && head === progress.head) return
    const step = async <A>(path: string, run: () => Promise<A>): Promise<A> => {
      try {
        return await run()
      } catch (cause) {
        throw new WriteFailed(join(logDir, path), cause)
      }
    }
    // Several at a time, on the I/O threads: a new file or folder can take a millisecond on a busy disk.
    for (let i = 0; i < newFiles.length; i += SNAPSHOTS_AT_ONCE) {
      await Promise.all(newFiles.slice(i, i + SNAPSHOTS_AT_ONCE).map((file) => step(file.path, () => writeSnapshot(file))))
    }
    const coordination = await step(COORDINATION_FILE, () =>
      writeJson(
        COORDINATION_FILE,
        head,
        coordinationLayout.end,
        newEntries,
        whole ? null : { ...progress.coordination, head: progress.head },
      ),
    )
    const mappings = await step(MAPPINGS_FILE, () =>
      remapped
        ? writeJson(MAPPINGS_FILE, mappingsLayout.head, mappingsLayout.end, [...mapped.values()].map(mappingsLayout.entryText), null)
        : writeJson(
            MAPPINGS_FILE,
            mappingsLayout.head,
            mappingsLayout.end,
            newMappings,
            whole ? null : { ...progress.mappings, head: mappingsLayout.head },
          ),
    )
    const next: Progress = { events: seen, head, coordination, mappings, lastSnapshot }
    await step(PROGRESS_FILE, () => writeWhole(join(logDir, PROGRESS_FILE), JSON.stringify(next)))
    progress = next
    whole = false
    remapped = false
    newEntries = []
    newMappings = []
    newFiles = []
  }

  const write = Effect.uninterruptible(
    Effect.promise(async () => {
      if (failure !== null) return
      try {
        await writeAll()
      } catch (e) {
        failure = e instanceof WriteFailed ? e : new WriteFailed(logDir, e)
      }
    }),
  )

  const warn = Effect.suspend(() => {
    if (failure === null || warned) return Effect.void
    warned = true
    return Effect.logWarning(`cannot write ${failure.path}: ${ioCause(failure.cause)} (a file derived from events.jsonl)`)
  })

  return { add, write, warn }
}

/** Brings the derived files of `logDir` up to `events`, the stream's events from position 0; a file that cannot be written is a warning. */
export const writeDerivedFiles = (logDir: string, events: ReadonlyArray<Event>): Effect.Effect<void> =>
  Effect.suspend(() => {
    const files = openDerivedFiles(logDir)
    files.add(events)
    return Effect.zipRight(files.write, files.warn)
  })
