/**
 * A served run's backends with the request's sampling and answer format given to the presenter.
 *
 * Contract: `refusedSampling(fields, config)` is a 400 naming the first field
 * an agent of the served config could not honour as presenter (`stop` and
 * `seed` on an OpenAI Responses agent, `stop` and `seed` on a native Gemini agent,
 * `seed` and a `temperature` above 1 on an Anthropic agent, every sampling field
 * on a CLI agent; a scripted agent samples nothing and takes every field), or
 * null. `presenterBackends(backends, config, env, where, fields)` gives the
 * backends a served run uses: with no sampling and no format, `backends` as
 * they are; else each agent's presentation calls go to a second backend of the
 * same agent built with the request's `temperature`, `top_p`, max tokens
 * (over the config's) and `stop`/`seed` and the native JSON mode (Chat
 * `response_format`, Responses `text.format`) in its `extra_body`; its rounds
 * keep the config's. With a format, the presenter is also told of it (after its
 * system message), and a reply that does not keep to it is asked for once more,
 * told what was wrong: the call's reply is then the second one, with both
 * replies' tokens, its answer text unwrapped from a code fence (`answerText`).
 * The call log holds the request as the orchestrator built it (replay builds
 * the same); what was added is this file's.
 */
import { Effect } from "effect"
import type { Config } from "../../domain/config/index.ts"
import { presetOf } from "../../domain/config/index.ts"
import type { LlmReply, LlmRequest, TokenUsage } from "../../domain/llm.ts"
import type { Backend, OnChunk } from "../../services/backends/index.ts"
import { makeBackends } from "../run/setup.ts"
import { type AnswerFormat, answerProblem, answerText, formatInstruction, retryInstruction } from "./answer-format.ts"
import type { RequestFields } from "./request-fields.ts"
import { badRequest, type WireError } from "./wire-error.ts"

const unsupported = (field: string, agent: string, why: string): WireError =>
  badRequest(`${field}: agent ${agent} could present the answer, and ${why}`, field, "unsupported_parameter")

export const refusedSampling = (fields: RequestFields, config: Config): WireError | null => {
  const { sampling } = fields
  for (const agent of config.agents) {
    const type = agent.backend.type
    if (type === "scripted") continue
    const family = presetOf({ ...agent.backend, type }).family
    if (family === "claude_code") {
      const given = (["temperature", "topP", "maxTokens", "stop", "seed"] as const).find((f) => sampling[f] !== undefined)
      const field = { temperature: "temperature", topP: "top_p", maxTokens: "max_tokens", stop: "stop", seed: "seed" } as const
      if (given !== undefined) return unsupported(field[given], agent.id, `its backend (${type}, a CLI agent) takes no sampling settings`)
      continue
    }
    if (family === "responses" && sampling.stop !== undefined)
      return unsupported("stop", agent.id, `its backend (${type}, OpenAI Responses) has no stop sequences`)
    if (family === "gemini" && sampling.stop !== undefined)
      return unsupported("stop", agent.id, `its backend (${type}, Gemini's generateContent) takes no stop sequences from a request`)
    if (family !== "chat" && sampling.seed !== undefined) return unsupported("seed", agent.id, `its backend (${type}) takes no seed`)
    if (family === "anthropic" && sampling.temperature !== undefined && sampling.temperature > 1)
      return unsupported("temperature", agent.id, `its backend (${type}) takes a temperature of at most 1`)
  }
  return null
}

/** The backend's own JSON mode for `format`, as its `extra_body` (Anthropic has none: the instruction alone asks). */
const nativeFormat = (family: string, format: AnswerFormat, verbosity: string | undefined): Record<string, unknown> => {
  const schema = format.type === "json_schema" ? { name: format.name, schema: format.schema, strict: format.strict } : null
  if (family === "chat")
    return { response_format: schema === null ? { type: "json_object" } : { type: "json_schema", json_schema: schema } }
  if (family !== "responses") return {}
  const json = schema === null ? { type: "json_object" } : { type: "json_schema", ...schema }
  return { text: { format: json, ...(verbosity !== undefined ? { verbosity } : {}) } }
}

/** The config with the request's sampling and format on every agent, for presentation calls. */
const presenterConfig = (config: Config, fields: RequestFields): Config => ({
  ...config,
  agents: config.agents.map((agent) => {
    const b = agent.backend
    if (b.type === "scripted") return agent
    const { sampling, format } = fields
    const family = presetOf({ ...b, type: b.type }).family
    // A CLI agent takes no sampling (refused above) and has no native JSON mode: the instruction alone asks.
    if (family === "claude_code") return agent
    const extra: Record<string, unknown> = {
      ...(sampling.stop !== undefined ? (family === "anthropic" ? { stop_sequences: sampling.stop } : { stop: sampling.stop }) : {}),
      ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
      ...(format !== null ? nativeFormat(family, format, b.text?.verbosity) : {}),
    }
    return {
      ...agent,
      backend: {
        ...b,
        ...(sampling.temperature !== undefined ? { temperature: sampling.temperature } : {}),
        ...(sampling.topP !== undefined ? { top_p: sampling.topP } : {}),
        ...(sampling.maxTokens !== undefined ? { max_tokens: sampling.maxTokens } : {}),
        ...(Object.keys(extra).length > 0 ? { extra_body: { ...b.extra_body, ...extra } } : {}),
      },
    }
  }),
})

const sum = (a: number | null, b: number | null): number | null => (a === null && b === null ? null : (a ?? 0) + (b ?? 0))

const summed = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  inputTokens: sum(a.inputTokens, b.inputTokens),
  cachedInputTokens: sum(a.cachedInputTokens, b.cachedInputTokens),
  outputTokens: sum(a.outputTokens, b.outputTokens),
  reasoningTokens: sum(a.reasoningTokens, b.reasoningTokens),
})

/** A presentation call that keeps to `format`, asked once more when its reply does not. */
const formattedCall = (backend: Backend, format: AnswerFormat, request: LlmRequest, onChunk: OnChunk) =>
  Effect.gen(function* () {
    const told: LlmRequest = { ...request, system: `${request.system}\n\n${formatInstruction(format)}` }
    const first = yield* backend.call(told, onChunk)
    // A tool step of the presentation is not its answer: the reply after the tools' results is.
    if (first.toolCalls.length > 0) return first
    const problem = answerProblem(first.text, format)
    if (problem === null) return { ...first, text: answerText(first.text) }
    const again: LlmRequest = {
      ...told,
      messages: [...told.messages, { role: "assistant", content: first.text }, { role: "user", content: retryInstruction(problem) }],
    }
    const second = yield* backend.call(again, onChunk)
    const reply: LlmReply = {
      ...second,
      text: answerProblem(second.text, format) === null ? answerText(second.text) : second.text,
      usage: summed(first.usage, second.usage),
      raw: { format_retry: problem, replies: [first.raw, second.raw] },
    }
    return reply
  })

export const presenterBackends = (
  backends: ReadonlyMap<string, Backend>,
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
  where: string,
  fields: RequestFields,
) =>
  Effect.gen(function* () {
    if (Object.keys(fields.sampling).length === 0 && fields.format === null) return backends
    const presenting = yield* makeBackends(presenterConfig(config, fields), env, where)
    const out = new Map<string, Backend>()
    for (const [id, backend] of backends) {
      // A scripted agent samples nothing: its own backend (which a resume gave its history) presents.
      const presenter = backend.type === "scripted" ? backend : (presenting.get(id) ?? backend)
      const { format } = fields
      out.set(id, {
        ...backend,
        call: (request, onChunk) =>
          request.context.kind !== "presentation"
            ? backend.call(request, onChunk)
            : format === null
              ? presenter.call(request, onChunk)
              : formattedCall(presenter, format, request, onChunk),
      })
    }
    return out as ReadonlyMap<string, Backend>
  })
