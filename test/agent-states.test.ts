/**
 * Issue 25: agent states that tell the truth.
 *
 * - `waiting` (the request was sent, nothing came back) apart from `streaming`
 *   (its first chunk came): a real Chat Completions backend against a fake model
 *   server that holds its first byte until the test releases it, in status.json
 *   and in the view model every live view (terminal, web) renders; in the
 *   compiled binary's terminal view (tmux) against the same server; and in the
 *   web view of `massgen viewer --web` following a log whose call is open, until
 *   text comes into the agent's output file.
 * - A log whose lock holder is gone: every agent that was at work is `stopped`
 *   in `massgen status` and in the views.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import { applyEvent, applyText, emptyViewModel, markProcessGone, type ViewModel, viewOf } from "../src/domain/projections/view-model.ts"
import { makeChatCompletionsBackend } from "../src/services/backends/chat-completions.ts"
import { BINARY, cleanupSandboxes, ensureBinary, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { effect } from "./support/effect-test.ts"
import { type FakeLlm, stall, startFakeLlm } from "./support/fake-llm.ts"
import { runInMemory } from "./support/harness.ts"
import { crashedRun, deadPid, ENV } from "./support/run-dirs.ts"
import { tmuxServer } from "./support/tmux.ts"
import { eventLines, metaAt, playCouncil, writeRunDir } from "./support/view-fixtures.ts"

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

/** What `/api/view` says of each agent's status, once `ready` holds of it (looked at every 20 ms; 20 s at most). */
const viewStatuses = async (url: string, ready: (statuses: Record<string, string>) => boolean): Promise<Record<string, string>> => {
  let statuses: Record<string, string> = {}
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await Bun.sleep(20)) {
    const view = (await (await fetch(`${url}api/view`)).json()) as { agents: ReadonlyArray<{ id: string; status: string }> }
    statuses = Object.fromEntries(view.agents.map((a) => [a.id, a.status]))
    if (ready(statuses)) break
  }
  return statuses
}

describe("the web view", () => {
  test("an agent whose call is open is waiting until its first text comes, then streaming", async () => {
    const { events } = await playCouncil()
    const call = events.findIndex((e) => e._tag === "call_start")
    const agent = (events[call] as { agent: string }).agent
    const dir = nodePath.join(sandbox(), "log_20260101_000000_000000")
    writeRunDir(dir, events.slice(0, call + 1))
    const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser"])
    try {
      const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await viewer.waitForLine("Serving the live run"))![1]!
      expect((await viewStatuses(url, (s) => s[agent] === "waiting"))[agent]).toBe("waiting")
      // The call's header comes first (no byte of the reply), then its first text.
      const output = nodePath.join(dir, "agent_outputs", `${agent}.txt`)
      fs.mkdirSync(nodePath.dirname(output), { recursive: true })
      fs.appendFileSync(output, "\n--- round 1, call 1 ---\n")
      fs.appendFileSync(output, "Hel")
      expect((await viewStatuses(url, (s) => s[agent] === "streaming"))[agent]).toBe("streaming")
    } finally {
      viewer.proc.kill("SIGINT")
      await viewer.done
    }
  }, 60_000)

  test("a followed run whose process is gone shows its agents stopped", async () => {
    const { events } = await playCouncil()
    const firstAnswer = events.findIndex((e) => e._tag === "answer_submitted")
    const dir = nodePath.join(sandbox(), "log_20260101_000000_000000")
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(nodePath.join(dir, "events.jsonl"), eventLines(events.slice(0, firstAnswer), { ...metaAt(dir), pid: await deadPid() }))
    const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser"])
    try {
      const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await viewer.waitForLine("Serving the live run"))![1]!
      // The feed ends when the viewer finds the process gone; the page stays served.
      await viewer.waitForLine("The run is complete; still serving")
      const statuses = Object.values(await viewStatuses(url, () => true))
      expect(statuses).toHaveLength(3)
      expect(statuses).not.toContain("streaming")
      expect(statuses).not.toContain("waiting")
      expect(statuses).toContain("stopped")
    } finally {
      viewer.proc.kill("SIGINT")
      await viewer.done
    }
  }, 60_000)
})

describe("the live terminal view (compiled binary, tmux)", () => {
  const { start, waitFor, kill } = tmuxServer("massgen-states")
  let fake: FakeLlm | undefined
  afterAll(() => {
    kill()
    fake?.stop()
  })

  test("an agent is waiting while the server holds its first byte, streaming once it came", async () => {
    await ensureBinary()
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    fake = await startFakeLlm({ respond: async () => (await released, stall({ text: ["Hel", "lo"] }, 2)) })
    const cwd = sandbox()
    const doc = {
      agents: [{ id: "a", backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl, api_key: "k", max_retries: 0 } }],
    }
    writeConfig(cwd, doc)
    const noProxy = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"].flatMap((v) => ["-u", v])
    const name = start(cwd, ["env", ...noProxy, BINARY, "--config", "config.yaml", "What is 2+2?"])
    await fake.waitForRequest(1)
    await waitFor(name, (s) => /○ waiting\s+r1/.test(s), "the agent waiting in round 1", 20_000)
    release()
    await waitFor(name, (s) => /● streaming\s+r1/.test(s), "the agent streaming in round 1", 20_000)
  }, 60_000)
})
