/**
 * `massgen viewer`: following a run still being written, replaying a finished
 * one (order, and speed through the TestClock), `--pick` from stdin, and bad
 * directories. The CLI runs from source with stdout piped, so it prints the
 * plain lines; the feed itself is also driven in-process.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect, Fiber, TestClock } from "effect"
import { parseInvocation } from "../src/cli/args/index.ts"
import type { Event } from "../src/domain/events/index.ts"
import { EventStore } from "../src/services/event-store/index.ts"
import {
  type FeedItem,
  type FollowOptions,
  follow as followIn,
  MAX_GAP_MS,
  recordedTexts,
  replay,
  replayDelayMs,
} from "../src/services/log-dir/feed.ts"
import { cleanupSandboxes, runCli, sandbox, startCli } from "./support/cli.ts"
import { effect } from "./support/effect-test.ts"
import type { MemoryRun } from "./support/harness.ts"
import { viewerPick } from "./support/run-dirs.ts"
import { eventLines, metaAt, playCouncil, QUESTION, shiftEvents, writeRunDir } from "./support/view-fixtures.ts"

let run: MemoryRun
let events: Array<Event>
beforeAll(async () => {
  run = await playCouncil()
  events = shiftEvents(run.events, Date.now())
})
afterAll(cleanupSandboxes)

/** Follows a run through a store of its own, as the viewer does. */
const follow = (dir: string, sink: (item: FeedItem) => Effect.Effect<void>, options: FollowOptions) =>
  followIn(dir, sink, options).pipe(Effect.provide(EventStore.file({ pollMs: options.pollMs ?? 250 })))

const listRuns = (base: string) => Effect.flatMap(EventStore, (store) => store.list(base)).pipe(Effect.provide(EventStore.file()))

/** Resolves once `check()` holds; polls a condition (not a timing guess), bounded. */
const until = async (check: () => boolean, what: string, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(5)
  }
}

describe("replay", () => {
  test("gaps are divided by the speed and capped at 2 s; speed 0 means no wait", () => {
    expect(replayDelayMs("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z", 0)).toBe(0)
    expect(replayDelayMs("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z", 4)).toBe(250)
    expect(replayDelayMs("2026-01-01T00:00:00.000Z", "2026-01-01T00:01:00.000Z", 1)).toBe(MAX_GAP_MS)
    expect(replayDelayMs("2026-01-01T00:00:05.000Z", "2026-01-01T00:00:01.000Z", 1)).toBe(0)
  })

  const timed = (offsets: ReadonlyArray<number>) =>
    offsets.map((ms, i) => ({ ...events[i]!, time: new Date(1_000_000 + ms).toISOString() }))

  effect("events come in file order, each after its scaled gap (TestClock)", () =>
    Effect.gen(function* () {
      const recorded = timed([0, 1000, 1500, 6000, 6000])
      const seen: Array<string> = []
      const fiber = yield* Effect.fork(
        replay(recorded, 2, (item) => Effect.sync(() => item._tag === "event" && seen.push(item.event.time))),
      )
      yield* TestClock.adjust("0 millis")
      expect(seen.length).toBe(1)
      yield* TestClock.adjust("499 millis")
      expect(seen.length).toBe(1)
      yield* TestClock.adjust("1 millis") // 1000 ms / 2
      expect(seen.length).toBe(2)
      yield* TestClock.adjust("250 millis") // 500 ms / 2
      expect(seen.length).toBe(3)
      yield* TestClock.adjust("1999 millis") // 4500 ms / 2 = 2250, capped at 2000
      expect(seen.length).toBe(3)
      yield* TestClock.adjust("1 millis")
      expect(seen.length).toBe(5) // the same time: no wait
      yield* Fiber.join(fiber)
      expect(seen).toEqual(recorded.map((e) => e.time))
    }),
  )

  effect("at speed 0 a whole run is delivered at once, in order", () =>
    Effect.gen(function* () {
      const seen: Array<Event> = []
      yield* replay(events, 0, (item) => Effect.sync(() => item._tag === "event" && seen.push(item.event)))
      expect(seen).toEqual(events)
    }),
  )

  effect("what each call streamed, read back from agent_outputs/, comes just before its call_end", () =>
    Effect.gen(function* () {
      const dir = writeRunDir(nodePath.join(sandbox(), "log_20260101_000000_000009"), events, { complete: true, files: run.files })
      const texts = recordedTexts(dir, events)
      const ended = events.flatMap((e) => (e._tag === "call_end" ? [e] : []))
      expect([...texts.keys()].sort((a, b) => a - b)).toEqual(ended.map((e) => e.call).sort((a, b) => a - b))
      const seen: Array<FeedItem> = []
      yield* replay(events, 0, (item) => Effect.sync(() => void seen.push(item)), texts)
      for (const end of ended) {
        const at = seen.findIndex((item) => item._tag === "event" && item.event === end)
        expect(seen[at - 1]).toEqual({ _tag: "text", agent: end.agent, text: texts.get(end.call)!.text })
      }
      const presentation = ended.find((e) => e.role === "presentation")!
      expect(texts.get(presentation.call)!.text).toContain("Learn by building")
      expect(seen.filter((item) => item._tag === "event").map((item) => item._tag === "event" && item.event)).toEqual(events)
    }),
  )

  test("the CLI replays a finished run from its directory and exits 0", async () => {
    const dir = writeRunDir(nodePath.join(sandbox(), "log_20260101_000000_000000"), events, { complete: true })
    const result = await runCli("source", ["viewer", dir])
    expect(result.exitCode).toBe(0)
    expect(result.lines[0]).toStartWith("Run ")
    expect(result.stdout).toContain("[planner] answer agent1.1: Build a small project")
    expect(result.stdout).toContain("Final answer (researcher, presentation):")
    expect(result.lines.at(-1)).toStartWith("Run completed")
  })
})

describe("follow", () => {
  const split = (name: string) => {
    const dir = nodePath.join(sandbox(), name)
    const cut = events.findIndex((e) => e._tag === "answer_submitted")
    writeRunDir(dir, events.slice(0, cut))
    return { dir, path: nodePath.join(dir, "events.jsonl"), rest: events.slice(cut) }
  }

  test("in-process: a torn last line waits for its newline; stops at run_finished", async () => {
    const { dir, path, rest } = split("log_follow")
    const items: Array<FeedItem> = []
    let polls = 0
    const done = Effect.runPromise(
      follow(dir, (item) => Effect.sync(() => void items.push(item)), { pollMs: 20, alive: () => (polls++, true) }),
    )
    await until(() => items.length === events.indexOf(rest[0]!), "the events already written")
    const line = eventLines([rest[0]!])
    fs.appendFileSync(path, line.slice(0, 25))
    const before = polls
    await until(() => polls > before + 1, "two polls after the torn write")
    expect(items.length).toBe(events.indexOf(rest[0]!))
    fs.appendFileSync(path, line.slice(25))
    await until(() => items.length === events.indexOf(rest[0]!) + 1, "the completed line")
    fs.mkdirSync(nodePath.join(dir, "agent_outputs"), { recursive: true })
    fs.appendFileSync(nodePath.join(dir, "agent_outputs", "critic.txt"), "Reading the answers…")
    await until(() => items.some((i) => i._tag === "text"), "streamed text")
    fs.appendFileSync(path, eventLines(rest.slice(1)))
    expect(await done).toBe("finished")
    expect(items.filter((i) => i._tag === "event").map((i) => (i as { event: Event }).event)).toEqual(events)
    expect(items.find((i) => i._tag === "text")).toEqual({ _tag: "text", agent: "critic", text: "Reading the answers…" })
  })

  test("in-process: stops when status.json says is_complete, or when the run's process is gone", async () => {
    const a = split("log_complete")
    fs.writeFileSync(nodePath.join(a.dir, "status.json"), JSON.stringify({ is_complete: true }))
    expect(await Effect.runPromise(follow(a.dir, () => Effect.void, { pollMs: 20 }))).toBe("complete")
    const b = split("log_gone")
    expect(await Effect.runPromise(follow(b.dir, () => Effect.void, { pollMs: 20, alive: () => false }))).toBe("process_gone")
  })

  test("the CLI shows lines as they are appended and exits 0 at run_finished", async () => {
    const { dir, path, rest } = split("log_20260101_000000_000001")
    const viewer = await startCli("source", ["viewer", dir])
    await viewer.waitForLine("[critic] round 1")
    const answers = rest.filter((e) => e._tag === "answer_submitted")
    for (const e of rest) {
      fs.appendFileSync(path, eventLines([e]))
      if (e === answers[0]) await viewer.waitForLine("[planner] answer agent1.1")
      if (e._tag === "vote_cast") await viewer.waitForLine(`[${e.agent}] votes for`)
    }
    const result = await viewer.done
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain("Final answer (researcher, presentation):")
    expect(result.lines.at(-1)).toStartWith("Run completed")
  })
})

describe("choosing a run", () => {
  const base = () => {
    const root = sandbox()
    const logs = nodePath.join(root, "logs")
    writeRunDir(nodePath.join(logs, "log_20260101_000000_000000"), events, { complete: true })
    const live = events.slice(0, 4).map((e) => (e._tag === "run_started" ? { ...e, question: "A second question, still going" } : e))
    writeRunDir(nodePath.join(logs, "log_20260102_000000_000000"), live)
    // Its lock's owner is alive (this test's process): the run is still going.
    fs.writeFileSync(nodePath.join(logs, "log_20260102_000000_000000", "run.lock"), `${process.pid}\n`)
    fs.mkdirSync(nodePath.join(logs, "not_a_run"))
    return { root, logs }
  }

  test("listRuns: newest first, LIVE or DONE, agents and question", async () => {
    const runs = await Effect.runPromise(listRuns(base().logs))
    expect(runs.map((r) => [r.name, r.complete, r.agents, r.question])).toEqual([
      ["log_20260102_000000_000000", false, 3, "A second question, still going"],
      ["log_20260101_000000_000000", true, 3, QUESTION],
    ])
  })

  const pick = (input: string) => {
    const { root, logs } = base()
    return viewerPick(root, logs, input)
  }

  test("--pick lists recent runs and shows the one whose number is typed", async () => {
    const { code, stdout } = await pick("2\n")
    expect(code).toBe(0)
    const lines = stdout.split("\n")
    expect(lines[1]).toMatch(/^ 1\. \[LIVE\] log_20260102_000000_000000 {2}3 agents {2}A second question, still going$/)
    expect(lines[2]).toMatch(/^ 2\. \[DONE\] log_20260101_000000_000000 {2}3 agents {2}How should I learn/)
    expect(lines[3]).toStartWith("Which run?")
    expect(stdout).toContain("Final answer (researcher, presentation):")
  })

  test("--pick asks again after a bad entry, and shows the run then typed", async () => {
    const { code, stdout, stderr } = await pick("7\nabc\n2\n")
    expect(code).toBe(0)
    expect(stderr.trimEnd().split("\n")).toEqual([
      'massgen: expected a number from 1 to 2, found "7"',
      'massgen: expected a number from 1 to 2, found "abc"',
    ])
    expect(stdout.split("\n").filter((l) => l.startsWith("Which run?"))).toHaveLength(3)
    expect(stdout).toContain("Final answer (researcher, presentation):")
  })

  test("--pick with bad entries until the input ends: exit 1, saying no run was chosen", async () => {
    const { code, stderr } = await pick("7\n")
    expect(code).toBe(1)
    expect(stderr.trimEnd().split("\n")).toEqual([
      'massgen: expected a number from 1 to 2, found "7"',
      expect.stringMatching(/^massgen: no run chosen: .*no input/),
    ])
  })

  test("without LOG_DIR the newest run is shown", async () => {
    const { root, logs } = base()
    fs.appendFileSync(nodePath.join(logs, "log_20260102_000000_000000", "events.jsonl"), eventLines(events.slice(4)))
    const result = await runCli("source", ["viewer"], { cwd: root, env: { MASSGEN_LOG_BASE_DIR: logs } })
    expect(result.exitCode).toBe(0)
    expect(result.lines[0]).toContain("A second question, still going")
  })
})

describe("bad directories", () => {
  const oneLineError = async (args: ReadonlyArray<string>, pattern: RegExp, env = {}) => {
    const result = await runCli("source", args, { env })
    expect(result.exitCode).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(pattern)])
  }

  test("a missing directory", () => oneLineError(["viewer", "/no/such/run"], /^massgen: no such log directory: \/no\/such\/run$/))

  test("a directory that is not a run", () => {
    const dir = sandbox()
    return oneLineError(["viewer", dir], /^massgen: not a run's log directory \(no events\.jsonl\): /)
  })

  test("no runs at all under the log base", () =>
    oneLineError(["viewer"], /^massgen: no runs to view under: .*logs/, { MASSGEN_LOG_BASE_DIR: nodePath.join(sandbox(), "logs") }))

  test("bad flags are usage errors", () => {
    expect(parseInvocation(["viewer", "--replay-speed", "fast"])).toMatchObject({ left: { reason: "bad_value" } })
    expect(parseInvocation(["viewer", "--port", "99999", "--web"])).toMatchObject({ left: { reason: "bad_value" } })
    expect(parseInvocation(["viewer", "x", "--pick"])).toMatchObject({ left: { reason: "conflict" } })
    expect(parseInvocation(["viewer", "--no-browser"])).toMatchObject({ left: { reason: "conflict" } })
    expect(parseInvocation(["viewer", "d", "--web", "--port", "0", "--no-browser", "--replay-speed", "2.5"])).toMatchObject({
      right: { _tag: "viewer", logDir: "d", web: true, port: 0, openBrowser: false, replaySpeed: 2.5, pick: false },
    })
  })
})

describe("a run stopped by a signal and then resumed", () => {
  /** The council stopped by Ctrl+C after its first answer, resumed, and still going; status.json is the stopped run's. */
  const resumedRun = (name: string) => {
    const dir = nodePath.join(sandbox(), "logs", name)
    const cut = events.findIndex((e) => e._tag === "answer_submitted") + 1
    const at = events[cut - 1]!.time
    const stopped = [
      ...events.slice(0, cut),
      { _tag: "run_finished", time: at, reason: "interrupted", winner: null, message: "stopped by SIGINT" } as Event,
    ]
    writeRunDir(dir, stopped, { complete: true })
    const resumed = {
      _tag: "run_resumed",
      time: at,
      dropped_lines: 0,
      torn_tail: false,
      restarted_rounds: [],
      presentation_restarted: false,
    } as Event
    fs.appendFileSync(nodePath.join(dir, "events.jsonl"), eventLines([resumed], metaAt(dir)))
    return { dir, path: nodePath.join(dir, "events.jsonl"), written: [...stopped, resumed], rest: events.slice(cut) }
  }

  test("listRuns shows it LIVE though status.json still says is_complete", async () => {
    const { dir } = resumedRun("log_20260103_000000_000000")
    expect(JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8")).is_complete).toBe(true)
    const runs = await Effect.runPromise(listRuns(nodePath.dirname(dir)))
    expect(runs.map((r) => [r.name, r.complete])).toEqual([["log_20260103_000000_000000", false]])
  })

  test("in-process: following goes past the stopped run's run_finished until the resumed run finishes", async () => {
    const { dir, path, written, rest } = resumedRun("log_20260103_000000_000001")
    const items: Array<FeedItem> = []
    // `alive` is asked at each poll that found nothing new, once status.json's is_complete has been passed over.
    const polledTwice = Promise.withResolvers<void>()
    let polls = 0
    const alive = () => {
      polls += 1
      if (polls === 2) polledTwice.resolve()
      return true
    }
    let ended: string | null = null
    const done = Effect.runPromise(follow(dir, (item) => Effect.sync(() => void items.push(item)), { pollMs: 20, alive })).then(
      (end) => (ended = end),
    )
    // Two polls (status.json says is_complete, the log says the run goes on), or the end of following: whichever comes first.
    await Promise.race([polledTwice.promise, done])
    expect(ended).toBeNull()
    expect(items.length).toBe(written.length)
    fs.appendFileSync(path, eventLines(rest))
    expect(await done).toBe("finished")
    expect(items.map((i) => (i as { event: Event }).event)).toEqual([...written, ...rest])
  })
})
