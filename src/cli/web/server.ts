/**
 * The web view: one page served on 127.0.0.1, kept current through Server-Sent Events.
 *
 * Contract: `webDisplay(options)` is a scoped resource that serves, until its
 * scope closes, `GET /` (the page, `viewer.html`, embedded in the binary, with
 * the current view already rendered in it by `page.ts`: readable without
 * JavaScript, and whole at once for a one-shot render),
 * `GET /events` (an SSE stream, below) and `GET /api/view` (the whole `View`
 * as JSON, plus `mode` and `finalHtml`, the final answer rendered by
 * `markdownToHtml`, once). Anything else is 404. It answers only requests
 * whose `Host` header is its own address (`127.0.0.1:PORT` or
 * `localhost:PORT`; the bare name on port 80, `lib/loopback.ts`): any other host is 403, so a page of another site cannot
 * read it through DNS rebinding. The page needs no network. A port already
 * taken is a `ViewerError` (`port_in_use`). `firstClient` completes when a
 * page first connects (a replay at a given speed waits for it). `openBrowser`
 * asks `xdg-open` (or `open` on macOS) to show the page; when that fails it
 * only says so.
 *
 * The SSE stream: a `data:` message is the view as `/api/view` gives it,
 * except that each *heavy text* (a string of `HEAVY_CHARS` or more: a long
 * answer, the final answer, its HTML) is a reference `{"$text": KEY}`; an
 * `event: text` message `{"key", "text"}` brings the text of each key before
 * the first view that refers to it, and only then: a page is sent each heavy
 * text once while views keep referring to it. A view is sent on connect and
 * after every change (at most every `PUSH_MS`). While the run goes on, an
 * `event: tick` message `{"elapsedSeconds"}` comes every second, so the clock
 * moves without the view being sent again.
 *
 * Served by `@effect/platform`'s `HttpServer` on Bun (`BunHttpServer`): each
 * request is a fiber, and each page's stream is a subscription to the pushed
 * messages, ended with the server when the scope closes. `cli/commands/viewer.ts`
 * imports this module only for `--web`.
 *
 * Words: a *heavy text* is a string of a view sent once per page and referenced by its key.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as BunHttpServer from "@effect/platform-bun/BunHttpServer"
import { Deferred, Duration, Effect, PubSub, Queue, Ref, Schedule, Stream } from "effect"
import { applyEvent, applyText, emptyViewModel, markProcessGone, type ViewModel, viewOf } from "../../domain/projections/view-model.ts"
import { ownHosts } from "../../lib/loopback.ts"
import { ViewerError } from "../../services/log-dir/catalog.ts"
import type { Display } from "../run/display.ts"
import { markdownToHtml } from "./markdown.ts"
import { type PageView, pageHtml } from "./page.ts"
import viewerHtmlText from "./viewer.html" with { type: "text" }

const viewerHtml = viewerHtmlText as unknown as string

export const PUSH_MS = 50
/** Strings at least this long are heavy texts: longer than any streamed tail (`TAIL_LIMIT`). */
export const HEAVY_CHARS = 4096

export interface WebOptions {
  readonly port: number
  readonly clock: "wall" | "events"
}

export interface WebView extends Display {
  readonly url: string
  readonly firstClient: Effect.Effect<void>
}

/** A message for every page: a view (its JSON, with the heavy texts it refers to) or a ready SSE frame. */
type Push =
  | { readonly _tag: "view"; readonly json: string; readonly texts: ReadonlyMap<string, string> }
  | { readonly _tag: "frame"; readonly frame: string }

const encoder = new TextEncoder()

const keyOf = (text: string): string => `${Bun.hash(text).toString(36)}.${text.length}`

/** `value` with every heavy text replaced by its reference; the texts go to `texts` by key. */
const referHeavy = (value: unknown, texts: Map<string, string>): unknown => {
  if (typeof value === "string") {
    if (value.length < HEAVY_CHARS) return value
    const key = keyOf(value)
    texts.set(key, value)
    return { $text: key }
  }
  if (Array.isArray(value)) return value.map((v) => referHeavy(v, texts))
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, referHeavy(v, texts)]))
  return value
}

/** The SSE frames of one push for a page that holds `sent`, and what it holds after them. */
const framesFor = (sent: ReadonlySet<string>, push: Push): [ReadonlySet<string>, string] => {
  if (push._tag === "frame") return [sent, push.frame]
  let frames = ""
  for (const [key, text] of push.texts) if (!sent.has(key)) frames += `event: text\ndata: ${JSON.stringify({ key, text })}\n\n`
  return [new Set(push.texts.keys()), `${frames}data: ${push.json}\n\n`]
}

export const webDisplay = (options: WebOptions) =>
  Effect.gen(function* () {
    const firstClient = yield* Deferred.make<void>()
    const model = yield* Ref.make<ViewModel>(emptyViewModel)
    // Every view is whole, so a page that falls behind only needs the newest ones.
    const messages = yield* Effect.acquireRelease(PubSub.sliding<Push>(16), PubSub.shutdown)
    const changed = yield* Queue.sliding<void>(1)
    const now = (m: ViewModel) => (options.clock === "wall" ? Date.now() : m.state.lastTime)
    // The final answer's HTML, made again only when the answer changes.
    let rendered: { readonly content: string; readonly html: string } | null = null
    const htmlOf = (content: string): string => {
      if (rendered?.content !== content) rendered = { content, html: markdownToHtml(content) }
      return rendered.html
    }
    const fullView = Effect.map(Ref.get(model), (m): PageView => {
      const view = viewOf(m, now(m))
      // A replay is timed by its events: the page says REPLAY rather than LIVE while it plays.
      const mode = options.clock === "wall" ? "live" : "replay"
      return { ...view, mode, finalHtml: view.final === null ? null : htmlOf(view.final.content) }
    })
    const viewPush = Effect.map(fullView, (view): Push => {
      const texts = new Map<string, string>()
      const json = JSON.stringify(referHeavy(view, texts))
      return { _tag: "view", json, texts }
    })
    const push = Effect.flatMap(viewPush, (p) => PubSub.publish(messages, p))
    // PUSH_MS after a change, with every change made meanwhile.
    yield* Effect.forkScoped(
      Effect.forever(
        Queue.take(changed).pipe(
          Effect.zipRight(Effect.sleep(Duration.millis(PUSH_MS))),
          Effect.zipRight(Queue.takeAll(changed)),
          Effect.zipRight(push),
        ),
      ),
    )
    const tick = Effect.flatMap(Ref.get(model), (m) =>
      PubSub.publish(messages, {
        _tag: "frame",
        frame:
          m.state.finished === null
            ? `event: tick\ndata: ${JSON.stringify({ elapsedSeconds: viewOf(m, now(m)).elapsedSeconds })}\n\n`
            : ": keep-alive\n\n",
      }),
    )
    yield* Effect.forkScoped(Effect.repeat(tick, Schedule.spaced(Duration.seconds(1))).pipe(Effect.delay(Duration.seconds(1))))

    const server = yield* BunHttpServer.make({ hostname: "127.0.0.1", port: options.port, idleTimeout: 0 }).pipe(
      Effect.catchAllDefect(
        (e) =>
          new ViewerError({
            reason: "port_in_use",
            path: `127.0.0.1:${options.port}`,
            detail: e instanceof Error ? e.message.split("\n")[0]! : String(e),
          }),
      ),
    )
    const port = server.address._tag === "TcpAddress" ? server.address.port : options.port
    const hosts = ownHosts(port, ["127.0.0.1", "localhost"])

    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!hosts.has((request.headers.host ?? "").toLowerCase())) {
        return HttpServerResponse.text(`forbidden: this viewer answers only for 127.0.0.1:${port} and localhost:${port}\n`, { status: 403 })
      }
      if (request.method !== "GET") return HttpServerResponse.text("method not allowed", { status: 405 })
      const path = new URL(request.url, "http://127.0.0.1").pathname
      if (path === "/")
        return HttpServerResponse.text(pageHtml(viewerHtml, yield* fullView), {
          contentType: "text/html; charset=utf-8",
          headers: { "cache-control": "no-store" },
        })
      if (path === "/api/view") return HttpServerResponse.text(JSON.stringify(yield* fullView), { contentType: "application/json" })
      if (path !== "/events") return HttpServerResponse.text("not found", { status: 404 })
      const updates = yield* PubSub.subscribe(messages)
      const first = yield* viewPush
      yield* Deferred.succeed(firstClient, undefined)
      const [sent, firstFrames] = framesFor(new Set(), first)
      const body = Stream.concat(
        Stream.succeed(`retry: 1000\n${firstFrames}`),
        Stream.fromQueue(updates).pipe(Stream.mapAccum(sent, framesFor)),
      ).pipe(Stream.map((frames) => encoder.encode(frames)))
      return HttpServerResponse.stream(body, {
        contentType: "text/event-stream",
        headers: { "cache-control": "no-cache", connection: "keep-alive" },
      })
    })

    yield* server.serve(app)
    const update = (f: (m: ViewModel) => ViewModel) => Effect.zipRight(Ref.update(model, f), Queue.offer(changed, undefined))
    return {
      url: `http://127.0.0.1:${port}/`,
      firstClient: Deferred.await(firstClient),
      onEvent: (event) => update((m) => applyEvent(m, event)),
      onText: (agent, text) => update((m) => applyText(m, agent, text)),
      onProcessGone: update(markProcessGone),
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
