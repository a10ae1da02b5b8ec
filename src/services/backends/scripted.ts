/**
 * The scripted backend (`type: scripted`): deterministic replies, no network.
 *
 * It reads the structured context of the request (which answers the round
 * shows, whether only `vote` is offered), never the prompt text. Per call, in
 * order: it waits `delay_seconds` (on the Effect clock, so TestClock drives it);
 * with `hang: true` it never replies; its first `fail_calls` calls fail; then
 * it plays the next `script` step if any is left (`{tool, args}` calls one of
 * the agent's own tools); otherwise it follows the
 * rules: `new_answer` with `answer` while none of its own answers is shown
 * (with `keep_answering`, whenever `new_answer` is offered), else `vote` for
 * the agent named by `vote` once that agent's answer is shown, else for
 * itself. A presentation first plays its `presentation_script` (tool steps
 * `{tool, args}`), then says `final`, or repeats its own latest answer.
 * Token counts are `input_tokens`/`output_tokens` when set, else about one
 * token per four characters. A resumed run's backend starts where the
 * recorded calls left it (`history`): the script goes on at the step after the
 * last recorded reply, so a resumed round gets the replies it would have got.
 */
import { Duration, Effect } from "effect"
import type { Agent } from "../../domain/config/index.ts"
import type { Event } from "../../domain/events/index.ts"
import type { LlmReply, LlmRequest, ToolCall } from "../../domain/llm.ts"
import { count } from "../../lib/text.ts"
import { type Backend, BackendError } from "./backend.ts"

const estimateTokens = (text: string): number => Math.ceil(text.length / 4)

const toolCall = (n: number, name: string, args: Record<string, unknown>): ToolCall => ({
  id: `call_${n}`,
  name,
  arguments: JSON.stringify(args),
})

/** A call's error that a `fail` script step gave (not `fail_calls`, not a cut-off call). */
const isScriptFailure = (error: string): boolean =>
  error.startsWith("scripted failure: ") && !/^scripted failure: scripted failure of call \d+$/.test(error)

export const makeScriptedBackend = (agent: Agent, history: ReadonlyArray<Event> = []): Backend => {
  const cfg = agent.backend
  const ended = history.filter((e): e is Extract<Event, { _tag: "call_end" }> => e._tag === "call_end" && e.agent === agent.id)
  let calls = ended.filter((e) => e.error !== "cancelled").length
  const rounds = ended.filter((e) => e.role !== "presentation")
  let scriptAt = rounds.filter((e) => (e.reply ?? null) !== null || (e.error !== null && isScriptFailure(e.error))).length
  let presentAt = ended.filter((e) => e.role === "presentation" && (e.reply ?? null) !== null).length
  let revisions = 0

  const reply = (request: LlmRequest, n: number): LlmReply | BackendError => {
    const ctx = request.context
    const own = ctx.shown.filter((a) => a.anonId === ctx.selfAnonId)
    const inputText = request.system + request.messages.map((m) => m.content).join("")
    const make = (text: string, toolCalls: ReadonlyArray<ToolCall>): LlmReply => ({
      text,
      reasoning: "",
      toolCalls,
      usage: {
        inputTokens: cfg.input_tokens ?? estimateTokens(inputText),
        cachedInputTokens: 0,
        outputTokens: cfg.output_tokens ?? estimateTokens(text + toolCalls.map((c) => c.arguments).join("")),
        reasoningTokens: 0,
      },
      truncated: false,
      raw: { scripted: true, text, tool_calls: toolCalls },
    })
    if (ctx.kind === "presentation") {
      const step = cfg.presentation_script?.[presentAt]
      if (step !== undefined) {
        presentAt += 1
        return make("", [toolCall(n, step.tool, step.args ?? {})])
      }
      return make(cfg.final ?? own[own.length - 1]?.content ?? "", [])
    }
    const step = cfg.script?.[scriptAt]
    if (step !== undefined) {
      scriptAt += 1
      if ("new_answer" in step) return make("", [toolCall(n, "new_answer", { content: step.new_answer })])
      if ("vote" in step) return make("", [toolCall(n, "vote", { agent_id: step.vote, reason: step.reason ?? "scripted vote" })])
      if ("text" in step) return make(step.text, [])
      if ("tool" in step) return make("", [toolCall(n, step.tool, step.args ?? {})])
      return new BackendError({ reason: "scripted_failure", detail: step.fail, retryable: false, retryAfterSeconds: null })
    }
    const offersAnswer = request.tools.some((t) => t.name === "new_answer")
    const answer = cfg.answer ?? `Answer of ${agent.id}`
    if (offersAnswer && (own.length === 0 || cfg.keep_answering === true)) {
      revisions += 1
      const content = cfg.keep_answering === true && revisions > 1 ? `${answer} (revision ${revisions})` : answer
      return make(`Writing an answer.`, [toolCall(n, "new_answer", { content })])
    }
    const target = cfg.vote !== undefined && ctx.shown.some((a) => a.anonId === cfg.vote) ? cfg.vote : ctx.selfAnonId
    return make(`Reviewing ${count(ctx.shown.length, "answer")}.`, [
      toolCall(n, "vote", { agent_id: target, reason: cfg.reason ?? `${target} has the best answer` }),
    ])
  }

  return {
    type: "scripted",
    model: cfg.model ?? null,
    maxRetries: cfg.max_retries ?? 0,
    callTimeoutSeconds: cfg.call_timeout_seconds ?? null,
    call: (request, onChunk) =>
      Effect.gen(function* () {
        calls += 1
        const n = calls
        if ((cfg.delay_seconds ?? 0) > 0) yield* Effect.sleep(Duration.seconds(cfg.delay_seconds ?? 0))
        if (cfg.hang === true) return yield* Effect.never
        if (n <= (cfg.fail_calls ?? 0)) {
          return yield* new BackendError({
            reason: "scripted_failure",
            detail: `scripted failure of call ${n}`,
            retryable: true,
            retryAfterSeconds: null,
          })
        }
        const result = reply(request, n)
        if (result instanceof BackendError) return yield* result
        if (result.text !== "") yield* onChunk({ _tag: "text", text: result.text })
        return result
      }),
  }
}
