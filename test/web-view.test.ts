/**
 * The web view in headless Chromium (Debian's `chromium`, driven by
 * playwright-core): `massgen viewer DIR --web --port 0 --no-browser` follows a
 * run whose events.jsonl the test appends to while the page is open; the page
 * must show the new answer, the votes and the final answer (rendered from
 * Markdown, with HTML in it escaped), tokens and cost, with no network.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { type BrowserContext, chromium } from "playwright-core"
import type { Event } from "../src/domain/events.ts"
import { markdownToHtml } from "../src/domain/markdown.ts"
import { cleanupSandboxes, runCli, sandbox, startCli } from "./support/cli.ts"
import { eventLines, playCouncil, shiftEvents, writeRunDir } from "./support/view-fixtures.ts"

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
]

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
    executablePath: "/usr/bin/chromium",
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
    expect(markdownToHtml("## Title\n\nSome **bold**, *em* and `code`.\n\n- a\n- b\n\n1. one\n\n> quoted\n\n```ts\nconst x = 1 < 2\n```\n\n---")).toBe(
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
