/**
 * The runs of `massgen serve` by request key, so a request is a run once: a
 * retry of a request attaches to its run instead of starting another.
 *
 * Contract: `runRegistry(windowMs)` keeps an entry per run, found by its
 * idempotency key when the request has one, else (or when that finds none)
 * by its content key (`request-key.ts`). `join(key, open)` gives what the
 * request answers with:
 * - a run going on, or one that ended less than `windowMs` ago with an
 *   outcome a retry cannot change: that run (`attached: true`);
 * - a run whose log records the key (`scan` of the log root, at start) or that ended stopped (`interrupted`) in the window: `open`
 *   with its log directory, which resumes it (or, finished, answers from its log);
 * - nothing: `open(signal, null)`, a new run.
 * The same idempotency key with other content is `conflict`. Each joined
 * request calls `leave` once when its client goes: once no request is
 * joined, `signal` aborts (a run still waiting for its slot gives the slot
 * up and is forgotten). An opening that is refused (queue full, draining) is
 * forgotten, so the next request starts afresh.
 *
 * A run's progress is a `RunFeed`: `follow(onItem)` gives what was published
 * so far (each event with its state, each text delta), then each new item,
 * until the returned function is called; once the run ends it is dropped, so
 * an ended run keeps only its outcome.
 *
 * Words: a request *joins* a run; one that finds its run *attaches* to it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import type { Event } from "../../domain/events/index.ts"
import { isResumable, type State } from "../../domain/state/index.ts"
import type { WireError } from "./openai-wire.ts"
import { REQUEST_FILE, type RequestKey, readRequestRecord } from "./request-key.ts"
import type { ServedOutcome } from "./served-run.ts"

/** What a run shows while it goes on: each event with the state after it, and each streamed text delta of an agent. */
export type FeedItem =
  | { readonly _tag: "event"; readonly event: Event; readonly state: State }
  | { readonly _tag: "text"; readonly agent: string; readonly text: string }

export interface RunFeed {
  readonly publish: (item: FeedItem) => void
  /** What was published so far, then each new item, until the function it gives is called. */
  readonly follow: (onItem: (item: FeedItem) => void) => () => void
  /** The run ended: what it showed is dropped (a later retry gets its answer alone). */
  readonly close: () => void
}

export const runFeed = (): RunFeed => {
  let seen: Array<FeedItem> = []
  const followers = new Set<(item: FeedItem) => void>()
  return {
    publish: (item) => {
      seen.push(item)
      for (const f of followers) f(item)
    },
    follow: (onItem) => {
      for (const item of seen) onItem(item)
      followers.add(onItem)
      return () => followers.delete(onItem)
    },
    close: () => {
      seen = []
      followers.clear()
    },
  }
}

/** A run a request answers from: its id, directory, progress, and how it ends. */
export interface JoinedRun {
  readonly runId: string
  readonly logDir: string
  readonly feed: RunFeed
  readonly outcome: Promise<ServedOutcome>
}

/** What opening a run gives: the run, or the refusal the request answers with (`headers` beside the error's). */
export type Opened =
  | { readonly _tag: "run"; readonly run: JoinedRun }
  | { readonly _tag: "refused"; readonly error: WireError; readonly headers: Readonly<Record<string, string>> }

/** Opens a run: a new one (`recorded` null) or the one recorded in that log directory. */
export type Open = (signal: AbortSignal, recorded: string | null) => Promise<Opened>

export type Joined =
  | { readonly _tag: "joined"; readonly opened: Promise<Opened>; readonly attached: boolean; readonly leave: () => void }
  | { readonly _tag: "conflict" }

interface Entry {
  readonly key: RequestKey
  /** Null: known only from its log (`recorded`); the next request opens it. */
  opening: Promise<Opened> | null
  recorded: string | null
  /** When the run ended (ms since the epoch); null while it goes on. */
  endedAt: number | null
  joined: number
  gone: AbortController
  started: boolean
}

/** A stopped run is resumed by the next request; any other end is the answer. */
const resumable = (outcome: ServedOutcome): boolean => !("failed" in outcome) && isResumable(outcome.state.finished)

export const runRegistry = (windowMs: number, now: () => number = Date.now) => {
  const entries = new Set<Entry>()

  const prune = () => {
    for (const e of entries) if (e.endedAt !== null && now() - e.endedAt > windowMs) entries.delete(e)
  }

  const find = (key: RequestKey): Entry | "conflict" | null => {
    if (key.idempotency !== null) {
      for (const e of entries) {
        if (e.key.idempotency !== key.idempotency) continue
        return e.key.content === key.content ? e : "conflict"
      }
    }
    for (const e of entries) if (e.key.content === key.content) return e
    return null
  }

  const openEntry = (entry: Entry, open: Open) => {
    entry.gone = new AbortController()
    entry.endedAt = null
    entry.started = false
    const opening = open(entry.gone.signal, entry.recorded)
    entry.opening = opening
    void opening.then((opened) => {
      if (entry.opening !== opening) return
      if (opened._tag === "refused") {
        entries.delete(entry)
        return
      }
      entry.started = true
      entry.recorded = opened.run.logDir
      // Its requests left while it was being opened, and it started all the same: a retry still finds it.
      if (!entries.has(entry) && find(entry.key) === null) entries.add(entry)
      void opened.run.outcome.then((outcome) => {
        if (entry.opening !== opening) return
        entry.endedAt = now()
        if (resumable(outcome)) entry.opening = null
      })
    })
    return opening
  }

  const leaver = (entry: Entry) => {
    let left = false
    return () => {
      if (left) return
      left = true
      entry.joined -= 1
      if (entry.joined > 0) return
      // Nobody waits for a run that has not started: it is forgotten, so a later request starts afresh.
      if (!entry.started) entries.delete(entry)
      entry.gone.abort()
    }
  }

  return {
    join: (key: RequestKey, open: Open): Joined => {
      prune()
      const found = find(key)
      if (found === "conflict") return { _tag: "conflict" }
      if (found !== null && found.opening !== null) {
        found.joined += 1
        return { _tag: "joined", opened: found.opening, attached: true, leave: leaver(found) }
      }
      const entry: Entry = found ?? {
        key,
        opening: null,
        recorded: null,
        endedAt: null,
        joined: 0,
        gone: new AbortController(),
        started: false,
      }
      entries.add(entry)
      entry.joined = 1
      return { _tag: "joined", opened: openEntry(entry, open), attached: found !== null, leave: leaver(entry) }
    },
    /** Remembers the runs under `logRoot` whose log was written within the window: what a restarted server finds again. */
    scan: (logRoot: string) => {
      if (!existsSync(logRoot)) return
      for (const name of readdirSync(logRoot)) {
        const dir = join(logRoot, name)
        const file = join(dir, REQUEST_FILE)
        const events = join(dir, "events.jsonl")
        if (!existsSync(file) || !existsSync(events)) continue
        const at = statSync(events).mtimeMs
        if (now() - at > windowMs) continue
        const key = readRequestRecord(readFileSync(file, "utf8"))
        if (key !== null)
          entries.add({ key, opening: null, recorded: dir, endedAt: at, joined: 0, gone: new AbortController(), started: false })
      }
    },
  }
}

export type RunRegistry = ReturnType<typeof runRegistry>
