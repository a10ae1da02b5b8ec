/**
 * Issue 15: `massgen serve`, an OpenAI-compatible endpoint, with the official
 * `openai` SDK as the client.
 *
 * Each test starts `massgen serve` (from source) on port 0 in a sandbox with a
 * scripted council (or a chatcompletion agent on the loopback fake LLM, to see
 * what the agents are sent) and talks to it as a client would: non-streaming
 * and streaming completions, a follow-up whose messages reach the agents as
 * history, 8 requests at once, a full queue (429), a client that leaves
 * mid-stream (its run is recorded interrupted), bad requests, auth, a run
 * that fails (also mid-stream) or times out, and a SIGTERM drain. Every run is an ordinary run
 * directory: `status` and the viewer's run list find it.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import OpenAI from "openai"
import { readEventsText } from "../src/domain/log/index.ts"
import { EventStore } from "../src/services/event-store/index.ts"
import { latestRun } from "../src/services/log-dir/catalog.ts"
import { cleanupSandboxes, type RunningCli, runCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"
import { loneCouncilReply, promptText, startFakeLlm } from "./support/fake-llm.ts"

afterAll(cleanupSandboxes)

const TIMEOUT = 90_000

const scripted = (extra: Record<string, unknown> = {}) => ({
  agents: [
    { id: "agent_a", backend: { type: "scripted", answer: "Four.", vote: "agent1", final: "The answer is 4.", ...extra } },
    { id: "agent_b", backend: { type: "scripted", answer: "4", vote: "agent1" } },
  ],
})

interface Served {
  readonly cli: RunningCli
  readonly url: string
  readonly cwd: string
  readonly client: OpenAI
}

/** `massgen serve` on a free port with `doc` as `team.yaml`, and a client of it (no retries: a test sees each status). */
const serve = async (
  doc: unknown,
  flags: ReadonlyArray<string> = [],
  env: Record<string, string> = {},
  apiKey = "none",
): Promise<Served> => {
  const cwd = sandbox()
  const config = writeConfig(cwd, doc, "team.yaml")
  const cli = await startUntilLine("source", ["serve", "--config", config, "--port", "0", ...flags], "Serving ", {
    cwd,
    env,
    timeoutMs: TIMEOUT,
  })
  const url = cli.lines.find((l) => l.startsWith("Serving "))!.split(" ")[1]!
  return { cli, url, cwd, client: new OpenAI({ baseURL: url, apiKey, maxRetries: 0 }) }
}

/** Stops the server with SIGTERM; its result. */
const stop = async (served: Served) => {
  served.cli.proc.kill("SIGTERM")
  return served.cli.done
}

const eventsOf = (logDir: string) => readEventsText(fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")).events

/** What `/health` says: runs going and requests waiting. */
const health = async (served: Served): Promise<{ running: number; queued: number }> =>
  (await fetch(served.url.replace("/v1", "/health"))).json() as any

/** A completion request as a client without the SDK sends it. */
const postJson = (url: string, body: unknown) =>
  fetch(url, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })

const ask = (content: string) => [{ role: "user" as const, content }]

describe("massgen serve", () => {
  test(
    "non-streaming and streaming completions through the openai SDK: the final answer, real usage, the run's id, an ordinary run directory",
    async () => {
      const served = await serve(scripted())
      try {
        const { data, response } = await served.client.chat.completions
          .create({ model: "team", messages: ask("What is 2+2?") })
          .withResponse()
        expect(data.choices[0]!.message.content).toBe("The answer is 4.")
        expect(data.choices[0]!.finish_reason).toBe("stop")
        const runId = response.headers.get("x-massgen-run-id")!
        const facts = (data as any).massgen
        expect(facts).toMatchObject({ run_id: runId, finish_reason: "completed", winner: "agent_a" })
        const events = eventsOf(facts.log_dir)
        const finished = events.at(-1)!
        expect(finished).toMatchObject({ _tag: "run_finished", reason: "completed" })
        const calls = events.flatMap((e) => (e._tag === "call_end" ? [e] : []))
        expect(data.usage!.prompt_tokens).toBe(calls.reduce((n, c) => n + (c.input_tokens ?? 0), 0))
        expect(data.usage!.completion_tokens).toBe(calls.reduce((n, c) => n + (c.output_tokens ?? 0), 0))
        expect(data.usage!.prompt_tokens).toBeGreaterThan(0)

        // Another question: the same one again would be the same run (a retry), answered without its progress.
        const stream = await served.client.chat.completions.create({
          model: "team",
          messages: ask("And what is 2+2, streamed?"),
          stream: true,
          stream_options: { include_usage: true },
        })
        let content = ""
        let progress = ""
        let finish: string | null = null
        let usage: OpenAI.CompletionUsage | undefined
        let streamFacts: any
        for await (const chunk of stream) {
          const delta: any = chunk.choices[0]?.delta ?? {}
          content += delta.content ?? ""
          progress += delta.reasoning_content ?? ""
          finish = chunk.choices[0]?.finish_reason ?? finish
          usage = chunk.usage ?? usage
          if ((chunk as any).massgen?.finish_reason) streamFacts = (chunk as any).massgen
        }
        expect(content).toBe("The answer is 4.")
        expect(finish).toBe("stop")
        expect(progress).toContain("[agent_a] answer agent1.1: Four.")
        expect(progress).toContain("[agent_b] votes for agent_a")
        expect(usage!.total_tokens).toBeGreaterThan(0)
        expect(streamFacts.finish_reason).toBe("completed")

        // Ordinary run directories: status reads them, and the viewer's newest run is the last one.
        const status = await runCli("source", ["status", streamFacts.log_dir, "--json"], { cwd: served.cwd })
        expect(status.exitCode).toBe(0)
        expect(JSON.parse(status.stdout).meta.log_dir).toBe(streamFacts.log_dir)
        const newest = await Effect.runPromise(
          latestRun(nodePath.join(served.cwd, ".massgen", "massgen_logs")).pipe(Effect.provide(EventStore.file())),
        )
        expect(newest).toBe(streamFacts.log_dir)
        const models = await served.client.models.list()
        expect(models.data.map((m) => m.id)).toEqual(["team"])
      } finally {
        expect((await stop(served)).exitCode).toBe(0)
      }
    },
    TIMEOUT,
  )

  test(
    "a follow-up with history: the second run's requests to the agents hold the first question and answer",
    async () => {
      const fake = await startFakeLlm({ respond: loneCouncilReply })
      const served = await serve({
        agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl } }],
      })
      try {
        const first = await served.client.chat.completions.create({ model: "team", messages: ask("What is 2+2?") })
        const answer = first.choices[0]!.message.content!
        expect(answer).toBe("Four.")
        const before = fake.requests.length
        const second = await served.client.chat.completions.create({
          model: "team",
          messages: [
            { role: "system", content: "be brief" },
            ...ask("What is 2+2?"),
            { role: "assistant", content: answer },
            ...ask("And doubled?"),
          ],
        })
        expect(second.choices[0]!.message.content).toBe("Eight.")
        const later = fake.requests.slice(before)
        expect(later.length).toBeGreaterThan(0)
        for (const req of later)
          expect(promptText(req)).toContain(
            JSON.stringify("<CONVERSATION_HISTORY>\nUser: What is 2+2?\nAssistant: Four.\n<END OF CONVERSATION_HISTORY>").slice(1, -1),
          )
        const started = eventsOf((second as any).massgen.log_dir)[0]!
        expect(started).toMatchObject({
          _tag: "run_started",
          question: "And doubled?",
          conversation: [
            { role: "user", content: "What is 2+2?" },
            { role: "assistant", content: "Four." },
          ],
        })
        // The turn replays offline from its log, history included.
        const replay = await runCli("source", ["replay", (second as any).massgen.log_dir, "--check"], { cwd: served.cwd })
        expect(replay.exitCode).toBe(0)
      } finally {
        await stop(served)
        fake.stop()
      }
    },
    TIMEOUT,
  )

  test(
    "8 requests at once: 8 completions, each its own run directory",
    async () => {
      const served = await serve(scripted(), ["--max-concurrent-runs", "8"])
      try {
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) => served.client.chat.completions.create({ model: "team", messages: ask(`Question ${i}?`) })),
        )
        expect(results.map((r) => r.choices[0]!.message.content)).toEqual(Array(8).fill("The answer is 4."))
        const dirs = new Set(results.map((r) => (r as any).massgen.log_dir))
        expect(dirs.size).toBe(8)
        for (const dir of dirs) expect(eventsOf(dir)[0]).toMatchObject({ _tag: "run_started" })
      } finally {
        await stop(served)
      }
    },
    TIMEOUT,
  )

  test(
    "past the running runs and the queue: 429 with retry-after; with --cancel-on-disconnect a client that leaves its stream stops its run, recorded interrupted",
    async () => {
      const served = await serve(scripted({ delay_seconds: 600 }), [
        "--max-concurrent-runs",
        "1",
        "--max-queued",
        "1",
        "--cancel-on-disconnect",
      ])
      try {
        const running = new AbortController()
        const stream = await served.client.chat.completions.create(
          { model: "team", messages: ask("slow?"), stream: true },
          { signal: running.signal },
        )
        const iterator = stream[Symbol.asyncIterator]()
        const firstChunk = (await iterator.next()).value as any
        const logDir = firstChunk.massgen.log_dir
        const waiting = new AbortController()
        const queued = served.client.chat.completions
          .create({ model: "team", messages: ask("queued?") }, { signal: waiting.signal })
          .catch((e) => e)
        // The queued request is in the queue once /health says so.
        for (let i = 0; i < 500 && (await health(served)).queued < 1; i++) await Bun.sleep(10)
        const refused = await postJson(`${served.url}/chat/completions`, { model: "team", messages: ask("one more?") })
        expect(refused.status).toBe(429)
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect(((await refused.json()) as any).error).toMatchObject({ type: "rate_limit_error", code: "queue_full" })
        waiting.abort()
        expect(await queued).toBeInstanceOf(Error)
        running.abort()
        // The run ends, recorded interrupted: resumable.
        for (let i = 0; i < 1000 && eventsOf(logDir).at(-1)?._tag !== "run_finished"; i++) await Bun.sleep(10)
        expect(eventsOf(logDir).at(-1)).toMatchObject({ _tag: "run_finished", reason: "interrupted", message: "cancelled by the client" })
        const status = await runCli("source", ["status", logDir], { cwd: served.cwd })
        expect(status.stdout + status.stderr).toContain("massgen resume")
      } finally {
        await stop(served)
      }
    },
    TIMEOUT,
  )

  test(
    "bad requests get OpenAI's error shape and status",
    async () => {
      const served = await serve(scripted())
      const post = async (body: string) => {
        const res = await fetch(`${served.url}/chat/completions`, { method: "POST", body, headers: { "content-type": "application/json" } })
        return { status: res.status, error: ((await res.json()) as any).error }
      }
      try {
        expect(await post("{not json")).toMatchObject({ status: 400, error: { type: "invalid_request_error" } })
        expect(await post(JSON.stringify({ model: "team" }))).toMatchObject({ status: 400, error: { param: "messages" } })
        expect(await post(JSON.stringify({ model: "team", messages: [] }))).toMatchObject({ status: 400 })
        const tools = await post(
          JSON.stringify({ model: "team", messages: ask("q"), tools: [{ type: "function", function: { name: "f", parameters: {} } }] }),
        )
        expect(tools.status).toBe(400)
        expect(tools.error.message).toContain("not supported")
        const unknown = await served.client.chat.completions.create({ model: "gpt-9", messages: ask("q") }).catch((e) => e)
        expect(unknown).toBeInstanceOf(OpenAI.NotFoundError)
        expect(unknown.error).toMatchObject({ code: "model_not_found" })
        expect((await fetch(`${served.url}/nothing`)).status).toBe(404)
        // Nothing was run for any of them.
        expect(fs.existsSync(nodePath.join(served.cwd, ".massgen", "massgen_logs"))).toBe(false)
      } finally {
        await stop(served)
      }
    },
    TIMEOUT,
  )

  test(
    "auth: with --api-key-env a request needs the bearer token (401 without it); without auth beyond loopback, a warning",
    async () => {
      const served = await serve(scripted(), ["--api-key-env", "SERVE_TEST_KEY"], { SERVE_TEST_KEY: "s3cret" }, "wrong")
      try {
        const refused = await served.client.chat.completions.create({ model: "team", messages: ask("q") }).catch((e) => e)
        expect(refused).toBeInstanceOf(OpenAI.AuthenticationError)
        expect((await fetch(`${served.url}/models`)).status).toBe(401)
        const ok = new OpenAI({ baseURL: served.url, apiKey: "s3cret", maxRetries: 0 })
        expect((await ok.chat.completions.create({ model: "team", messages: ask("q") })).choices[0]!.message.content).toBe(
          "The answer is 4.",
        )
      } finally {
        const done = await stop(served)
        expect(done.stderr).not.toContain("warning")
      }
      const open = await serve(scripted(), ["--host", "0.0.0.0"])
      const done = await stop(open)
      expect(done.stderr).toContain("massgen: warning: serving on 0.0.0.0 without --api-key-env")
      const unset = await runCli("source", ["serve", "--config", writeConfig(sandbox(), scripted()), "--api-key-env", "NOT_SET_ANYWHERE"])
      expect({ exitCode: unset.exitCode, stderr: unset.stderr }).toEqual({
        exitCode: 1,
        stderr: "massgen: --api-key-env NOT_SET_ANYWHERE: the variable is not set or empty\n",
      })
    },
    TIMEOUT,
  )

  test(
    "a run that fails is a final 400 with its reason; one that times out is a 200 cut short with the salvaged answer",
    async () => {
      const failing = await serve({
        agents: [
          {
            id: "agent_a",
            backend: { type: "scripted", script: [{ fail: "boom" }, { fail: "boom" }, { fail: "boom" }, { fail: "boom" }] },
          },
        ],
      })
      try {
        const res = await postJson(`${failing.url}/chat/completions`, { model: "team", messages: ask("q") })
        expect(res.status).toBe(400)
        expect(res.headers.get("x-should-retry")).toBe("false")
        const body: any = await res.json()
        expect(body.error.message).toContain("boom")
        expect(body.massgen.finish_reason).toBe("error")
        // Streaming, the headers went out before the run failed: the stream ends with an error frame, which the SDK raises.
        const stream = await failing.client.chat.completions.create({ model: "team", messages: ask("q"), stream: true })
        const raised = await (async () => {
          for await (const _ of stream) {
            // progress chunks
          }
        })().catch((e) => e)
        expect(raised).toBeInstanceOf(OpenAI.APIError)
        expect(String(raised.message)).toContain("boom")
      } finally {
        await stop(failing)
      }
      const slow = await serve({
        agents: [
          { id: "agent_a", backend: { type: "scripted", answer: "Probably four." } },
          { id: "agent_b", backend: { type: "scripted", answer: "4", delay_seconds: 600 } },
        ],
        timeout_settings: { orchestrator_timeout_seconds: 1 },
      })
      try {
        const res = await postJson(`${slow.url}/chat/completions`, { model: "team", messages: ask("q") })
        expect(res.status).toBe(200)
        const body: any = await res.json()
        expect(body.choices[0]).toMatchObject({ message: { content: "Probably four." }, finish_reason: "length" })
        expect(body.massgen).toMatchObject({ finish_reason: "timeout", winner: "agent_a" })
      } finally {
        await stop(slow)
      }
    },
    TIMEOUT,
  )

  test(
    "SIGTERM drains: the port closes, a running request still gets its answer, exit 0; past --drain-seconds a run is stopped (503)",
    async () => {
      const served = await serve(scripted({ delay_seconds: 2 }))
      const stream = await served.client.chat.completions.create({ model: "team", messages: ask("q"), stream: true })
      const iterator = stream[Symbol.asyncIterator]()
      await iterator.next()
      served.cli.proc.kill("SIGTERM")
      let content = ""
      for (let next = await iterator.next(); !next.done; next = await iterator.next())
        content += (next.value.choices[0]?.delta as any)?.content ?? ""
      expect(content).toBe("The answer is 4.")
      const done = await served.cli.done
      expect(done.exitCode).toBe(0)
      expect(done.stdout).toContain("Draining (stopped by SIGTERM): 1 run going")
      expect(
        await fetch(`${served.url}/models`).then(
          () => "answered",
          () => "refused",
        ),
      ).toBe("refused")

      const stuck = await serve(scripted({ delay_seconds: 600 }), ["--drain-seconds", "0"])
      const pending = postJson(`${stuck.url}/chat/completions`, { model: "team", messages: ask("q") })
      for (let i = 0; i < 500 && (await health(stuck)).running < 1; i++) await Bun.sleep(10)
      stuck.cli.proc.kill("SIGTERM")
      const res = await pending
      expect(res.status).toBe(503)
      expect(((await res.json()) as any).massgen.finish_reason).toBe("interrupted")
      expect((await stuck.cli.done).exitCode).toBe(0)
    },
    TIMEOUT,
  )
})
