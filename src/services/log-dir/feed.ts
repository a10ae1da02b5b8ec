/**
 * Feeding a run's log to a display: replaying a finished run, or following one still being written.
 *
 * Contract: `replay(events, speed, sink, texts)` gives the events in file order;
 * with `speed` 0 at once, else after each one waits the recorded gap to the
 * next divided by `speed`, at most `MAX_GAP_MS` (`replayDelayMs`), with
 * `Effect.sleep`, so tests drive it with the TestClock. What a call streamed
 * (`texts`, from `recordedTexts`: the agents' output files cut by call) goes to
 * the sink just before that call's `call_end`. `follow(dir, sink)` gives
 * the run's events from the first as the event store's subscription brings
 * them (whole lines only, so a torn last line waits for its newline). New text
 * appended to `agent_outputs/<agent>.txt` after following began goes to the
 * sink too: it is read when the directory changes (`fs.watch`), or after
 * `pollMs` at the latest. Following stops after a `run_finished` event that no
 * `run_resumed` follows, or, when `pollMs` passed with no change, when
 * status.json says `is_complete` (not once a `run_resumed` was read) or when
 * the run's process (the `pid` in the `meta` of its `run_started` or latest
 * `run_resumed`) is gone with the run unfinished; these last two first give
 * the events the store holds past those given. A process recorded on another
 * host, or writing another directory than `dir` (the run was copied or moved
 * since), is not writing this run: it counts as gone.
 */
import * as fs from "node:fs"
import { hostname } from "node:os"
import * as nodePath from "node:path"
import { Duration, Effect, identity, Option, Queue, Stream } from "effect"
import { textByCall } from "../../domain/agent-output.ts"
import type { Event, EventMeta } from "../../domain/events/index.ts"
import type { StoredEvent } from "../../domain/log/index.ts"
import { AGENT_OUTPUTS_DIR, agentFile } from "../../domain/run-paths.ts"
import { EventStore, type EventStoreError, POLL_MS } from "../event-store/index.ts"

export const MAX_GAP_MS = 2000

export type FeedItem =
  | { readonly _tag: "event"; readonly event: Event }
  | { readonly _tag: "text"; readonly agent: string; readonly text: string }
export type Sink = (item: FeedItem) => Effect.Effect<void>

/** How long to wait between two events recorded at `from` and `to`, at `speed` (0: no wait). */
export const replayDelayMs = (from: string, to: string, speed: number): number => {
  if (!(speed > 0)) return 0
  const gap = Date.parse(to) - Date.parse(from)
  return Number.isFinite(gap) && gap > 0 ? Math.min(MAX_GAP_MS, gap / speed) : 0
}

/** What each call streamed, by call number, as `recordedTexts` reads it from a run's agent outputs. */
export type CallTexts = ReadonlyMap<number, { readonly agent: string; readonly text: string }>

export const replay = (events: ReadonlyArray<Event>, speed: number, sink: Sink, texts: CallTexts = new Map()): Effect.Effect<void> =>
  Effect.forEach(
    events,
    (event, i) => {
      const wait = i === 0 ? 0 : replayDelayMs(events[i - 1]!.time, event.time, speed)
      const written = event._tag === "call_end" ? texts.get(event.call) : undefined
      return Effect.zipRight(
        wait > 0 ? Effect.sleep(Duration.millis(wait)) : Effect.void,
        Effect.zipRight(
          written ? sink({ _tag: "text", agent: written.agent, text: written.text }) : Effect.void,
          sink({ _tag: "event", event }),
        ),
      )
    },
    { discard: true },
  )

/** What every agent of the run streamed, call by call, from `agent_outputs/`; files that cannot be read give nothing. */
export const recordedTexts = (dir: string, events: ReadonlyArray<Event>): CallTexts => {
  const texts = new Map<number, { agent: string; text: string }>()
  const agents = new Set(events.flatMap((e) => (e._tag === "run_started" ? e.agents.map((a) => a.id) : [])))
  for (const agent of agents) {
    let file: string
    try {
      file = fs.readFileSync(nodePath.join(dir, agentFile(agent, "output")), "utf8")
    } catch {
      continue
    }
    for (const [call, text] of textByCall(file)) texts.set(call, { agent, text })
  }
  return texts
}

/** The bytes of `path` from `offset` on; none when it cannot be read. */
const readFrom = (path: string, offset: number): Uint8Array => {
  let fd: number | null = null
  try {
    fd = fs.openSync(path, "r")
    const size = fs.fstatSync(fd).size
    if (size <= offset) return new Uint8Array(0)
    const buffer = new Uint8Array(size - offset)
    const read = fs.readSync(fd, buffer, 0, buffer.length, offset)
    return buffer.subarray(0, read)
  } catch {
    return new Uint8Array(0)
  } finally {
    if (fd !== null) fs.closeSync(fd)
  }
}

const sizeOf = (path: string): number => {
  try {
    return fs.statSync(path).size
  } catch {
    return 0
  }
}

const statusComplete = (dir: string): boolean => {
  try {
    return JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))?.is_complete === true
  } catch {
    return false
  }
}

export const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as { code?: string }).code === "EPERM"
  }
}

const sameDirectory = (a: string, b: string): boolean => {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b)
  } catch {
    return false
  }
}

/** The pid of the process that wrote `meta`, if it wrote the run in `dir` on this host; else null. */
const writerHere = (meta: EventMeta, dir: string): number | null =>
  (meta.host === undefined || meta.host === hostname()) && sameDirectory(meta.log_dir, dir) ? meta.pid : null

export interface FollowOptions {
  readonly pollMs?: number
  readonly alive?: (pid: number) => boolean
}

/** How following ended. */
export type FollowEnd = "finished" | "complete" | "process_gone"

export const follow = (dir: string, sink: Sink, options: FollowOptions = {}): Effect.Effect<FollowEnd, EventStoreError, EventStore> =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* EventStore
      const wake = yield* Queue.sliding<void>(1)
      const poke = () => void Queue.unsafeOffer(wake, undefined)
      const watchers: Array<fs.FSWatcher> = []
      const watch = (path: string) => {
        try {
          watchers.push(fs.watch(path, poke).on("error", () => undefined))
        } catch {
          // The bounded poll still sees every change.
        }
      }
      yield* Effect.addFinalizer(() => Effect.sync(() => watchers.forEach((w) => w.close())))
      watch(dir)
      const outputsDir = nodePath.join(dir, AGENT_OUTPUTS_DIR)
      /** The position of the next event to give the sink. */
      let next = 0
      /** The run's process, as its latest meta names it: null while none is read; `elsewhere` when it is not writing `dir`. */
      let pid: number | "elsewhere" | null = null
      let watchingOutputs = false
      /** A run_resumed was read: status.json's is_complete may still be the stopped run's until the resume rewrites it. */
      let reopened = false
      const textOffsets = new Map<string, number>()
      const textDecoders = new Map<string, TextDecoder>()

      const give = (stored: StoredEvent) =>
        Effect.gen(function* () {
          const event = stored.event
          next = stored.position + 1
          if (event._tag === "run_started") {
            // Text streamed before following began is not replayed; panels show answers instead.
            for (const a of event.agents) textOffsets.set(a.id, sizeOf(nodePath.join(dir, agentFile(a.id, "output"))))
          }
          if ((event._tag === "run_started" || event._tag === "run_resumed") && stored.meta !== null)
            pid = writerHere(stored.meta, dir) ?? "elsewhere"
          if (event._tag === "run_started" || event._tag === "run_resumed") reopened = event._tag === "run_resumed"
          yield* sink({ _tag: "event", event })
        })

      const drainTexts = Effect.gen(function* () {
        if (!watchingOutputs && fs.existsSync(outputsDir)) {
          watch(outputsDir)
          watchingOutputs = true
        }
        for (const [agent, at] of textOffsets) {
          const chunk = readFrom(nodePath.join(dir, agentFile(agent, "output")), at)
          if (chunk.length === 0) continue
          textOffsets.set(agent, at + chunk.length)
          const td = textDecoders.get(agent) ?? new TextDecoder()
          textDecoders.set(agent, td)
          const text = td.decode(chunk, { stream: true })
          if (text !== "") yield* sink({ _tag: "text", agent, text })
        }
      })

      /** Gives what the stream holds past the events given so far, and ends. */
      const lastRead = (end: FollowEnd) =>
        Effect.gen(function* () {
          for (const stored of (yield* store.read(dir, next)).events) yield* give(stored)
          return Option.some(end)
        })

      type Item = { readonly _tag: "event"; readonly stored: StoredEvent } | { readonly _tag: "tick"; readonly polled: boolean }
      const pollMs = options.pollMs ?? POLL_MS
      const alive = options.alive ?? processAlive
      const ticks = Stream.repeatEffect(
        Queue.take(wake).pipe(
          Effect.timeoutOption(Duration.millis(pollMs)),
          Effect.map((woke): Item => ({ _tag: "tick", polled: Option.isNone(woke) })),
        ),
      )
      const events = store.subscribe(dir, 0).pipe(Stream.map((stored): Item => ({ _tag: "event", stored })))
      const handle = (item: Item): Effect.Effect<Option.Option<FollowEnd>, EventStoreError> =>
        Effect.gen(function* () {
          if (item._tag === "event") {
            yield* give(item.stored)
            yield* drainTexts
            if (item.stored.event._tag !== "run_finished") return Option.none()
            // A run stopped by a signal and then resumed goes on after its run_finished.
            const after = yield* store.read(dir, next)
            return after.events.some((s) => s.event._tag === "run_resumed") ? Option.none() : Option.some("finished" as const)
          }
          yield* drainTexts
          if (!item.polled) return Option.none()
          if (!reopened && statusComplete(dir)) return yield* lastRead("complete")
          if (pid === "elsewhere" || (pid !== null && !alive(pid))) return yield* lastRead("process_gone")
          return Option.none()
        })
      const end = yield* Stream.merge(events, ticks).pipe(Stream.mapEffect(handle), Stream.filterMap(identity), Stream.runHead)
      return Option.getOrElse(end, () => "finished" as const)
    }),
  )
