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
 */
import { Deferred, Effect } from "effect"
import { markdownToHtml } from "../../domain/markdown.ts"
import { type ViewModel, applyEvent, applyText, emptyViewModel, viewOf } from "../../domain/view-model.ts"
import { ViewerError } from "../../services/run-catalog.ts"
import type { Display } from "../display.ts"
import viewerHtmlText from "./viewer.html" with { type: "text" }

const viewerHtml = viewerHtmlText as unknown as string

export const PUSH_MS = 50
export const DEFAULT_PORT = 8000

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
    const server = yield* Effect.acquireRelease(
      Effect.try({
        try: () => startServer(options, () => Deferred.unsafeDone(firstClient, Effect.void)),
        catch: (e) =>
          new ViewerError({
            reason: "port_in_use",
            path: `127.0.0.1:${options.port}`,
            detail: e instanceof Error ? e.message.split("\n")[0]! : String(e),
          }),
      }),
      (s) => Effect.sync(() => s.close()),
    )
    return {
      url: server.url,
      firstClient: Deferred.await(firstClient),
      onEvent: (event) => Effect.sync(() => server.update((m) => applyEvent(m, event))),
      onText: (agent, text) => Effect.sync(() => server.update((m) => applyText(m, agent, text))),
    } satisfies WebView
  })

const startServer = (options: WebOptions, onFirstClient: () => void) => {
  let model: ViewModel = emptyViewModel
  let pending: ReturnType<typeof setTimeout> | null = null
  const clients = new Set<ReadableStreamDefaultController<Uint8Array>>()
  const now = () => (options.clock === "wall" ? Date.now() : model.state.lastTime)
  const snapshot = () => {
    const view = viewOf(model, now())
    // A replay is timed by its events: the page says REPLAY rather than LIVE while it plays.
    const mode = options.clock === "wall" ? "live" : "replay"
    return JSON.stringify({ ...view, mode, finalHtml: view.final === null ? null : markdownToHtml(view.final.content) })
  }
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, data: string) => {
    try {
      controller.enqueue(encoder.encode(data))
    } catch {
      clients.delete(controller)
    }
  }
  const push = () => {
    pending = null
    if (clients.size === 0) return
    const message = `data: ${snapshot()}\n\n`
    for (const c of [...clients]) send(c, message)
  }
  const ticker = setInterval(() => {
    if (model.state.finished === null) push()
    else for (const c of [...clients]) send(c, ": keep-alive\n\n")
  }, 1000)

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: options.port,
    idleTimeout: 0,
    fetch(request) {
      const path = new URL(request.url).pathname
      if (request.method !== "GET") return new Response("method not allowed", { status: 405 })
      if (path === "/") return new Response(viewerHtml, { headers: { "content-type": "text/html; charset=utf-8" } })
      if (path === "/api/view") return new Response(snapshot(), { headers: { "content-type": "application/json" } })
      if (path !== "/events") return new Response("not found", { status: 404 })
      let self: ReadableStreamDefaultController<Uint8Array> | null = null
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          self = controller
          clients.add(controller)
          send(controller, `retry: 1000\ndata: ${snapshot()}\n\n`)
          onFirstClient()
        },
        cancel() {
          if (self !== null) clients.delete(self)
        },
      })
      return new Response(stream, {
        headers: { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" },
      })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/`,
    update: (f: (m: ViewModel) => ViewModel) => {
      model = f(model)
      pending ??= setTimeout(push, PUSH_MS)
    },
    close: () => {
      clearInterval(ticker)
      if (pending !== null) clearTimeout(pending)
      for (const c of [...clients]) {
        try {
          c.close()
        } catch {
          // already closed by the page
        }
      }
      clients.clear()
      server.stop(true)
    },
  }
}

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
