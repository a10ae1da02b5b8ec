/**
 * The tool runner (`services/tools/tool-runner.ts`) and command tools
 * (`services/tools/command-tools.ts`): every way a tool call can go wrong
 * becomes an error result the model is given, never a failed round; each call
 * is recorded (`tool_call_started`, its log file, `tool_call_finished`)
 * before its result is handed back; the calls of one reply run concurrently
 * within the bound; a command tool gets its arguments on stdin, runs in the
 * agent's directory and sees no API key.
 */
import { describe, expect } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either, Fiber, TestClock } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import type { ToolCall } from "../src/domain/llm.ts"
import { INLINE_RESULT_CHARS, MAX_TOOL_RESULT_CHARS, TOOL_CONCURRENCY } from "../src/domain/tools/calls.ts"
import { hashText } from "../src/lib/sha256.ts"
import { combineProviders } from "../src/services/tools/agent-tools.ts"
import { makeCommandTools, toolEnvironment } from "../src/services/tools/command-tools.ts"
import { type ToolProvider, ToolRunError } from "../src/services/tools/tool-provider.ts"
import { makeToolRunner } from "../src/services/tools/tool-runner.ts"
import { effect, live } from "./support/effect-test.ts"
import { markerSeconds, processesWith, waitUntilNoneWith } from "./support/processes.ts"

const T = "2026-01-01T00:00:00.000Z"
const call = (id: string, name: string, args: unknown): ToolCall => ({
  id,
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args),
})

const providerOf = (tools: Record<string, (args: Record<string, unknown>) => Effect.Effect<string, ToolRunError>>): ToolProvider => ({
  tools: Object.keys(tools).map((name) => ({
    spec: { name, description: name, parameters: { type: "object", properties: {}, required: [] } },
    server: null,
  })),
  run: (name, args) => tools[name]?.(args) ?? Effect.fail(new ToolRunError({ reason: "unknown_tool", detail: `no tool named ${name}` })),
})

/** A runner over `provider` that keeps its events and log files, in the order they were made. */
const harness = (provider: ToolProvider, options: { timeoutSeconds?: number; maxResultChars?: number } = {}) => {
  const trail: Array<
    { readonly kind: "event"; readonly event: Event } | { readonly kind: "log"; readonly n: number; readonly record: any }
  > = []
  let n = 0
  const run = makeToolRunner({
    providerOf: () => provider,
    emit: (event) => Effect.sync(() => void trail.push({ kind: "event", event })),
    now: Effect.succeed(T),
    nextToolCall: Effect.sync(() => ++n),
    writeLog: (k, record) => Effect.sync(() => void trail.push({ kind: "log", n: k, record })),
    digest: hashText,
    ...options,
  })
  const finished = () => trail.flatMap((x) => (x.kind === "event" && x.event._tag === "tool_call_finished" ? [x.event] : []))
  return { run, trail, finished }
}

describe("the tool runner", () => {
  effect("a result is recorded before it is handed back; a short one is held by its event alone", () =>
    Effect.gen(function* () {
      const h = harness(providerOf({ echo: (args) => Effect.succeed(`said ${String(args.text)}`) }))
      const results = yield* h.run("a", 1, "round", [call("c1", "echo", { text: "hi" })])
      expect(results).toEqual([{ callId: "c1", name: "echo", content: "said hi" }])
      expect(h.trail.map((x) => (x.kind === "event" ? x.event._tag : "log"))).toEqual(["tool_call_started", "tool_call_finished"])
      expect(h.finished()).toEqual([
        expect.objectContaining({
          tool_call: 1,
          agent: "a",
          round: 1,
          role: "round",
          call_id: "c1",
          tool: "echo",
          server: null,
          ok: true,
          error: null,
          result: "said hi",
          result_chars: 7,
          digest: hashText("said hi"),
        }),
      ])
    }),
  )

  effect("a long result is logged whole before its event, which has only its length and digest", () =>
    Effect.gen(function* () {
      const long = "x".repeat(INLINE_RESULT_CHARS + 1)
      const h = harness(providerOf({ big: () => Effect.succeed(long) }))
      yield* h.run("a", 1, "round", [call("c1", "big", {})])
      expect(h.finished()[0]).toMatchObject({ ok: true, result: null, result_chars: long.length, digest: hashText(long) })
      // Its log is written before the event that names it.
      expect(h.trail.map((x) => (x.kind === "event" ? x.event._tag : "log"))).toEqual(["tool_call_started", "log", "tool_call_finished"])
      expect(h.trail.find((x) => x.kind === "log")).toMatchObject({ n: 1, record: { result: long } })
    }),
  )

  effect("a failure, arguments that are not an object and an unknown tool are error results", () =>
    Effect.gen(function* () {
      const h = harness(providerOf({ broken: () => Effect.fail(new ToolRunError({ reason: "failed", detail: "disk on fire" })) }))
      const results = yield* h.run("a", 1, "round", [call("c1", "broken", {}), call("c2", "broken", "[1,2"), call("c3", "nope", {})])
      expect(results.map((r) => r.content)).toEqual([
        "error: failed: disk on fire",
        "error: bad arguments: the arguments of broken are not a JSON object",
        "error: unknown tool: no tool named nope",
      ])
      // Recorded as each ends; the model gets them in the order of the calls.
      const byCall = [...h.finished()].sort((x, y) => x.call_id.localeCompare(y.call_id))
      expect(byCall.map((e) => [e.ok, e.error])).toEqual([
        [false, "failed: disk on fire"],
        [false, "bad arguments: the arguments of broken are not a JSON object"],
        [false, "unknown tool: no tool named nope"],
      ])
    }),
  )

  effect("a call past tool_timeout_seconds is stopped and is an error result", () =>
    Effect.gen(function* () {
      let stopped = false
      const h = harness(providerOf({ slow: () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (stopped = true)))) }), {
        timeoutSeconds: 5,
      })
      const fiber = yield* Effect.fork(h.run("a", 1, "round", [call("c1", "slow", {})]))
      yield* TestClock.adjust("5 seconds")
      const results = yield* Fiber.join(fiber)
      expect(results[0]!.content).toBe("error: failed: slow timed out after 5s (tool_timeout_seconds)")
      expect(stopped).toBe(true)
      expect(h.finished()[0]).toMatchObject({ ok: false, seconds: 5 })
    }),
  )

  effect("a result over the cap is cut, with a note, and is an error result", () =>
    Effect.gen(function* () {
      const h = harness(providerOf({ big: () => Effect.succeed("0123456789abcdef") }), { maxResultChars: 10 })
      const [result] = yield* h.run("a", 1, "round", [call("c1", "big", {})])
      expect(result!.content).toBe("0123456789\n[massgen: the result was 16 characters, cut to the first 10]")
      expect(h.finished()[0]).toMatchObject({
        ok: false,
        error: "the result was 16 characters, over the cap of 10: cut",
        result: result!.content,
      })
    }),
  )

  effect(`the calls of one reply run concurrently, at most ${TOOL_CONCURRENCY} at a time, and come back in order`, () =>
    Effect.gen(function* () {
      let active = 0
      let most = 0
      const h = harness(
        providerOf({
          work: (args) =>
            Effect.gen(function* () {
              most = Math.max(most, ++active)
              for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
              active -= 1
              return `done ${String(args.i)}`
            }),
        }),
      )
      const calls = Array.from({ length: 20 }, (_, i) => call(`c${i}`, "work", { i }))
      const results = yield* h.run("a", 1, "round", calls)
      expect(results.map((r) => r.content)).toEqual(calls.map((_, i) => `done ${i}`))
      expect(most).toBe(TOOL_CONCURRENCY)
    }),
  )
})

describe("combineProviders", () => {
  const one = providerOf({ a: () => Effect.succeed("from one") })
  const two = providerOf({ b: () => Effect.succeed("from two") })
  effect("merges the tools of several providers and sends each call to its own", () =>
    Effect.gen(function* () {
      const merged = Either.getOrThrow(combineProviders([one, two]))
      expect(merged.tools.map((t) => t.spec.name)).toEqual(["a", "b"])
      expect(yield* merged.run("b", {})).toBe("from two")
    }),
  )
  effect("refuses a name offered twice, or a workflow tool's name", () =>
    Effect.sync(() => {
      expect(combineProviders([one, one])).toEqual(Either.left("two tools are named a"))
      expect(combineProviders([providerOf({ vote: () => Effect.succeed("") })])).toEqual(
        Either.left("a tool may not be named vote: it is a workflow tool"),
      )
    }),
  )
})

describe("command tools", () => {
  const SLEEPER = markerSeconds()
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-command-tools-"))
  const env = toolEnvironment(
    {
      PATH: process.env.PATH,
      HOME: "/home/me",
      OPENAI_API_KEY: "sk-1",
      GITHUB_TOKEN: "ghp",
      MY_SECRET: "s",
      DB_PASSWORD: "p",
      PLAIN: "kept",
      COPY: "run-key-value",
    },
    ["run-key-value"],
  )
  const tools = makeCommandTools(
    [
      { name: "echo", command: ["cat"] },
      { name: "where", command: ["pwd"] },
      { name: "env", command: ["env"] },
      { name: "fails", command: ["sh", "-c", "echo partial; echo 'it broke' >&2; exit 3"] },
      { name: "sleeps", command: ["sh", "-c", `exec sleep ${SLEEPER}`] },
      { name: "floods", command: ["yes", "flood"] },
    ],
    dir,
    env,
  )

  live("get their JSON arguments on stdin, print their result, and run in the agent's directory", () =>
    Effect.gen(function* () {
      expect(yield* tools.run("echo", { text: "hi" })).toBe('{"text":"hi"}')
      expect((yield* tools.run("where", {})).trim()).toBe(fs.realpathSync(dir))
    }),
  )

  live("see no API key, token, secret or password, nor any value of the run's keys", () =>
    Effect.gen(function* () {
      const names = (yield* tools.run("env", {})).split("\n").map((l) => l.split("=")[0])
      expect(names).toContain("PLAIN")
      for (const hidden of ["OPENAI_API_KEY", "GITHUB_TOKEN", "MY_SECRET", "DB_PASSWORD", "COPY"]) expect(names).not.toContain(hidden)
    }),
  )

  live("a non-zero exit fails with its status and the tail of stderr", () =>
    Effect.gen(function* () {
      const failed = yield* Effect.flip(tools.run("fails", {}))
      expect(failed.message).toBe("failed: sh exited with 3: it broke")
    }),
  )

  live("a command that prints without end is stopped just past the cap, and its output so far is its result", () =>
    Effect.gen(function* () {
      const out = yield* tools.run("floods", {})
      expect(out.length).toBeGreaterThan(MAX_TOOL_RESULT_CHARS)
      expect(out.length).toBeLessThanOrEqual((MAX_TOOL_RESULT_CHARS + 1) * 4)
      expect(out.startsWith("flood\nflood\n")).toBe(true)
    }),
  )

  live("an interrupted call kills the command", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(tools.run("sleeps", {}))
      while (processesWith(SLEEPER).length === 0) yield* Effect.sleep("5 millis")
      yield* Fiber.interrupt(fiber)
      // The command's pids are its own namespace's: it is found from the host by its sleep's marker.
      expect(yield* Effect.promise(() => waitUntilNoneWith(SLEEPER))).toEqual([])
    }),
  )
})
