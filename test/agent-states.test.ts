/**
 * Issue 25: agent states that tell the truth.
 *
 * - `waiting` (the request was sent, nothing came back) apart from `streaming`
 *   (its first chunk came): a real Chat Completions backend against a fake model
 *   server that holds its first byte until the test releases it, in status.json
 *   and in the view model every live view (terminal, web) renders.
 * - A log whose lock holder is gone: every agent that was at work is `stopped`
 *   in `massgen status` and in the views.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import { applyEvent, applyText, emptyViewModel, markProcessGone, type ViewModel, viewOf } from "../src/domain/projections/view-model.ts"
import { makeChatCompletionsBackend } from "../src/services/backends/chat-completions.ts"
import { cleanupSandboxes, runCli } from "./support/cli.ts"
import { effect } from "./support/effect-test.ts"
import { type FakeLlm, stall, startFakeLlm } from "./support/fake-llm.ts"
import { runInMemory } from "./support/harness.ts"
import { crashedRun, deadPid, ENV } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

/** The next status.json the run writes: its writer's 2 s on the TestClock, then the turns it takes to write. */
const nextStatus = (statuses: ReadonlyArray<any>) =>
  Effect.gen(function* () {
    const written = statuses.length
    yield* TestClock.adjust("2 seconds")
    for (let i = 0; statuses.length === written && i < 10_000; i++) yield* Effect.yieldNow()
    expect(statuses.length).toBeGreaterThan(written)
    return statuses[statuses.length - 1]
  })

const ONE_AGENT = { agents: [{ id: "a", backend: { type: "scripted", model: "m" } }] }

describe("waiting until the first byte, then streaming", () => {
  let fake: FakeLlm | undefined
  afterAll(() => fake?.stop())

  effect("status.json and the views say waiting while the server holds its first byte, streaming once it came", () =>
    Effect.gen(function* () {
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      // Its first chunks (the role, one text delta), then silence: the agent stays streaming until the run is stopped.
      fake = yield* Effect.promise(() => startFakeLlm({ respond: async () => (await released, stall({ text: ["Hel", "lo"] }, 2)) }))
      const backend = makeChatCompletionsBackend({
        type: "chatcompletion",
        model: "m",
        baseURL: fake.openAiBaseUrl,
        apiKey: "k",
        maxRetries: 0,
      })
      const firstText = yield* Deferred.make<void>()
      const stop = yield* Deferred.make<string>()
      const statuses: Array<any> = []
      let view: ViewModel = emptyViewModel
      const run = yield* Effect.fork(
        runInMemory(ONE_AGENT, {
          statuses,
          wrap: () => backend,
          interrupt: Deferred.await(stop),
          observe: {
            onEvent: (event) => Effect.sync(() => void (view = applyEvent(view, event))),
            onText: (agent, text) =>
              Effect.zipRight(
                Effect.sync(() => void (view = applyText(view, agent, text))),
                Deferred.succeed(firstText, undefined),
              ),
          },
        }),
      )
      const statusNow = nextStatus(statuses)

      yield* Effect.promise(() => fake!.waitForRequest(1))
      expect(viewOf(view, 0).agents.map((a) => a.status)).toEqual(["waiting"])
      expect((yield* statusNow).agents.a.status).toBe("waiting")

      release()
      yield* Deferred.await(firstText)
      expect(viewOf(view, 0).agents.map((a) => a.status)).toEqual(["streaming"])
      expect((yield* statusNow).agents.a.status).toBe("streaming")

      yield* Deferred.succeed(stop, "stopped by the test")
      const outcome = yield* Fiber.join(run)
      expect(outcome.reason).toBe("interrupted")
    }),
  )
})

describe("a run whose process is gone", () => {
  test("massgen status lists every agent that was at work as stopped, not streaming", async () => {
    const { cwd, dir } = await crashedRun("source")
    fs.writeFileSync(nodePath.join(dir, "run.lock"), `${await deadPid()}\n`)
    const text = await runCli("source", ["status", dir], { cwd, env: ENV })
    expect(text.exitCode).toBe(0)
    const agentLines = text.lines.filter((l) => l.startsWith("  "))
    expect(agentLines.length).toBe(3)
    for (const line of agentLines) expect(line).not.toContain("streaming")
    expect(agentLines.some((l) => /: stopped, /.test(l))).toBe(true)
    const json = JSON.parse((await runCli("source", ["status", "--json", dir], { cwd, env: ENV })).stdout)
    expect(Object.values(json.agents).map((a: any) => a.status)).not.toContain("streaming")
  }, 60_000)

  test("the views show them stopped once the viewer finds the process gone", async () => {
    const { dir } = await crashedRun("source")
    const events = fs
      .readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l !== "")
    const { readEventsText } = await import("../src/domain/log/index.ts")
    let model = emptyViewModel
    for (const e of readEventsText(`${events.join("\n")}\n`).events) model = applyEvent(model, e)
    const before = viewOf(model, 0).agents.map((a) => a.status)
    expect(before).toContain("streaming")
    const after = viewOf(markProcessGone(model), 0).agents.map((a) => a.status)
    expect(after).not.toContain("streaming")
    expect(after).not.toContain("waiting")
    expect(after).toContain("stopped")
  }, 60_000)
})
