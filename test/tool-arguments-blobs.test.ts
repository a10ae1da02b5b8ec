/**
 * Long tool-call arguments are kept once, in the run's blob store, and the
 * events reference them (`ArgumentsText`): `call_end`'s reply,
 * `tool_call_started` and `tool_call_finished` hold `{"$blob": "<sha256>"}`
 * in place of a text of `ARGUMENTS_BLOB_MIN_CHARS` or more. The tool runs with
 * the whole text; replay and resume read it back from `blobs/`; a missing blob
 * is a divergence that names it, never a crash. Checked in memory (stopped at
 * every event and resumed), through the command line with a real `write_file`
 * (the log's size, `replay --check`, a resume after a crash), and as a
 * property of the event lines (arguments under and over the threshold).
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import fc from "fast-check"
import { ARGUMENTS_BLOB_MIN_CHARS, argumentsText, type Event } from "../src/domain/events/index.ts"
import { decodeEventLine, decodeEventLineBySchema, encodeEventLine } from "../src/domain/log/index.ts"
import { replayRun } from "../src/domain/replay/index.ts"
import { blobPath } from "../src/domain/run-paths.ts"
import { hashText } from "../src/lib/sha256.ts"
import { AgentTools } from "../src/services/tools/agent-tools.ts"
import { callsOf } from "./support/call-logs.ts"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { effect } from "./support/effect-test.ts"
import { configOf, runInMemory } from "./support/harness.ts"
import { ENV, eventsPath, expectExit, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const BIG = "big file line\n".repeat(8_000)
const ofTag = <T extends Event["_tag"]>(events: ReadonlyArray<Event>, tag: T) =>
  events.filter((e): e is Extract<Event, { _tag: T }> => e._tag === tag)
const eventsText = (events: ReadonlyArray<Event>) => events.map((e) => `${encodeEventLine(e)}\n`).join("")

describe("long tool-call arguments, in memory", () => {
  const DOC = {
    agents: [
      {
        id: "a",
        backend: {
          type: "scripted",
          script: [
            { tool: "save", args: { path: "big.txt", content: BIG } },
            { tool: "save", args: { path: "small.txt", content: "hi" } },
            { new_answer: "A" },
          ],
          vote: "agent1",
          final: "A, presented",
        },
      },
    ],
  }
  const agents = configOf(DOC).agents
  const saving = () => {
    const saved: Array<string> = []
    return { saved, layer: AgentTools.fake({ a: { save: (args) => (saved.push(String(args.content)), `saved ${String(args.path)}`) } }) }
  }
  const bigArguments = JSON.stringify({ path: "big.txt", content: BIG })
  const ref = { $blob: hashText(bigArguments) }

  effect("are one blob, which call_end, tool_call_started and tool_call_finished reference; short ones stay in the events", () =>
    Effect.gen(function* () {
      const tools = saving()
      const run = yield* runInMemory(DOC, { tools: tools.layer })
      expect(run.reason).toBe("completed")
      // The tool was given the whole text.
      expect(tools.saved).toEqual([BIG, "hi"])
      expect(run.files.get(blobPath(ref.$blob))).toBe(bigArguments)
      const started = ofTag(run.events, "tool_call_started")
      const finished = ofTag(run.events, "tool_call_finished")
      expect(started.map((e) => e.arguments)).toEqual([ref, JSON.stringify({ path: "small.txt", content: "hi" })])
      expect(finished.map((e) => e.arguments)).toEqual(started.map((e) => e.arguments))
      const replies = ofTag(run.events, "call_end").flatMap((e) => e.reply?.tool_calls ?? [])
      expect(replies.find((c) => c.name === "save")?.arguments).toEqual(ref)
      // The log holds the text nowhere but in the blob.
      expect(eventsText(run.events).length).toBeLessThan(BIG.length / 2)
      expect(eventsText(run.events)).not.toContain("big file line")
      const blobOf = (hash: string) => run.files.get(blobPath(hash))
      expect(replayRun(run.events, agents, callsOf(run.files), { checkRequests: true, digestOf: hashText, blobOf }).divergence).toBeNull()
    }),
  )

  effect("a replay without the blob stops at the event that needs it and names what is missing", () =>
    Effect.gen(function* () {
      const run = yield* runInMemory(DOC, { tools: saving().layer })
      const replayed = replayRun(run.events, agents, () => undefined, { checkRequests: false, blobOf: () => undefined })
      const at = run.events.findIndex(
        (e) => e._tag === "call_end" && (e.reply?.tool_calls ?? []).some((c) => typeof c.arguments !== "string"),
      )
      expect(replayed.divergence).toMatchObject({ index: at, reason: expect.stringContaining("missing from blobs/") })
    }),
  )

  effect(
    "stopped at any event and resumed: the tool gets the whole text, runs once in all, and the run ends the same",
    () =>
      Effect.gen(function* () {
        const reference = yield* runInMemory(DOC, { tools: saving().layer })
        for (let keep = 1; keep < reference.events.length; keep++) {
          const prefix = reference.events.slice(0, keep)
          const tools = saving()
          const resumed = yield* runInMemory(DOC, { tools: tools.layer, resume: { text: eventsText(prefix), files: reference.files } })
          const savedBefore = ofTag(prefix, "tool_call_finished").filter((e) => typeof e.arguments !== "string").length
          expect({ keep, reason: resumed.reason, big: tools.saved.filter((s) => s === BIG).length }).toEqual({
            keep,
            reason: "completed",
            big: 1 - savedBefore,
          })
          expect(resumed.state.final?.content).toBe("A, presented")
          const files = new Map([...reference.files, ...resumed.files])
          const blobOf = (hash: string) => files.get(blobPath(hash))
          const replayed = replayRun(resumed.events, agents, callsOf(files), { checkRequests: true, digestOf: hashText, blobOf })
          expect({ keep, divergence: replayed.divergence }).toEqual({ keep, divergence: null })
        }
      }),
    60_000,
  )
})

describe("arguments in an event line", () => {
  const started = (args: string | { readonly $blob: string }): Event => ({
    _tag: "tool_call_started",
    time: "2026-12-01T10:00:00.000Z",
    tool_call: 1,
    agent: "a",
    round: 1,
    role: "round",
    call_id: "c1",
    tool: "save",
    server: null,
    arguments: args,
  })

  test("under the threshold inline, over it referenced: both read back as written, and to the same text", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 40 }),
        fc.integer({ min: 0, max: 2 * ARGUMENTS_BLOB_MIN_CHARS }),
        (piece, length) => {
          const text = piece.length === 0 ? "x".repeat(length) : piece.repeat(Math.ceil(length / piece.length)).slice(0, length)
          const blobs = new Map<string, string>()
          const held = text.length < ARGUMENTS_BLOB_MIN_CHARS ? text : { $blob: hashText(text) }
          if (typeof held !== "string") blobs.set(held.$blob, text)
          const line = encodeEventLine(started(held))
          const decoded = decodeEventLine(line)
          expect(decoded).toEqual(decodeEventLineBySchema(line))
          expect(decoded).toEqual({ _tag: "event", event: started(held) })
          if (decoded._tag !== "event" || decoded.event._tag !== "tool_call_started") throw new Error("not read back")
          expect(argumentsText(decoded.event.arguments, (h) => blobs.get(h))).toBe(text)
          // A reference never holds the text: the line stays short.
          if (typeof held !== "string") expect(line.length).toBeLessThan(400)
        },
      ),
      { numRuns: 60 },
    )
  })

  test("a reference that is not a SHA-256 (hex), or not a $blob, does not decode (nor a piece of such arguments)", () => {
    const bads = [{ $blob: "abc" }, { $blob: "A".repeat(64) }, { $blob: 7 }, { $json: "a".repeat(64) }, [7], [{ $blob: "abc" }]]
    for (const bad of [...bads, ["a", { $blob: "a".repeat(64), escaped: false }], [{ $esc: "a".repeat(64) }]]) {
      const line = encodeEventLine(started(bad as never))
      expect({ bad, read: decodeEventLine(line) }).toEqual({ bad, read: { _tag: "skipped", cause: "invalid_fields" } })
      expect(decodeEventLineBySchema(line)).toEqual({ _tag: "skipped", cause: "invalid_fields" })
    }
  })
})

describe("a write_file of a large file, through the command line", () => {
  const CONTENT = "0123456789abcdef".repeat(64 * 1024)
  const doc = {
    agents: [
      {
        id: "agent_a",
        backend: {
          type: "scripted",
          cwd: "workspace",
          script: [{ tool: "write_file", args: { path: "big.txt", content: CONTENT } }, { new_answer: "wrote big.txt" }],
          vote: "agent1",
          final: "done",
        },
      },
    ],
    timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
  }

  test("events.jsonl holds the content at most once; replay --check says SAME; a resume after a crash at the write writes it again", async () => {
    const cwd = sandbox()
    const config = writeConfig(cwd, doc)
    const r = await runCli("source", ["--automation", "--config", config, "Write it."], { cwd, env: ENV })
    expectExit(r, 0)
    const dir = lineValue(r, "LOG_DIR")
    const size = fs.statSync(eventsPath(dir)).size
    expect(size).toBeLessThan(1.5 * CONTENT.length)
    // Not even once, in fact: the blob has it.
    expect(fs.readFileSync(eventsPath(dir), "utf8")).not.toContain(CONTENT.slice(0, 64))
    const events = readEvents(dir)
    const write = events.find((e) => e.type === "tool_call_started" && e.tool === "write_file")
    expect(JSON.parse(fs.readFileSync(nodePath.join(dir, blobPath(write.arguments.$blob)), "utf8")).content).toBe(CONTENT)
    expect(events.find((e) => e.type === "tool_call_finished" && e.tool === "write_file")).toMatchObject({
      ok: true,
      arguments: write.arguments,
    })
    // The agent's output file shows the call, cut, and says where the rest is.
    const output = fs.readFileSync(nodePath.join(dir, "agent_outputs", "agent_a.txt"), "utf8")
    expect(output.length).toBeLessThan(CONTENT.length / 10)
    expect(output).toContain(`characters in all: the whole text is in llm_log/)`)
    const check = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV })
    expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })

    // A crash right after the write started: the call runs again on resume, with the whole text.
    const lines = fs.readFileSync(eventsPath(dir), "utf8").split("\n")
    const at = lines.findIndex((l) => l.includes('"type":"tool_call_started"') && l.includes('"tool":"write_file"'))
    fs.writeFileSync(
      eventsPath(dir),
      lines
        .slice(0, at + 1)
        .map((l) => `${l}\n`)
        .join(""),
    )
    fs.rmSync(nodePath.join(dir, "final"), { recursive: true, force: true })
    const workspace = nodePath.join(dir, "workspaces", "agent1", "big.txt")
    fs.rmSync(workspace, { force: true })
    const resumed = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV })
    expectExit(resumed, 0)
    expect(fs.readFileSync(workspace, "utf8")).toBe(CONTENT)
    expect(fs.statSync(eventsPath(dir)).size).toBeLessThan(1.5 * CONTENT.length)
    const after = readEvents(dir)
    expect(after.filter((e) => e.type === "tool_call_finished" && e.tool === "write_file")).toMatchObject([
      { ok: true, arguments: write.arguments },
    ])
    expect(after.at(-1)).toMatchObject({ type: "run_finished", reason: "completed" })
    const recheck = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV })
    expect({ code: recheck.exitCode, out: recheck.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
  }, 120_000)
})
