/**
 * The HTTP server of `massgen serve`: OpenAI's Chat Completions API in front of the council.
 *
 * Routes: `POST /v1/chat/completions` (a run per request), `GET /v1/models`
 * (the served models), `GET /health` (no auth: `{status, running, queued}`);
 * anything else is 404, a known path with another method 405, in OpenAI's
 * error shape (`openai-wire.ts`). With an API key, every `/v1/` request needs
 * `Authorization: Bearer KEY`, else 401. Without one (`hostNames` given), every
 * request, `/health` too, must name the server in its `Host` (one of
 * `hostNames` with the server's port) and, when it has an `Origin`, come from
 * that same origin, else 403 (`request-gate.ts`).
 *
 * A completion's body must be `application/json` (else 415) of at most
 * `maxBodyBytes` (else 413), its messages' text at most `maxQuestionBytes`
 * (else 413): all refused before anything is written. A connection quiet for
 * `idleTimeoutSeconds` (between requests, or sending its body) is closed, so
 * idle sockets do not pile up (Bun itself closes one whose headers take
 * about 10 s); a completion once accepted is never cut while it waits or
 * runs, and its connection closes with its response. A request refused with
 * its body unread also closes its connection.
 *
 * A completion request joins its run by its request key (`request-key.ts`,
 * `run-registry.ts`): a retry of a request (the same content, or the same
 * `Idempotency-Key`) attaches to the run going on or ended within the retry
 * window, or resumes it when it was stopped; the same `Idempotency-Key` with
 * another request is 400. A new run waits for a slot (`run-starter.ts`,
 * `run-slots.ts`; with the queue full it is 429 with `retry-after`). Then it
 * runs in its own log directory, whose name is the `x-massgen-run-id` header
 * and `massgen.run_id`. Without `stream` the answer is one completion when
 * the run ends. What a retry cannot change is final (`x-should-retry:
 * false`): a run that fails is 400 with its reason, one that timed out with
 * no answer 400, one that spent its budget with no answer 402; with a salvaged
 * answer, a timeout or a spent budget is a 200 with `finish_reason: "length"`;
 * one stopped by the server's drain is 503. With `stream`, the headers go out
 * when the run starts (a retry of a run going on gets its progress from the
 * start): coordination progress comes as `reasoning_content` deltas (one line
 * per event, as `--no-display` prints), the final answer as `content`, then
 * a chunk with `finish_reason` (`stop`; `length` for a salvaged answer) and
 * `massgen`, the usage chunk when asked, and `data: [DONE]`; a run with no
 * answer ends with a `data: {"error": ...}` frame instead. A client that
 * disconnects does not stop its run, which goes on for a retry to collect;
 * with `cancelOnDisconnect`, a run whose every client has gone is stopped,
 * recorded `interrupted` with the message `cancelled by the client`
 * (`CLIENT_CANCELLED`: `massgen status` says so) and can be resumed.
 *
 * `stopAccepting()` starts the drain: the server stops listening, nothing
 * waiting starts (503); `stopRuns(why)` stops the runs still going.
 */
import { timingSafeEqual } from "node:crypto"
import type { Server } from "bun"
import type { Event } from "../../domain/events/index.ts"
import type { State } from "../../domain/state/index.ts"
import { ownHosts } from "../../lib/loopback.ts"
import { plainLine } from "../run/automation-output.ts"
import {
  type ChatRequest,
  chunkBody,
  completionBody,
  errorBody,
  type RunFacts,
  readChatRequest,
  SSE_DONE,
  sseFrame,
  type WireError,
} from "./openai-wire.ts"
import { foreignRequest, readJsonBody, unsupportedBody } from "./request-gate.ts"
import { requestKey } from "./request-key.ts"
import type { RunRegistry } from "./run-registry.ts"
import type { RunSlots } from "./run-slots.ts"
import { FINAL, runStarter } from "./run-starter.ts"
import type { ServeContext, ServedModel, ServedOutcome } from "./served-run.ts"

export interface ServerOptions {
  readonly host: string
  readonly port: number
  readonly models: ReadonlyArray<ServedModel>
  readonly apiKey: string | null
  /** The names a request's `Host` may give this server (with its port); null: not checked (the API key guards it). */
  readonly hostNames: ReadonlyArray<string> | null
  readonly slots: RunSlots
  readonly ctx: ServeContext
  readonly idleTimeoutSeconds: number
  readonly maxBodyBytes: number
  readonly maxQuestionBytes: number
  /** The runs by request key: a retry attaches to its run (`run-registry.ts`). */
  readonly runs: RunRegistry
  /** Stop a run once every client of it has gone (else it goes on, for a retry to collect). */
  readonly cancelOnDisconnect: boolean
}

export const RUN_ID_HEADER = "x-massgen-run-id"

const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } })

const failure = (error: WireError, headers: Record<string, string> = {}, massgen?: RunFacts): Response =>
  json(errorBody(error, massgen), error.status, headers)

const serverError = (message: string, status = 500, code: string | null = null): WireError => ({
  status,
  message,
  type: "server_error",
  code,
})

const authorized = (header: string | null, key: string): boolean => {
  const given = Buffer.from(header?.startsWith("Bearer ") ? header.slice(7) : "")
  const wanted = Buffer.from(key)
  return given.length === wanted.length && timingSafeEqual(given, wanted)
}

/** Lines of progress a stream shows: the final answer and the run's end are said otherwise. */
const progressLine = (event: Event, state: State, logDir: string): string | null =>
  event._tag === "final_answer" || event._tag === "run_finished" ? null : plainLine(event, state, logDir)

/** The same `Idempotency-Key` with another request: the key names one request. */
const IDEMPOTENCY_CONFLICT: WireError = {
  status: 400,
  message: "this Idempotency-Key was sent with another request: use a new key for a new request",
  type: "invalid_request_error",
  code: "idempotency_key_reused",
}

export const startServer = (options: ServerOptions) => {
  const { slots, ctx } = options
  const stops = new Set<(why: string) => void>()
  const start = runStarter({ slots, ctx, cancelOnDisconnect: options.cancelOnDisconnect, stops })
  const modelIds = options.models.map((m) => m.id)
  let draining = false
  let stopped: Promise<void> = Promise.resolve()

  const complete = async (request: Request, server: Server<undefined>): Promise<Response> => {
    const unsupported = unsupportedBody(request)
    if (unsupported !== null) return failure(unsupported)
    const body = await readJsonBody(request, options.maxBodyBytes)
    // The rest of a body too large is not read: nothing more on this connection.
    if ("status" in body) return failure(body, body.status === 413 ? { connection: "close" } : {})
    const chat = readChatRequest(body.json, modelIds, options.maxQuestionBytes)
    if ("status" in chat) return failure(chat)
    const model = options.models.find((m) => m.id === chat.model)!
    // Accepted: no idle cut while it waits and runs (minutes may pass without a byte);
    // its connection closes with the response, so it does not stay open uncut after it.
    server.timeout(request, 0)
    const held = { connection: "close" }
    const key = requestKey("chat.completions", body.json as Record<string, unknown>, chat.model, request.headers.get("idempotency-key"))
    const joined = options.runs.join(key, start(model, chat, key))
    if (joined._tag === "conflict") return failure(IDEMPOTENCY_CONFLICT, { ...FINAL, ...held })
    request.signal.addEventListener("abort", joined.leave, { once: true })
    const opened = await joined.opened
    if (opened._tag === "refused") {
      joined.leave()
      return opened.error.status === 499
        ? new Response(null, { status: 499, headers: held })
        : failure(opened.error, { ...opened.headers, ...held })
    }
    const { run } = opened
    const headers = { [RUN_ID_HEADER]: run.runId, ...held }
    const started = { id: `chatcmpl-${run.runId}`, created: Math.floor(Date.now() / 1000), model: chat.model }
    const finished = (onEvent: (event: Event, state: State) => void) => {
      const unfollow = run.feed.follow((item) => (item._tag === "event" ? onEvent(item.event, item.state) : undefined))
      return run.outcome.finally(() => {
        unfollow()
        joined.leave()
      })
    }
    if (chat.stream) return streamed(chat, run.logDir, run.runId, started, headers, finished, joined.leave)
    const outcome = await finished(() => {})
    const ended = endOf(outcome, run.runId, run.logDir)
    if (ended.error !== null) return failure(ended.error, ended.final ? { ...FINAL, ...headers } : headers, ended.facts)
    return json(
      completionBody({
        ...started,
        content: ended.content,
        finishReason: ended.salvaged ? "length" : "stop",
        usage: ended.usage!,
        massgen: ended.facts,
      }),
      200,
      headers,
    )
  }

  let hosts: ReadonlySet<string> | null = null
  const route = async (request: Request, server: Server<undefined>): Promise<Response> => {
    const foreign = hosts === null ? null : foreignRequest(request, hosts)
    if (foreign !== null) return failure(foreign)
    const { pathname } = new URL(request.url)
    if (pathname === "/health" && request.method === "GET")
      return json({ status: draining ? "draining" : "ok", running: slots.running(), queued: slots.queued() })
    if (pathname.startsWith("/v1/") && options.apiKey !== null && !authorized(request.headers.get("authorization"), options.apiKey)) {
      return failure({
        status: 401,
        message: "missing or wrong API key: send Authorization: Bearer KEY",
        type: "authentication_error",
        code: "invalid_api_key",
      })
    }
    if (pathname === "/v1/models") {
      if (request.method !== "GET")
        return failure({
          status: 405,
          message: `${request.method} ${pathname}: use GET`,
          type: "invalid_request_error",
          code: "method_not_allowed",
        })
      return json({ object: "list", data: options.models.map((m) => ({ id: m.id, object: "model", created: 0, owned_by: "massgen" })) })
    }
    if (pathname === "/v1/chat/completions") {
      if (request.method !== "POST")
        return failure({
          status: 405,
          message: `${request.method} ${pathname}: use POST`,
          type: "invalid_request_error",
          code: "method_not_allowed",
        })
      return complete(request, server)
    }
    return failure({ status: 404, message: `no route ${request.method} ${pathname}`, type: "invalid_request_error", code: "not_found" })
  }

  const server = Bun.serve({
    hostname: options.host,
    port: options.port,
    // A quiet connection (between requests, or sending its body) is closed; an accepted request is not cut (`complete`).
    idleTimeout: options.idleTimeoutSeconds,
    // `readJsonBody` refuses a large body with a 413 of its own, in OpenAI's shape.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: async (request, server) => {
      const response = await route(request, server)
      // A body left unread is not parsed as the next request: the connection ends with the response.
      if (request.body !== null && !request.bodyUsed) response.headers.set("connection", "close")
      return response
    },
  })
  hosts = options.hostNames === null ? null : ownHosts(server.port!, options.hostNames)

  return {
    url: `http://${server.hostname}:${server.port}`,
    port: server.port,
    /** Stops listening; what waits for a slot gets 503; runs going on go on. */
    stopAccepting: () => {
      draining = true
      slots.close()
      stopped = server.stop(false)
    },
    /** Stops every run still going (each is recorded interrupted). */
    stopRuns: (why: string) => {
      for (const stop of stops) stop(why)
    },
    /** Resolves once every request in flight has had its response. */
    close: () => stopped,
  }
}

/**
 * What a finished run answers: its content, usage and facts, or the error it
 * is. A salvaged answer (a timeout or a spent budget with an answer) is a
 * 200 cut short (`finish_reason: "length"`). An error a retry cannot change
 * is `final` (`x-should-retry: false`) with a status the `openai` SDK, the AI
 * SDK and LangChain do not retry: 402 for a budget spent, 400 for a timeout
 * or a failure; only a run stopped by the drain (503) may be retried.
 */
const endOf = (outcome: ServedOutcome, runId: string, logDir: string) => {
  if ("failed" in outcome) {
    return {
      content: "",
      usage: null,
      facts: { run_id: runId, log_dir: logDir, finish_reason: null, winner: null, cost_usd: null },
      error: serverError(`the run was refused: ${outcome.failed}`, 400, "run_refused"),
      salvaged: false,
      final: true,
    }
  }
  const { state, reason } = outcome
  const content = state.final?.content ?? ""
  const facts: RunFacts = {
    run_id: runId,
    log_dir: logDir,
    finish_reason: reason,
    winner: state.final?.agent ?? null,
    cost_usd: state.usage.cost,
  }
  const why = state.finished?.message ?? reason
  const salvaged = state.final !== null && (reason === "timeout" || reason === "budget")
  const error: WireError | null =
    reason === "completed" || salvaged
      ? null
      : reason === "timeout"
        ? serverError(`the run timed out: ${why}`, 400, "run_timeout")
        : reason === "interrupted"
          ? serverError(`the run was stopped: ${why}`, 503, "run_interrupted")
          : serverError(`the run failed (${reason}): ${why}${failures(state)}`, reason === "budget" ? 402 : 400, `run_${reason}`)
  return { content, usage: state.usage, facts, error, salvaged, final: reason !== "interrupted" }
}

const failures = (state: State): string => {
  const out = state.agents.filter((a) => a.failure !== null).map((a) => `${a.info.id}: ${a.failure!.message}`)
  return out.length === 0 ? "" : ` (${out.join("; ")})`
}

const encoder = new TextEncoder()

const streamed = (
  chat: ChatRequest,
  logDir: string,
  runId: string,
  started: { readonly id: string; readonly created: number; readonly model: string },
  headers: Record<string, string>,
  finished: (onEvent: (event: Event, state: State) => void) => Promise<ServedOutcome>,
  onCancel: () => void,
): Response => {
  const stream = new ReadableStream<Uint8Array>({
    start: (controller) => {
      let open = true
      const send = (text: string) => {
        if (!open) return
        try {
          controller.enqueue(encoder.encode(text))
        } catch {
          open = false
        }
      }
      send(
        sseFrame(
          chunkBody({
            ...started,
            delta: { role: "assistant", content: "" },
            massgen: { run_id: runId, log_dir: logDir, finish_reason: null, winner: null, cost_usd: null },
          }),
        ),
      )
      void finished((event, state) => {
        const line = progressLine(event, state, logDir)
        if (line !== null) send(sseFrame(chunkBody({ ...started, delta: { reasoning_content: `${line}\n` } })))
      }).then((outcome) => {
        const ended = endOf(outcome, runId, logDir)
        if (ended.error === null) {
          if (ended.content !== "") send(sseFrame(chunkBody({ ...started, delta: { content: ended.content } })))
          send(sseFrame(chunkBody({ ...started, delta: {}, finishReason: ended.salvaged ? "length" : "stop", massgen: ended.facts })))
          if (chat.includeUsage && ended.usage !== null) send(sseFrame(chunkBody({ ...started, usage: ended.usage })))
        } else {
          send(sseFrame(errorBody(ended.error!, ended.facts)))
        }
        send(SSE_DONE)
        if (open) controller.close()
        open = false
      })
    },
    cancel: () => onCancel(),
  })
  return new Response(stream, { status: 200, headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers } })
}
