/**
 * Issue 25: the web view's page as the server sends it, and every answer in it.
 *
 * `massgen viewer DIR --web` serves a page whose HTML already holds the run
 * (question, agents, every answer, votes, the final answer, elapsed time), all
 * model text escaped: read with plain HTTP, in Chromium with JavaScript off,
 * and by a one-shot `chromium --headless --dump-dom --virtual-time-budget`
 * (and `--screenshot`) on a run still going, which must return on its own
 * (Chromium's virtual time does not move while a load is pending; the page's
 * stream must not be one). The script renders the same markup the server did;
 * every answer, the losing and replaced ones too, opens from its agent's card.
 * After a run is stopped and resumed, the elapsed time shown is where the
 * timeline ends; a run whose process is gone says STOPPED, its clock at its
 * last event.
 *
 * The council: the fixture's three scripted agents, the planner answering
 * twice (agent1.1 replaced by agent1.2), the critic's answer and vote reason
 * hostile HTML (and `$'`, which a string replacement would read as a pattern).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { escapeHtml } from "../src/cli/web/markdown.ts"
import type { Event } from "../src/domain/events/index.ts"
import { CHROMIUM, CHROMIUM_ARGS } from "./support/chromium.ts"
import { cleanupSandboxes, type RunningCli, runCli, sandbox, startCli } from "./support/cli.ts"
import { crashedRun, deadPid, ENV, expectExit } from "./support/run-dirs.ts"
import { COUNCIL, eventLines, metaAt, playCouncil, QUESTION, shiftEvents, writeRunDir } from "./support/view-fixtures.ts"

const HOSTILE = `Read <script>alert("owned")</script> one book & do <img src=x onerror="alert(2)"> every exercise. $' $& $1`
const HOSTILE_REASON = `</td><script>alert(3)</script> it is short`

const REVISING = {
  ...COUNCIL,
  agents: COUNCIL.agents.map((a) =>
    a.id === "planner"
      ? { ...a, backend: { ...a.backend, keep_answering: true } }
      : a.id === "critic"
        ? { ...a, backend: { ...a.backend, answer: HOSTILE, reason: HOSTILE_REASON } }
        : a,
  ),
}

type Answered = Extract<Event, { _tag: "answer_submitted" }>

let browser: Browser
let withJs: BrowserContext
let withoutJs: BrowserContext
let events: Array<Event>
let answers: Array<Answered>

beforeAll(async () => {
  events = shiftEvents((await playCouncil(REVISING)).events, Date.now())
  answers = events.filter((e): e is Answered => e._tag === "answer_submitted")
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
  withJs = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  withoutJs = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false })
})

afterAll(async () => {
  await browser?.close()
  cleanupSandboxes()
})

/** `massgen viewer DIR --web` on a free port; its URL once it serves (and, for a finished run, once the replay is fed). */
const serve = async (dir: string, done: boolean): Promise<{ viewer: RunningCli; url: string }> => {
  const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser"], { timeoutMs: 150_000 })
  const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await viewer.waitForLine("Serving the "))![1]!
  if (done) await viewer.waitForLine("The run is complete")
  return { viewer, url }
}

const stop = async (viewer: RunningCli) => {
  viewer.proc.kill("SIGINT")
  expect((await viewer.done).exitCode).toBe(0)
}

const finishedRun = (name: string) => writeRunDir(nodePath.join(sandbox(), name), events, { complete: true })

/** Chromium run once as a command, killed only if it has not returned after `timeoutMs` (generous: no wall-clock claim). */
const oneShot = async (args: ReadonlyArray<string>, timeoutMs = 120_000) => {
  const profile = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-chromium-"))
  const proc = Bun.spawn([CHROMIUM, ...CHROMIUM_ARGS, `--user-data-dir=${profile}`, ...args], { stdout: "pipe", stderr: "pipe" })
  let killed = false
  const timer = setTimeout(() => {
    killed = true
    proc.kill("SIGKILL")
  }, timeoutMs)
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  fs.rmSync(profile, { recursive: true, force: true })
  return { stdout, stderr, exitCode, killed }
}

describe("the page as the server sends it", () => {
  test("GET / holds the run: question, agents, every answer, votes, winner, final answer, elapsed; model text escaped", async () => {
    const dir = finishedRun("log_20260201_000000_000000")
    const { viewer, url } = await serve(dir, true)
    const response = await fetch(url)
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8")
    const html = await response.text()
    const status = JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))

    expect(html).toContain(`<div class="question" id="question">${QUESTION}</div>`)
    expect(html).toContain(`<title>MassGen · done · ${QUESTION.slice(0, 60)}</title>`)
    expect(html).toContain(`<span id="state" class="badge done">DONE · completed</span>`)
    expect(html).toContain(`<b id="elapsed">${status.meta.elapsed_seconds.toFixed(1)}s</b>`)
    expect([...html.matchAll(/<div class="card s-\w+" data-agent="(\w+)">/g)].map((m) => m[1])).toEqual(["planner", "researcher", "critic"])
    // Every answer, whole and escaped, the replaced and losing ones too.
    expect(answers.map((a) => a.label)).toEqual(["agent1.1", "agent2.1", "agent3.1", "agent1.2"])
    for (const a of answers) expect(html).toContain(`id="answer-${a.label}">${escapeHtml(a.content)}</pre>`)
    expect(html).toMatch(
      /<span class="chip">agent1\.1<\/span> <b>planner<\/b> <span class="muted">round \d+ · 0 votes · replaced by agent1\.2<\/span>/,
    )
    expect(html).toMatch(
      /<span class="chip">agent2\.1<\/span> <b>researcher<\/b> <span class="muted">round \d+ · 3 votes · winning answer<\/span>/,
    )
    // Votes and the final answer, rendered from Markdown.
    expect(html).toContain(`<td>critic</td><td>researcher (agent2.1)</td><td class="muted">${escapeHtml(HOSTILE_REASON)}</td>`)
    expect(html).toContain("tally: agent1.2: 0 · agent2.1: 3 · agent3.1: 0")
    expect(html).toContain("by researcher (agent2.1, presentation)")
    expect(html).toContain("<h2>Learn by building</h2>")
    // No markup of a model's: the page's own script is the only one, and no image.
    expect(html.split("<script").length - 1).toBe(1)
    expect(html).not.toContain("<img")
    expect(html).not.toContain("</td><script>")
    await stop(viewer)
  }, 60_000)

  test("with JavaScript off, Chromium shows the run, and every answer opens", async () => {
    const { viewer, url } = await serve(finishedRun("log_20260201_000000_000001"), true)
    const page = await withoutJs.newPage()
    await page.goto(url)
    expect(await page.locator("#state").textContent()).toBe("DONE · completed")
    expect(await page.locator(".note").textContent()).toStartWith("Without JavaScript this page shows the run as it was")
    expect(await page.locator(".card").count()).toBe(3)
    expect(await page.locator("#final-answer h2").textContent()).toBe("Learn by building")
    expect(await page.locator("#question").textContent()).toBe(QUESTION)
    const details = page.locator("#answers details")
    expect(await details.count()).toBe(answers.length)
    for (const [i, a] of answers.entries()) {
      const text = details.nth(i).locator("pre")
      expect(await text.isVisible()).toBe(false)
      await details.nth(i).locator("summary").click()
      expect(await text.isVisible()).toBe(true)
      expect(await text.textContent()).toBe(a.content)
    }
    expect(await page.locator("#answers img, #answers script, #votes script").count()).toBe(0)
    expect(await page.locator('#votes tr:has-text("critic") td.muted').textContent()).toBe(HOSTILE_REASON)
    await page.close()
    await stop(viewer)
  }, 60_000)

  test("the script renders the markup the server rendered", async () => {
    const { viewer, url } = await serve(finishedRun("log_20260201_000000_000002"), true)
    const still = await withoutJs.newPage()
    await still.goto(url)
    const live = await withJs.newPage()
    await live.goto(url)
    // `view` is the page script's latest view: set once the stream's first view is rendered.
    await live.waitForFunction("typeof view === 'object' && view !== null")
    const regions = ["#agents", "#answers", "#votes", "#final-meta", "#final-answer", "#files-section", "#timeline", "#question"]
    const markup = (page: Page) => page.evaluate(`${JSON.stringify(regions)}.map((id) => [id, document.querySelector(id).innerHTML])`)
    const header = (page: Page) => page.locator("header .row").textContent()
    expect(await live.locator("#answers details").count()).toBe(answers.length)
    expect(await markup(live)).toEqual(await markup(still))
    expect(await header(live)).toBe(await header(still))
    expect(await live.title()).toBe(await still.title())
    await still.close()
    await live.close()
    await stop(viewer)
  }, 60_000)
})

describe("a one-shot render of a run still going", () => {
  test("chromium --headless --dump-dom and --screenshot with --virtual-time-budget return on their own and show the run", async () => {
    const dir = nodePath.join(sandbox(), "log_20260201_000000_000003")
    // Everything but the presentation: written by this process, which lives, so the viewer follows it live.
    writeRunDir(
      dir,
      events.slice(
        0,
        events.findIndex((e) => e._tag === "presentation_started"),
      ),
    )
    const { viewer, url } = await serve(dir, false)

    const dump = await oneShot(["--dump-dom", "--virtual-time-budget=5000", url])
    expect({ killed: dump.killed, exitCode: dump.exitCode }).toEqual({ killed: false, exitCode: 0 })
    expect(dump.stdout).toContain(`<span id="state" class="badge live">LIVE</span>`)
    expect(dump.stdout).toContain(QUESTION)
    expect([...dump.stdout.matchAll(/data-agent="(\w+)"/g)].map((m) => m[1])).toEqual(["planner", "researcher", "critic"])
    for (const a of answers) expect(dump.stdout).toContain(escapeHtml(a.content).replaceAll("&quot;", '"').replaceAll("&#39;", "'"))
    expect(dump.stdout).not.toContain("connecting")

    const shot = nodePath.join(sandbox(), "page.png")
    const screenshot = await oneShot([`--screenshot=${shot}`, "--window-size=1280,900", "--virtual-time-budget=5000", url])
    expect({ killed: screenshot.killed, exitCode: screenshot.exitCode }).toEqual({ killed: false, exitCode: 0 })
    expect(fs.readFileSync(shot).subarray(1, 4).toString()).toBe("PNG")

    expect(viewer.lines.some((l) => l.startsWith("The run is complete"))).toBe(false)
    await stop(viewer)
  }, 300_000)
})

describe("every answer in the live page", () => {
  test("a chip on a card opens its answer; an answer opened stays open while the run goes on", async () => {
    const dir = nodePath.join(sandbox(), "log_20260201_000000_000004")
    const second = events.findIndex((e) => e._tag === "answer_submitted" && e.label === "agent1.2")
    writeRunDir(dir, events.slice(0, second + 1))
    const { viewer, url } = await serve(dir, false)
    const page = await withJs.newPage()
    await page.goto(url)
    await page.waitForFunction("typeof view === 'object' && view !== null")
    const planner = page.locator('.card[data-agent="planner"]')
    expect(await planner.locator(".chip").allTextContents()).toEqual(["agent1.1", "agent1.2"])

    // The replaced answer: its chip opens it.
    await planner.locator('a.chip:text-is("agent1.1")').click()
    const first = page.locator('#answers details[data-label="agent1.1"]')
    expect(await first.evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(true)
    expect(await first.locator("pre").isVisible()).toBe(true)
    expect(await first.locator("pre").textContent()).toBe(answers.find((a) => a.label === "agent1.1")!.content)
    expect(await first.locator("summary").textContent()).toContain("replaced by agent1.2")

    // The rest of the run: still open; the losing hostile answer reads as text.
    fs.appendFileSync(nodePath.join(dir, "events.jsonl"), eventLines(events.slice(second + 1)))
    await page.waitForFunction(`document.querySelector("#state")?.textContent === "DONE · completed"`)
    expect(await first.evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(true)
    const critic = page.locator('#answers details[data-label="agent3.1"]')
    await page.locator('.card[data-agent="critic"] a.chip').click()
    expect(await critic.locator("pre").textContent()).toBe(HOSTILE)
    expect(await critic.locator("summary").textContent()).toContain("0 votes")
    expect(await page.locator("#answers img, #answers script, #votes script").count()).toBe(0)
    await page.close()
    await stop(viewer)
  }, 90_000)
})

describe("a run stopped and resumed", () => {
  test("the elapsed time shown is where the timeline ends, and status.json's elapsed_seconds", async () => {
    const crashed = await crashedRun("source")
    const resumed = await runCli("source", ["resume", "--automation", crashed.dir], { cwd: crashed.cwd, env: ENV })
    expectExit(resumed, 0)
    const lines = fs
      .readFileSync(nodePath.join(crashed.dir, "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; time: string })
    const at = lines.findIndex((l) => l.type === "run_resumed")
    // The pause between the crash's last event and the resume: what the timeline must not count.
    expect(Date.parse(lines[at]!.time) - Date.parse(lines[at - 1]!.time)).toBeGreaterThan(100)
    const elapsed = JSON.parse(fs.readFileSync(nodePath.join(crashed.dir, "status.json"), "utf8")).meta.elapsed_seconds.toFixed(1)

    const { viewer, url } = await serve(crashed.dir, true)
    const html = await (await fetch(url)).text()
    expect(html).toContain(`<b id="elapsed">${elapsed}s</b>`)
    expect([...html.matchAll(/<span class="t">\+([\d.]+)s<\/span>/g)].at(-1)![1]).toBe(elapsed)
    const page = await withJs.newPage()
    await page.goto(url)
    await page.waitForFunction("typeof view === 'object' && view !== null")
    expect(await page.locator("#elapsed").textContent()).toBe(`${elapsed}s`)
    expect(await page.locator("#timeline li .t").last().textContent()).toBe(`+${elapsed}s`)
    expect(await page.locator('#timeline li[data-kind="run_resumed"]').count()).toBe(1)
    await page.close()
    await stop(viewer)
  }, 120_000)
})

describe("a run whose process is gone", () => {
  test("the page says STOPPED, its clock stopped at its last event", async () => {
    const dir = nodePath.join(sandbox(), "log_20260201_000000_000005")
    fs.mkdirSync(dir, { recursive: true })
    const cut = events.findIndex((e) => e._tag === "vote_cast")
    fs.writeFileSync(nodePath.join(dir, "events.jsonl"), eventLines(events.slice(0, cut), { ...metaAt(dir), pid: await deadPid() }))
    const { viewer, url } = await serve(dir, false)
    const page = await withJs.newPage()
    await page.goto(url)
    await page.waitForFunction(`document.querySelector("#state")?.textContent === "STOPPED · its process is gone"`)
    const html = await (await fetch(url)).text()
    expect(html).toContain(`<span id="state" class="badge bad">STOPPED · its process is gone</span>`)
    // Its clock is at its last event (the timeline's newest line may be older: not every event has one).
    const stoppedAt = ((Date.parse(events[cut - 1]!.time) - Date.parse(events[0]!.time)) / 1000).toFixed(1)
    expect(html).toContain(`<b id="elapsed">${stoppedAt}s</b>`)
    expect(await page.locator("#elapsed").textContent()).toBe(`${stoppedAt}s`)
    const last = [...html.matchAll(/<span class="t">\+([\d.]+)s<\/span>/g)].at(-1)![1]!
    expect(Number(last)).toBeLessThanOrEqual(Number(stoppedAt))
    await page.close()
    await stop(viewer)
  }, 60_000)
})
