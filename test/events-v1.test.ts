/**
 * Logs written by schema 1 (`test/fixtures/v1`, see its README) read by this
 * version: every line is upcast with none skipped, the fold projects the same
 * status.json (its log directory being where the copy is now), and `status`,
 * `replay --check` and `resume` work on copies of them, in-process.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect } from "effect"
import { replayCommand } from "../src/cli/commands/replay.ts"
import { resumeCommand } from "../src/cli/commands/resume.ts"
import { statusCommand } from "../src/cli/commands/status.ts"
import type { CliContext } from "../src/cli/context.ts"
import { readEventsText } from "../src/domain/log/index.ts"
import { project } from "../src/domain/projections/status.ts"
import { foldEvents } from "../src/domain/state/index.ts"
import { EventStore, eventsOf } from "../src/services/event-store/index.ts"

const FIXTURES = nodePath.join(import.meta.dir, "fixtures", "v1")
const tempRoot = fs.mkdtempSync(nodePath.join(os.tmpdir(), "events-v1-test-"))
afterAll(() => fs.rmSync(tempRoot, { recursive: true, force: true }))

/** The finished fixtures, with the exit code a run that ended so gives. */
const FINISHED = { demo: 0, rejected: 0, budget: 3, timeout: 3, resumed: 0 } as const
const ALL = [...Object.keys(FINISHED), "interrupted"]

let copies = 0
/** A copy of a fixture in a directory of its own: a run that was moved. */
const copyOf = (name: string): string => {
  copies += 1
  const dir = nodePath.join(tempRoot, `copy${copies}`, `log_${name}`)
  fs.cpSync(nodePath.join(FIXTURES, name), dir, { recursive: true })
  return dir
}

const readJson = (path: string) => JSON.parse(fs.readFileSync(path, "utf8"))

/** The fixture's status.json as this version projects it for a run now in `dir`. */
/**
 * What this version says differently of the same run, on purpose (issue 9): a cost nothing
 * priced is null, not 0; once a run is over only a completed run's winner is `completed`.
 */
const sinceSchema1 = (stored: any, finished?: { readonly reason: string; readonly message: string | null }) => {
  const agents = Object.fromEntries(
    Object.entries<any>(stored.agents).map(([id, agent]) => {
      // Added since: each agent's tool-call counts (none in these runs).
      const a = { ...agent, tool_calls: { total: 0, errors: 0, hosted: 0 } }
      if (a.status !== "completed" || (stored.finish_reason === "completed" && stored.results.winner === id)) return [id, a]
      return [id, { ...a, status: a.vote_cast !== null ? "voted" : a.answer_count > 0 ? "answered" : "waiting" }]
    }),
  )
  const priced = Object.values<any>(stored.agents).some((a) => a.token_usage.estimated_cost !== null)
  // Added since (issue 25): a run that did not complete says why (`error`) and keeps how far it got,
  // out of two steps per agent: an answer, and a live agent's vote; an agent that is out counts for nothing.
  const completed = stored.finish_reason === "completed"
  const all = Object.values<any>(stored.agents)
  const live = all.filter((a) => a.status !== "failed")
  const progress = Math.min(
    99,
    Math.floor(
      ((live.filter((a) => a.answer_count > 0).length + live.filter((a) => a.vote_cast !== null).length) / (2 * all.length)) * 100,
    ),
  )
  return {
    ...stored,
    agents,
    coordination: { ...stored.coordination, completion_percentage: completed ? 100 : progress },
    costs: { ...stored.costs, total_estimated_cost: priced ? stored.costs.total_estimated_cost : null },
    error: completed || finished === undefined ? null : { reason: finished.reason, message: finished.message },
  }
}

/** The reason and message of the fixture's last `run_finished`, as its log records them. */
const finishedOf = (name: string) => {
  const lines = fs
    .readFileSync(nodePath.join(FIXTURES, name, "events.jsonl"), "utf8")
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l))
  const last = lines.filter((l) => l.type === "run_finished").at(-1)
  return last === undefined ? undefined : { reason: last.reason, message: last.message ?? null }
}

const storedStatusAt = (name: string, dir: string) => {
  const stored = sinceSchema1(readJson(nodePath.join(FIXTURES, name, "status.json")), finishedOf(name))
  return { ...stored, meta: { ...stored.meta, log_dir: dir, session_id: nodePath.basename(dir) } }
}

const cli = (cwd: string) => {
  const out: Array<string> = []
  const ctx: CliContext = {
    env: {},
    cwd,
    argv: [],
    version: "test",
    interrupt: Effect.never,
    print: (line) => void out.push(line),
    printError: (line) => void out.push(`stderr: ${line}`),
  }
  return { ctx, out }
}

const read = (dir: string) => Effect.runPromise(Effect.flatMap(EventStore, (s) => s.read(dir)).pipe(Effect.provide(EventStore.file())))

describe("schema-1 logs", () => {
  for (const name of ALL) {
    test(`${name}: every line is upcast, none skipped; run_started's machine facts are its meta`, async () => {
      const dir = copyOf(name)
      const stream = await read(dir)
      const lines = fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8").trimEnd().split("\n")
      expect(stream).toMatchObject({ skipped: 0, tornTail: false, version: lines.length })
      expect(lines.every((l) => JSON.parse(l).schema === 1)).toBe(true)
      const first = stream.events[0]!
      expect(first.event._tag).toBe("run_started")
      expect(first.event).not.toHaveProperty("log_dir")
      expect(first.meta).toEqual({
        log_dir: JSON.parse(lines[0]!).log_dir,
        pid: JSON.parse(lines[0]!).pid,
        version: JSON.parse(lines[0]!).version,
      })
      expect(first.meta!.log_dir).not.toBe(dir)
    })

    test(`${name}: the fold projects the status.json schema 1 wrote, at the directory where the run is now`, async () => {
      const dir = copyOf(name)
      const state = foldEvents(eventsOf(await read(dir)))
      expect(project(state, state.finished!.time, dir)).toEqual(storedStatusAt(name, dir))
    })

    test(`${name}: status rebuilds status.json for where the run is now`, async () => {
      const dir = copyOf(name)
      const { out } = cli(tempRoot)
      const errors: Array<string> = []
      expect(
        await Effect.runPromise(
          statusCommand(
            dir,
            true,
            (line) => void out.push(line),
            (line) => void errors.push(line),
          ),
        ),
      ).toBe(0)
      const { log, stopped, ...status } = JSON.parse(out.join("\n"))
      expect(status).toEqual(storedStatusAt(name, dir))
      expect(log.skipped).toEqual({ torn_tail: 0, unreadable: 0, newer_schema: 0, duplicate: 0, out_of_order: 0, does_not_fit: 0 })
      expect(errors).toEqual([])
      expect(readJson(nodePath.join(dir, "status.json"))).toEqual(storedStatusAt(name, dir))
    })

    test(`${name}: replay --check makes the same events`, async () => {
      const dir = copyOf(name)
      const { ctx, out } = cli(tempRoot)
      const code = await Effect.runPromise(replayCommand({ logDir: dir, check: true, outDir: nodePath.join(tempRoot, "replays") }, ctx))
      expect(out).toContain("SAME: every event matches the recorded run")
      expect(code).toBe(0)
    })
  }

  for (const [name, exitCode] of Object.entries(FINISHED)) {
    test(`${name}: resume reports the finished run with its exit code and appends nothing`, async () => {
      const dir = copyOf(name)
      const before = fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
      const { ctx, out } = cli(tempRoot)
      expect(await Effect.runPromise(resumeCommand({ logDir: dir, automation: true }, ctx))).toBe(exitCode)
      expect(out[0]).toBe(`LOG_DIR: ${dir}`)
      expect(out.some((l) => l.startsWith(`ANSWER_FILE: ${dir}/final/`))).toBe(true)
      expect(fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")).toBe(before)
      expect(readJson(nodePath.join(dir, "status.json"))).toEqual(storedStatusAt(name, dir))
    })
  }

  test("interrupted: resume continues it to the end; the schema-1 lines stay as they were, the new ones are schema 2", async () => {
    const dir = copyOf("interrupted")
    const before = fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
    const { ctx, out } = cli(tempRoot)
    expect(await Effect.runPromise(resumeCommand({ logDir: dir, automation: true }, ctx))).toBe(0)
    expect(out).toContain("WINNER: agent_a")
    const after = fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
    expect(after.startsWith(before)).toBe(true)
    const added = after.slice(before.length).trimEnd().split("\n")
    expect(added.every((l) => JSON.parse(l).schema === 2)).toBe(true)
    const stream = await read(dir)
    expect(stream.skipped).toBe(0)
    const resumed = stream.events.find((s) => s.event._tag === "run_resumed")!
    expect(resumed.meta).toMatchObject({ log_dir: dir, pid: process.pid, host: os.hostname(), version: "test" })
    expect(resumed.event).toMatchObject({
      dropped_lines: 0,
      restarted_rounds: [],
      continued_rounds: [{ agent: "agent_b", round: 1, shown: [], vote_only: false }],
    })
    expect(readEventsText(after).events.at(-1)).toMatchObject({ _tag: "run_finished", reason: "completed", winner: "agent_a" })
    expect(readJson(nodePath.join(dir, "status.json")).meta).toMatchObject({ log_dir: dir, session_id: "log_interrupted" })
  }, 30_000)
})
