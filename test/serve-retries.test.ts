/**
 * Issue 26: no `massgen serve` run paid for twice, with the client libraries
 * people use and their own retry settings.
 *
 * `massgen serve` (from source) on a council whose one agent is a
 * chatcompletion backend on the loopback fake LLM. A spent budget, every
 * agent failed and a timeout are final answers (402/400 with
 * `x-should-retry: false`): the `openai` SDK (maxRetries 2), the AI SDK's
 * `generateText` through `@ai-sdk/openai-compatible` and LangChain's
 * `ChatOpenAI.invoke` (their default retries) each start exactly one run per
 * call, counted by log directories and fake requests. A client whose timeout
 * is shorter than the run goes away and retries: the run goes on, and the
 * retry gets its answer (one run). A streamed retry attaches to the live run
 * and gets its progress from the start. A server killed with SIGKILL during
 * a run and started again resumes the run for the client's retry, asking no
 * recorded model call again.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import OpenAI from "openai"
import { cleanupSandboxes, type RunningCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeRequest, hang, loneCouncilReply, reply, startFakeLlm, status } from "./support/fake-llm.ts"
import { RETRYING_CLIENTS, statusOf } from "./support/openai-clients.ts"

afterAll(cleanupSandboxes)

const TIMEOUT = 120_000

/** A council of one chatcompletion agent on `baseUrl`, with `extra` top-level keys. */
const council = (baseUrl: string, extra: Record<string, unknown> = {}) => ({
  agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: baseUrl } }],
  ...extra,
})

/** `massgen serve` of `doc` in `cwd` on a free port; its base URL. */
const serve = async (cwd: string, doc: unknown, flags: ReadonlyArray<string> = []) => {
  const config = writeConfig(cwd, doc, "team.yaml")
  const cli = await startUntilLine("source", ["serve", "--config", config, "--port", "0", ...flags], "Serving ", {
    cwd,
    timeoutMs: TIMEOUT,
  })
  return { cli, url: cli.lines.find((l) => l.startsWith("Serving "))!.split(" ")[1]! }
}

const stop = async (cli: RunningCli) => {
  cli.proc.kill("SIGTERM")
  return cli.done
}

/** The run directories under the sandbox's log root. */
const runDirs = (cwd: string): Array<string> => {
  const root = nodePath.join(cwd, ".massgen", "massgen_logs")
  if (!fs.existsSync(root)) return []
  return fs
    .readdirSync(root)
    .map((n) => nodePath.join(root, n))
    .filter((d) => fs.existsSync(nodePath.join(d, "events.jsonl")))
}

const eventTypes = (dir: string): Array<string> =>
  fs
    .readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l).type)

/** The lone council on a fake whose `n`-th request is answered only once `release` is called; the served council, in a sandbox. */
const heldCouncil = async (n: number) => {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const fake = await startFakeLlm({
    respond: async (req) => {
      if (req.n === n) await released
      return loneCouncilReply(req)
    },
  })
  const cwd = sandbox()
  return { fake, cwd, release, served: await serve(cwd, council(fake.openAiBaseUrl)) }
}

type Held = Awaited<ReturnType<typeof heldCouncil>>

/** `body` against `heldCouncil(n)`; then there was one run, of one run's calls (the answer, the vote, the presentation). */
const oneRunOf = async (n: number, body: (held: Held) => Promise<void>) => {
  const held = await heldCouncil(n)
  try {
    await body(held)
    expect(runDirs(held.cwd)).toHaveLength(1)
    expect(held.fake.requests).toHaveLength(3)
  } finally {
    await stop(held.served.cli)
    held.fake.stop()
  }
}

const FAULTS: ReadonlyArray<{
  readonly name: string
  readonly respond: (req: FakeRequest) => Behaviour
  readonly extra: Record<string, unknown>
  readonly status: number
}> = [
  {
    name: "a spent budget",
    // A reply that is no answer (no workflow tool), ten input tokens at $100,000 per million: the first call spends $1, with nothing to salvage.
    respond: () => reply({ text: "Let me think." }),
    extra: { pricing: { m: { input: 100_000, output: 0 } }, orchestrator: { budget_usd: 0.5 } },
    status: 402,
  },
  { name: "every agent failed", respond: () => status(400, { body: { error: { message: "no such model" } } }), extra: {}, status: 400 },
  { name: "a timeout", respond: () => hang(), extra: { timeout_settings: { orchestrator_timeout_seconds: 1 } }, status: 400 },
]

describe("massgen serve: a request is a run, once", () => {
  for (const fault of FAULTS) {
    test(
      `${fault.name}: a final answer; each client's call starts exactly one run, whatever its retries`,
      async () => {
        const fake = await startFakeLlm({ respond: fault.respond })
        const cwd = sandbox()
        const served = await serve(cwd, council(fake.openAiBaseUrl, fault.extra))
        try {
          const raw = await fetch(`${served.url}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ model: "team", messages: [{ role: "user", content: "raw?" }] }),
          })
          expect(raw.status).toBe(fault.status)
          expect(raw.headers.get("x-should-retry")).toBe("false")
          for (const [i, [name, call]] of RETRYING_CLIENTS.entries()) {
            const dirsBefore = runDirs(cwd).length
            const requestsBefore = fake.requests.length
            const thrown = await call(served.url, `question ${i}?`).then(
              () => null,
              (e) => e,
            )
            expect({ name, status: statusOf(thrown) }).toEqual({ name, status: fault.status })
            expect({ name, runs: runDirs(cwd).length - dirsBefore }).toEqual({ name, runs: 1 })
            // One run: the calls of one run reached the fake (a timed-out call counts once).
            expect({ name, requests: fake.requests.length - requestsBefore }).toEqual({ name, requests: 1 })
          }
        } finally {
          await stop(served.cli)
          fake.stop()
        }
      },
      TIMEOUT,
    )
  }

  test(
    "a client whose timeout is shorter than the run goes away and retries: the run goes on, and the retry gets its answer",
    async () => {
      // The agent's first call is answered only once the client's second attempt has started (its first timed out).
      await oneRunOf(1, async ({ cwd, release, served }) => {
        let attempts = 0
        const client = new OpenAI({
          baseURL: served.url,
          apiKey: "none",
          timeout: 1500,
          maxRetries: 5,
          fetch: (input, init) => {
            attempts += 1
            if (attempts === 2) release()
            return fetch(input, init)
          },
        })
        const answer = await client.chat.completions.create({ model: "team", messages: [{ role: "user", content: "What is 2+2?" }] })
        expect(answer.choices[0]!.message.content).toBe("Four.")
        expect(attempts).toBeGreaterThanOrEqual(2)
        const dir = (answer as any).massgen.log_dir
        expect(runDirs(cwd)).toEqual([dir])
        expect(eventTypes(dir)).not.toContain("run_resumed")
      })
    },
    TIMEOUT,
  )

  test(
    "a streamed retry while the run goes on attaches to it: the same run, its progress from the start, then the answer",
    async () => {
      const read = async (stream: AsyncIterable<any>) => {
        let content = ""
        let progress = ""
        let runId = ""
        for await (const chunk of stream) {
          content += chunk.choices[0]?.delta?.content ?? ""
          progress += chunk.choices[0]?.delta?.reasoning_content ?? ""
          runId = chunk.massgen?.run_id ?? runId
        }
        return { content, progress, runId }
      }
      await oneRunOf(2, async ({ fake, release, served }) => {
        const client = new OpenAI({ baseURL: served.url, apiKey: "none", maxRetries: 0 })
        const request = { model: "team", messages: [{ role: "user" as const, content: "What is 2+2?" }], stream: true as const }
        const first = read(await client.chat.completions.create(request))
        // The answer is recorded and the vote's call is out: the retry comes in mid-run.
        await fake.waitForRequest(2)
        const second = read(await client.chat.completions.create(request))
        release()
        const [a, b] = await Promise.all([first, second])
        expect(b).toEqual(a)
        expect(a.content).toBe("Four.")
        expect(a.progress).toContain("[agent_a] answer agent1.1: draft")
      })
    },
    TIMEOUT,
  )

  test(
    "a server killed with SIGKILL mid-run and started again: the client's retry gets the resumed run's answer, no recorded call asked again",
    async () => {
      let killed = false
      const fake = await startFakeLlm({
        // The vote's call hangs on the first server, which is killed while it waits.
        respond: (req) => (req.n === 2 && !killed ? hang() : loneCouncilReply(req)),
      })
      const cwd = sandbox()
      const doc = council(fake.openAiBaseUrl)
      const request = { model: "team", messages: [{ role: "user" as const, content: "What is 2+2?" }] }
      const first = await serve(cwd, doc)
      const lost = new OpenAI({ baseURL: first.url, apiKey: "none", maxRetries: 0 }).chat.completions.create(request).catch((e) => e)
      await fake.waitForRequest(2)
      killed = true
      first.cli.proc.kill("SIGKILL")
      await first.cli.done
      expect(await lost).toBeInstanceOf(OpenAI.APIConnectionError)
      const recorded = fake.requests.length
      const again = await serve(cwd, doc)
      try {
        const answer = await new OpenAI({ baseURL: again.url, apiKey: "none", maxRetries: 0 }).chat.completions.create(request)
        expect(answer.choices[0]!.message.content).toBe("Four.")
        const dirs = runDirs(cwd)
        expect(dirs).toHaveLength(1)
        expect(eventTypes(dirs[0]!)).toContain("run_resumed")
        // After the restart: the vote (its call was out, never answered) and the presentation; the recorded answer's call is not asked again.
        const later = fake.requests.slice(recorded)
        expect(later).toHaveLength(2)
        for (const req of later) expect(JSON.stringify(req.body)).not.toBe(JSON.stringify(fake.requests[0]!.body))
      } finally {
        await stop(again.cli)
        fake.stop()
      }
    },
    TIMEOUT,
  )
})
