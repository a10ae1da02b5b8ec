/**
 * The scheduling window: which of the orchestrator's inputs it takes as one batch.
 *
 * `takeWindow` takes the first input to come, then every one that arrives
 * while the window is open. It stays open while each turn of the event loop
 * brings more, and, after a reply, until the replies it foretells are due:
 * work whose call went out at most `MAX_WINDOW_MS` after that reply's call is
 * expected as long after its own call went out as the reply took, and the
 * window waits for the last of those (plus `REPLY_WINDOW_MS`). Work that
 * started together replies together, and the orchestrator judges it together,
 * before deciding anything. The window closes at once on an input that is not
 * a reply (a stop, a failed write), once no work is out, and `MAX_WINDOW_MS`
 * after it opened at the latest. Times and waits are on the Effect clock, as
 * the calls' own delays and timeouts are: under a test's clock the window
 * spans the same virtual time a real one would.
 *
 * Words: *work* is a round or a presentation in flight, named by its key; its
 * *call time* is when its latest call went out (the Effect clock, ms).
 */
import { Chunk, Clock, Duration, Effect, Queue } from "effect"

/** How long a window stays open past the last reply it expects, and its longest span. */
export const REPLY_WINDOW_MS = 2
export const MAX_WINDOW_MS = 1000

/** Lets I/O callbacks that are already due (replies of other calls) run first. */
const nextMacrotask = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

export interface WorkOut {
  /** The call time of each piece of work out, by key. */
  readonly callTimes: ReadonlyMap<string, number>
  /** How many pieces of work are out (those whose replies are in the window included). */
  readonly count: () => number
}

/** The inputs of one window; `replyKey` names the work a reply is from, and is null for any other input. */
export const takeWindow = <I>(inbox: Queue.Queue<I>, out: WorkOut, replyKey: (input: I) => string | null): Effect.Effect<Array<I>> =>
  Effect.gen(function* () {
    const batch = [yield* Queue.take(inbox)]
    const opened = yield* Clock.currentTimeMillis
    const firstKey = replyKey(batch[0]!)
    const firstCall = firstKey === null ? undefined : out.callTimes.get(firstKey)
    let due = opened
    if (firstCall !== undefined) {
      const took = opened - firstCall
      for (const [key, sent] of out.callTimes) {
        if (key !== firstKey && sent - firstCall <= MAX_WINDOW_MS) due = Math.max(due, sent + took)
      }
    }
    const closes = Math.min(opened + MAX_WINDOW_MS, due + REPLY_WINDOW_MS)
    for (let brought = true; ; ) {
      const left = closes - (yield* Clock.currentTimeMillis)
      if (!brought && left <= 0) break
      yield* brought ? nextMacrotask : Effect.sleep(Duration.millis(Math.min(1, left)))
      const more = yield* Queue.takeAll(inbox)
      brought = Chunk.isNonEmpty(more)
      let other = false
      for (const x of more) {
        batch.push(x)
        other ||= replyKey(x) === null
      }
      // Only replies wait for replies: a stop or a failed write is acted on at once.
      if (other || firstKey === null || (yield* Clock.currentTimeMillis) - opened >= MAX_WINDOW_MS) break
      if (!brought && batch.length >= out.count()) break
    }
    return batch
  })
