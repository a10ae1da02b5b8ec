/**
 * The tool runner: runs the tool calls of one model reply, records each as events, and gives the model its results.
 *
 * `makeToolRunner(deps)` gives `RoundDeps.runTools`. The calls of one reply run
 * concurrently, at most `TOOL_CONCURRENCY` at once (`domain/tools/calls.ts`).
 * Each call is numbered run-wide (`tool_call`), appended as
 * `tool_call_started`, run by the agent's `ToolProvider` under the timeout
 * (`timeout_settings.tool_timeout_seconds`, default
 * `DEFAULT_TOOL_TIMEOUT_SECONDS`), written whole to `tool_log/<n>.json` when
 * its result is too long for its event (`INLINE_RESULT_CHARS`), and appended
 * as `tool_call_finished`, all before its result is handed back: a
 * result is recorded before the model sees it. Arguments that are not a JSON
 * object, an unknown tool, a failure, a timeout and a result over
 * `MAX_TOOL_RESULT_CHARS` (cut, with a note) are error results, `error: ...`
 * to the model: the round goes on. A call interrupted (its round cancelled,
 * the run stopping) has a `tool_call_started` and no `tool_call_finished`; a
 * resumed run runs it again. Long arguments are stored once (`storeArguments`)
 * and both events reference them. With a permission gate, every call passes
 * it after its `tool_call_started` and before it runs (the ask and the
 * answer waiting inside the tool's timeout are not: the gate comes first); a
 * denied call is an error result that says by what (`refused: permission denied: ...`).
 * A call its provider refuses outright (`ToolProvider.refuses`: planning mode)
 * is an error result before the gate: nobody is asked about it.
 */
import { Duration, Effect } from "effect"
import type { ToolResult } from "../../domain/coordination/round-machine.ts"
import type { ArgumentsText, CallRole, Event } from "../../domain/events/index.ts"
import type { ToolCall } from "../../domain/llm.ts"
import { initialState, type State } from "../../domain/state/index.ts"
import {
  cutResult,
  DEFAULT_TOOL_TIMEOUT_SECONDS,
  INLINE_RESULT_CHARS,
  MAX_TOOL_RESULT_CHARS,
  TOOL_CONCURRENCY,
} from "../../domain/tools/calls.ts"
import type { PermissionGate } from "./permission-gate.ts"
import { type ToolContext, type ToolProvider, ToolRunError } from "./tool-provider.ts"

export interface ToolRunnerDeps {
  readonly providerOf: (agent: string) => ToolProvider
  readonly emit: (event: Event) => Effect.Effect<void>
  readonly now: Effect.Effect<string>
  /** The next run-wide tool call number, from 1. */
  readonly nextToolCall: Effect.Effect<number>
  /** Writes the whole record of tool call `n` (`tool_log/<n>.json`). */
  readonly writeLog: (n: number, record: unknown) => Effect.Effect<void>
  /** SHA-256 (hex) of a result. */
  readonly digest: (text: string) => string
  readonly timeoutSeconds?: number
  readonly maxResultChars?: number
  /** The run's state, for the tools that need it (`ToolContext.state`). */
  readonly state?: Effect.Effect<State>
  /** The arguments as the events hold them (`RoundDeps.storeArguments`); without it, as they are. */
  readonly storeArguments?: (text: string) => Effect.Effect<ArgumentsText>
  /** The permission gate every call passes before it runs (`permission-gate.ts`); without it, none. */
  readonly gate?: PermissionGate
}

export type RunTools = (
  agent: string,
  round: number,
  role: CallRole,
  calls: ReadonlyArray<ToolCall>,
) => Effect.Effect<ReadonlyArray<ToolResult>>

const parseArgs = (text: string): Record<string, unknown> | null => {
  try {
    const value: unknown = JSON.parse(text.trim() === "" ? "{}" : text)
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

interface Outcome {
  readonly content: string
  readonly error: string | null
}

export const makeToolRunner = (deps: ToolRunnerDeps): RunTools => {
  const timeout = deps.timeoutSeconds ?? DEFAULT_TOOL_TIMEOUT_SECONDS
  const max = deps.maxResultChars ?? MAX_TOOL_RESULT_CHARS
  const state = deps.state ?? Effect.succeed(initialState)

  const outcome = (provider: ToolProvider, call: ToolCall, context: ToolContext, server: string | null): Effect.Effect<Outcome> => {
    const args = parseArgs(call.arguments)
    const gated = (args: Record<string, unknown>): Effect.Effect<void, ToolRunError> =>
      deps.gate === undefined
        ? Effect.void
        : Effect.flatMap(
            deps.gate.check({
              tool_call: context.toolCall,
              agent: context.agent,
              round: context.round,
              role: context.role,
              call_id: call.id,
              tool: call.name,
              server,
              args,
            }),
            (refused) => (refused === null ? Effect.void : Effect.fail(refused)),
          )
    const refused = provider.refuses?.(call.name, context.role) ?? null
    const run: Effect.Effect<string, ToolRunError> =
      args === null
        ? Effect.fail(new ToolRunError({ reason: "bad_arguments", detail: `the arguments of ${call.name} are not a JSON object` }))
        : refused !== null
          ? Effect.fail(refused)
          : Effect.zipRight(
              gated(args),
              provider.run(call.name, args, context).pipe(
                Effect.timeoutFail({
                  duration: Duration.seconds(timeout),
                  onTimeout: () =>
                    new ToolRunError({ reason: "failed", detail: `${call.name} timed out after ${timeout}s (tool_timeout_seconds)` }),
                }),
              ),
            )
    return Effect.match(run, {
      onFailure: (e): Outcome => ({ content: `error: ${e.message}`, error: e.message }),
      onSuccess: (text): Outcome =>
        text.length > max
          ? { content: cutResult(text, max), error: `the result was ${text.length} characters, over the cap of ${max}: cut` }
          : { content: text, error: null },
    })
  }

  const runOne = (agent: string, round: number, role: CallRole, provider: ToolProvider, call: ToolCall) =>
    Effect.gen(function* () {
      const n = yield* deps.nextToolCall
      const server = provider.tools.find((t) => t.spec.name === call.name)?.server ?? null
      const args = deps.storeArguments ? yield* deps.storeArguments(call.arguments) : call.arguments
      const fields = { tool_call: n, agent, round, role, call_id: call.id, tool: call.name, server, arguments: args }
      yield* deps.emit({ _tag: "tool_call_started", time: yield* deps.now, ...fields })
      const started = yield* Effect.clockWith((c) => c.currentTimeMillis)
      const { content, error } = yield* outcome(
        provider,
        call,
        {
          agent,
          round,
          role,
          toolCall: n,
          callId: call.id,
          state,
          emit: deps.emit,
          now: deps.now,
        },
        server,
      )
      const seconds = ((yield* Effect.clockWith((c) => c.currentTimeMillis)) - started) / 1000
      const ok = error === null
      // A result its event cannot hold is kept whole beside it, before the event that names it.
      if (content.length > INLINE_RESULT_CHARS) yield* deps.writeLog(n, { ...fields, ok, error, seconds, result: content })
      yield* deps.emit({
        _tag: "tool_call_finished",
        time: yield* deps.now,
        ...fields,
        ok,
        error,
        seconds,
        result: content.length <= INLINE_RESULT_CHARS ? content : null,
        result_chars: content.length,
        digest: deps.digest(content),
      })
      return { callId: call.id, name: call.name, content, ...(ok ? {} : { isError: true }) } satisfies ToolResult
    })

  return (agent, round, role, calls) => {
    const provider = deps.providerOf(agent)
    return Effect.forEach(calls, (call) => runOne(agent, round, role, provider, call), { concurrency: TOOL_CONCURRENCY })
  }
}
