/**
 * `massgen serve`'s request fields and answer stream without a server: what
 * `readRequestFields` takes and refuses (`cli/serve/request-fields.ts`), the
 * Responses reader (`responses-wire.ts`), JSON answer checks
 * (`answer-format.ts`), the refusals a served config implies
 * (`presenter-backends.ts`), and the answer feed's rest when the streamed
 * text is not the final answer (`answer-feed.ts`).
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as nodePath from "node:path"
import { Either } from "effect"
import { answerFeed } from "../src/cli/serve/answer-feed.ts"
import { answerProblem, readAnswerFormat } from "../src/cli/serve/answer-format.ts"
import { refusedSampling } from "../src/cli/serve/presenter-backends.ts"
import { readRequestFields } from "../src/cli/serve/request-fields.ts"
import { continuedRequest } from "../src/cli/serve/response-ids.ts"
import { readResponsesRequest, runIdOf } from "../src/cli/serve/responses-wire.ts"
import type { WireError } from "../src/cli/serve/wire-error.ts"
import { decodeConfig } from "../src/domain/config/index.ts"
import type { Event } from "../src/domain/events/index.ts"
import { initialState } from "../src/domain/state/index.ts"
import { cleanupSandboxes } from "./support/cli.ts"
import { scriptedRun } from "./support/run-dirs.ts"

afterAll(cleanupSandboxes)

const ok = <A>(v: A): Exclude<A, WireError> => {
  if (typeof v === "object" && v !== null && "status" in v) throw new Error(`refused: ${JSON.stringify(v)}`)
  return v as Exclude<A, WireError>
}

describe("readRequestFields", () => {
  test("the sampling fields are read, max_completion_tokens over max_tokens; the format kept as given, for the run's record", () => {
    const fields = ok(
      readRequestFields(
        {
          model: "team",
          messages: [],
          temperature: 0,
          top_p: 1,
          max_tokens: 5,
          max_completion_tokens: 9,
          stop: "END",
          seed: -2,
          user: "u",
        },
        "chat",
      ),
    )
    expect(fields.sampling).toEqual({ temperature: 0, topP: 1, maxTokens: 9, stop: ["END"], seed: -2 })
    expect(fields.given).toEqual({
      api: "chat",
      fields: { temperature: 0, top_p: 1, max_tokens: 5, max_completion_tokens: 9, stop: "END", seed: -2 },
    })
    expect(ok(readRequestFields({ input: "q", max_output_tokens: 4 }, "responses")).sampling).toEqual({ maxTokens: 4 })
    expect(ok(readRequestFields({ messages: [], temperature: null, stop: null }, "chat"))).toEqual({
      sampling: {},
      format: null,
      given: null,
    })
  })

  test("out of range or of the wrong type is a 400 naming the field", () => {
    const param = (body: Record<string, unknown>, api: "chat" | "responses" = "chat") => {
      const r = readRequestFields(body, api)
      return "status" in r ? r.param : null
    }
    expect(param({ top_p: 1.5 })).toBe("top_p")
    expect(param({ max_tokens: 0 })).toBe("max_tokens")
    expect(param({ max_completion_tokens: 2.5 })).toBe("max_completion_tokens")
    expect(param({ stop: ["a", "b", "c", "d", "e"] })).toBe("stop")
    expect(param({ seed: "7" })).toBe("seed")
    expect(param({ max_tokens: 5 }, "responses")).toBe("max_tokens")
    expect(param({ response_format: { type: "json_schema", json_schema: { schema: {} } } })).toBe("response_format.json_schema.name")
    expect(param({ text: { format: { type: "json_schema", name: "x", schema: { type: 12 } } } }, "responses")).toBe("text.format.schema")
  })
})

describe("JSON answers", () => {
  const schema = ok(
    readAnswerFormat(
      {
        type: "json_schema",
        json_schema: { name: "n", schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
      },
      "response_format",
      "chat",
    ),
  )!
  test("a fenced or padded answer is its JSON; prose, a non-object for json_object and a mismatch each say what is wrong", () => {
    expect(answerProblem('\n```json\n{"n": 1}\n```\n', schema)).toBeNull()
    expect(answerProblem('{"n": "one"}', schema)).toContain("/n must be integer")
    expect(answerProblem("n is 1", schema)).toContain("not valid JSON")
    expect(answerProblem("[1]", { type: "json_object" })).toBe("valid JSON, but not a JSON object")
  })

  test("a schema of draft 2020-12 or 2019-09 (as LangChain and zod write them) compiles and checks as its draft says", () => {
    for (const draft of ["https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema"]) {
      const format = ok(
        readAnswerFormat(
          {
            type: "json_schema",
            name: "n",
            schema: { $schema: draft, type: "object", properties: { n: { type: "number" } }, required: ["n"] },
          },
          "text.format",
          "responses",
        ),
      )!
      expect(answerProblem('{"n": 2}', format)).toBeNull()
      expect(answerProblem("{}", format)).toContain("must have required property 'n'")
    }
  })
})

describe("the Responses reader", () => {
  test("input as a string or messages; other items refused; response ids are safe run names", () => {
    const read = ok(
      readResponsesRequest(
        {
          model: "team",
          instructions: "be brief",
          input: [
            { role: "user", content: [{ type: "input_text", text: "Q1" }] },
            { type: "message", role: "assistant", content: [{ type: "output_text", text: "A1" }] },
            { role: "user", content: "Q2" },
          ],
          previous_response_id: "resp_log_1",
        },
        ["team"],
      ),
    )
    expect(read).toMatchObject({
      question: "Q2",
      conversation: [
        { role: "user", content: "Q1" },
        { role: "assistant", content: "A1" },
      ],
      previousResponseId: "resp_log_1",
    })
    const refused = readResponsesRequest({ input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }, ["team"])
    expect("status" in refused && refused.param).toBe("input[0].content")
    expect(runIdOf("resp_log_20261202_010203_000004")).toBe("log_20261202_010203_000004")
    expect(runIdOf("resp_../etc")).toBeNull()
    expect(runIdOf("log_x")).toBeNull()
  })
})

describe("what a served config cannot honour", () => {
  const config = (type: string) =>
    Either.getOrThrow(decodeConfig({ agents: [{ id: "a", backend: { type, model: "m", base_url: "http://127.0.0.1:9/v1" } }] }, {}))
  test("stop and seed with a Responses agent, seed and temperature above 1 with an Anthropic one; a Chat agent takes all", () => {
    const fields = (body: Record<string, unknown>) => ok(readRequestFields(body, "chat"))
    expect(refusedSampling(fields({ stop: "x" }), config("openai"))?.param).toBe("stop")
    expect(refusedSampling(fields({ seed: 1 }), config("openai"))?.param).toBe("seed")
    expect(refusedSampling(fields({ seed: 1 }), config("claude"))?.param).toBe("seed")
    expect(refusedSampling(fields({ temperature: 1.5 }), config("claude"))?.param).toBe("temperature")
    expect(refusedSampling(fields({ temperature: 1.5, stop: "x", seed: 1 }), config("chatcompletion"))).toBeNull()
  })

  test("by the protocol the agent speaks: stop with a native Gemini agent, not on its Chat path; any sampling with a CLI agent", () => {
    const fields = (body: Record<string, unknown>) => ok(readRequestFields(body, "chat"))
    const gemini = (backend: Record<string, unknown>) =>
      Either.getOrThrow(decodeConfig({ agents: [{ id: "g", backend: { type: "gemini", model: "m", ...backend } }] }, {}))
    expect(refusedSampling(fields({ stop: "x" }), gemini({}))?.param).toBe("stop")
    expect(refusedSampling(fields({ temperature: 0.2, top_p: 0.5 }), gemini({}))).toBeNull()
    expect(refusedSampling(fields({ stop: "x" }), gemini({ api: "chat_completions" }))).toBeNull()
    const cli = Either.getOrThrow(
      decodeConfig({ agents: [{ id: "c", backend: { type: "claude_code", model: "claude-sonnet-4-5", cwd: "workspace" } }] }, {}),
    )
    expect(refusedSampling(fields({ temperature: 0.2 }), cli)?.message).toBe(
      "temperature: agent c could present the answer, and its backend (claude_code, a CLI agent) takes no sampling settings",
    )
    expect(refusedSampling(fields({ max_tokens: 10 }), cli)?.param).toBe("max_tokens")
    expect(refusedSampling(fields({}), cli)).toBeNull()
  })
})

describe("answerFeed", () => {
  const call = (tag: "call_start" | "call_end", agent: string, role: "round" | "presentation") =>
    ({ _tag: tag, agent, role, call: 1, round: 1 }) as unknown as Event
  test("only the open presentation call's text is content; a final answer that does not go on from it is not whole", () => {
    const content: Array<string> = []
    const feed = answerFeed("/log", false, { progress: () => {}, content: (t) => content.push(t) })
    const state = initialState
    feed.onText("a", "round text")
    feed.onEvent(call("call_start", "a", "presentation"), state)
    feed.onText("b", "other agent")
    feed.onText("a", "Hello ")
    feed.onText("a", "wor")
    feed.onEvent(call("call_end", "a", "presentation"), state)
    feed.onText("a", "after")
    expect(content).toEqual(["Hello ", "wor"])
    expect(feed.rest("Hello world")).toEqual({ text: "ld", whole: true })
    expect(feed.rest("Hi")).toEqual({ text: "", whole: false })
    const held = answerFeed("/log", true, { progress: () => {}, content: (t) => content.push(t) })
    held.onEvent(call("call_start", "a", "presentation"), state)
    held.onText("a", "{")
    expect(held.rest('{"a":1}')).toEqual({ text: '{"a":1}', whole: true })
  })
})

describe("previous_response_id", () => {
  test("the earlier run's question and answer go before the request's; with them over the text limit it is a 413; an unknown id a 404", async () => {
    const { cwd, dir } = await scriptedRun("source")
    const id = `resp_${nodePath.basename(dir)}`
    const request = ok(readResponsesRequest({ input: "Doubled?", previous_response_id: id }, ["team"]))
    const env = { MASSGEN_LOG_BASE_DIR: undefined }
    expect(ok(continuedRequest(request, id, env, cwd, 1000)).conversation).toEqual([
      { role: "user", content: "What is 2+2?" },
      { role: "assistant", content: "The answer is 4." },
    ])
    const over = continuedRequest(request, id, env, cwd, 20)
    expect("status" in over && [over.status, over.code, over.param]).toEqual([413, "question_too_large", "previous_response_id"])
    const unknown = continuedRequest(request, "resp_log_20000101_000000_000000", env, cwd, 1000)
    expect("status" in unknown && [unknown.status, unknown.code]).toEqual([404, "previous_response_not_found"])
  }, 60_000)
})
