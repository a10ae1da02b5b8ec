/**
 * `massgen serve`'s slots (`cli/serve/run-slots.ts`), request reading
 * (`cli/serve/openai-wire.ts`, `cli/serve/request-gate.ts`) and the loopback
 * `Host`/`Origin` judgement (`lib/loopback.ts`), without a server.
 */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { readChatRequest } from "../src/cli/serve/openai-wire.ts"
import { unsupportedBody } from "../src/cli/serve/request-gate.ts"
import { runSlots } from "../src/cli/serve/run-slots.ts"
import { hostJudgement, ownHosts } from "../src/lib/loopback.ts"

describe("runSlots", () => {
  test("at most N at once, then a FIFO queue of M, then full; a slot given back goes to the longest waiting", async () => {
    const slots = runSlots(1, 2)
    const first = await slots.take()
    expect(first._tag).toBe("slot")
    const order: Array<string> = []
    const second = slots.take().then((t) => (order.push("second"), t))
    const third = slots.take().then((t) => (order.push("third"), t))
    expect(slots.queued()).toBe(2)
    expect((await slots.take())._tag).toBe("full")
    if (first._tag === "slot") first.release()
    const got = await second
    expect(got._tag).toBe("slot")
    expect(order).toEqual(["second"])
    if (got._tag === "slot") got.release()
    const last = await third
    expect(order).toEqual(["second", "third"])
    if (last._tag === "slot") last.release()
    expect(slots.running()).toBe(0)
    await slots.idle()
  })

  test("a client that leaves frees its place; close() turns away every waiting request and every later one", async () => {
    const slots = runSlots(1, 1)
    const held = await slots.take()
    const leaving = new AbortController()
    const waiting = slots.take(leaving.signal)
    leaving.abort()
    expect((await waiting)._tag).toBe("gone")
    expect(slots.queued()).toBe(0)
    const turnedAway = slots.take()
    slots.close()
    expect((await turnedAway)._tag).toBe("closed")
    expect((await slots.take())._tag).toBe("closed")
    const idle = slots.idle()
    if (held._tag === "slot") held.release()
    await idle
    expect(slots.running()).toBe(0)
  })
})

describe("readChatRequest", () => {
  const models = ["team"]
  test("the last user message is the question, the user and assistant messages before it the conversation; system messages are not passed on", () => {
    expect(
      readChatRequest(
        {
          model: "team",
          stream: true,
          stream_options: { include_usage: true },
          messages: [
            { role: "system", content: "be brief" },
            {
              role: "user",
              content: [
                { type: "text", text: "What is" },
                { type: "text", text: "2+2?" },
              ],
            },
            { role: "assistant", content: "4" },
            { role: "user", content: "Doubled?" },
          ],
        },
        models,
      ),
    ).toEqual({
      model: "team",
      question: "Doubled?",
      conversation: [
        { role: "user", content: "What is\n2+2?" },
        { role: "assistant", content: "4" },
      ],
      stream: true,
      includeUsage: true,
      fields: { sampling: {}, format: null, given: null },
    })
  })

  test("what is refused, with its status", () => {
    const status = (body: unknown) => {
      const r = readChatRequest(body, models)
      return "status" in r ? [r.status, r.param ?? null] : "accepted"
    }
    expect(status([])).toEqual([400, null])
    expect(status({ model: "team" })).toEqual([400, "messages"])
    expect(status({ model: "other", messages: [{ role: "user", content: "q" }] })).toEqual([404, "model"])
    expect(status({ model: "team", messages: [{ role: "user", content: "q" }], tools: [{ type: "function" }] })).toEqual([400, "tools"])
    expect(status({ model: "team", messages: [{ role: "user", content: "q" }], tool_choice: "auto" })).toEqual([400, "tool_choice"])
    expect(status({ model: "team", messages: [{ role: "user", content: "q" }], n: 2 })).toEqual([400, "n"])
    expect(
      status({
        model: "team",
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", content: "a" },
        ],
      }),
    ).toEqual([400, "messages"])
    expect(status({ model: "team", messages: [{ role: "tool", content: "x" }] })).toEqual([400, "messages[0].role"])
    expect(status({ model: "team", messages: [{ role: "user", content: [{ type: "image_url" }] }] })).toEqual([400, "messages[0].content"])
    expect(status({ model: "team", messages: [{ role: "user", content: "q" }], tools: [] })).toBe("accepted")
  })
})

describe("the limits and gates of a request", () => {
  test("the user and assistant messages' UTF-8 bytes count against the limit; system messages, which are not passed on, do not", () => {
    const body = (messages: ReadonlyArray<{ role: string; content: string }>) => ({ model: "team", messages })
    const code = (b: unknown, limit: number) => {
      const r = readChatRequest(b, ["team"], limit)
      return "status" in r ? `${r.status} ${r.code}` : "accepted"
    }
    expect(code(body([{ role: "user", content: "éé" }]), 4)).toBe("accepted")
    expect(code(body([{ role: "user", content: "ééé" }]), 5)).toBe("413 question_too_large")
    expect(
      code(
        body([
          { role: "user", content: "ab" },
          { role: "assistant", content: "cd" },
          { role: "user", content: "e" },
        ]),
        4,
      ),
    ).toBe("413 question_too_large")
    expect(
      code(
        body([
          { role: "system", content: "x".repeat(100) },
          { role: "user", content: "e" },
        ]),
        4,
      ),
    ).toBe("accepted")
  })

  test("only application/json bodies, alone or with charset=utf-8, in any case", () => {
    const typed = (type: string | null) =>
      unsupportedBody(
        new Request("http://127.0.0.1/", { method: "POST", body: "{}", headers: type === null ? {} : { "content-type": type } }),
      )?.status ?? "json"
    expect(
      ["application/json", "Application/JSON", "application/json; charset=utf-8", "application/json;charset=UTF-8"].map(typed),
    ).toEqual(["json", "json", "json", "json"])
    expect(
      [
        "text/plain",
        "text/plain; charset=utf-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin1",
        "application/jsonx",
      ].map(typed),
    ).toEqual(Array(6).fill(415))
  })

  test("a Host is accepted only as a loopback name with the server's port (bare on port 80); an Origin only as http:// and that Host", () => {
    const hosts = ownHosts(4000)
    expect([...hosts]).toEqual(["127.0.0.1:4000", "localhost:4000", "[::1]:4000"])
    expect([...ownHosts(80, ["127.0.0.1", "::1"])]).toEqual(["127.0.0.1:80", "127.0.0.1", "[::1]:80", "[::1]"])
    expect(hostJudgement("LOCALHOST:4000", null, hosts)).toBeNull()
    expect(hostJudgement("localhost:4000", "http://localhost:4000", hosts)).toBeNull()
    for (const [host, origin] of [
      [null, null],
      ["localhost", null],
      ["localhost:4001", null],
      ["evil.example:4000", null],
      ["127.0.0.1:4000", "http://localhost:4000"],
      ["127.0.0.1:4000", "https://127.0.0.1:4000"],
      ["127.0.0.1:4000", "null"],
    ] as const) {
      expect(hostJudgement(host, origin, hosts)).not.toBeNull()
    }
    fc.assert(
      fc.property(fc.string(), fc.option(fc.string(), { nil: null }), (host, origin) => {
        const ok = hostJudgement(host, origin, hosts) === null
        expect(ok).toBe(hosts.has(host.toLowerCase()) && (origin === null || origin.toLowerCase() === `http://${host.toLowerCase()}`))
      }),
    )
  })
})
