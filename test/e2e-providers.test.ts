/**
 * Issue 3 end to end: real provider backends, as a user runs them.
 *
 * Each test starts the `massgen` command line (from source, `bun src/main.ts`,
 * and in some cases the compiled `dist/massgen`) against a loopback fake of the
 * three wire protocols (`support/fake-llm.ts`): configs point `base_url` at it
 * and keys are fake strings passed in the environment. The fake's responder
 * reads each request like a model would: with no tools it is the presentation
 * (final text); otherwise the agent writes `new_answer` while its own answer is
 * not among the CURRENT ANSWERS, and then votes for the first agent shown.
 * Tool-call arguments come in many chunks and usage in the last chunk.
 *
 * After every run, no file under the log directory and no line the command
 * printed holds any key text.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { parse as parseYaml } from "yaml"
import { callLogTexts } from "../src/services/run-files/call-logs.ts"
import { readCallLog } from "./support/call-logs.ts"
import { type CliResult, cleanupSandboxes, ensureBinary, type Mode, runCli, sandbox, writeConfig } from "./support/cli.ts"
import {
  type Behaviour,
  cut,
  type FakeLlm,
  type FakeRequest,
  type FakeUsage,
  hang,
  NO_PROXY_ENV,
  offeredTools,
  promptText,
  rateLimited,
  reply,
  startFakeLlm,
  status,
} from "./support/fake-llm.ts"

// KEEP_SANDBOXES=1 keeps the runs' directories (under the temp dir) for a look after a failure.
afterAll(() => {
  if (process.env.KEEP_SANDBOXES === undefined) cleanupSandboxes()
})

const TEST_TIMEOUT_MS = 60_000
const QUESTION = "What is 2+2?"

/** Every key used below contains this word; no file or message may. */
const SECRET_MARK = "SECRET"
const KEY = "sk-test-SECRET-123"
/** Not shaped like any known key format: only the backend's own list of secrets can scrub it. */
const OPAQUE_KEY = "opaque-SECRET-456"

/** Per call: all input (cached included), cached input, all output (reasoning included), reasoning. */
const USAGE: FakeUsage = { input: 1000, cached: 200, output: 100, reasoning: 10 }
const MODEL = "fake-council-1"
/** USD per million tokens, from the config's `pricing:` section. */
const PRICE = { input: 1, cached_input: 0.5, output: 2 }
const CALL_COST = (800 * PRICE.input + 200 * PRICE.cached_input + 100 * PRICE.output) / 1_000_000

const FINAL_PIECES = ["The answer ", "is 4: two ", "plus two."]
const FINAL_TEXT = FINAL_PIECES.join("")
const REASONING = ["Let me ", "weigh the ", "answers."]
const answerOf = (self: string) => `Answer of ${self}: 2+2 is 4, "quoted" and {braced}.`

/** The environment of every run: keys come only from what a test sets. */
const CLEAN_ENV: Record<string, string | undefined> = {
  OPENAI_API_KEY: undefined,
  ANTHROPIC_API_KEY: undefined,
  XAI_API_KEY: undefined,
  GEMINI_API_KEY: undefined,
  GOOGLE_API_KEY: undefined,
  OPENROUTER_API_KEY: undefined,
  FAKE_LLM_KEY: undefined,
  // The fake is on 127.0.0.1: no proxy in between.
  ...NO_PROXY_ENV,
}
const KEYS_ENV = { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: OPAQUE_KEY, FAKE_LLM_KEY: KEY }

// ---------------------------------------------------------------------------
// The fake model

/** The CURRENT ANSWERS block of a round's prompt ("" for a presentation). */
const currentAnswers = (req: FakeRequest): string => {
  const text = promptText(req)
  const start = text.indexOf("<CURRENT ANSWERS")
  return start < 0 ? "" : text.slice(start, text.indexOf("<END OF CURRENT ANSWERS>", start))
}

/** Anonymous ids whose answers a round shows, in order. */
const shownIds = (req: FakeRequest): Array<string> =>
  [...new Set([...currentAnswers(req).matchAll(/<(agent\d+)\.\d+>/g)].map((m) => m[1]!))].sort()

/** The agent a request comes from: its system message says "You are agentN." (one agent: agent1). */
const selfFromSystem = (req: FakeRequest): string => /You are (agent\d+)\./.exec(promptText(req))?.[1] ?? "agent1"

interface CouncilOptions {
  readonly self?: (req: FakeRequest) => string
  /** A behaviour that replaces the normal one for this request, or undefined. */
  readonly override?: (req: FakeRequest, self: string) => Behaviour | undefined | Promise<Behaviour | undefined>
  readonly usage?: FakeUsage
}

/** The well-behaved model: answer once, then vote for the first agent shown; present when offered no tools. */
const council =
  (opts: CouncilOptions = {}) =>
  async (req: FakeRequest): Promise<Behaviour> => {
    const self = (opts.self ?? selfFromSystem)(req)
    const replaced = await opts.override?.(req, self)
    if (replaced !== undefined) return replaced
    const usage = opts.usage ?? USAGE
    const tools = offeredTools(req)
    if (tools.length === 0) return reply({ text: FINAL_PIECES, usage })
    if (tools.includes("new_answer") && !currentAnswers(req).includes(`<${self}.`)) {
      return reply({
        text: "Drafting.",
        reasoning: REASONING,
        toolCalls: [{ name: "new_answer", args: { content: answerOf(self) }, chunks: 9 }],
        usage,
      })
    }
    const target = shownIds(req)[0] ?? self
    return reply({
      text: "Reviewing.",
      toolCalls: [{ name: "vote", args: { agent_id: target, reason: `${target} is right` }, chunks: 6 }],
      usage,
    })
  }

const withFake = async <A>(
  respond: (req: FakeRequest) => Promise<Behaviour> | Behaviour,
  body: (fake: FakeLlm) => Promise<A>,
): Promise<A> => {
  const fake = await startFakeLlm({ respond })
  try {
    return await body(fake)
  } finally {
    fake.stop()
  }
}

/** The vote tool's `agent_id` enum of a request, whatever its protocol; null when vote is not offered. */
const voteEnum = (req: FakeRequest): Array<string> | null => {
  const tools = (req.body?.tools ?? []) as Array<any>
  const vote = tools.find((t) => (t.function?.name ?? t.name) === "vote")
  if (vote === undefined) return null
  const schema = vote.function?.parameters ?? vote.parameters ?? vote.input_schema
  return schema.properties.agent_id.enum
}

/** The key a request carried: `x-api-key`, or `Authorization: Bearer ...` (both SDKs send the latter). */
const keyOf = (req: FakeRequest): string | null =>
  req.headers["x-api-key"] ?? (req.headers.authorization?.startsWith("Bearer ") ? req.headers.authorization.slice(7) : null)

// ---------------------------------------------------------------------------
// Configs

type Provider = "openai" | "chatcompletion" | "claude"
const PATH_OF: Record<Provider, string> = { openai: "/v1/responses", chatcompletion: "/v1/chat/completions", claude: "/v1/messages" }
const IDS = ["agent_a", "agent_b", "agent_c"] as const

/**
 * Agent n (1-based) on `provider`, pointed at the fake. Keys: openai from OPENAI_API_KEY,
 * claude from ANTHROPIC_API_KEY, chatcompletion from `api_key: ${FAKE_LLM_KEY}`.
 */
const agentOn = (fake: FakeLlm, provider: Provider, n: number, extra: Record<string, unknown> = {}) => ({
  id: IDS[n - 1],
  system_message: `You are agent${n}.`,
  backend: {
    type: provider,
    model: MODEL,
    base_url: provider === "claude" ? fake.url : fake.openAiBaseUrl,
    ...(provider === "chatcompletion" ? { api_key: "${FAKE_LLM_KEY}" } : {}),
    ...extra,
  },
})

const configOf = (agents: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => ({
  agents,
  pricing: { [MODEL]: PRICE },
  timeout_settings: { orchestrator_timeout_seconds: 40, agent_timeout_seconds: 30 },
  ...extra,
})

// ---------------------------------------------------------------------------
// Running and reading

interface Run {
  readonly result: CliResult
  readonly cwd: string
  readonly logDir: string
}

const runConfig = async (
  mode: Mode,
  doc: unknown,
  opts: { readonly env?: Record<string, string | undefined>; readonly cwd?: string } = {},
): Promise<Run> => {
  const cwd = opts.cwd ?? sandbox()
  const config = writeConfig(cwd, doc)
  const result = await runCli(mode, ["--automation", "--config", config, QUESTION], { cwd, env: { ...CLEAN_ENV, ...opts.env } })
  return { result, cwd, logDir: logDirOf(result) }
}

const runQuick = async (mode: Mode, args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}): Promise<Run> => {
  const cwd = sandbox()
  const result = await runCli(mode, ["--automation", ...args, QUESTION], { cwd, env: { ...CLEAN_ENV, ...env } })
  return { result, cwd, logDir: logDirOf(result) }
}

const shown = (result: CliResult) => `exit ${result.exitCode}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`

const logDirOf = (result: CliResult): string => {
  const line = result.lines.find((l) => l.startsWith("LOG_DIR: "))
  if (line === undefined) throw new Error(`no LOG_DIR line\n${shown(result)}`)
  return line.slice("LOG_DIR: ".length)
}

const expectExit = (result: CliResult, code: number) => {
  expectLike({ exitCode: result.exitCode, output: shown(result) }, { exitCode: code })
}

/**
 * `toMatchObject` on a copy: bun 1.4.4 writes the pattern's asymmetric matchers
 * (`expect.any`, `expect.stringContaining`) into the object it checks.
 */
const expectLike = (value: unknown, pattern: unknown) => expect(structuredClone(value)).toMatchObject(pattern as object)

const readJson = (path: string): any => JSON.parse(fs.readFileSync(path, "utf8"))
const statusOf = (run: Run): any => readJson(nodePath.join(run.logDir, "status.json"))
const eventsOf = (run: Run): Array<any> =>
  fs
    .readFileSync(nodePath.join(run.logDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l))
const fileOf = (run: Run, rel: string): string => fs.readFileSync(nodePath.join(run.logDir, rel), "utf8")
const ofType = (events: ReadonlyArray<any>, type: string, agent?: string) =>
  events.filter((e) => e.type === type && (agent === undefined || e.agent === agent))

/** Every file under `dir`, relative to it. */
const filesUnder = (dir: string): Array<string> =>
  fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => nodePath.relative(dir, nodePath.join(d.parentPath, d.name)))
    .sort()

/** No key text in any file of the log directory, nor in what the command printed. */
const expectNoKeyText = (run: Run) => {
  const files = filesUnder(run.logDir)
  expect(files).toContain("events.jsonl")
  expect(files).toContain("status.json")
  expect(files).toContain("execution_metadata.yaml")
  const leaks = files.filter((f) => fs.readFileSync(nodePath.join(run.logDir, f), "utf8").includes(SECRET_MARK))
  expect(leaks).toEqual([])
  expect(run.result.stdout).not.toContain(SECRET_MARK)
  expect(run.result.stderr).not.toContain(SECRET_MARK)
}

/** Token and cost totals of the call_end events, overall and per agent, against status.json. */
const expectAccounting = (run: Run, priced: boolean) => {
  const events = eventsOf(run)
  const status = statusOf(run)
  const ends = ofType(events, "call_end")
  const ok = ends.filter((e) => e.error === null)
  expect(ok.length).toBeGreaterThan(0)
  for (const e of ok) {
    expectLike(e, {
      input_tokens: USAGE.input,
      cached_input_tokens: USAGE.cached,
      output_tokens: USAGE.output,
      reasoning_tokens: USAGE.reasoning,
      truncated: false,
      model: MODEL,
    })
    if (priced) expect(e.cost).toBeCloseTo(CALL_COST, 12)
    else expect(e.cost).toBeNull()
  }
  expect(status.costs.total_input_tokens).toBe(ok.length * USAGE.input)
  expect(status.costs.total_output_tokens).toBe(ok.length * USAGE.output)
  if (priced) expect(status.costs.total_estimated_cost).toBeCloseTo(ok.length * CALL_COST, 12)
  else expect(status.costs.total_estimated_cost).toBeNull()
  for (const [id, agent] of Object.entries<any>(status.agents)) {
    const n = ok.filter((e) => e.agent === id).length
    expectLike(
      { id, usage: agent.token_usage },
      {
        id,
        usage: {
          input_tokens: n * USAGE.input,
          output_tokens: n * USAGE.output,
          reasoning_tokens: n * USAGE.reasoning!,
          cached_input_tokens: n * USAGE.cached!,
        },
      },
    )
    if (priced) expect(agent.token_usage.estimated_cost).toBeCloseTo(n * CALL_COST, 12)
    else expect(agent.token_usage.estimated_cost).toBeNull()
  }
  return { calls: ok.length }
}

/** `llm_log/calls.jsonl` holds one record per call that came back or failed: who, what was asked, what came back. */
const expectCallLogs = (run: Run) => {
  const events = eventsOf(run)
  const logs = callLogTexts(run.logDir)
  // A call cut off by a cancelled round has nothing to log but its request.
  for (const end of ofType(events, "call_end").filter((e) => e.error !== "cancelled")) {
    expect(logs.has(end.call)).toBe(true)
    const record = readCallLog(run.logDir, end.call)
    expectLike(record, { call: end.call, agent: end.agent, round: end.round, role: end.role, model: MODEL, error: end.error })
    expect(record.request.system).toContain("You are agent")
    expect(record.request.messages[0].content).toContain(QUESTION)
    if (end.error !== null) {
      expect(record.reply).toBeNull()
      continue
    }
    expect(record.reply.usage).toEqual({
      inputTokens: USAGE.input,
      cachedInputTokens: USAGE.cached,
      outputTokens: USAGE.output,
      reasoningTokens: USAGE.reasoning,
    })
    expect(record.reply.raw).not.toBeNull()
    if (end.role === "presentation") {
      expect(record.request.tools).toEqual([])
      expect(record.reply.text).toBe(FINAL_TEXT)
    } else {
      expect(record.request.tools.map((t: any) => t.name)).toContain(record.reply.toolCalls[0].name)
    }
  }
}

/** What every completed council run shows: winner agent_a, the presented text, every answer and vote intact. */
const expectCouncilWon = (run: Run, agents: ReadonlyArray<string> = IDS) => {
  expectExit(run.result, 0)
  expect(run.result.lines).toContain("WINNER: agent_a")
  expect(fileOf(run, "final/agent_a/answer.txt")).toBe(FINAL_TEXT)
  const events = eventsOf(run)
  expectLike(ofType(events, "final_answer"), [{ agent: "agent_a", source: "presentation", content: FINAL_TEXT }])
  expectLike(events.at(-1), { type: "run_finished", reason: "completed", winner: "agent_a" })
  const status = statusOf(run)
  expectLike(status, { is_complete: true, finish_reason: "completed", results: { winner: "agent_a" } })
  for (const id of agents) {
    // The argument text arrived in 9 pieces and was joined whole.
    expect(ofType(events, "answer_submitted", id).map((e) => e.content)).toContain(answerOf(`agent${IDS.indexOf(id as never) + 1}`))
    expectLike(status.agents[id].vote_cast, { voted_for_agent: "agent_a", voted_for_label: "agent1.1" })
  }
  // The presentation went out with no tools, and its text streamed into the winner's output file.
  const presentation = ofType(events, "call_start").filter((e) => e.role === "presentation")
  expectLike(presentation, [{ agent: "agent_a" }])
  expect(fileOf(run, "agent_outputs/agent_a.txt")).toEndWith(FINAL_TEXT)
}

/** The workflow tools went out in each provider's own format, `vote` limited to the agents shown. */
const expectToolFormats = (fake: FakeLlm) => {
  for (const req of fake.requests) {
    const tools = (req.body?.tools ?? []) as Array<any>
    if (tools.length === 0) continue
    if (req.protocol === "chat") {
      for (const t of tools) expectLike(t, { type: "function", function: { name: expect.any(String), parameters: { type: "object" } } })
      expect(req.body.tool_choice).toBe("required")
      expect(req.body.stream_options).toEqual({ include_usage: true })
    } else if (req.protocol === "responses") {
      for (const t of tools) expectLike(t, { type: "function", name: expect.any(String), parameters: { type: "object" } })
      expect(req.body.tool_choice).toBe("required")
    } else {
      for (const t of tools) expectLike(t, { name: expect.any(String), input_schema: { type: "object" } })
      expect(req.body.tool_choice).toEqual({ type: "auto" })
    }
    const answerTool = tools.find((t) => (t.function?.name ?? t.name) === "new_answer")
    if (answerTool !== undefined) {
      const schema = answerTool.function?.parameters ?? answerTool.parameters ?? answerTool.input_schema
      expect(schema.required).toEqual(["content"])
    }
    const ids = voteEnum(req)
    if (ids !== null) expect(ids).toEqual(shownIds(req))
    expect(req.body.stream).toBe(true)
  }
}

/** Reasoning went to `<id>.reasoning.txt`, apart from the answer text in `<id>.txt`. */
const expectReasoningApart = (run: Run, id: string) => {
  expect(fileOf(run, `agent_outputs/${id}.reasoning.txt`)).toContain(REASONING.join(""))
  const text = fileOf(run, `agent_outputs/${id}.txt`)
  expect(text).toContain("Drafting.")
  expect(text).not.toContain("weigh")
}

const PROTOCOL: Record<Provider, FakeRequest["protocol"]> = { openai: "responses", chatcompletion: "chat", claude: "anthropic" }

// ---------------------------------------------------------------------------

describe.concurrent("three agents on one provider", () => {
  beforeAll(() => ensureBinary().then(() => undefined), 120_000)

  const cases: ReadonlyArray<readonly [Provider, Mode, string]> = [
    ["openai", "source", KEY],
    ["chatcompletion", "binary", KEY],
    ["claude", "source", OPAQUE_KEY],
  ]
  for (const [provider, mode, key] of cases) {
    test(
      `${provider} (${PROTOCOL[provider]}, ${mode}): winner, final answer, tokens and cost in status.json, call logs, no key text`,
      async () => {
        await withFake(council(), async (fake) => {
          const run = await runConfig(mode, configOf([1, 2, 3].map((n) => agentOn(fake, provider, n))), { env: KEYS_ENV })
          expectCouncilWon(run)
          const { calls } = expectAccounting(run, true)
          // Three answers, three votes at least, one presentation.
          expect(calls).toBeGreaterThanOrEqual(7)
          expectCallLogs(run)
          expectReasoningApart(run, "agent_b")
          expectToolFormats(fake)
          expect(new Set(fake.requests.map((r) => r.path))).toEqual(new Set([PATH_OF[provider]]))
          expect(new Set(fake.requests.map(keyOf))).toEqual(new Set([key]))
          expect(fake.requests.every((r) => r.body.model === MODEL)).toBe(true)
          expect(statusOf(run).agents.agent_a.model).toBe(MODEL)
          // The config is recorded with the key reference, never its value.
          const metadata = parseYaml(fileOf(run, "execution_metadata.yaml"))
          if (provider === "chatcompletion") expect(metadata.config.agents[0].backend.api_key).toBe("${FAKE_LLM_KEY}")
          expectNoKeyText(run)
        })
      },
      TEST_TIMEOUT_MS,
    )
  }

  test(
    "a model with no price: tokens counted, estimated_cost null (not 0)",
    async () => {
      await withFake(council(), async (fake) => {
        const doc = { ...configOf([1, 2, 3].map((n) => agentOn(fake, "chatcompletion", n))), pricing: {} }
        const run = await runConfig("source", doc, { env: KEYS_ENV })
        expectCouncilWon(run)
        expectAccounting(run, false)
        expect(statusOf(run).costs.total_estimated_cost).toBeNull()
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )
})

describe.concurrent("mixed providers and faults", () => {
  test(
    "one agent per protocol in one run",
    async () => {
      await withFake(council(), async (fake) => {
        const agents = [agentOn(fake, "openai", 1), agentOn(fake, "chatcompletion", 2), agentOn(fake, "claude", 3)]
        const run = await runConfig("source", configOf(agents), { env: KEYS_ENV })
        expectCouncilWon(run)
        expectAccounting(run, true)
        expectCallLogs(run)
        expectToolFormats(fake)
        for (const id of IDS) expectReasoningApart(run, id)
        const pathsOf = (self: string) => new Set(fake.requests.filter((r) => selfFromSystem(r) === self).map((r) => r.path))
        expect(pathsOf("agent1")).toEqual(new Set([PATH_OF.openai]))
        expect(pathsOf("agent2")).toEqual(new Set([PATH_OF.chatcompletion]))
        expect(pathsOf("agent3")).toEqual(new Set([PATH_OF.claude]))
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a loopback base_url needs no key: every protocol runs with no key set (a placeholder is sent)",
    async () => {
      await withFake(council(), async (fake) => {
        const chat = agentOn(fake, "chatcompletion", 2)
        const { api_key: _, ...keyless } = chat.backend
        const agents = [agentOn(fake, "openai", 1), { ...chat, backend: keyless }, agentOn(fake, "claude", 3)]
        const run = await runConfig("source", configOf(agents))
        expectCouncilWon(run)
        expect(new Set(fake.requests.map(keyOf))).toEqual(new Set(["no-key"]))
        expect(ofType(eventsOf(run), "call_retried")).toEqual([])
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a 429 with retry-after: 1 is retried after 1 s (call_retried), and the run completes",
    async () => {
      await withFake(council(), async (fake) => {
        fake.enqueue("chat", rateLimited("1"))
        const agents = [agentOn(fake, "openai", 1), agentOn(fake, "chatcompletion", 2), agentOn(fake, "claude", 3)]
        const run = await runConfig("source", configOf(agents), { env: KEYS_ENV })
        expectCouncilWon(run)
        const events = eventsOf(run)
        const retried = ofType(events, "call_retried")
        expectLike(retried, [{ agent: "agent_b", round: 1, retry: 1, delay_seconds: 1 }])
        expect(retried[0].error).toContain("rate limited")
        const failedCall = ofType(events, "call_end").find((e) => e.call === retried[0].call)
        expect(failedCall.error).toContain("429")
        // The retry serves the same attempt of the same round.
        const starts = ofType(events, "call_start", "agent_b").filter((e) => e.round === 1)
        expect(starts.map((e) => e.attempt)).toEqual([1, 1])
        expectAccounting(run, true)
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "5xx until the retries run out (max_retries: 1): that agent is out with an error object, the others go on",
    async () => {
      const respond = council({ override: (_req, self) => (self === "agent3" ? status(503) : undefined) })
      await withFake(respond, async (fake) => {
        const agents = [agentOn(fake, "openai", 1), agentOn(fake, "chatcompletion", 2), agentOn(fake, "claude", 3, { max_retries: 1 })]
        const run = await runConfig("source", configOf(agents), { env: KEYS_ENV })
        expectCouncilWon(run, ["agent_a", "agent_b"])
        const events = eventsOf(run)
        expect(ofType(events, "call_start", "agent_c")).toHaveLength(2)
        const retried = ofType(events, "call_retried", "agent_c")
        expectLike(retried, [{ retry: 1 }])
        // Exponential backoff with jitter: 1 s × 0.8..1.2 for the first retry.
        expect(retried[0].delay_seconds).toBeGreaterThanOrEqual(0.8)
        expect(retried[0].delay_seconds).toBeLessThanOrEqual(1.2)
        expectLike(ofType(events, "agent_failed", "agent_c"), [{ kind: "error" }])
        const agentC = statusOf(run).agents.agent_c
        expect(agentC.status).toBe("error")
        expect(agentC.error).toEqual({ type: "error", message: expect.stringContaining("503"), timestamp: expect.any(Number) })
        expect(agentC.error.message).toContain("server error")
        expect(fake.requests.filter((r) => r.protocol === "anthropic")).toHaveLength(2)
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a server that never answers: the call times out (call_timeout_seconds: 0.5, max_retries: 0), the agent is out, the run goes on",
    async () => {
      const respond = council({ override: (_req, self) => (self === "agent2" ? hang() : undefined) })
      await withFake(respond, async (fake) => {
        const agents = [
          agentOn(fake, "openai", 1),
          agentOn(fake, "chatcompletion", 2, { call_timeout_seconds: 0.5, max_retries: 0 }),
          agentOn(fake, "claude", 3),
        ]
        const run = await runConfig("source", configOf(agents), { env: KEYS_ENV })
        expectCouncilWon(run, ["agent_a", "agent_c"])
        const events = eventsOf(run)
        const ends = ofType(events, "call_end", "agent_b")
        expect(ends).toHaveLength(1)
        expect(ends[0].error).toBe(`timeout: no reply from ${fake.url} after 0.5s`)
        expect(ends[0].seconds).toBeGreaterThanOrEqual(0.5)
        expect(ofType(events, "call_retried", "agent_b")).toEqual([])
        expectLike(statusOf(run).agents.agent_b, {
          status: "error",
          error: { type: "error", message: expect.stringContaining("timeout"), timestamp: expect.any(Number) },
        })
        // The hung request was aborted by the client, not left to the end of the process.
        const hung = fake.requests.find((r) => r.protocol === "chat")!
        await fake.waitForAbort(hung.n)
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a stream cut in the middle (connection broken or closed early) is an error of that call, retried, not a crash",
    async () => {
      await withFake(council(), async (fake) => {
        const partial = { text: "Drafting.", toolCalls: [{ name: "new_answer", args: { content: "never finished" }, chunks: 9 }] }
        fake.enqueue("responses", cut(partial, 4, "error"))
        fake.enqueue("chat", cut(partial, 5, "close"))
        fake.enqueue("anthropic", cut(partial, 6, "close"))
        const agents = [agentOn(fake, "openai", 1), agentOn(fake, "chatcompletion", 2), agentOn(fake, "claude", 3)]
        const run = await runConfig("source", configOf(agents), { env: KEYS_ENV })
        expectCouncilWon(run)
        const events = eventsOf(run)
        for (const id of IDS) {
          const [first] = ofType(events, "call_end", id)
          expect({ id, error: first.error }).toEqual({ id, error: expect.stringMatching(/^stream cut: /) })
          expectLike(ofType(events, "call_retried", id), [{ call: first.call, retry: 1 }])
        }
        // The half-sent answer was never taken.
        expect(ofType(events, "answer_submitted").map((e) => e.content)).not.toContain("never finished")
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a reply with no tool call, then one with a tool call: one reply_rejected, the answer accepted",
    async () => {
      await withFake(council(), async (fake) => {
        fake.enqueue("anthropic", reply({ text: "I would say 4.", usage: USAGE }))
        const agents = [agentOn(fake, "claude", 1), agentOn(fake, "openai", 2)]
        const run = await runConfig("source", configOf(agents), { env: KEYS_ENV })
        expectCouncilWon(run, ["agent_a", "agent_b"])
        const events = eventsOf(run)
        expectLike(ofType(events, "reply_rejected"), [{ agent: "agent_a", round: 1, attempt: 1, reason: "no_tool_call" }])
        expect(
          ofType(events, "call_start", "agent_a")
            .filter((e) => e.round === 1)
            .map((e) => e.attempt),
        ).toEqual([1, 2])
        expectLike(ofType(events, "answer_submitted", "agent_a")[0], { round: 1, content: answerOf("agent1") })
        // The second attempt saw what the first said and was told to call a tool.
        const second = fake.requests.filter((r) => r.protocol === "anthropic")[1]!
        expect(JSON.stringify(second.body.messages)).toContain("I would say 4.")
        expect(JSON.stringify(second.body.messages)).toContain("Make sure you actually call the tool")
        expectAccounting(run, true)
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "budget_usd: once spent no new call starts, exit 3, finish_reason budget, an answer salvaged",
    async () => {
      // $1 per call; the three first calls are held until all three are in flight.
      const usage: FakeUsage = { input: 1000, cached: 0, output: 100, reasoning: 0 }
      let fake: FakeLlm | undefined
      const respond = council({
        usage,
        override: async (req) => {
          if (req.n <= 3) await fake!.waitForRequest(3)
          return undefined
        },
      })
      await withFake(respond, async (started) => {
        fake = started
        const doc = configOf(
          [1, 2, 3].map((n) => agentOn(started, "chatcompletion", n)),
          { pricing: { [MODEL]: { input: 1000, output: 0 } }, orchestrator: { budget_usd: 3.5 } },
        )
        const run = await runConfig("source", doc, { env: KEYS_ENV })
        expectExit(run.result, 3)
        expect(run.result.stderr).toContain("budget")
        const events = eventsOf(run)
        const status = statusOf(run)
        expect(status.finish_reason).toBe("budget")
        expectLike(events.at(-1), { type: "run_finished", reason: "budget" })
        expect(status.costs.total_estimated_cost).toBeGreaterThanOrEqual(3.5)

        // The call_end that spent the budget; no call starts after it (calls already in flight may end).
        let spent = 0
        const at = events.findIndex((e) => e.type === "call_end" && (spent += e.cost ?? 0) >= 3.5)
        expect(at).toBeGreaterThan(0)
        const lateStarts = events.slice(at + 1).filter((e) => e.type === "call_start")
        expect(lateStarts).toEqual([])
        expect(
          ofType(events, "call_end")
            .slice(0, 3)
            .every((e) => e.cost === 1),
        ).toBe(true)

        // At least one answer existed before the 4th call could start: it is salvaged.
        const answers = ofType(events, "answer_submitted")
        expect(answers.length).toBeGreaterThan(0)
        const [final] = ofType(events, "final_answer")
        expectLike(final, { source: "salvaged" })
        expect(answers.map((a) => a.content)).toContain(final.content)
        expect(fileOf(run, `final/${final.agent}/answer.txt`)).toBe(final.content)
        expect(run.result.lines).toContain(`WINNER: ${final.agent}`)
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )
})

describe.concurrent("quick start and keys", () => {
  beforeAll(() => ensureBinary().then(() => undefined), 120_000)

  test(
    "--model gpt-5-mini --base-url: one openai agent, priced from the built-in table",
    async () => {
      await withFake(council(), async (fake) => {
        const run = await runQuick("source", ["--model", "gpt-5-mini", "--base-url", fake.openAiBaseUrl], { OPENAI_API_KEY: KEY })
        expectExit(run.result, 0)
        expect(run.result.lines).toContain("WINNER: agent_a")
        expect(fileOf(run, "final/agent_a/answer.txt")).toBe(FINAL_TEXT)
        expect(fake.requests.map((r) => [r.path, r.body.model, keyOf(r)])).toEqual(
          fake.requests.map(() => [PATH_OF.openai, "gpt-5-mini", KEY]),
        )
        const status = statusOf(run)
        expect(Object.keys(status.agents)).toEqual(["agent_a"])
        expect(status.agents.agent_a.model).toBe("gpt-5-mini")
        // gpt-5-mini: $0.25 input, $0.025 cached input, $2 output per million tokens.
        const perCall = (800 * 0.25 + 200 * 0.025 + 100 * 2) / 1_000_000
        const calls = ofType(eventsOf(run), "call_end").filter((e) => e.error === null).length
        expect(calls).toBe(3) // answer, vote, presentation
        expect(status.agents.agent_a.token_usage.estimated_cost).toBeCloseTo(calls * perCall, 12)
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "--models a,b --backend chatcompletion --base-url: one agent per model",
    async () => {
      const self = (req: FakeRequest) => (req.body?.model === "b" ? "agent2" : "agent1")
      await withFake(council({ self }), async (fake) => {
        const run = await runQuick("source", ["--models", "a,b", "--backend", "chatcompletion", "--base-url", fake.openAiBaseUrl])
        expectExit(run.result, 0)
        expect(run.result.lines).toContain("WINNER: agent_a")
        const status = statusOf(run)
        expect(Object.keys(status.agents)).toEqual(["agent_a", "agent_b"])
        expect([status.agents.agent_a.model, status.agents.agent_b.model]).toEqual(["a", "b"])
        expectLike(status.agents.agent_b.vote_cast, { voted_for_agent: "agent_a" })
        expect(new Set(fake.requests.map((r) => r.path))).toEqual(new Set([PATH_OF.chatcompletion]))
        expect(new Set(fake.requests.map((r) => r.body.model))).toEqual(new Set(["a", "b"]))
        expect(status.agents.agent_a.token_usage.estimated_cost).toBeNull()
      })
    },
    TEST_TIMEOUT_MS,
  )

  for (const mode of ["source", "binary"] as const) {
    test(
      `a missing key (${mode}): exit 1 naming the variable, no call, nothing under the log base dir`,
      async () => {
        await withFake(council(), async (fake) => {
          const cwd = sandbox()
          const logBase = nodePath.join(cwd, "logs")
          // agent_b could run (it has its key); agent_a's missing key stops the run before any call.
          const doc = configOf([{ id: "agent_a", backend: { type: "openai", model: "gpt-5-mini" } }, agentOn(fake, "claude", 2)])
          const config = writeConfig(cwd, doc)
          const result = await runCli(mode, ["--automation", "--config", config, QUESTION], {
            cwd,
            env: { ...CLEAN_ENV, ANTHROPIC_API_KEY: OPAQUE_KEY, MASSGEN_LOG_BASE_DIR: logBase },
          })
          expectExit(result, 1)
          expect(result.stderr).toContain("OPENAI_API_KEY")
          expect(result.stderr).toContain("agent_a")
          expect(result.stdout).toBe("")
          expect(fs.existsSync(logBase)).toBe(false)
          expect(fs.readdirSync(cwd)).toEqual(["config.yaml"])
          expect(fake.requests).toEqual([])

          // The quick start names the variable of the inferred backend.
          for (const [model, variable] of [
            ["claude-sonnet-4-5", "ANTHROPIC_API_KEY"],
            ["gemini-2.5-flash", "GOOGLE_API_KEY or GEMINI_API_KEY"],
          ] as const) {
            const quick = await runCli(mode, ["--model", model, QUESTION], { cwd, env: { ...CLEAN_ENV, MASSGEN_LOG_BASE_DIR: logBase } })
            expectExit(quick, 1)
            expect(quick.stderr).toContain(variable)
            expect(fs.existsSync(logBase)).toBe(false)
          }
        })
      },
      TEST_TIMEOUT_MS,
    )

    test(
      `.env in the working directory supplies keys; a variable already in the environment wins (${mode})`,
      async () => {
        await withFake(council(), async (fake) => {
          const cwd = sandbox()
          fs.writeFileSync(
            nodePath.join(cwd, ".env"),
            ["# keys for the fake", "OPENAI_API_KEY=sk-test-SECRET-dotenv", 'export FAKE_LLM_KEY="opaque-SECRET-dotenv"', ""].join("\n"),
          )
          const doc = configOf([agentOn(fake, "openai", 1), agentOn(fake, "chatcompletion", 2)])
          const keysSeen = (from: number) => {
            const reqs = fake.requests.filter((r) => r.n > from)
            return {
              responses: new Set(reqs.filter((r) => r.protocol === "responses").map(keyOf)),
              chat: new Set(reqs.filter((r) => r.protocol === "chat").map(keyOf)),
            }
          }

          const first = await runConfig(mode, doc, { cwd })
          expectCouncilWon(first, ["agent_a", "agent_b"])
          expect(keysSeen(0)).toEqual({ responses: new Set(["sk-test-SECRET-dotenv"]), chat: new Set(["opaque-SECRET-dotenv"]) })
          expectNoKeyText(first)

          const before = fake.requests.length
          const second = await runConfig(mode, doc, { cwd, env: { OPENAI_API_KEY: "sk-test-SECRET-env" } })
          expectCouncilWon(second, ["agent_a", "agent_b"])
          expect(keysSeen(before)).toEqual({ responses: new Set(["sk-test-SECRET-env"]), chat: new Set(["opaque-SECRET-dotenv"]) })
          expectNoKeyText(second)
        })
      },
      TEST_TIMEOUT_MS,
    )
  }

  test(
    "a 401 whose body echoes the key: every agent out, exit 2, the key in no file and no message",
    async () => {
      const respond = (req: FakeRequest): Behaviour =>
        status(401, {
          body: {
            type: "error",
            error: { type: "authentication_error", message: `Incorrect API key provided: ${keyOf(req)}. Header: Bearer ${keyOf(req)}` },
          },
        })
      await withFake(respond, async (fake) => {
        const agents = [
          agentOn(fake, "openai", 1),
          // A key written into the config itself is masked in execution_metadata.yaml.
          agentOn(fake, "chatcompletion", 2, { api_key: "literal-SECRET-789" }),
          agentOn(fake, "claude", 3),
        ]
        const run = await runConfig("source", configOf(agents), { env: KEYS_ENV })
        expectExit(run.result, 2)
        expect(new Set(fake.requests.map(keyOf))).toEqual(new Set([KEY, "literal-SECRET-789", OPAQUE_KEY]))
        // Not retryable: one call per agent.
        expect(fake.requests).toHaveLength(3)
        const status = statusOf(run)
        expect(status.finish_reason).toBe("error")
        for (const id of IDS) {
          expectLike(status.agents[id].error, { type: "error", message: expect.stringContaining("auth") })
          expect(status.agents[id].error.message).toContain("Incorrect API key provided")
        }
        expect(run.result.stderr).toContain("401")
        expect(run.result.stderr).toContain("Incorrect API key provided")
        expect(parseYaml(fileOf(run, "execution_metadata.yaml")).config.agents[1].backend.api_key).toBe("***")
        expectNoKeyText(run)
      })
    },
    TEST_TIMEOUT_MS,
  )
})
