/**
 * The web view in headless Chromium (Debian's `chromium`, driven by
 * playwright-core): `massgen viewer DIR --web --port 0 --no-browser` follows a
 * run whose events.jsonl the test appends to while the page is open; the page
 * must show the new answer, the votes and the final answer (rendered from
 * Markdown, with HTML in it escaped), tokens and cost, with no network.
 * Then the edges (issue 9): a request for any host but the viewer's own
 * loopback address is refused, and a run with a 3 MB answer and final answer
 * is sent to a page once, not again with every tick of the clock.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as nodePath from "node:path"
import { type BrowserContext, chromium } from "playwright-core"
import { markdownToHtml } from "../src/cli/web/markdown.ts"
import type { Event } from "../src/domain/events/index.ts"
import { TAIL_LIMIT } from "../src/domain/projections/view-model.ts"
import { CHROMIUM, CHROMIUM_ARGS } from "./support/chromium.ts"
import { cleanupSandboxes, runCli, sandbox, startCli } from "./support/cli.ts"
import { eventLines, playCouncil, shiftEvents, writeRunDir } from "./support/view-fixtures.ts"

let browser: BrowserContext
let profile: string
let events: Array<Event>
let files: ReadonlyMap<string, string>

beforeAll(async () => {
  profile = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-chromium-"))
  const run = await playCouncil()
  files = run.files
  events = shiftEvents(run.events, Date.now())
  // A fresh profile (user-data-dir) per test file.
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  })
})

afterAll(async () => {
  await browser?.close()
  fs.rmSync(profile, { recursive: true, force: true })
  cleanupSandboxes()
})

describe("markdownToHtml", () => {
  test("renders the usual blocks and inline markup", () => {
    expect(
      markdownToHtml("## Title\n\nSome **bold**, *em* and `code`.\n\n- a\n- b\n\n1. one\n\n> quoted\n\n```ts\nconst x = 1 < 2\n```\n\n---"),
    ).toBe(
      [
        "<h2>Title</h2>",
        "<p>Some <strong>bold</strong>, <em>em</em> and <code>code</code>.</p>",
        "<ul><li>a</li><li>b</li></ul>",
        "<ol><li>one</li></ol>",
        "<blockquote><p>quoted</p></blockquote>",
        '<pre><code class="language-ts">const x = 1 &lt; 2</code></pre>',
        "<hr>",
      ].join("\n"),
    )
  })

  test("never lets HTML or script URLs through", () => {
    expect(markdownToHtml('<img src=x onerror="alert(1)">')).toBe("<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>")
    expect(markdownToHtml("[x](javascript:alert(1))")).toBe("<p>[x](javascript:alert(1))</p>")
    expect(markdownToHtml("[site](https://example.org/a?b=1&c=2)")).toBe(
      '<p><a href="https://example.org/a?b=1&amp;c=2" rel="noopener noreferrer" target="_blank">site</a></p>',
    )
    expect(markdownToHtml("`<b>`")).toBe("<p><code>&lt;b&gt;</code></p>")
  })
})

describe("the web page", () => {
  test("follows a run as it is written: new answer, votes, final answer", async () => {
    const dir = nodePath.join(sandbox(), "log_20260101_000000_000000")
    const firstAnswer = events.findIndex((e) => e._tag === "answer_submitted")
    writeRunDir(dir, events.slice(0, firstAnswer))
    const path = nodePath.join(dir, "events.jsonl")
    const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser"])
    const serving = await viewer.waitForLine("Serving the live run")
    const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(serving)![1]!

    const page = await browser.newPage()
    const requests: Array<string> = []
    page.on("request", (r) => requests.push(r.url()))
    await page.goto(url)
    const card = (id: string) => page.locator(`.card[data-agent="${id}"]`)
    await page.waitForFunction(`document.querySelectorAll(".card").length === 3`)
    expect(await card("planner").locator(".status").textContent()).toBe("streaming")
    expect(await page.locator("#state").textContent()).toBe("LIVE")
    expect(((await (await fetch(`${url}api/view`)).json()) as { mode: string }).mode).toBe("live")
    expect(await card("planner").locator(".model").textContent()).toContain("gpt-4o-mini")
    expect(await page.locator("#question").textContent()).toBe("How should I learn a new programming language?")

    // A new answer appears on its agent's card and in the timeline.
    fs.appendFileSync(path, eventLines([events[firstAnswer]!]))
    await page.waitForFunction(`document.querySelector('.card[data-agent="planner"] .chip')?.textContent === "agent1.1"`)
    expect(await card("planner").locator("pre.tail").textContent()).toBe("Build a small project in the first week.")
    expect(await page.locator("#timeline").textContent()).toContain("answer agent1.1: Build a small project")

    // The first vote.
    const firstVote = events.findIndex((e) => e._tag === "vote_cast")
    fs.appendFileSync(path, eventLines(events.slice(firstAnswer + 1, firstVote + 1)))
    const voter = (events[firstVote] as Extract<Event, { _tag: "vote_cast" }>).agent
    await page.waitForFunction(`document.querySelector('.card[data-agent="${voter}"] .vote')?.textContent?.includes("vote → researcher")`)
    expect(await page.locator("#votes").textContent()).toContain("researcher (agent2.1)")

    // The rest: the final answer, rendered; the run marked done.
    fs.appendFileSync(path, eventLines(events.slice(firstVote + 1)))
    await page.waitForFunction(`document.querySelector("#final-answer h2")?.textContent === "Learn by building"`)
    expect(await page.locator("#final-answer strong").textContent()).toBe("small project")
    expect(await page.locator("#final-answer code").textContent()).toBe("idiomatic")
    expect(await page.locator("#final-answer li").allTextContents()).toEqual(["official tutorial", "code review"])
    expect(await page.locator("#final-answer script").count()).toBe(0)
    expect(await page.locator("#final-answer").textContent()).toContain("<script>alert(1)</script>")
    expect(await page.locator("#state").textContent()).toBe("DONE · completed")
    expect(await page.locator("#final-meta").textContent()).toBe("by researcher (agent2.1, presentation)")
    expect(await page.locator("#tokens").textContent()).toMatch(/^[\d,]+ \([\d,]+ in \/ [\d,]+ out\)$/)
    expect(await page.locator("#cost").textContent()).toBe("$—")
    expect((await page.locator("#timeline li").allTextContents()).at(-1)).toContain("run completed, winner researcher")
    expect(requests.every((u) => u.startsWith(url))).toBe(true)

    await viewer.waitForLine("The run is complete; still serving")
    viewer.proc.kill("SIGINT")
    expect((await viewer.done).exitCode).toBe(0)
    await page.close()
  }, 60_000)

  test("a finished run is replayed to a page that connects later", async () => {
    const dir = writeRunDir(nodePath.join(sandbox(), "log_20260101_000000_000001"), events, { complete: true, files })
    const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser"])
    const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await viewer.waitForLine("Serving the replay"))![1]!
    await viewer.waitForLine("The run is complete")
    const page = await browser.newPage()
    await page.goto(url)
    await page.waitForFunction(`document.querySelector("#state")?.textContent === "DONE · completed"`)
    expect(await page.locator("#final-answer h2").textContent()).toBe("Learn by building")
    expect(await page.locator(".card").count()).toBe(3)
    // What the agents streamed comes back from agent_outputs/: the planner's last call, its vote.
    expect(await page.locator('.card[data-agent="planner"] pre.tail').textContent()).toContain("[vote] agent2")
    expect(await (await fetch(`${url}nope`)).status).toBe(404)
    expect(await (await fetch(`${url}api/view`, { method: "POST" })).status).toBe(405)
    // The page is told it shows a replay (REPLAY, not LIVE, while it plays).
    expect(((await (await fetch(`${url}api/view`)).json()) as { mode: string }).mode).toBe("replay")
    viewer.proc.kill("SIGINT")
    expect((await viewer.done).exitCode).toBe(0)
    await page.close()
  }, 60_000)

  test("a replay at a given speed starts when the first page connects", async () => {
    const dir = writeRunDir(nodePath.join(sandbox(), "log_20260101_000000_000002"), events, { complete: true, files })
    const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser", "--replay-speed", "1000"])
    const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await viewer.waitForLine("Serving the replay"))![1]!
    await viewer.waitForLine("The replay starts when a page connects.")
    const stream = await fetch(`${url}events`)
    expect(stream.headers.get("content-type")).toBe("text/event-stream")
    const reader = stream.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    // What the page is sent on connect is the view before any event: the replay waited for it.
    expect(first).toStartWith("retry: 1000\ndata: ")
    expect(JSON.parse(first.slice(first.indexOf("data: ") + 6))).toMatchObject({ started: false, agents: [] })
    await viewer.waitForLine("The run is complete")
    await reader.cancel()
    viewer.proc.kill("SIGINT")
    expect((await viewer.done).exitCode).toBe(0)
  }, 60_000)

  test("a port already taken is exit 1, naming the address", async () => {
    const dir = writeRunDir(nodePath.join(sandbox(), "log_20260101_000000_000003"), events, { complete: true, files })
    const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") })
    try {
      const result = await runCli("source", ["viewer", dir, "--web", "--port", String(taken.port), "--no-browser"])
      expect(result.exitCode).toBe(1)
      expect(result.stderr).toStartWith(`massgen: cannot serve the web view on: 127.0.0.1:${taken.port} (`)
      expect(result.stderr.trim().split("\n")).toHaveLength(1)
    } finally {
      taken.stop(true)
    }
  }, 60_000)
})

/** The status line and body of a GET sent with the given Host header, on a raw socket (no client rewrites it). */
const getWithHost = (port: number, path: string, host: string): Promise<{ status: number; body: string }> =>
  new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`))
    let text = ""
    socket.on("data", (chunk) => (text += chunk.toString()))
    socket.on("error", reject)
    socket.on("end", () => {
      const body = text.slice(text.indexOf("\r\n\r\n") + 4)
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1]), body })
    })
  })

/** A live run whose winner's answer and final answer are `big`: events up to the final answer, not its end. */
const bigRunDir = (big: string): string => {
  const winner = "researcher"
  const lastFinal = events.findIndex((e) => e._tag === "final_answer")
  const edited = events
    .slice(0, lastFinal + 1)
    .map((e) => ((e._tag === "answer_submitted" && e.agent === winner) || e._tag === "final_answer" ? { ...e, content: big } : e))
  return writeRunDir(nodePath.join(sandbox(), "log_20260101_000000_000009"), edited)
}

/** SSE messages as they arrive: each with its event name and byte count. */
const readSse = async (
  url: string,
  until: (seen: ReadonlyArray<{ event: string; bytes: number; data: string }>) => boolean,
): Promise<Array<{ event: string; bytes: number; data: string }>> => {
  const response = await fetch(url)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const seen: Array<{ event: string; bytes: number; data: string }> = []
  let pending = ""
  while (!until(seen)) {
    const { value, done } = await reader.read()
    if (done) break
    pending += decoder.decode(value, { stream: true })
    for (let end = pending.indexOf("\n\n"); end >= 0; end = pending.indexOf("\n\n")) {
      const block = pending.slice(0, end)
      pending = pending.slice(end + 2)
      const lines = block.split("\n")
      const event =
        lines.find((l) => l.startsWith("event: "))?.slice(7) ?? (lines.some((l) => l.startsWith("data: ")) ? "message" : "comment")
      const bytes = Buffer.byteLength(block) + 2
      seen.push({
        event,
        bytes,
        data: lines
          .filter((l) => l.startsWith("data: "))
          .map((l) => l.slice(6))
          .join("\n"),
      })
    }
  }
  await reader.cancel()
  return seen
}

describe("the web page, at the edges", () => {
  test("only requests for its own loopback address and port are answered; others get 403", async () => {
    const dir = writeRunDir(nodePath.join(sandbox(), "log_20260101_000000_000008"), events, { complete: true, files })
    const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser"])
    const url = /(http:\/\/127\.0\.0\.1:(\d+)\/)/.exec(await viewer.waitForLine("Serving the replay"))!
    const port = Number(url[2])
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
      expect({ host, status: (await getWithHost(port, "/api/view", host)).status }).toEqual({ host, status: 200 })
    }
    for (const host of [
      `evil.example:${port}`,
      "evil.example",
      `127.0.0.1:${port + 1}`,
      `localhost.evil.example:${port}`,
      "127.0.0.1",
      "",
    ]) {
      for (const path of ["/", "/api/view", "/events", "/nope"]) {
        const answer = await getWithHost(port, path, host)
        expect({ host, path, status: answer.status }).toEqual({ host, path, status: 403 })
        expect(answer.body.length).toBeLessThan(200)
        expect(answer.body).not.toContain("researcher")
      }
    }
    viewer.proc.kill("SIGINT")
    expect((await viewer.done).exitCode).toBe(0)
  }, 60_000)

  test("a 3 MB answer and final answer are sent to a page once; the ticks of the clock after it are small", async () => {
    const big = `## The long answer\n\n${Array.from({ length: 64_000 }, (_, i) => `Paragraph ${i}: learn by **building** things.`).join("\n\n")}`
    expect(big.length).toBeGreaterThan(3_000_000)
    const dir = bigRunDir(big)
    // Generous: laying out a 4 MB final answer takes Chromium many seconds on a loaded machine.
    const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser"], { timeoutMs: 150_000 })
    const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await viewer.waitForLine("Serving the live run"))![1]!

    // Once the page has the whole run, five seconds of it with nothing new: ticks of the clock (before: whole views, 10 MB each).
    const synced = (m: { event: string; data: string }) => m.event === "message" && JSON.parse(m.data).final !== null
    const afterSync = <M extends { event: string; data: string }>(s: ReadonlyArray<M>) =>
      s.findIndex(synced) < 0 ? [] : s.slice(s.findIndex(synced) + 1)
    const seen = await readSse(`${url}events`, (s) => afterSync(s).length >= 5 || s.reduce((n, m) => n + m.bytes, 0) > 60_000_000)
    // The answer (on the winner's card, and as the final answer's text) once, its HTML once; nothing heavy again.
    expect(seen.filter((m) => m.event === "text")).toHaveLength(2)
    expect(afterSync(seen).filter((m) => m.event === "tick").length).toBeGreaterThanOrEqual(4)
    expect(afterSync(seen).filter((m) => m.event === "text")).toEqual([])
    expect(afterSync(seen).reduce((n, m) => n + m.bytes, 0)).toBeLessThan(64_000)
    expect(JSON.parse(seen.find(synced)!.data).final.content).toEqual({ $text: expect.any(String) })

    // The page still shows it all, and its clock moves with the ticks.
    const page = await browser.newPage()
    await page.goto(url)
    await page.waitForFunction(
      `document.querySelector("#final-answer")?.lastElementChild?.textContent === "Paragraph 63999: learn by building things."`,
    )
    expect(await page.locator("#final-answer h2").textContent()).toBe("The long answer")
    expect(await page.locator("#final-answer strong").first().textContent()).toBe("building")
    // The card shows the end of it; the answer is whole under Answers.
    const tail = (await page.locator('.card[data-agent="researcher"] pre.tail').textContent())!
    expect(tail.length).toBeLessThanOrEqual(TAIL_LIMIT)
    expect(tail).toEndWith("Paragraph 63999: learn by **building** things.")
    expect(await page.locator("#answers pre").evaluateAll((pres) => pres.map((p) => p.textContent!.length))).toContain(big.length)
    const elapsed = await page.locator("#elapsed").textContent()
    await page.waitForFunction(`document.querySelector("#elapsed").textContent !== ${JSON.stringify(elapsed)}`)
    expect(await page.locator("#state").textContent()).toBe("LIVE")
    await page.close()
    viewer.proc.kill("SIGINT")
    expect((await viewer.done).exitCode).toBe(0)
  }, 180_000)
})
