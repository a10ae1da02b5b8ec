/**
 * How a request of `massgen serve` opens its run: the `Open` that
 * `run-registry.ts` calls for a request no run answers yet.
 *
 * Contract: `runStarter(options)(model, request, key)` is an `Open`. Given a
 * log directory a run of the key is recorded in, a finished run is answered
 * from its log (no slot taken); a stopped one waits for a slot and is resumed
 * (`resumed-run.ts`); a directory whose run never wrote its first event is
 * left, and a new run started. Otherwise the request waits for a slot
 * (`run-slots.ts`: 429 with `retry-after` when the queue is full, 503 once the
 * server drains, 499 when every client of it has gone) and a new run starts
 * in its own log directory, its keys recorded there (`REQUEST_FILE`) before
 * its first event. Each event and text delta goes to the run's feed. A run goes on
 * when its clients go, to its own end (its timeout, its budget); with
 * `cancelOnDisconnect`, it is stopped once every client of it has gone,
 * recorded `interrupted` with `cancelled by the client` (`CLIENT_CANCELLED`).
 * A run that cannot be opened (its config refused) is a final 400 with
 * `x-should-retry: false`. `stops` holds the stop of each run that holds a
 * slot (from the moment it takes it), for the drain.
 */
import { join } from "node:path"
import { Effect } from "effect"
import { writeFileAtomic } from "../../services/run-files/index.ts"
import { CLIENT_CANCELLED } from "../run/report.ts"
import type { ChatRequest, WireError } from "./openai-wire.ts"
import { REQUEST_FILE, type RequestKey, requestRecord } from "./request-key.ts"
import { recordedRun, resumedServedRun } from "./resumed-run.ts"
import type { Open, Opened } from "./run-registry.ts"
import { runFeed } from "./run-registry.ts"
import type { RunSlots } from "./run-slots.ts"
import { openServedRun, type ServeContext, type ServedModel } from "./served-run.ts"

export interface StarterOptions {
  readonly slots: RunSlots
  readonly ctx: ServeContext
  readonly cancelOnDisconnect: boolean
  readonly stops: Set<(why: string) => void>
}

/** The header that tells a client (the `openai` SDK honours it) that trying again cannot change the answer. */
export const FINAL = { "x-should-retry": "false" } as const

const refused = (error: WireError, headers: Readonly<Record<string, string>> = {}): Opened => ({ _tag: "refused", error, headers })

const serverError = (message: string, status: number, code: string): WireError => ({ status, message, type: "server_error", code })

const runIdOf = (logDir: string): string => logDir.split(/[/\\]/).pop() ?? logDir

export const runStarter =
  (options: StarterOptions) =>
  (model: ServedModel, request: ChatRequest, key: RequestKey): Open =>
  async (signal, recorded) => {
    const { slots, ctx } = options
    let from = recorded
    if (from !== null) {
      const found = await recordedRun(from)
      if (found._tag === "finished")
        return { _tag: "run", run: { runId: runIdOf(from), logDir: from, feed: runFeed(), outcome: Promise.resolve(found.outcome) } }
      if (found._tag === "not_a_run") from = null
    }
    const taken = await slots.take(signal)
    if (taken._tag === "full") {
      const wait = slots.retryAfterSeconds()
      return refused(
        { status: 429, message: `all runs busy and the queue is full; retry in ${wait}s`, type: "rate_limit_error", code: "queue_full" },
        { "retry-after": String(wait) },
      )
    }
    if (taken._tag !== "slot")
      return refused(
        taken._tag === "gone"
          ? serverError("the client went away", 499, "client_gone")
          : serverError("the server is shutting down", 503, "shutting_down"),
      )
    // The drain can stop it from the moment it holds a slot, before its run has started.
    let stop!: (why: string) => void
    const stopped = new Promise<string>((resolve) => (stop = resolve))
    options.stops.add(stop)
    const release = () => {
      options.stops.delete(stop)
      taken.release()
    }
    if (signal.aborted) {
      release()
      return refused(serverError("the client went away", 499, "client_gone"))
    }
    try {
      const opened = from !== null ? resumedServedRun(from, ctx) : await openServedRun(model, request, ctx)
      if ("failed" in opened) {
        release()
        return refused({ status: 400, message: `the run was refused: ${opened.failed}`, type: "server_error", code: "run_refused" }, FINAL)
      }
      if (from === null) await Effect.runPromise(writeFileAtomic(join(opened.logDir, REQUEST_FILE), requestRecord(key, model.id)))
      if (options.cancelOnDisconnect) {
        signal.addEventListener("abort", () => stop(CLIENT_CANCELLED), { once: true })
        if (signal.aborted) stop(CLIENT_CANCELLED)
      }
      const feed = runFeed()
      const outcome = opened
        .run(
          stopped,
          (event, state) => feed.publish({ _tag: "event", event, state }),
          (agent, text) => feed.publish({ _tag: "text", agent, text }),
        )
        .finally(() => {
          feed.close()
          release()
        })
      return { _tag: "run", run: { runId: opened.runId, logDir: opened.logDir, feed, outcome } }
    } catch (e) {
      release()
      return refused(serverError(e instanceof Error ? e.message : String(e), 500, "internal_error"))
    }
  }
