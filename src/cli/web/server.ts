/**
 * The web view: one page served on 127.0.0.1, kept current through Server-Sent Events.
 *
 * Contract: `webDisplay(options)` is a scoped resource that serves, until its
 * scope closes, `GET /` (the page, `viewer.html`, embedded in the binary),
 * `GET /events` (an SSE stream: one `data:` message holding the whole `View`
 * as JSON, plus `finalHtml`, the final answer rendered by `markdownToHtml`;
 * sent on connect, after every change at most every `PUSH_MS`, and every
 * second while the run goes on, so the elapsed time moves) and `GET /api/view`
 * (the same JSON, once). Anything else is 404. The page needs no network.
 * A port already taken is a `ViewerError` (`port_in_use`). `firstClient`
 * completes when a page first connects (a replay at a given speed waits for
 * it). `openBrowser` asks `xdg-open` (or `open` on macOS) to show the page;
 * when that fails it only says so.
 *
 * Served by `@effect/platform`'s `HttpServer` on Bun (`BunHttpServer`): each
 * request is a fiber, and each page's stream is a subscription to the pushed
 * messages, ended with the server when the scope closes. `viewer-command.ts`
 * imports this module only for `--web`.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as BunHttpServer from "@effect/platform-bun/BunHttpServer"
import { Deferred, Duration, Effect, PubSub, Queue, Ref, Schedule, Stream } from "effect"
import { markdownToHtml } from "../../domain/markdown.ts"
import { type ViewModel, applyEvent, applyText, emptyViewModel, viewOf } from "../../domain/view-model.ts"
import { ViewerError } from "../../services/run-catalog.ts"
import type { Display } from "../display.ts"
import viewerHtmlText from "./viewer.html" with { type: "text" }

const viewerHtml = viewerHtmlText as unknown as string

export const PUSH_MS = 50

export interface WebOptions {
  readonly port: number
  readonly clock: "wall" | "events"
}

export interface WebView extends Display {
  readonly url: string
  readonly firstClient: Effect.Effect<void>
}

const encoder = new TextEncoder()

export const webDisplay = (options: WebOptions) =>
  Effect.gen(function* () {
    const firstClient = yield* Deferred.make<void>()
    const model = yield* Ref.make<ViewModel>(emptyViewModel)
    // Every message is a whole view, so a client that falls behind only needs the newest ones.
    const messages = yield* Effect.acquireRelease(PubSub.sliding<string>(16), PubSub.shutdown)
    const changed = yield* Queue.sliding<void>(1)
    const now = (m: ViewModel) => (options.clock === "wall" ? Date.now() : m.state.lastTime)
    const snapshot = Effect.map(Ref.get(model), (m) => {
      const view = viewOf(m, now(m))
      // A replay is timed by its events: the page says REPLAY rather than LIVE while it plays.
      const mode = options.clock === "wall" ? "live" : "replay"
      return JSON.stringify({ ...view, mode, finalHtml: view.final === null ? null : markdownToHtml(view.final.content) })
    })
    const push = Effect.flatMap(snapshot, (s) => PubSub.publish(messages, `data: ${s}\n\n`))
    // PUSH_MS after a change, with every change made meanwhile.
    yield* Effect.forkScoped(Effect.forever(Queue.take(changed).pipe(Effect.zipRight(Effect.sleep(Duration.millis(PUSH_MS))), Effect.zipRight(Queue.takeAll(changed)), Effect.zipRight(push))))
    const tick = Effect.flatMap(Ref.get(model), (m) => (m.state.finished === null ? push : PubSub.publish(messages, ": keep-alive\n\n")))
    yield* Effect.forkScoped(Effect.repeat(tick, Schedule.spaced(Duration.seconds(1))).pipe(Effect.delay(Duration.seconds(1))))

    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.method !== "GET") return HttpServerResponse.text("method not allowed", { status: 405 })
      const path = new URL(request.url, "http://127.0.0.1").pathname
      if (path === "/") return HttpServerResponse.text(viewerHtml, { contentType: "text/html; charset=utf-8" })
      if (path === "/api/view") return HttpServerResponse.text(yield* snapshot, { contentType: "application/json" })
      if (path !== "/events") return HttpServerResponse.text("not found", { status: 404 })
      const updates = yield* PubSub.subscribe(messages)
      const first = `retry: 1000\ndata: ${yield* snapshot}\n\n`
      yield* Deferred.succeed(firstClient, undefined)
      const body = Stream.concat(Stream.succeed(first), Stream.fromQueue(updates)).pipe(Stream.map((s) => encoder.encode(s)))
      return HttpServerResponse.stream(body, {
        contentType: "text/event-stream",
        headers: { "cache-control": "no-cache", connection: "keep-alive" },
      })
    })

    const server = yield* BunHttpServer.make({ hostname: "127.0.0.1", port: options.port, idleTimeout: 0 }).pipe(
      Effect.catchAllDefect((e) =>
        new ViewerError({
          reason: "port_in_use",
          path: `127.0.0.1:${options.port}`,
          detail: e instanceof Error ? e.message.split("\n")[0]! : String(e),
        }),
      ),
    )
    yield* server.serve(app)
    const port = server.address._tag === "TcpAddress" ? server.address.port : options.port
    const update = (f: (m: ViewModel) => ViewModel) => Effect.zipRight(Ref.update(model, f), Queue.offer(changed, undefined))
    return {
      url: `http://127.0.0.1:${port}/`,
      firstClient: Deferred.await(firstClient),
      onEvent: (event) => update((m) => applyEvent(m, event)),
      onText: (agent, text) => update((m) => applyText(m, agent, text)),
    } satisfies WebView
  })

/** Asks the desktop to open `url`; true when the opener started. A missing opener is not an error. */
export const openBrowser = (url: string): boolean => {
  try {
    const proc = Bun.spawn([process.platform === "darwin" ? "open" : "xdg-open", url], {
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    })
    proc.unref()
    return true
  } catch {
    return false
  }
}
