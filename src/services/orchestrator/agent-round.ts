/**
 * One round of one agent, or the winner's presentation: the round machine, interpreted with effects.
 *
 * `runRound` and `runPresentation` start the round machine
 * (`domain/coordination/round-machine.ts`) and carry out its steps: a `call_model` step is
 * one call of the agent's backend with its retries, a `run_tools` step goes to
 * `runTools`, and `done` is the result. The machine alone decides what a reply
 * means, how many attempts a round has and what the model is told; this file
 * only talks to the outside world. Each call is a `call_start`/`call_end`
 * pair (the `call_end` carries the reply, so the log rebuilds the round), and
 * a retryable failure is tried again (`call_retried`) after the provider's
 * `retry-after` or an exponential backoff with jitter, up to the backend's
 * `maxRetries`; a retry that could only start at or after the round's
 * `agent_timeout_seconds` is not waited for, and the call fails at once with
 * its own error (a long `retry-after` is reported as the rate limit it is, not
 * as a timeout). A call that runs past the backend's `callTimeoutSeconds` fails
 * with reason `timeout`; a round that runs past `agent_timeout_seconds` ends
 * the agent with kind `timeout`. The result is always a `Reply`: a round never
 * fails as an Effect. Whether a call may start at all (the budget, the run's
 * end) is the orchestrator's to say when it appends the `call_start`.
 *
 * Each use of a provider tool a reply reports (`LlmReply.hostedToolUses`) is a
 * `hosted_tool_used` event after the call's `call_end`. A round resumed
 * mid-way (`RoundInput.from`) starts at the step the log rebuilt, not at the
 * first call: its recorded replies and tool results are not asked for again.
 *
 * Streamed text goes to `onText` as it arrives (the agent's output file and the
 * live display), then what the reply did with its tools (long arguments cut,
 * the whole text being in the call log); the full request and reply of each call go to `logCall`,
 * which has them in place before the call's `call_end` is emitted. The reply's
 * long tool-call arguments go to the blob store (`storeArguments`), and its
 * `call_end` references them.
 */
import { Clock, Duration, Effect, Random } from "effect"
import { callHeader } from "../../domain/agent-output.ts"
import type { Reply } from "../../domain/coordination/decide.ts"
import {
  onCallFailed,
  onModelReply,
  onTimeWarning,
  onToolResults,
  onUpdate,
  recordReply,
  startRound,
  type ToolResult,
  type Transition,
} from "../../domain/coordination/round-machine.ts"
import { ARGUMENTS_BLOB_MIN_CHARS, type ArgumentsText, type CallRole, type Event, type RecordedReply } from "../../domain/events/index.ts"
import type { LlmReply, LlmRequest, ShownAnswer, TokenUsage, ToolCall } from "../../domain/llm.ts"
import { shownLongText } from "../../domain/log/index.ts"
import { instantText } from "../../lib/instant.ts"
import { type Backend, BackendError } from "../backends/index.ts"

export interface RoundDeps {
  readonly emit: (event: Event) => Effect.Effect<void>
  readonly now: Effect.Effect<string>
  readonly nextCallNumber: Effect.Effect<number>
  readonly onText: (agent: string, text: string) => Effect.Effect<void>
  /** The agent's output file only: a heading per call, then what the reply did with its tools. */
  readonly record?: (agent: string, text: string) => Effect.Effect<void>
  /** Reasoning summaries, kept apart from the answer text. */
  readonly onReasoning: (agent: string, text: string) => Effect.Effect<void>
  readonly logCall: (call: number, record: unknown) => Effect.Effect<void>
  /**
   * A tool call's arguments as its events hold them: long ones (`ARGUMENTS_BLOB_MIN_CHARS`) stored in
   * the run's blob store, written when this is done, and referenced; without it, as they are.
   */
  readonly storeArguments?: (text: string, name?: string) => Effect.Effect<ArgumentsText>
  /** USD of a call's usage for a model; null when the model has no price. */
  readonly priceOf: (model: string | null, usage: TokenUsage) => number | null
  /**
   * New answers for the agent's round in flight, when they reach it by
   * injection: the orchestrator appends `update_injected` (with `afterVote`)
   * and gives the answers the round now shows; null when there is nothing to
   * inject. Asked at each step boundary: before every model call but the
   * round's first, and when the round ends with a vote.
   */
  readonly injectUpdate?: (agent: string, round: number, afterVote: boolean) => Effect.Effect<ReadonlyArray<ShownAnswer> | null>
  /** Runs the tool calls of a reply (`tools/tool-runner.ts`); without it, every call gets an error result. */
  readonly runTools?: (
    agent: string,
    round: number,
    role: CallRole,
    calls: ReadonlyArray<ToolCall>,
  ) => Effect.Effect<ReadonlyArray<ToolResult>>
}

export interface RoundInput {
  readonly agent: string
  readonly round: number
  readonly backend: Backend
  readonly request: LlmRequest
  readonly agentTimeoutSeconds: number
  /**
   * MassGen's round timeout (`initial_round_timeout_seconds` for an agent's first round,
   * `subsequent_round_timeout_seconds` after): past `softSeconds` from the round's start, the
   * round is told to wrap up at its next step boundary; past `softSeconds + graceSeconds`, only
   * the workflow tools are offered (`round_time_warned`). `agentTimeoutSeconds` still ends it.
   */
  readonly roundTimeout?: { readonly softSeconds: number; readonly graceSeconds: number }
  /** The round's machine as the log rebuilt it (resume): the round goes on from its step. */
  readonly from?: Transition
  /**
   * The caller ends the round at `agentTimeoutSeconds` (interrupting it, then taking
   * `timeoutReply` as its reply), as the orchestrator does for all its work with one
   * fiber: the round then uses that time only as its retries' deadline.
   */
  readonly timedByCaller?: boolean
}

/** The reply of work that ran past `agent_timeout_seconds`: a round's (`round`) or the presentation's. */
export const timeoutReply = (agent: string, round: number | "present" | "evaluate", seconds: number): Reply => {
  const message = `Agent timeout after ${seconds}s`
  // A timed-out evaluation confirms the answer, as MassGen's auto-submit.
  if (round === "evaluate") return { _tag: "evaluated", agent, verdict: "none" }
  return round === "present" ? { _tag: "presentation_failed", agent, message } : { _tag: "failed", agent, round, kind: "timeout", message }
}

/** How much of a long call's arguments the agent's output file shows: the whole text is in the call log. */
const SHOWN_ARGUMENT_CHARS = 2_000

/** A tool call's arguments as the output file shows them: long ones cut, saying where the rest is. */
const shownArguments = (args: string): string =>
  args.length < ARGUMENTS_BLOB_MIN_CHARS
    ? args
    : `${args.slice(0, SHOWN_ARGUMENT_CHARS)}… (${args.length} characters in all: the whole text is in llm_log/)`

/** What a reply did with its tools, as the agent's output file shows it. */
const toolCallsText = (reply: LlmReply): string =>
  reply.toolCalls
    .map((c) => {
      try {
        const args = JSON.parse(c.arguments) as Record<string, unknown>
        // A long answer is in the blob store (`domain/log/long-texts.ts`): its beginning and where it is.
        if (c.name === "new_answer" && typeof args.content === "string") return `\n[new_answer]\n${shownLongText(args.content)}\n`
        if (c.name === "vote") return `\n[vote] ${String(args.agent_id)}: ${String(args.reason ?? "")}\n`
      } catch {
        // shown raw below
      }
      return `\n[${c.name}] ${shownArguments(c.arguments)}\n`
    })
    .join("")

/** The reply as its `call_end` records it, its long tool-call arguments in the blob store. */
const recorded = (deps: RoundDeps, reply: LlmReply): Effect.Effect<RecordedReply> => {
  const record = recordReply(reply)
  const store = deps.storeArguments
  if (store === undefined) return Effect.succeed(record)
  return Effect.map(
    Effect.forEach(record.tool_calls, (c) =>
      typeof c.arguments === "string" ? Effect.map(store(c.arguments, c.name), (args) => ({ ...c, arguments: args })) : Effect.succeed(c),
    ),
    (tool_calls) => ({ ...record, tool_calls }),
  )
}

type Outcome = { readonly _tag: "reply"; readonly reply: LlmReply } | { readonly _tag: "error"; readonly message: string }

const backoffSeconds = (retry: number) => Random.nextRange(0.8, 1.2).pipe(Effect.map((jitter) => Math.min(30, 2 ** (retry - 1)) * jitter))

const secs = (s: number) => `${Number(s.toFixed(1))}s`

/** Why a retry is not waited for: its delay would end at or after the round's deadline. */
const noTimeToRetry = (failure: BackendError, delay: number, left: number): string =>
  `${failure.message} (${failure.retryAfterSeconds !== null ? `retry-after ${secs(delay)}` : `the next retry in ${secs(delay)}`} is past the ${secs(Math.max(0, left))} left of agent_timeout_seconds)`

/**
 * One call with its retries; `attempt` is the reply attempt it serves. A retry
 * whose delay would end at or past `deadline` (the round's agent timeout, in
 * clock ms) is not waited for: the call fails at once with its own error.
 */
const callWithRetries = (
  deps: RoundDeps,
  input: RoundInput,
  role: CallRole,
  request: LlmRequest,
  attempt: number,
  deadline: number,
): Effect.Effect<Outcome> =>
  Effect.gen(function* () {
    const { backend, agent, round } = input
    for (let retry = 0; ; retry++) {
      const call = yield* deps.nextCallNumber
      const started = yield* Clock.currentTimeMillis
      yield* deps.emit({ _tag: "call_start", time: instantText(started), call, agent, round, role, model: backend.model, attempt })
      const record = (text: string) => (deps.record ? deps.record(agent, text) : Effect.void)
      yield* record(callHeader(round, call, role === "presentation"))
      let stream = backend.call(request, (chunk) =>
        chunk._tag === "text" ? deps.onText(agent, chunk.text) : deps.onReasoning(agent, chunk.text),
      )
      if (backend.callTimeoutSeconds !== null) {
        const seconds = backend.callTimeoutSeconds
        stream = stream.pipe(
          Effect.timeoutFail({
            duration: Duration.seconds(seconds),
            onTimeout: () =>
              new BackendError({
                reason: "timeout",
                detail: `no reply${backend.endpoint === undefined ? "" : ` from ${backend.endpoint}`} after ${seconds}s`,
                retryable: true,
                retryAfterSeconds: null,
              }),
          }),
        )
      }
      /** The call's call_end: with the reply's usage, or the error (a cut-off call's is "cancelled"). */
      const callEnd = (reply: LlmReply | null, error: string | null) =>
        Effect.gen(function* () {
          const record = reply === null ? null : yield* recorded(deps, reply)
          const ended = yield* Clock.currentTimeMillis
          const usage = reply?.usage
          yield* deps.emit({
            _tag: "call_end",
            // What `deps.now` gives, from the reading the call takes anyway.
            time: instantText(ended),
            call,
            agent,
            round,
            role,
            model: backend.model,
            seconds: (ended - started) / 1000,
            input_tokens: usage?.inputTokens ?? null,
            cached_input_tokens: usage?.cachedInputTokens ?? null,
            output_tokens: usage?.outputTokens ?? null,
            reasoning_tokens: usage?.reasoningTokens ?? null,
            truncated: reply?.truncated ?? null,
            cost: usage ? deps.priceOf(backend.model, usage) : null,
            error,
            reply: record,
          })
        })
      // A call cut off by a cancelled round, a timeout or the run's end still gets its call_end.
      const logged = (reply: LlmReply | null, error: string | null) =>
        deps.logCall(call, { call, agent, round, role, model: backend.model, attempt, request, reply, error })
      // A cut-off call is logged too: replay compares its request with what this code builds.
      const result = yield* Effect.either(stream).pipe(
        Effect.onInterrupt(() => Effect.zipRight(logged(null, "cancelled"), callEnd(null, "cancelled"))),
      )
      const reply = result._tag === "Right" ? result.right : null
      const error = result._tag === "Left" ? result.left.message : null
      // The call's log is in place before its call_end: replay finds the reply of every call the events record.
      // Both, once the reply is in: a round cancelled meanwhile still records the reply it had.
      yield* Effect.uninterruptible(Effect.zipRight(logged(reply, error), callEnd(reply, error)))
      for (const use of reply?.hostedToolUses ?? []) {
        yield* deps.emit({
          _tag: "hosted_tool_used",
          time: yield* deps.now,
          call,
          agent,
          round,
          role,
          tool: use.tool,
          detail: use.detail,
          ...(use.sources === undefined || use.sources.length === 0 ? {} : { sources: use.sources }),
        })
      }
      yield* record(reply !== null ? toolCallsText(reply) : `\n[error] ${error}\n`)
      if (result._tag === "Right") return { _tag: "reply", reply: result.right } as const
      const failure = result.left
      if (!failure.retryable || retry >= backend.maxRetries) return { _tag: "error", message: failure.message } as const
      const delay = failure.retryAfterSeconds ?? (yield* backoffSeconds(retry + 1))
      const left = (deadline - (yield* Clock.currentTimeMillis)) / 1000
      if (delay >= left) return { _tag: "error", message: noTimeToRetry(failure, delay, left) } as const
      yield* deps.emit({
        _tag: "call_retried",
        time: yield* deps.now,
        call,
        agent,
        round,
        retry: retry + 1,
        delay_seconds: delay,
        error: failure.message,
      })
      yield* Effect.sleep(Duration.seconds(delay))
    }
  })

/** Runs `body` with the round's start and deadline (clock ms), ended by `agent_timeout_seconds` (unless its caller ends it). */
const withTimeout = (
  input: RoundInput,
  body: (deadline: number, start: number) => Effect.Effect<Reply>,
  onTimeout: Reply,
): Effect.Effect<Reply> =>
  Effect.flatMap(Clock.currentTimeMillis, (start) => {
    const work = body(start + input.agentTimeoutSeconds * 1000, start)
    if (input.timedByCaller === true) return work
    return work.pipe(
      Effect.timeoutTo({
        duration: Duration.seconds(input.agentTimeoutSeconds),
        onSuccess: (reply): Reply => reply,
        onTimeout: () => onTimeout,
      }),
    )
  })

const noTools = (calls: ReadonlyArray<ToolCall>): ReadonlyArray<ToolResult> =>
  calls.map((c) => ({ callId: c.id, name: c.name, content: `error: no tool named ${c.name} can run here`, isError: true }))

/** Carries out the machine's steps until it is done. */
const interpret = (deps: RoundDeps, input: RoundInput, role: CallRole, deadline: number, start: number): Effect.Effect<Reply> =>
  Effect.gen(function* () {
    // The round-timeout stages already passed (a rebuilt machine's are in the log: it goes on with none).
    let stage = 0
    // A rebuilt machine's events are in the log already.
    let t: Transition = input.from
      ? { ...input.from, events: [] }
      : startRound({ agent: input.agent, round: input.round, role, request: input.request })
    let last: LlmReply | null = null
    const inject = role === "round" ? deps.injectUpdate : undefined
    for (;;) {
      for (const event of t.events) yield* deps.emit(event)
      const step = t.step
      switch (step._tag) {
        case "done": {
          const shown = inject && step.reply._tag === "voted" ? yield* inject(input.agent, input.round, true) : null
          if (shown === null) return step.reply
          // The reply the round ended on: this process's, or, in a round rebuilt from the log, the recorded one.
          t = onUpdate(t.machine, shown, last ?? step.answered ?? null)
          break
        }
        case "call_model": {
          const limit = role === "round" ? input.roundTimeout : undefined
          if (limit !== undefined && stage < 2) {
            const elapsed = ((yield* Clock.currentTimeMillis) - start) / 1000
            // Soft, then hard: a round past both is told of each in turn.
            const due =
              stage < 1 && elapsed >= limit.softSeconds ? "soft" : elapsed >= limit.softSeconds + limit.graceSeconds ? "hard" : null
            if (due !== null) {
              stage = due === "hard" ? 2 : 1
              yield* deps.emit({ _tag: "round_time_warned", time: yield* deps.now, agent: input.agent, round: input.round, stage: due })
              t = onTimeWarning(t.machine, due)
              break
            }
          }
          const shown = inject && t.machine.transcript.length > 0 ? yield* inject(input.agent, input.round, false) : null
          if (shown !== null) {
            t = onUpdate(t.machine, shown, null)
            break
          }
          const outcome = yield* callWithRetries(deps, input, role, step.request, step.attempt, deadline)
          last = outcome._tag === "reply" ? outcome.reply : null
          t = outcome._tag === "reply" ? onModelReply(t.machine, outcome.reply, yield* deps.now) : onCallFailed(t.machine, outcome.message)
          break
        }
        case "run_tools": {
          const results = deps.runTools ? yield* deps.runTools(input.agent, input.round, role, step.calls) : noTools(step.calls)
          t = onToolResults(t.machine, results)
          break
        }
      }
    }
  })

/** An answer round: model calls until a valid workflow call, at most `MAX_ATTEMPTS` invalid replies. */
export const runRound = (deps: RoundDeps, input: RoundInput): Effect.Effect<Reply> =>
  withTimeout(
    input,
    (deadline, start) => interpret(deps, input, "round", deadline, start),
    timeoutReply(input.agent, input.round, input.agentTimeoutSeconds),
  )

/** The winner's presentation: calls (with their retries and tool steps) until a reply's text, the final answer. */
export const runPresentation = (deps: RoundDeps, input: RoundInput): Effect.Effect<Reply> =>
  withTimeout(
    input,
    (deadline, start) => interpret(deps, input, "presentation", deadline, start),
    timeoutReply(input.agent, "present", input.agentTimeoutSeconds),
  )

/** The presenter's evaluation of the final answer (`restarts.ts`): calls until `submit` or `restart_orchestration`, or a reply without tools. */
export const runEvaluation = (deps: RoundDeps, input: RoundInput): Effect.Effect<Reply> =>
  withTimeout(
    input,
    (deadline, start) => interpret(deps, input, "evaluation", deadline, start),
    timeoutReply(input.agent, "evaluate", input.agentTimeoutSeconds),
  )
