/**
 * Issue 23: `massgen serve` refuses what it cannot trust (findings H5, M6).
 *
 * Each test starts `massgen serve` (from source) on port 0 with a scripted
 * council and talks to it over real loopback sockets: raw HTTP through
 * `node:net` where a test must set the `Host` itself or watch the socket
 * close, `fetch` and the official `openai` SDK elsewhere. Without
 * `--api-key-env`: the start warning, a foreign `Host` or `Origin` refused
 * (403), a `text/plain` POST refused (415), the server's own origin and a
 * request with no `Origin` answered, a single `--host` address as a name too;
 * with a key, no warning and no `Host`
 * check. Limits: a question or a body over the limit is 413 and no run
 * directory is made; a connection quiet past `--idle-timeout-seconds` is
 * closed by the server, while a run quieter than that is still answered,
 * streaming or not; a client that trickles its headers a line a second is
 * cut off unanswered (Bun's header timeout, about 10 s).
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as net from "node:net"
import * as nodePath from "node:path"
import OpenAI from "openai"
import { cleanupSandboxes, type RunningCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const TIMEOUT = 90_000

const scripted = (extra: Record<string, unknown> = {}) => ({
  agents: [{ id: "agent_a", backend: { type: "scripted", answer: "Four.", vote: "agent1", final: "The answer is 4.", ...extra } }],
})

interface Served {
  readonly cli: RunningCli
  readonly url: string
  readonly port: number
  readonly cwd: string
}

const serve = async (doc: unknown, flags: ReadonlyArray<string> = [], env: Record<string, string> = {}): Promise<Served> => {
  const cwd = sandbox()
  const config = writeConfig(cwd, doc, "team.yaml")
  const cli = await startUntilLine("source", ["serve", "--config", config, "--port", "0", ...flags], "Serving ", {
    cwd,
    env,
    timeoutMs: TIMEOUT,
  })
  const url = cli.lines.find((l) => l.startsWith("Serving "))!.split(" ")[1]!
  return { cli, url, port: Number(new URL(url).port), cwd }
}

const stop = async (served: Served) => {
  served.cli.proc.kill("SIGTERM")
  return served.cli.done
}

const logsOf = (served: Served) => nodePath.join(served.cwd, ".massgen", "massgen_logs")
const runDirs = (served: Served): ReadonlyArray<string> => (fs.existsSync(logsOf(served)) ? fs.readdirSync(logsOf(served)) : [])

const completion = (content: string) => JSON.stringify({ model: "team", messages: [{ role: "user", content }] })

interface RawReply {
  readonly status: number
  readonly head: string
  readonly json: any
}

/** One HTTP/1.1 request written as given on a new loopback socket, read until the server closes it. */
const raw = (port: number, request: string): Promise<RawReply> =>
  new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1")
    let got = ""
    socket.setEncoding("utf8")
    socket.on("data", (d: string) => (got += d))
    socket.on("error", reject)
    socket.on("close", () => {
      const at = got.indexOf("\r\n\r\n")
      const head = got.slice(0, at)
      const body = got.slice(at + 4)
      resolve({ status: Number(head.split(" ")[1]), head, json: body === "" ? null : JSON.parse(body) })
    })
    socket.write(request)
  })

/** A POST of `body` to the completions route with these extra header lines, its connection closed after. */
const post = (port: number, headers: ReadonlyArray<string>, body: string) =>
  raw(
    port,
    [`POST /v1/chat/completions HTTP/1.1`, ...headers, `Content-Length: ${Buffer.byteLength(body)}`, "Connection: close", "", body].join(
      "\r\n",
    ),
  )

describe("massgen serve without --api-key-env: only requests addressed to it, only JSON", () => {
  test(
    "the start warning; a foreign Host or Origin is 403, a text/plain POST 415; its own origin and no Origin are answered",
    async () => {
      const served = await serve(scripted())
      const own = `127.0.0.1:${served.port}`
      const json = "Content-Type: application/json"
      try {
        // The probe's cross-origin "simple" POST: text/plain, foreign Host and Origin.
        const evil = await post(
          served.port,
          [`Host: evil.example:${served.port}`, `Origin: http://evil.example:${served.port}`, "Content-Type: text/plain"],
          completion("q"),
        )
        expect(evil.status).toBe(403)
        expect(evil.json.error).toMatchObject({ type: "invalid_request_error", code: "forbidden_host" })
        expect(evil.json.error.message).toContain("evil.example")
        // A rebinding page: its own name in Host, whatever the body.
        expect((await post(served.port, [`Host: evil.example:${served.port}`, json], completion("q"))).status).toBe(403)
        // A loopback name on another port is not this server.
        expect((await post(served.port, [`Host: 127.0.0.1:${served.port + 1}`, json], completion("q"))).status).toBe(403)
        // A page of another loopback origin, addressed to the right host.
        const page = await post(served.port, [`Host: ${own}`, `Origin: http://localhost:${served.port + 1}`, json], completion("q"))
        expect(page.status).toBe(403)
        expect(page.json.error.message).toContain(`the Origin "http://localhost:${served.port + 1}" is not this server's own`)
        expect((await post(served.port, [`Host: ${own}`, "Origin: null", json], completion("q"))).status).toBe(403)
        expect((await raw(served.port, `GET /health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`)).status).toBe(403)
        // The right host, but not JSON: 415 naming the type.
        const plain = await post(served.port, [`Host: ${own}`, "Content-Type: text/plain"], completion("q"))
        expect(plain.status).toBe(415)
        expect(plain.json.error).toMatchObject({
          type: "invalid_request_error",
          code: "unsupported_media_type",
          message: 'the Content-Type "text/plain" is not supported: send the body as application/json',
        })
        expect((await post(served.port, [`Host: ${own}`, "Content-Type: application/x-www-form-urlencoded"], completion("q"))).status).toBe(
          415,
        )
        expect((await post(served.port, [`Host: ${own}`], completion("q"))).json.error.message).toStartWith(
          "no Content-Type is not supported",
        )
        expect(runDirs(served)).toEqual([])

        // Answered: the server's own origin, the other loopback names, and no Origin at all (curl, the SDK).
        const same = await post(
          served.port,
          [`Host: ${own}`, `Origin: http://${own}`, "Content-Type: application/json; charset=utf-8"],
          completion("q1"),
        )
        expect(same.status).toBe(200)
        expect(same.json.choices[0].message.content).toBe("The answer is 4.")
        // Each its own question: the same request again would be the same run.
        expect((await post(served.port, [`Host: localhost:${served.port}`, json], completion("q2"))).status).toBe(200)
        expect((await post(served.port, [`Host: [::1]:${served.port}`, json], completion("q3"))).status).toBe(200)
        const sdk = new OpenAI({ baseURL: served.url, apiKey: "unused", maxRetries: 0 })
        expect(
          (await sdk.chat.completions.create({ model: "team", messages: [{ role: "user", content: "q4" }] })).choices[0]!.message.content,
        ).toBe("The answer is 4.")
        expect(runDirs(served).length).toBe(4)
      } finally {
        const done = await stop(served)
        expect(done.exitCode).toBe(0)
        expect(done.stderr).toBe(
          "massgen: warning: serving without --api-key-env: any local user and any local process can run the council on your API keys, and its tools run as this user\n",
        )
      }
    },
    TIMEOUT,
  )

  test(
    "on a single address beyond the loopback names: that address is its own name too, and the warning says who is answered",
    async () => {
      const served = await serve(scripted(), ["--host", "127.0.0.2"])
      try {
        expect(served.url).toBe(`http://127.0.0.2:${served.port}/v1`)
        const sdk = new OpenAI({ baseURL: served.url, apiKey: "unused", maxRetries: 0 })
        expect(
          (await sdk.chat.completions.create({ model: "team", messages: [{ role: "user", content: "q" }] })).choices[0]!.message.content,
        ).toBe("The answer is 4.")
        const socket = net.connect(served.port, "127.0.0.2")
        const refused = await new Promise<string>((resolve) => {
          let got = ""
          socket.on("data", (d) => (got += d))
          socket.on("close", () => resolve(got.split("\r\n")[0]!))
          socket.write(`GET /health HTTP/1.1\r\nHost: evil.example:${served.port}\r\nConnection: close\r\n\r\n`)
        })
        expect(refused).toBe("HTTP/1.1 403 Forbidden")
      } finally {
        const done = await stop(served)
        expect(done.stderr).toBe(
          "massgen: warning: serving on 127.0.0.2 without --api-key-env: anyone who can reach this port can run the council on your API keys, and its tools run as this user; only requests whose Host is 127.0.0.1, localhost, [::1], 127.0.0.2 (with the port) are answered\n",
        )
      }
    },
    TIMEOUT,
  )

  test(
    "with --api-key-env: no warning, and the key, not the Host, decides",
    async () => {
      const served = await serve(scripted(), ["--api-key-env", "SERVE_TRUST_KEY"], { SERVE_TRUST_KEY: "s3cret" })
      try {
        const named = await post(
          served.port,
          [`Host: massgen.internal:${served.port}`, "Authorization: Bearer s3cret", "Content-Type: application/json"],
          completion("q"),
        )
        expect(named.status).toBe(200)
        expect(
          (await post(served.port, [`Host: massgen.internal:${served.port}`, "Content-Type: application/json"], completion("q"))).status,
        ).toBe(401)
        expect(
          (
            await post(
              served.port,
              [`Host: 127.0.0.1:${served.port}`, "Authorization: Bearer s3cret", "Content-Type: text/plain"],
              completion("q"),
            )
          ).status,
        ).toBe(415)
      } finally {
        const done = await stop(served)
        expect(done.stderr).toBe("")
      }
    },
    TIMEOUT,
  )
})

describe("massgen serve's limits", () => {
  test(
    "a question over --max-question-bytes and a body over --max-body-bytes are 413 before anything is written",
    async () => {
      const served = await serve(scripted(), ["--max-question-bytes", "100", "--max-body-bytes", "2000"])
      const sdk = new OpenAI({ baseURL: served.url, apiKey: "unused", maxRetries: 0 })
      try {
        const long = await sdk.chat.completions
          .create({ model: "team", messages: [{ role: "user", content: "é".repeat(51) }] })
          .catch((e) => e)
        expect(long).toBeInstanceOf(OpenAI.APIError)
        expect(long.status).toBe(413)
        expect(long.error).toMatchObject({
          code: "question_too_large",
          message: "the messages' text is 102 bytes, over this server's limit of 100 (--max-question-bytes)",
        })
        // The conversation before the question counts too.
        const history = [
          { role: "user" as const, content: "a".repeat(60) },
          { role: "assistant" as const, content: "b".repeat(30) },
          { role: "user" as const, content: "c".repeat(11) },
        ]
        expect(await sdk.chat.completions.create({ model: "team", messages: history }).catch((e) => e.status)).toBe(413)
        // A body over the limit, declared...
        const big = JSON.stringify({
          model: "team",
          messages: [
            { role: "system", content: "s".repeat(3000) },
            { role: "user", content: "q" },
          ],
        })
        const declared = await post(served.port, [`Host: 127.0.0.1:${served.port}`, "Content-Type: application/json"], big)
        expect(declared.status).toBe(413)
        expect(declared.json.error).toMatchObject({
          code: "body_too_large",
          message: "the request body is over this server's limit of 2000 bytes (--max-body-bytes)",
        })
        // ... or chunked, with no length to go by.
        const chunked = await raw(
          served.port,
          [
            `POST /v1/chat/completions HTTP/1.1`,
            `Host: 127.0.0.1:${served.port}`,
            "Content-Type: application/json",
            "Transfer-Encoding: chunked",
            "",
            `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`,
          ].join("\r\n"),
        )
        expect(chunked.status).toBe(413)
        expect(runDirs(served)).toEqual([])
        // At the limit, a question is run.
        expect(
          (await sdk.chat.completions.create({ model: "team", messages: [{ role: "user", content: "a".repeat(100) }] })).choices[0]!.message
            .content,
        ).toBe("The answer is 4.")
      } finally {
        await stop(served)
      }
    },
    TIMEOUT,
  )

  test(
    "a connection quiet past --idle-timeout-seconds is closed by the server; runs quieter than that are still answered, streaming or not",
    async () => {
      const served = await serve(scripted({ delay_seconds: 6 }), ["--idle-timeout-seconds", "1", "--max-concurrent-runs", "2"])
      try {
        const sdk = new OpenAI({ baseURL: served.url, apiKey: "unused", maxRetries: 0 })
        const quiet = sdk.chat.completions.create({ model: "team", messages: [{ role: "user", content: "slow?" }] })
        const streamed = (async () => {
          let content = ""
          for await (const chunk of await sdk.chat.completions.create({
            model: "team",
            messages: [{ role: "user", content: "slow stream?" }],
            stream: true,
          }))
            content += chunk.choices[0]?.delta.content ?? ""
          return content
        })()
        // A keep-alive connection after its answer, then silence: the server closes it.
        const closedBy = await new Promise<string>((resolve, reject) => {
          const socket = net.connect(served.port, "127.0.0.1")
          let got = ""
          socket.setEncoding("utf8")
          socket.on("data", (d: string) => (got += d))
          socket.on("error", reject)
          socket.on("end", () => resolve(got.includes('"status":"ok"') ? "server after the answer" : `server before the answer: ${got}`))
          socket.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\n\r\n`)
        })
        expect(closedBy).toBe("server after the answer")
        expect((await quiet).choices[0]!.message.content).toBe("The answer is 4.")
        expect(await streamed).toBe("The answer is 4.")
      } finally {
        await stop(served)
      }
    },
    TIMEOUT,
  )

  test(
    "a client that sends its headers a line a second (a slow loris) is cut off, unanswered, long before they end",
    async () => {
      const served = await serve(scripted())
      try {
        const LINES = 60
        const outcome = await new Promise<{ sent: number; reply: string }>((resolve, reject) => {
          const socket = net.connect(served.port, "127.0.0.1")
          let sent = 0
          let reply = ""
          socket.setEncoding("utf8")
          socket.on("data", (d: string) => (reply += d))
          socket.on("error", () => undefined)
          const trickle = setInterval(() => {
            if (sent === LINES) {
              clearInterval(trickle)
              socket.destroy()
              reject(new Error(`the server kept a connection open through ${LINES} header lines`))
            } else socket.write(`X-Slow-${sent++}: a\r\n`)
          }, 1000)
          socket.on("close", () => {
            clearInterval(trickle)
            resolve({ sent, reply })
          })
          socket.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\n`)
        })
        expect(outcome.reply).toBe("")
        expect(outcome.sent).toBeLessThan(60)
        // The server still answers others.
        expect((await raw(served.port, `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\nConnection: close\r\n\r\n`)).status).toBe(
          200,
        )
      } finally {
        await stop(served)
      }
    },
    TIMEOUT,
  )
})
