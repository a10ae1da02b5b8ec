/**
 * Feeding a run's log to a display: replaying a finished run, or following one still being written.
 *
 * Contract: `replay(events, speed, sink, texts)` gives the events in file order;
 * with `speed` 0 at once, else after each one waits the recorded gap to the
 * next divided by `speed`, at most `MAX_GAP_MS` (`replayDelayMs`), with
 * `Effect.sleep`, so tests drive it with the TestClock. What a call streamed
 * (`texts`, from `recordedTexts`: the agents' output files cut by call) goes to
 * the sink just before that call's `call_end`. `follow(dir, sink)`
 * reads `events.jsonl` by byte offset from the start and then as it grows:
 * it wakes on `fs.watch` changes of the directory, or after `pollMs` at the
 * latest, and consumes only whole lines, so a torn last line waits for its
 * newline. New text appended to `agent_outputs/<agent>.txt` after following
 * began goes to the sink too. Following stops after a `run_finished` event
 * that no `run_resumed` follows, or when status.json says `is_complete` (after
 * a last read; not once a `run_resumed` was read), or when the
 * run's process (`run_started.pid`) is gone with the run unfinished.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Duration, Effect, Queue } from "effect"
import { textByCall } from "../domain/agent-output.ts"
import { decodeEventLine } from "../domain/event-codec.ts"
import type { Event } from "../domain/events.ts"
import { AGENT_OUTPUTS_DIR, agentFile } from "../domain/run-paths.ts"
import { EVENTS_FILE } from "./run-catalog.ts"

export const MAX_GAP_MS = 2000
export const POLL_MS = 250

export type FeedItem = { readonly _tag: "event"; readonly event: Event } | { readonly _tag: "text"; readonly agent: string; readonly text: string }
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
        Effect.zipRight(written ? sink({ _tag: "text", agent: written.agent, text: written.text }) : Effect.void, sink({ _tag: "event", event })),
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

export interface FollowOptions {
  readonly pollMs?: number
  readonly alive?: (pid: number) => boolean
}

/** How following ended. */
export type FollowEnd = "finished" | "complete" | "process_gone"

export const follow = (dir: string, sink: Sink, options: FollowOptions = {}): Effect.Effect<FollowEnd> =>
  Effect.scoped(
    Effect.gen(function* () {
      const wake = yield* Queue.sliding<void>(1)
      const poke = () => void Queue.unsafeOffer(wake, undefined)
      const watchers: Array<fs.FSWatcher> = []
      const watch = (path: string) => {
        try {
          watchers.push(fs.watch(path, poke))
        } catch {
          // The bounded poll still sees every change.
        }
      }
      yield* Effect.addFinalizer(() => Effect.sync(() => watchers.forEach((w) => w.close())))
      watch(dir)
      const eventsPath = nodePath.join(dir, EVENTS_FILE)
      const outputsDir = nodePath.join(dir, AGENT_OUTPUTS_DIR)
      let offset = 0
      let pid: number | null = null
      let watchingOutputs = false
      /** A run_resumed was read: status.json's is_complete may still be the stopped run's until the resume rewrites it. */
      let reopened = false
      const decoder = new TextDecoder()
      const textOffsets = new Map<string, number>()
      const textDecoders = new Map<string, TextDecoder>()

      /** Reads what was appended since the last read; true once run_finished was read. */
      const drain = Effect.gen(function* () {
        let finished = false
        const bytes = readFrom(eventsPath, offset)
        const end = bytes.lastIndexOf(10)
        if (end >= 0) {
          offset += end + 1
          for (const line of decoder.decode(bytes.subarray(0, end + 1)).split("\n")) {
            const decoded = decodeEventLine(line)
            if (decoded._tag !== "event") continue
            const event = decoded.event
            if (event._tag === "run_started") {
              pid = event.pid
              // Text streamed before following began is not replayed; panels show answers instead.
              for (const a of event.agents) textOffsets.set(a.id, sizeOf(nodePath.join(dir, agentFile(a.id, "output"))))
            }
            if (event._tag === "run_resumed") pid = event.pid
            yield* sink({ _tag: "event", event })
            // A run stopped by a signal and then resumed goes on after its run_finished.
            if (event._tag === "run_finished" || event._tag === "run_resumed") finished = event._tag === "run_finished"
            if (event._tag === "run_started" || event._tag === "run_resumed") reopened = event._tag === "run_resumed"
          }
        }
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
        return finished
      })

      const pollMs = options.pollMs ?? POLL_MS
      const alive = options.alive ?? processAlive
      for (;;) {
        if (yield* drain) return "finished" as const
        const woke = yield* Queue.take(wake).pipe(Effect.timeout(Duration.millis(pollMs)), Effect.option)
        if (woke._tag === "None") {
          if (!reopened && statusComplete(dir)) {
            yield* drain
            return "complete" as const
          }
          if (pid !== null && !alive(pid)) {
            yield* drain
            return "process_gone" as const
          }
        }
      }
    }),
  )
