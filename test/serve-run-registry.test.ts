/**
 * Issue 26: what makes two `massgen serve` requests one run (`request-key.ts`)
 * and how a request finds its run (`run-registry.ts`), with a clock the test
 * moves and runs the test opens and ends.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { REQUEST_FILE, readRequestRecord, requestKey, requestRecord } from "../src/cli/serve/request-key.ts"
import { type Open, type Opened, runFeed, runRegistry } from "../src/cli/serve/run-registry.ts"
import type { ServedOutcome } from "../src/cli/serve/served-run.ts"
import { cleanupSandboxes, sandbox } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const ask = (content: string, extra: Record<string, unknown> = {}) => ({ model: "team", messages: [{ role: "user", content }], ...extra })

describe("requestKey", () => {
  test("the same model, messages and options are one key, whatever the order of keys, the default model or the stream", () => {
    const key = requestKey("chat.completions", ask("q", { temperature: 0.5 }), "team", null)
    expect(requestKey("chat.completions", { temperature: 0.5, messages: [{ content: "q", role: "user" }] }, "team", null)).toEqual(key)
    expect(
      requestKey("chat.completions", ask("q", { temperature: 0.5, stream: true, stream_options: { include_usage: true } }), "team", null),
    ).toEqual(key)
    expect(key.idempotency).toBeNull()
    for (const other of [ask("q2", { temperature: 0.5 }), ask("q", { temperature: 0.7 }), ask("q", { temperature: 0.5, user: "u" })])
      expect(requestKey("chat.completions", other, "team", null).content).not.toBe(key.content)
    expect(requestKey("chat.completions", ask("q", { temperature: 0.5 }), "other", null).content).not.toBe(key.content)
    expect(requestKey("responses", ask("q", { temperature: 0.5 }), "team", null).content).not.toBe(key.content)
  })

  test("an Idempotency-Key is a key of its own, per model; the record of a run gives the keys back, never the header's text", () => {
    const key = requestKey("chat.completions", ask("q"), "team", "abc-123")
    expect(key.idempotency).toMatch(/^[0-9a-f]{64}$/)
    expect(requestKey("chat.completions", ask("other"), "team", "abc-123").idempotency).toBe(key.idempotency)
    expect(requestKey("chat.completions", ask("q"), "other", "abc-123").idempotency).not.toBe(key.idempotency)
    const record = requestRecord(key, "team")
    expect(record).not.toContain("abc-123")
    expect(readRequestRecord(record)).toEqual(key)
    expect(readRequestRecord("not json")).toBeNull()
  })
})

/** Runs the test opens and ends by hand: what `open` was asked, and how to end each run. */
const harness = (windowMs = 1000) => {
  let now = 0
  const registry = runRegistry(windowMs, () => now)
  const opened: Array<{ readonly recorded: string | null; readonly signal: AbortSignal; end: (outcome: ServedOutcome) => void }> = []
  const open: Open = async (signal, recorded) => {
    let end!: (outcome: ServedOutcome) => void
    const outcome = new Promise<ServedOutcome>((resolve) => (end = resolve))
    opened.push({ recorded, signal, end })
    const logDir = recorded ?? `/logs/run_${opened.length}`
    return { _tag: "run", run: { runId: logDir, logDir, feed: runFeed(), outcome } }
  }
  const join = (key = requestKey("chat.completions", ask("q"), "team", null)) => {
    const joined = registry.join(key, open)
    if (joined._tag !== "joined") throw new Error("conflict")
    return joined
  }
  return { registry, opened, open, join, tick: (ms: number) => (now += ms) }
}

const outcome = (reason: string) => ({ state: { finished: { reason } }, reason }) as unknown as ServedOutcome
const settle = () => new Promise((resolve) => setTimeout(resolve, 0))

describe("runRegistry", () => {
  test("a request again while its run goes on, and within the window after, attaches to it; past the window it is a new run", async () => {
    const h = harness(1000)
    const first = h.join()
    const again = h.join()
    expect(again.attached).toBe(true)
    expect(await again.opened).toBe(await first.opened)
    expect(h.opened).toHaveLength(1)
    h.opened[0]!.end(outcome("error"))
    await settle()
    h.tick(999)
    expect(h.join().attached).toBe(true)
    expect(h.opened).toHaveLength(1)
    h.tick(2)
    const later = h.join()
    expect(later.attached).toBe(false)
    expect(h.opened.map((o) => o.recorded)).toEqual([null, null])
  })

  test("a run that ended stopped is resumed by the next request: opened with its log directory", async () => {
    const h = harness()
    h.join()
    h.opened[0]!.end(outcome("interrupted"))
    await settle()
    const retry = h.join()
    expect(retry.attached).toBe(true)
    expect(((await retry.opened) as Extract<Opened, { _tag: "run" }>).run.logDir).toBe("/logs/run_1")
    expect(h.opened.map((o) => o.recorded)).toEqual([null, "/logs/run_1"])
  })

  test("an Idempotency-Key finds its run, so does the content under another key; the same key with other content is a conflict", () => {
    const h = harness()
    h.join(requestKey("chat.completions", ask("q"), "team", "k1"))
    expect(h.join(requestKey("chat.completions", ask("q"), "team", "k2")).attached).toBe(true)
    expect(h.registry.join(requestKey("chat.completions", ask("other"), "team", "k1"), h.open)._tag).toBe("conflict")
    expect(h.opened).toHaveLength(1)
  })

  test("once every request of a run not yet started has left, it is given up and forgotten", async () => {
    let release!: (opened: Opened) => void
    let signal!: AbortSignal
    const registry = runRegistry(1000)
    const key = requestKey("chat.completions", ask("q"), "team", null)
    const waiting: Open = (s) => {
      signal = s
      return new Promise((resolve) => (release = resolve))
    }
    const a = registry.join(key, waiting)
    const b = registry.join(key, waiting)
    if (a._tag !== "joined" || b._tag !== "joined") throw new Error("conflict")
    a.leave()
    a.leave()
    expect(signal.aborted).toBe(false)
    b.leave()
    expect(signal.aborted).toBe(true)
    release({ _tag: "refused", error: { status: 499, message: "gone", type: "server_error", code: null }, headers: {} })
    const fresh = registry.join(key, waiting)
    expect(fresh._tag === "joined" && fresh.attached).toBe(false)
  })

  test("a run whose requests left while it was being opened, and that started all the same, is found by a retry", async () => {
    let release!: (opened: Opened) => void
    const registry = runRegistry(1000)
    const key = requestKey("chat.completions", ask("q"), "team", null)
    const opening: Open = () => new Promise((resolve) => (release = resolve))
    const gone = registry.join(key, opening)
    if (gone._tag !== "joined") throw new Error("conflict")
    gone.leave()
    const run = { runId: "r", logDir: "/logs/r", feed: runFeed(), outcome: new Promise<ServedOutcome>(() => {}) }
    release({ _tag: "run", run })
    await gone.opened
    const retry = registry.join(key, opening)
    expect(retry._tag === "joined" && retry.attached).toBe(true)
    expect(retry._tag === "joined" && (await retry.opened)).toEqual({ _tag: "run", run })
  })

  test("a refused opening is forgotten: the next request opens again", async () => {
    const registry = runRegistry(1000)
    const key = requestKey("chat.completions", ask("q"), "team", null)
    let opens = 0
    const full: Open = async () => {
      opens += 1
      return { _tag: "refused", error: { status: 429, message: "full", type: "rate_limit_error", code: "queue_full" }, headers: {} }
    }
    const first = registry.join(key, full)
    if (first._tag === "joined") await first.opened
    registry.join(key, full)
    expect(opens).toBe(2)
  })

  test("scan finds the runs of a log root whose log was written within the window, by their recorded keys", async () => {
    const root = sandbox()
    const key = requestKey("chat.completions", ask("q"), "team", null)
    const dirs = ["log_recent", "log_old", "log_unkeyed"].map((n) => nodePath.join(root, n))
    for (const dir of dirs) {
      fs.mkdirSync(dir)
      fs.writeFileSync(nodePath.join(dir, "events.jsonl"), "")
    }
    fs.writeFileSync(nodePath.join(dirs[0]!, REQUEST_FILE), requestRecord(key, "team"))
    fs.writeFileSync(nodePath.join(dirs[1]!, REQUEST_FILE), requestRecord(requestKey("chat.completions", ask("old"), "team", null), "team"))
    const written = fs.statSync(nodePath.join(dirs[0]!, "events.jsonl")).mtimeMs
    fs.utimesSync(nodePath.join(dirs[1]!, "events.jsonl"), new Date(written - 60_000), new Date(written - 60_000))
    const registry = runRegistry(10_000, () => written + 1)
    registry.scan(root)
    const asked: Array<string | null> = []
    const open: Open = async (_signal, recorded) => {
      asked.push(recorded)
      return { _tag: "refused", error: { status: 503, message: "", type: "server_error", code: null }, headers: {} }
    }
    registry.join(key, open)
    registry.join(requestKey("chat.completions", ask("old"), "team", null), open)
    expect(asked).toEqual([dirs[0]!, null])
  })
})

describe("runFeed", () => {
  test("a follower gets what was published, then what comes; after close, nothing is kept", () => {
    const feed = runFeed()
    feed.publish({ _tag: "text", agent: "a", text: "one" })
    const seen: Array<string> = []
    const unfollow = feed.follow((item) => seen.push(item._tag === "text" ? item.text : item.event._tag))
    feed.publish({ _tag: "text", agent: "a", text: "two" })
    unfollow()
    feed.publish({ _tag: "text", agent: "a", text: "three" })
    expect(seen).toEqual(["one", "two"])
    feed.close()
    const late: Array<unknown> = []
    feed.follow((item) => late.push(item))
    expect(late).toEqual([])
  })
})
