/**
 * A loopback fake of the three LLM HTTP APIs, for tests of the real SDK clients.
 *
 * `await startFakeLlm({ respond })` serves `/v1/chat/completions`, `/v1/responses`,
 * `/v1/messages` and Gemini's `/v1beta/models/<model>:streamGenerateContent` on 127.0.0.1 (port 0; node:http, so a cut can break the socket). Each request takes the next behaviour queued
 * for its protocol (`enqueue`), else asks `respond(request)`, else gets a 500. A
 * behaviour replies with a scripted stream (`reply`), an HTTP status (`status`,
 * `rateLimited`), nothing at all (`hang`: no headers until the client aborts), part
 * of a stream then the end of the connection (`cut`), part of a stream then silence
 * (`stall`), raw SSE text (`raw`), or a stream without end (`endless`: the frames
 * of a reply up to its first frame holding a marker, then that frame again and
 * again, as fast as the client reads, until it goes away; `within`: that frame
 * up to the marker, then the marker for ever, a line that never ends), or a reply held after its frame holding a marker until
 * a promise resolves (`gated`: a model that writes slowly, at the pace a test says). Every request is recorded (path, query, headers, JSON
 * body); `waitForRequest(n)` and `waitForAbort(n)` resolve when the n-th request
 * (1-based) arrives or is aborted by the client, so tests need no sleeps.
 */
import { once } from "node:events"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { type Protocol, type ReplySpec, renderFrames } from "./fake-llm-events.ts"

export type { FakeUsage, Protocol, ReplySpec } from "./fake-llm-events.ts"

export type Behaviour =
  | { readonly kind: "reply"; readonly spec: ReplySpec }
  | { readonly kind: "status"; readonly status: number; readonly headers?: Record<string, string>; readonly body?: unknown }
  | { readonly kind: "hang" }
  | { readonly kind: "cut"; readonly spec: ReplySpec; readonly after: number; readonly mode: "close" | "error" }
  | { readonly kind: "stall"; readonly spec: ReplySpec; readonly after: number }
  | { readonly kind: "raw"; readonly body: string }
  | { readonly kind: "endless"; readonly spec: ReplySpec; readonly marker: string; readonly within: boolean }
  | { readonly kind: "gated"; readonly spec: ReplySpec; readonly marker: string; readonly gate: Promise<unknown> }

/** Environment entries that keep a client's requests to the fake off any proxy (merged into a child's env). */
export const NO_PROXY_ENV: Readonly<Record<string, undefined>> = {
  HTTP_PROXY: undefined,
  HTTPS_PROXY: undefined,
  ALL_PROXY: undefined,
  http_proxy: undefined,
  https_proxy: undefined,
  all_proxy: undefined,
}

export const reply = (spec: ReplySpec): Behaviour => ({ kind: "reply", spec })
export const toolCall = (name: string, args: string | object, chunks = 1): Behaviour => reply({ toolCalls: [{ name, args, chunks }] })
export const status = (code: number, opts: { headers?: Record<string, string>; body?: unknown } = {}): Behaviour => ({
  kind: "status",
  status: code,
  ...opts,
})
export const rateLimited = (retryAfter: string): Behaviour => status(429, { headers: { "retry-after": retryAfter } })
export const hang = (): Behaviour => ({ kind: "hang" })
/** The first `after` frames of the reply, then the connection ends (`close`: cleanly; `error`: broken). */
export const cut = (spec: ReplySpec, after: number, mode: "close" | "error" = "close"): Behaviour => ({ kind: "cut", spec, after, mode })
export const stall = (spec: ReplySpec, after: number): Behaviour => ({ kind: "stall", spec, after })
export const raw = (body: string): Behaviour => ({ kind: "raw", body })
/** The reply's frames up to the first that holds `marker`, then that frame for ever (until the client aborts). */
export const endless = (spec: ReplySpec, marker: string, within = false): Behaviour => ({ kind: "endless", spec, marker, within })
/** The reply's frames up to the first that holds `marker`, then (once `gate` resolves) the rest: a model that writes slowly. */
export const gated = (spec: ReplySpec, marker: string, gate: Promise<unknown>): Behaviour => ({ kind: "gated", spec, marker, gate })

export interface FakeRequest {
  readonly n: number
  readonly protocol: Protocol
  readonly path: string
  /** The query string as sent (`?a=1`), or "". */
  readonly query: string
  readonly headers: Readonly<Record<string, string>>
  /** The JSON body as the SDK sent it (null when it was not JSON). */
  readonly body: any
}

export type Responder = (request: FakeRequest) => Behaviour | Promise<Behaviour>

export const PATHS: Readonly<Record<Exclude<Protocol, "gemini">, string>> = {
  chat: "/v1/chat/completions",
  responses: "/v1/responses",
  anthropic: "/v1/messages",
}

const GEMINI_PATH = /^\/v1beta\/models\/[^/]+:streamGenerateContent$/

/** Azure's deployment-scoped Chat Completions path (`/openai/deployments/<name>/chat/completions`) is Chat Completions too. */
const protocolOf = (path: string): Protocol | null =>
  (Object.entries(PATHS) as Array<[Protocol, string]>).find(([, p]) => p === path)?.[0] ??
  (/^\/openai\/deployments\/[^/]+\/chat\/completions$/.test(path) ? "chat" : GEMINI_PATH.test(path) ? "gemini" : null)

const errorBody = (code: number) => ({ error: { type: code === 429 ? "rate_limit_error" : "api_error", message: `fake status ${code}` } })

const sseHeaders = { "content-type": "text/event-stream", "cache-control": "no-cache" }

export interface FakeLlm {
  /** `http://127.0.0.1:<port>`; the Anthropic client's baseURL. */
  readonly url: string
  /** `url + "/v1"`; the OpenAI client's baseURL. */
  readonly openAiBaseUrl: string
  readonly requests: ReadonlyArray<FakeRequest>
  /** Numbers of the requests the client aborted before their reply ended. */
  readonly aborted: ReadonlyArray<number>
  readonly enqueue: (protocol: Protocol, ...behaviours: ReadonlyArray<Behaviour>) => void
  readonly waitForRequest: (n: number) => Promise<FakeRequest>
  readonly waitForAbort: (n: number) => Promise<void>
  readonly stop: () => void
}

/** One-shot latches by request number. */
const latches = <A>() => {
  const values = new Map<number, A>()
  const waiters = new Map<number, Array<(a: A) => void>>()
  return {
    set: (n: number, a: A) => {
      values.set(n, a)
      for (const w of waiters.get(n) ?? []) w(a)
      waiters.delete(n)
    },
    wait: (n: number): Promise<A> =>
      values.has(n) ? Promise.resolve(values.get(n) as A) : new Promise((resolve) => waiters.set(n, [...(waiters.get(n) ?? []), resolve])),
  }
}

export const startFakeLlm = async (opts: { readonly respond?: Responder } = {}): Promise<FakeLlm> => {
  const requests: Array<FakeRequest> = []
  const aborted: Array<number> = []
  const queues = new Map<Protocol, Array<Behaviour>>()
  const arrived = latches<FakeRequest>()
  const aborts = latches<void>()

  const write = (res: ServerResponse, behaviour: Behaviour, protocol: Protocol): void => {
    const sse = () => res.writeHead(200, sseHeaders)
    switch (behaviour.kind) {
      case "status":
        res.writeHead(behaviour.status, { "content-type": "application/json", ...behaviour.headers })
        res.end(JSON.stringify(behaviour.body ?? errorBody(behaviour.status)))
        return
      case "raw":
        sse()
        res.end(behaviour.body)
        return
      case "hang":
        return
      case "reply":
        sse()
        res.end(renderFrames(protocol, behaviour.spec).join(""))
        return
      case "endless": {
        sse()
        const frames = renderFrames(protocol, behaviour.spec)
        const at = frames.findIndex((f) => f.includes(behaviour.marker))
        if (at < 0) throw new Error(`fake-llm: no frame holds ${JSON.stringify(behaviour.marker)}`)
        const frame = frames[at]!
        res.write(frames.slice(0, at).join("") + (behaviour.within ? frame.slice(0, frame.indexOf(behaviour.marker)) : ""))
        const again = behaviour.within ? behaviour.marker : frame
        // As fast as the client reads: write until the socket's buffer is full, then wait for it to drain.
        const pump = (): void => {
          while (!res.destroyed && res.write(again)) {}
          if (!res.destroyed) res.once("drain", pump)
        }
        pump()
        return
      }
      case "gated": {
        sse()
        const frames = renderFrames(protocol, behaviour.spec)
        const at = frames.findIndex((f) => f.includes(behaviour.marker))
        if (at < 0) throw new Error(`fake-llm: no frame holds ${JSON.stringify(behaviour.marker)}`)
        res.write(frames.slice(0, at + 1).join(""))
        void behaviour.gate.then(() => res.end(frames.slice(at + 1).join("")))
        return
      }
      case "cut":
      case "stall": {
        sse()
        const frames = renderFrames(protocol, behaviour.spec).slice(0, behaviour.after).join("")
        if (behaviour.kind === "stall") res.write(frames)
        else if (behaviour.mode === "close") res.end(frames)
        else res.write(frames, () => res.socket?.destroy())
        return
      }
    }
  }

  let count = 0
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const n = ++count
    res.on("close", () => {
      if (!res.writableFinished) {
        aborted.push(n)
        aborts.set(n, undefined)
      }
    })
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const { pathname: path, search: query } = new URL(req.url ?? "/", "http://fake")
    const protocol = protocolOf(path)
    let body: unknown = null
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {}
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]))
    const request: FakeRequest = { n, protocol: protocol ?? "chat", path, query, headers, body }
    requests.push(request)
    requests.sort((a, b) => a.n - b.n)
    arrived.set(n, request)
    if (protocol === null) return write(res, status(404, { body: { error: { message: `fake-llm: no route ${path}` } } }), "chat")
    const queued = queues.get(protocol)?.shift()
    const behaviour =
      queued ??
      (opts.respond === undefined
        ? status(500, { body: { error: { message: "fake-llm: nothing scripted" } } })
        : await opts.respond(request))
    write(res, behaviour, protocol)
  }

  const server = createServer((req, res) => void handle(req, res))
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  const port = (server.address() as AddressInfo).port

  const url = `http://127.0.0.1:${port}`
  return {
    url,
    openAiBaseUrl: `${url}/v1`,
    requests,
    aborted,
    enqueue: (protocol, ...behaviours) => queues.set(protocol, [...(queues.get(protocol) ?? []), ...behaviours]),
    waitForRequest: arrived.wait,
    waitForAbort: aborts.wait,
    stop: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}

/** All prompt text of a recorded request (system and messages), for responders that act on the prompt. */
export const promptText = (request: FakeRequest): string => {
  const b = request.body ?? {}
  const parts: Array<unknown> = [b.system, b.instructions, b.messages, b.input, b.systemInstruction, b.contents]
  return parts
    .filter((p) => p !== undefined)
    .map((p) => (typeof p === "string" ? p : JSON.stringify(p)))
    .join("\n")
}

/** Names of the tools a recorded request offers, whatever its protocol. */
/** The tool result ending an Anthropic request's conversation (its content as JSON) and the name of the tool it answers; null when none does. */
export const lastToolResult = (request: FakeRequest): { readonly name: string; readonly text: string } | null => {
  const messages: Array<any> = request.body?.messages ?? []
  const last = messages.at(-1)
  if (last?.role !== "user" || !Array.isArray(last.content)) return null
  const result = last.content.findLast((c: any) => c.type === "tool_result")
  if (result === undefined) return null
  for (const m of [...messages].reverse())
    for (const c of Array.isArray(m.content) ? m.content : [])
      if (c.type === "tool_use" && c.id === result.tool_use_id) return { name: c.name, text: JSON.stringify(result.content) }
  return null
}

export const offeredTools = (request: FakeRequest): Array<string> =>
  ((request.body?.tools ?? []) as Array<{ name?: string; function?: { name: string }; functionDeclarations?: Array<{ name: string }> }>)
    .flatMap((t) => (t.functionDeclarations === undefined ? [t] : t.functionDeclarations))
    .map((t) => ("function" in t ? t.function?.name : undefined) ?? t.name ?? "")
    .filter((name) => name !== "")

/**
 * A one-agent council's replies, as a function of the request: its first round
 * answers `draft`, a later one votes for agent1, and the presentation says
 * "Four.", or "Eight." once the question speaks of doubling (a follow-up turn).
 */
export const loneCouncilReply = (req: FakeRequest): Behaviour => {
  const tools = offeredTools(req)
  if (tools.length === 0) return reply({ text: promptText(req).includes("doubled") ? "Eight." : "Four." })
  if (tools.includes("new_answer") && !promptText(req).includes("<agent1.1>"))
    return reply({ toolCalls: [{ name: "new_answer", args: { content: "draft" } }] })
  return reply({ toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: "good" } }] })
}
