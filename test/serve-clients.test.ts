/**
 * Issue 26 (the API half): `massgen serve` with the clients people use, each a
 * real library from npm against a council on the loopback fake LLM.
 *
 * One server (from source) serves a one-agent council on a fake Chat
 * Completions model (`loneCouncilReply`, or a responder a test sets). It is
 * asked through the official `openai` SDK (`responses.create` plain and
 * streamed, `previous_response_id`, `models.retrieve`), the Vercel AI SDK
 * (`generateText`/`streamText` through `@ai-sdk/openai`, which speaks
 * Responses, and `@ai-sdk/openai-compatible`, Chat) and LangChain's `ChatOpenAI`
 * (`invoke`/`stream`, with and without `useResponsesApi`). A presenter that
 * writes slowly (its stream held after its first words until the test has seen
 * them as content) shows the answer streamed as it is written. A JSON schema
 * format yields JSON that parses and matches (an answer that is not is asked
 * for once more); the sampling fields reach the presenter's call and no
 * round's; every refused field is a 400 naming it, before any run.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { createOpenAI } from "@ai-sdk/openai"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { ChatOpenAI } from "@langchain/openai"
import { generateText, jsonSchema, Output, streamText } from "ai"
import OpenAI from "openai"
import { readEventsText } from "../src/domain/log/index.ts"
import { cleanupSandboxes, type RunningCli, runCli, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"
import {
  type Behaviour,
  type FakeLlm,
  type FakeRequest,
  gated,
  hang,
  loneCouncilReply,
  offeredTools,
  promptText,
  reply,
  startFakeLlm,
  status,
} from "./support/fake-llm.ts"

const TIMEOUT = 120_000

let fake: FakeLlm
let cli: RunningCli
let url: string
let cwd: string
let client: OpenAI
/** What the fake model answers; a test may set its own and puts the default back. */
let respond: (req: FakeRequest) => Behaviour = loneCouncilReply

beforeAll(async () => {
  fake = await startFakeLlm({ respond: (req) => respond(req) })
  cwd = sandbox()
  const config = writeConfig(
    cwd,
    { agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl } }] },
    "team.yaml",
  )
  // Each test asks again what another asked: no retry window, so each request is a run of its own.
  cli = await startUntilLine("source", ["serve", "--config", config, "--port", "0", "--retry-window-seconds", "0"], "Serving ", {
    cwd,
    timeoutMs: TIMEOUT,
  })
  url = cli.lines.find((l) => l.startsWith("Serving "))!.split(" ")[1]!
  client = new OpenAI({ baseURL: url, apiKey: "none", maxRetries: 0 })
}, TIMEOUT)

afterAll(async () => {
  cli?.proc.kill("SIGTERM")
  await cli?.done
  fake?.stop()
  cleanupSandboxes()
})

const eventsOf = (logDir: string) => readEventsText(fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")).events

/** The tokens a run's calls recorded, summed. */
const tokensOf = (logDir: string) => {
  const ends = eventsOf(logDir).flatMap((e) => (e._tag === "call_end" ? [e] : []))
  return { input: ends.reduce((n, c) => n + (c.input_tokens ?? 0), 0), output: ends.reduce((n, c) => n + (c.output_tokens ?? 0), 0) }
}

const isPresentation = (req: FakeRequest) => offeredTools(req).length === 0

/** A promise and its resolver: the gate a slow presenter waits at. */
const latch = () => {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

describe("the Responses API and models.retrieve through the openai SDK", () => {
  test(
    "responses.create: the final answer as output_text, real usage, the run's id; previous_response_id continues it",
    async () => {
      const { data, response } = await client.responses.create({ model: "team", input: "What is 2+2?" }).withResponse()
      expect(data.output_text).toBe("Four.")
      expect(data.status).toBe("completed")
      const runId = response.headers.get("x-massgen-run-id")!
      expect(data.id).toBe(`resp_${runId}`)
      const facts = (data as any).massgen
      expect(facts).toMatchObject({ run_id: runId, finish_reason: "completed", winner: "agent_a" })
      const tokens = tokensOf(facts.log_dir)
      expect(data.usage!.input_tokens).toBe(tokens.input)
      expect(data.usage!.output_tokens).toBe(tokens.output)
      expect(data.usage!.input_tokens).toBeGreaterThan(0)

      const before = fake.requests.length
      const next = await client.responses.create({ model: "team", input: "And doubled?", previous_response_id: data.id })
      expect(next.output_text).toBe("Eight.")
      expect(next.previous_response_id).toBe(data.id)
      for (const req of fake.requests.slice(before)) expect(promptText(req)).toContain("User: What is 2+2?\\nAssistant: Four.")
      expect(eventsOf((next as any).massgen.log_dir)[0]).toMatchObject({
        _tag: "run_started",
        question: "And doubled?",
        conversation: [
          { role: "user", content: "What is 2+2?" },
          { role: "assistant", content: "Four." },
        ],
      })
      const unknown = await client.responses.create({ model: "team", input: "x", previous_response_id: "resp_log_nope" }).catch((e) => e)
      expect(unknown).toBeInstanceOf(OpenAI.NotFoundError)
      expect(unknown.param).toBe("previous_response_id")
    },
    TIMEOUT,
  )

  test(
    "responses.stream: progress as reasoning summary deltas, the answer as output_text deltas, response.completed with usage",
    async () => {
      const stream = client.responses.stream({ model: "team", input: "What is 2+2?" })
      let text = ""
      let progress = ""
      const types: Array<string> = []
      for await (const event of stream) {
        types.push(event.type)
        if (event.type === "response.output_text.delta") text += event.delta
        if (event.type === "response.reasoning_summary_text.delta") progress += event.delta
      }
      const final = await stream.finalResponse()
      expect(text).toBe("Four.")
      expect(final.output_text).toBe("Four.")
      expect(progress).toContain("[agent_a] answer agent1.1: draft")
      expect(types[0]).toBe("response.created")
      expect(types.at(-1)).toBe("response.completed")
      expect(final.usage!.input_tokens).toBe(tokensOf((final as any).massgen.log_dir).input)
      expect(final.usage!.output_tokens).toBeGreaterThan(0)
    },
    TIMEOUT,
  )

  test(
    "a run that fails: responses.create is a final 400 with the reason; a stream ends with response.failed carrying it",
    async () => {
      respond = () => status(400, { body: { error: { message: "no such model" } } })
      try {
        const failed = await client.responses.create({ model: "team", input: "q" }).catch((e) => e)
        expect(failed).toBeInstanceOf(OpenAI.BadRequestError)
        expect(failed.error.code).toBe("run_error")
        const stream = client.responses.stream({ model: "team", input: "q" })
        const events: Array<any> = []
        // The SDK may also throw once the stream ends without response.completed: the events are what it was sent.
        await (async () => {
          for await (const event of stream) events.push(event)
        })().catch(() => {})
        const last = events.at(-1)
        expect(last.type).toBe("response.failed")
        expect(last.response.error.code).toBe("run_error")
        expect(last.response.error.message).toContain("no such model")
      } finally {
        respond = loneCouncilReply
      }
    },
    TIMEOUT,
  )

  test(
    "models.retrieve: the served model; an unknown id is a 404 in OpenAI's error shape",
    async () => {
      expect(await client.models.retrieve("team")).toMatchObject({ id: "team", object: "model", owned_by: "massgen" })
      const missing = await client.models.retrieve("nope").catch((e) => e)
      expect(missing).toBeInstanceOf(OpenAI.NotFoundError)
      expect(missing.error).toMatchObject({ code: "model_not_found", type: "invalid_request_error" })
    },
    TIMEOUT,
  )
})

describe("the Vercel AI SDK and LangChain", () => {
  test(
    "generateText and streamText through @ai-sdk/openai (Responses) and @ai-sdk/openai-compatible (Chat)",
    async () => {
      const responses = createOpenAI({ baseURL: url, apiKey: "none" })
      const chat = createOpenAICompatible({ name: "massgen", baseURL: url, apiKey: "none" })
      for (const [model, streamsUsage] of [
        [responses("team"), true],
        [chat("team"), false],
      ] as const) {
        const generated = await generateText({ model, prompt: "What is 2+2?", maxRetries: 0 })
        expect(generated.text).toBe("Four.")
        expect(generated.usage.inputTokens).toBeGreaterThan(0)
        const streamed = streamText({ model, prompt: "What is 2+2?", maxRetries: 0 })
        let text = ""
        for await (const part of streamed.textStream) text += part
        expect(text).toBe("Four.")
        expect(await streamed.reasoningText).toContain("[agent_a] answer agent1.1: draft")
        // Chat Completions streams usage only when asked (stream_options.include_usage), which this client does not.
        if (streamsUsage) expect((await streamed.usage).outputTokens).toBeGreaterThan(0)
      }
    },
    TIMEOUT,
  )

  test(
    "LangChain ChatOpenAI invoke and stream, with and without useResponsesApi",
    async () => {
      for (const useResponsesApi of [false, true]) {
        const model = new ChatOpenAI({ model: "team", apiKey: "none", configuration: { baseURL: url }, maxRetries: 0, useResponsesApi })
        const invoked = await model.invoke("What is 2+2?")
        expect(invoked.text).toBe("Four.")
        expect((invoked as any).usage_metadata.input_tokens).toBeGreaterThan(0)
        let text = ""
        for await (const chunk of await model.stream("What is 2+2?")) text += chunk.text
        expect(text).toBe("Four.")
      }
    },
    TIMEOUT,
  )
})

describe("the answer streamed as the presenter writes it", () => {
  test(
    "Chat Completions and Responses streams: the presenter's first words arrive as content while its call is still open",
    async () => {
      let gate = latch()
      respond = (req) =>
        isPresentation(req) ? gated({ text: ["The answer ", "is 4."] }, "The answer ", gate.opened) : loneCouncilReply(req)
      try {
        const chat = await client.chat.completions.create({ model: "team", messages: [{ role: "user", content: "q" }], stream: true })
        let content = ""
        for await (const chunk of chat) {
          const delta = chunk.choices[0]?.delta?.content ?? ""
          // The presenter's stream is held until this first content is seen: it can only come while the presenter writes.
          if (delta !== "" && content === "") {
            expect(delta).toBe("The answer ")
            gate.open()
          }
          content += delta
        }
        expect(content).toBe("The answer is 4.")

        gate = latch()
        const stream = client.responses.stream({ model: "team", input: "q" })
        let text = ""
        for await (const event of stream) {
          if (event.type !== "response.output_text.delta") continue
          if (text === "") {
            expect(event.delta).toBe("The answer ")
            gate.open()
          }
          text += event.delta
        }
        expect(text).toBe("The answer is 4.")
        expect((await stream.finalResponse()).output_text).toBe("The answer is 4.")
      } finally {
        respond = loneCouncilReply
      }
    },
    TIMEOUT,
  )
})

const SCHEMA = {
  type: "object",
  properties: { answer: { type: "integer" }, unit: { type: "string" } },
  required: ["answer", "unit"],
  additionalProperties: false,
}

describe("every request field honoured or refused", () => {
  test(
    "json_schema (Chat response_format, Responses text.format): a presentation that does not match is asked again; the answer parses and matches",
    async () => {
      let presentations = 0
      respond = (req) => {
        if (!isPresentation(req)) return loneCouncilReply(req)
        presentations++
        return reply({ text: presentations % 2 === 1 ? '{"answer": "four"}' : '```json\n{"answer": 4, "unit": "apples"}\n```' })
      }
      try {
        const before = fake.requests.length
        const chat = await client.chat.completions.create({
          model: "team",
          messages: [{ role: "user", content: "How many apples?" }],
          response_format: { type: "json_schema", json_schema: { name: "count", schema: SCHEMA, strict: true } },
        })
        expect(JSON.parse(chat.choices[0]!.message.content!)).toEqual({ answer: 4, unit: "apples" })
        const asked = fake.requests.slice(before).filter(isPresentation)
        expect(asked.length).toBe(2)
        expect(asked[0]!.body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "count", schema: SCHEMA } })
        expect(promptText(asked[0]!)).toContain("matches this JSON Schema (count)")
        expect(promptText(asked[1]!)).toContain("does not match the schema")

        const resp = await client.responses.create({
          model: "team",
          input: "How many apples?",
          text: { format: { type: "json_schema", name: "count", schema: SCHEMA, strict: true } },
        })
        expect(JSON.parse(resp.output_text)).toEqual({ answer: 4, unit: "apples" })

        // Never JSON: the request fails, saying why, with the answer it got.
        respond = (req) => (isPresentation(req) ? reply({ text: "Four apples." }) : loneCouncilReply(req))
        const failed = await client.chat.completions
          .create({ model: "team", messages: [{ role: "user", content: "q" }], response_format: { type: "json_object" } })
          .catch((e) => e)
        expect(failed).toBeInstanceOf(OpenAI.BadRequestError)
        expect(failed.error.code).toBe("answer_format_failed")
        expect(failed.message).toContain("not valid JSON")
      } finally {
        respond = loneCouncilReply
      }
    },
    TIMEOUT,
  )

  test(
    "structured output: the AI SDK's Output.object (Responses and Chat) and LangChain's withStructuredOutput (with and without useResponsesApi)",
    async () => {
      respond = (req) => (isPresentation(req) ? reply({ text: '{"answer": 4, "unit": "apples"}' }) : loneCouncilReply(req))
      try {
        const schema = { ...SCHEMA, title: "count" }
        const prompt = "How many apples?"
        for (const model of [
          createOpenAI({ baseURL: url, apiKey: "none" })("team"),
          createOpenAICompatible({ name: "massgen", baseURL: url, apiKey: "none" })("team"),
        ]) {
          const { output } = await generateText({
            model,
            prompt,
            output: Output.object({ schema: jsonSchema<{ answer: number; unit: string }>(schema) }),
            maxRetries: 0,
          })
          expect(output).toEqual({ answer: 4, unit: "apples" })
        }
        for (const useResponsesApi of [false, true]) {
          const model = new ChatOpenAI({ model: "team", apiKey: "none", configuration: { baseURL: url }, maxRetries: 0, useResponsesApi })
          expect(await model.withStructuredOutput(schema).invoke(prompt)).toEqual({ answer: 4, unit: "apples" })
        }
      } finally {
        respond = loneCouncilReply
      }
    },
    TIMEOUT,
  )

  test(
    "temperature, top_p, max_tokens, stop and seed reach the presenter's call, and no round's",
    async () => {
      const before = fake.requests.length
      const done = await client.chat.completions.create({
        model: "team",
        messages: [{ role: "user", content: "What is 2+2?" }],
        temperature: 0.25,
        top_p: 0.5,
        max_completion_tokens: 77,
        stop: ["END"],
        seed: 7,
      })
      expect(done.choices[0]!.message.content).toBe("Four.")
      const sent = fake.requests.slice(before)
      const presentation = sent.filter(isPresentation)
      expect(presentation.length).toBe(1)
      expect(presentation[0]!.body).toMatchObject({ temperature: 0.25, top_p: 0.5, max_tokens: 77, stop: ["END"], seed: 7 })
      for (const round of sent.filter((r) => !isPresentation(r))) {
        for (const key of ["temperature", "top_p", "max_tokens", "stop", "seed"]) expect(round.body[key]).toBeUndefined()
      }
      const resp = await client.responses.create({ model: "team", input: "What is 2+2?", temperature: 0.5, max_output_tokens: 33 })
      expect(resp.output_text).toBe("Four.")
      expect(fake.requests.filter(isPresentation).at(-1)!.body).toMatchObject({ temperature: 0.5, max_tokens: 33 })
    },
    TIMEOUT,
  )

  test(
    "each field that cannot be honoured, and each unknown one, is a 400 naming it, before any run",
    async () => {
      const post = async (path: string, body: Record<string, unknown>) => {
        const r = await fetch(`${url}${path}`, {
          method: "POST",
          body: JSON.stringify(body),
          headers: { "content-type": "application/json" },
        })
        return { status: r.status, error: ((await r.json()) as any).error }
      }
      const chat = { model: "team", messages: [{ role: "user", content: "q" }] }
      const responses = { model: "team", input: "q" }
      const refused: ReadonlyArray<[string, Record<string, unknown>, string]> = [
        ["/chat/completions", { ...chat, logprobs: true }, "logprobs"],
        ["/chat/completions", { ...chat, top_logprobs: 2 }, "top_logprobs"],
        ["/chat/completions", { ...chat, n: 2 }, "n"],
        ["/chat/completions", { ...chat, tools: [{ type: "function", function: { name: "f" } }] }, "tools"],
        ["/chat/completions", { ...chat, frequency_penalty: 0.5 }, "frequency_penalty"],
        ["/chat/completions", { ...chat, store: false }, "store"],
        ["/chat/completions", { ...chat, temperature: 3 }, "temperature"],
        ["/chat/completions", { ...chat, response_format: { type: "xml" } }, "response_format.type"],
        ["/chat/completions", { ...chat, colour: "blue" }, "colour"],
        ["/responses", { ...responses, tools: [{ type: "web_search" }] }, "tools"],
        ["/responses", { ...responses, include: ["reasoning.encrypted_content"] }, "include"],
        ["/responses", { ...responses, text: { verbosity: "low" } }, "text"],
        ["/responses", { ...responses, stop: ["x"] }, "stop"],
        ["/responses", { ...responses, input: [{ type: "function_call_output", call_id: "c", output: "x" }] }, "input[0].type"],
        ["/responses", { ...responses, colour: "blue" }, "colour"],
      ]
      const before = fake.requests.length
      for (const [path, body, field] of refused) {
        const { status, error } = await post(path, body)
        expect([path, field, status]).toEqual([path, field, 400])
        expect(error.param).toBe(field)
        expect(error.message).toContain(field.split(".")[0]!)
      }
      expect(fake.requests.length).toBe(before)
      // What the clients send by default is accepted.
      expect(
        (await post("/chat/completions", { ...chat, stream_options: { include_usage: true }, user: "u", metadata: {}, n: 1 })).status,
      ).toBe(200)
      expect(
        (await post("/responses", { ...responses, text: {}, store: true, parallel_tool_calls: true, tool_choice: "none" })).status,
      ).toBe(200)
    },
    TIMEOUT,
  )

  test(
    "a served run stopped during its presentation and resumed: the presenter is asked again with the request's fields",
    async () => {
      let held = true
      const own = await startFakeLlm({
        respond: (req) => (isPresentation(req) && held ? (presenting.open(), hang()) : loneCouncilReply(req)),
      })
      const presenting = latch()
      const dir = sandbox()
      const config = writeConfig(
        dir,
        { agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: own.openAiBaseUrl } }] },
        "team.yaml",
      )
      const server = await startUntilLine("source", ["serve", "--config", config, "--port", "0", "--drain-seconds", "0"], "Serving ", {
        cwd: dir,
        timeoutMs: TIMEOUT,
      })
      try {
        const served = server.lines.find((l) => l.startsWith("Serving "))!.split(" ")[1]!
        const asked = new OpenAI({ baseURL: served, apiKey: "none", maxRetries: 0 }).chat.completions
          .create({ model: "team", messages: [{ role: "user", content: "What is 2+2?" }], temperature: 0.25, seed: 3 })
          .withResponse()
          .catch((e) => e)
        await presenting.opened
        server.proc.kill("SIGTERM")
        const stopped = await asked
        expect(stopped.status).toBe(503)
        const logDir = nodePath.join(dir, ".massgen", "massgen_logs", stopped.headers.get("x-massgen-run-id"))
        expect(fs.readFileSync(nodePath.join(logDir, "execution_metadata.yaml"), "utf8")).toContain("serve_request:")
        held = false
        const before = own.requests.length
        const resumed = await runCli("source", ["resume", logDir, "--automation"], { cwd: dir })
        expect(resumed.exitCode).toBe(0)
        const presentation = own.requests.slice(before).filter(isPresentation)
        expect(presentation.length).toBe(1)
        expect(presentation[0]!.body).toMatchObject({ temperature: 0.25, seed: 3 })
        expect(eventsOf(logDir).findLast((e) => e._tag === "final_answer")).toMatchObject({ content: "Four.", source: "presentation" })
      } finally {
        server.proc.kill("SIGTERM")
        await server.done
        own.stop()
      }
    },
    TIMEOUT,
  )
})
