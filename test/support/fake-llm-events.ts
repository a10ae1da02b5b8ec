/**
 * SSE frames for a scripted reply, in each provider's wire format.
 *
 * `renderFrames(protocol, spec)` gives the frames (`event:`/`data:` text, one per
 * element) of a whole reply as the real API streams it: Chat Completions chunks
 * ending in a usage chunk and `[DONE]`; Responses events from `response.created`
 * to `response.completed` (or `response.incomplete`); Anthropic events from
 * `message_start` to `message_stop`. Tool-call arguments are split into `chunks`
 * pieces. Provider-side tool uses (`hosted`: a web search, code run by the
 * provider) come before the text, as the Responses API streams its
 * `web_search_call`/`code_interpreter_call` items and the Messages API its
 * `server_tool_use` blocks and their results, a Responses reply that searched citing
 * what it found (`url_citation`) (shapes from the providers' API
 * references); Gemini `streamGenerateContent` chunks (`data:` lines of
 * `GenerateContentResponse`s, as `@google/genai` reads them) ending in one with a
 * `finishReason` and the usage: thoughts as `thought: true` parts, a
 * `thoughtSignature` on the first function call (else on the last text part, else on
 * the last thought), each function call whole in one chunk, code run by the provider
 * as `executableCode` and `codeExecutionResult` parts, a web search as the final
 * chunk's `groundingMetadata`. Used by `fake-llm.ts`; cutting a stream short is slicing this list.
 *
 * Words: a *frame* is one SSE event including its blank-line terminator.
 */

export type Protocol = "chat" | "responses" | "anthropic" | "gemini"

export interface FakeToolCall {
  readonly name: string
  /** An object is sent as its JSON text; a string is sent as is (may be invalid JSON). */
  readonly args: string | object
  /** Number of pieces the argument text is split into (default 1). */
  readonly chunks?: number
  readonly id?: string
}

/** A provider-side tool use: a web search for `query`, or `code` run by the provider. */
export type FakeHostedUse = { readonly tool: "web_search"; readonly query: string } | { readonly tool: "code"; readonly code: string }

export interface FakeUsage {
  /** All input tokens, cached ones included. */
  readonly input: number
  readonly cached?: number
  /** All output tokens, reasoning included. */
  readonly output: number
  readonly reasoning?: number
}

export interface ReplySpec {
  /** Text pieces, each sent as its own delta. */
  readonly text?: string | ReadonlyArray<string>
  readonly reasoning?: ReadonlyArray<string>
  readonly toolCalls?: ReadonlyArray<FakeToolCall>
  readonly usage?: FakeUsage
  readonly truncated?: boolean
  /** Provider-side tool uses, streamed before the text (Responses, Anthropic, Gemini; Chat: a web search's citations only). */
  readonly hosted?: ReadonlyArray<FakeHostedUse>
  /** Anthropic only: the turn stops with `pause_turn` (the server tools' loop paused). */
  readonly paused?: boolean
  /** Responses only: send function-call arguments in deltas only, without the `*.done` events. */
  readonly deltasOnly?: boolean
  /** Anthropic only: the message's id (default `msg_1`); Claude Code joins messages of one id into one. */
  readonly messageId?: string
}

const DEFAULT_USAGE: FakeUsage = { input: 10, output: 5 }

const frame = (data: unknown, event?: string): string =>
  `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`

/** Splits `text` into `n` pieces of near-equal length (some may be empty when n > length). */
export const split = (text: string, n: number): Array<string> => {
  const count = Math.max(1, n)
  const size = Math.ceil(text.length / count)
  return Array.from({ length: count }, (_, i) => text.slice(i * size, (i + 1) * size))
}

interface Normal {
  readonly text: ReadonlyArray<string>
  readonly reasoning: ReadonlyArray<string>
  readonly calls: ReadonlyArray<{ id: string; name: string; args: string; pieces: Array<string> }>
  readonly usage: FakeUsage
  readonly truncated: boolean
}

const normalise = (spec: ReplySpec, idPrefix: string): Normal => ({
  text: spec.text === undefined ? [] : typeof spec.text === "string" ? [spec.text] : spec.text,
  reasoning: spec.reasoning ?? [],
  calls: (spec.toolCalls ?? []).map((c, i) => {
    const args = typeof c.args === "string" ? c.args : JSON.stringify(c.args)
    return { id: c.id ?? `${idPrefix}${i + 1}`, name: c.name, args, pieces: split(args, c.chunks ?? 1) }
  }),
  usage: spec.usage ?? DEFAULT_USAGE,
  truncated: spec.truncated ?? false,
})

const chatFrames = (spec: ReplySpec): Array<string> => {
  const r = normalise(spec, "call_")
  const chunk = (delta: object, finish_reason: string | null = null) =>
    frame({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 0, model: "fake", choices: [{ index: 0, delta, finish_reason }] })
  const finish = r.truncated ? "length" : r.calls.length > 0 ? "tool_calls" : "stop"
  return [
    chunk({ role: "assistant", content: "" }),
    ...r.reasoning.map((t) => chunk({ reasoning_content: t })),
    ...r.text.map((t) => chunk({ content: t })),
    // A reply that searched (OpenRouter's web plugin) cites what it found in a delta's annotations.
    ...((spec.hosted ?? []).some((u) => u.tool === "web_search")
      ? [
          chunk({
            annotations: [
              {
                type: "url_citation",
                url_citation: { url: "https://example.com/", title: "Example", content: "", start_index: 0, end_index: 1 },
              },
            ],
          }),
        ]
      : []),
    ...r.calls.flatMap((c, index) => [
      chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] }),
      ...c.pieces.map((piece) => chunk({ tool_calls: [{ index, function: { arguments: piece } }] })),
    ]),
    chunk({}, finish),
    frame({
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 0,
      model: "fake",
      choices: [],
      usage: {
        prompt_tokens: r.usage.input,
        completion_tokens: r.usage.output,
        total_tokens: r.usage.input + r.usage.output,
        prompt_tokens_details: { cached_tokens: r.usage.cached ?? 0 },
        completion_tokens_details: { reasoning_tokens: r.usage.reasoning ?? 0 },
      },
    }),
    frame("[DONE]"),
  ]
}

const responsesFrames = (spec: ReplySpec): Array<string> => {
  const r = normalise(spec, "call_")
  let seq = 0
  const ev = (type: string, body: object) => frame({ type, sequence_number: seq++, ...body }, type)
  const items: Array<{ item: Record<string, unknown>; frames: () => Array<string> }> = []
  const fnItem = (c: Normal["calls"][number], i: number, status: string, args: string) => ({
    type: "function_call",
    id: `fc_${i}`,
    call_id: c.id,
    name: c.name,
    arguments: args,
    status,
  })
  if (r.reasoning.length > 0) {
    const summary = r.reasoning.join("")
    items.push({
      item: { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: summary }] },
      frames: () =>
        r.reasoning.map((delta) =>
          ev("response.reasoning_summary_text.delta", { item_id: "rs_1", output_index: 0, summary_index: 0, delta }),
        ),
    })
  }
  ;(spec.hosted ?? []).forEach((use, i) => {
    const index = items.length
    if (use.tool === "web_search") {
      const item = (status: string) => ({
        type: "web_search_call",
        id: `ws_${i}`,
        status,
        action: { type: "search", ...(status === "completed" ? { query: use.query } : {}) },
      })
      items.push({
        item: item("completed"),
        frames: () => [
          ev("response.output_item.added", { output_index: index, item: item("in_progress") }),
          ...["in_progress", "searching", "completed"].map((phase) =>
            ev(`response.web_search_call.${phase}`, { item_id: `ws_${i}`, output_index: index }),
          ),
          ev("response.output_item.done", { output_index: index, item: item("completed") }),
        ],
      })
    } else {
      const item = (status: string, code: string) => ({
        type: "code_interpreter_call",
        id: `ci_${i}`,
        status,
        code,
        container_id: "cntr_1",
        outputs: null,
      })
      const id = { item_id: `ci_${i}`, output_index: index }
      items.push({
        item: item("completed", use.code),
        frames: () => [
          ev("response.output_item.added", { output_index: index, item: item("in_progress", "") }),
          ev("response.code_interpreter_call.in_progress", id),
          ev("response.code_interpreter_call_code.delta", { ...id, delta: use.code }),
          ev("response.code_interpreter_call_code.done", { ...id, code: use.code }),
          ev("response.code_interpreter_call.interpreting", id),
          ev("response.code_interpreter_call.completed", id),
          ev("response.output_item.done", { output_index: index, item: item("completed", use.code) }),
        ],
      })
    }
  })
  if (r.text.length > 0) {
    const text = r.text.join("")
    const index = items.length
    items.push({
      item: {
        type: "message",
        id: "msg_1",
        role: "assistant",
        status: "completed",
        // A reply that searched cites what it found.
        content: [
          {
            type: "output_text",
            text,
            annotations: (spec.hosted ?? []).some((u) => u.tool === "web_search")
              ? [{ type: "url_citation", url: "https://example.com/", title: "Example", start_index: 0, end_index: text.length }]
              : [],
          },
        ],
      },
      frames: () =>
        r.text.map((delta) => ev("response.output_text.delta", { item_id: "msg_1", output_index: index, content_index: 0, delta })),
    })
  }
  r.calls.forEach((c, i) => {
    const index = items.length
    items.push({
      item: fnItem(c, i, "completed", c.args),
      frames: () => [
        ev("response.output_item.added", { output_index: index, item: fnItem(c, i, "in_progress", "") }),
        ...c.pieces.map((delta) => ev("response.function_call_arguments.delta", { item_id: `fc_${i}`, output_index: index, delta })),
        ...(spec.deltasOnly
          ? []
          : [
              ev("response.function_call_arguments.done", { item_id: `fc_${i}`, output_index: index, arguments: c.args }),
              ev("response.output_item.done", { output_index: index, item: fnItem(c, i, "completed", c.args) }),
            ]),
      ],
    })
  })
  const response = (status: string) => ({
    id: "resp_1",
    object: "response",
    created_at: 0,
    status,
    model: "fake",
    output: status === "in_progress" ? [] : items.map((x) => x.item),
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    usage:
      status === "in_progress"
        ? null
        : {
            input_tokens: r.usage.input,
            input_tokens_details: { cached_tokens: r.usage.cached ?? 0 },
            output_tokens: r.usage.output,
            output_tokens_details: { reasoning_tokens: r.usage.reasoning ?? 0 },
            total_tokens: r.usage.input + r.usage.output,
          },
  })
  const created = ev("response.created", { response: response("in_progress") })
  const body = items.flatMap((x) => x.frames())
  const end = r.truncated ? "incomplete" : "completed"
  return [created, ...body, ev(`response.${end}`, { response: response(end) })]
}

const anthropicFrames = (spec: ReplySpec): Array<string> => {
  const r = normalise(spec, "toolu_")
  const ev = (type: string, body: object) => frame({ type, ...body }, type)
  const blocks: Array<Array<string>> = []
  const block = (start: object, deltas: Array<object>) => {
    const index = blocks.length
    blocks.push([
      ev("content_block_start", { index, content_block: start }),
      ...deltas.map((delta) => ev("content_block_delta", { index, delta })),
      ev("content_block_stop", { index }),
    ])
  }
  if (r.reasoning.length > 0) {
    block({ type: "thinking", thinking: "", signature: "" }, [
      ...r.reasoning.map((thinking) => ({ type: "thinking_delta", thinking })),
      { type: "signature_delta", signature: "sig" },
    ])
  }
  ;(spec.hosted ?? []).forEach((use, i) => {
    const id = `srvtoolu_${i + 1}`
    const [name, input] = use.tool === "web_search" ? ["web_search", { query: use.query }] : ["bash_code_execution", { command: use.code }]
    block({ type: "server_tool_use", id, name, input: {} }, [{ type: "input_json_delta", partial_json: JSON.stringify(input) }])
    block(
      use.tool === "web_search"
        ? {
            type: "web_search_tool_result",
            tool_use_id: id,
            content: [
              { type: "web_search_result", url: "https://example.com/", title: "Example", encrypted_content: "enc", page_age: null },
            ],
          }
        : {
            type: "bash_code_execution_tool_result",
            tool_use_id: id,
            content: { type: "bash_code_execution_result", stdout: "4\n", stderr: "", return_code: 0, content: [] },
          },
      [],
    )
  })
  if (r.text.length > 0)
    block(
      { type: "text", text: "" },
      r.text.map((text) => ({ type: "text_delta", text })),
    )
  for (const c of r.calls) {
    block(
      { type: "tool_use", id: c.id, name: c.name, input: {} },
      c.pieces.map((partial_json) => ({ type: "input_json_delta", partial_json })),
    )
  }
  const cached = r.usage.cached ?? 0
  const stop = spec.paused ? "pause_turn" : r.truncated ? "max_tokens" : r.calls.length > 0 ? "tool_use" : "end_turn"
  return [
    ev("message_start", {
      message: {
        id: spec.messageId ?? "msg_1",
        type: "message",
        role: "assistant",
        model: "fake",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: r.usage.input - cached, cache_read_input_tokens: cached, cache_creation_input_tokens: 0, output_tokens: 1 },
      },
    }),
    ...blocks.flat(),
    ev("message_delta", {
      delta: { stop_reason: stop, stop_sequence: null },
      usage: {
        output_tokens: r.usage.output,
        ...(r.usage.reasoning === undefined ? {} : { output_tokens_details: { thinking_tokens: r.usage.reasoning } }),
      },
    }),
    ev("message_stop", {}),
  ]
}

/** The signature the fake puts on a Gemini reply's signed part. */
export const GEMINI_SIGNATURE = "c2lnbmVkLXRob3VnaHQtZml4dHVyZQ=="

const geminiFrames = (spec: ReplySpec): Array<string> => {
  const r = normalise(spec, "")
  const chunk = (parts: ReadonlyArray<object>, extra: object = {}) =>
    frame({
      candidates: [{ content: { role: "model", parts }, index: 0, ...extra }],
      modelVersion: "fake",
      responseId: "gem-1",
      usageMetadata: { promptTokenCount: r.usage.input },
    })
  const reasoning: Array<Record<string, unknown>> = r.reasoning.map((text) => ({ text, thought: true }))
  const text: Array<Record<string, unknown>> = r.text.map((t) => ({ text: t }))
  const calls: Array<Record<string, unknown>> = r.calls.map((c) => {
    // Gemini's arguments are an object: text that is not JSON goes inside one.
    let args: unknown = { text: c.args }
    try {
      args = JSON.parse(c.args)
    } catch {}
    return { functionCall: { ...((spec.toolCalls ?? [])[r.calls.indexOf(c)]?.id === undefined ? {} : { id: c.id }), name: c.name, args } }
  })
  const signed = calls[0] ?? text[text.length - 1] ?? reasoning[reasoning.length - 1]
  if (signed !== undefined && r.reasoning.length > 0) signed.thoughtSignature = GEMINI_SIGNATURE
  const hosted = (spec.hosted ?? []).flatMap((use) =>
    use.tool === "code"
      ? [
          chunk([{ executableCode: { language: "PYTHON", code: use.code } }]),
          chunk([{ codeExecutionResult: { outcome: "OUTCOME_OK", output: "4\n" } }]),
        ]
      : [],
  )
  const searches = (spec.hosted ?? []).flatMap((use) => (use.tool === "web_search" ? [use.query] : []))
  const cached = r.usage.cached ?? 0
  const thoughts = r.usage.reasoning ?? 0
  return [
    ...reasoning.map((p) => chunk([p])),
    ...hosted,
    ...text.map((p) => chunk([p])),
    ...(calls.length > 0 ? [chunk(calls)] : []),
    frame({
      candidates: [
        {
          content: { role: "model", parts: [] },
          finishReason: r.truncated ? "MAX_TOKENS" : "STOP",
          index: 0,
          ...(searches.length === 0
            ? {}
            : {
                groundingMetadata: {
                  webSearchQueries: searches,
                  groundingChunks: [{ web: { uri: "https://example.com/", title: "Example" } }],
                  searchEntryPoint: { renderedContent: "<div></div>" },
                },
              }),
        },
      ],
      modelVersion: "fake",
      responseId: "gem-1",
      usageMetadata: {
        promptTokenCount: r.usage.input,
        ...(cached > 0 ? { cachedContentTokenCount: cached } : {}),
        candidatesTokenCount: r.usage.output - thoughts,
        ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
        totalTokenCount: r.usage.input + r.usage.output,
      },
    }),
  ]
}

const RENDERERS: Readonly<Record<Protocol, (spec: ReplySpec) => Array<string>>> = {
  chat: chatFrames,
  responses: responsesFrames,
  anthropic: anthropicFrames,
  gemini: geminiFrames,
}

export const renderFrames = (protocol: Protocol, spec: ReplySpec): Array<string> => RENDERERS[protocol](spec)
