/**
 * Builders for decider specs: events and replies in one line each, and
 * `given(events).when(...).then(events)` over the pure domain functions.
 *
 * `given` stamps its events with increasing times (one second apart from
 * `T0`), so builders need no time; `when` happens one second after the last
 * given event. `then` compares events without their `time`.
 *
 *   given(runStarted(["a", "b"]), roundStarted("a", 1, []))
 *     .when(answered("a", 1, "A"))
 *     .then(answer("a", 1, "agent1.1", "A"))
 *
 * `when` also takes a command (recorded as its event, as the orchestrator does);
 * `whenDecided` runs the decider once; `whenStopped` stops the run from outside.
 */
import { expect } from "bun:test"
import { DEFAULT_SETTINGS } from "../../src/domain/config/index.ts"
import { type Command, commandEvents, decide, judgeReply, type Reply, stopRun } from "../../src/domain/coordination/decide.ts"
import type { Event, FinalAnswerStrategy, FinalSource, FinishReason, RunSettings } from "../../src/domain/events/index.ts"
import { foldEvents, type State } from "../../src/domain/state/index.ts"

/** The time of the first given event. */
export const T0 = Date.parse("2025-06-01T12:00:00.000Z")
export const iso = (ms: number): string => new Date(ms).toISOString()
/** The time of the i-th event of a scenario (0-based), one second apart. */
export const at = (i: number): string => iso(T0 + i * 1000)

/** Builders leave the time empty; `given` stamps it. */
const NO_TIME = ""

export const defaultSettings: RunSettings = DEFAULT_SETTINGS

// ---------------------------------------------------------------- events

/** A run of agents named by `ids`; the i-th is `agent<i+1>` to the others. */
export const runStarted = (ids: ReadonlyArray<string>, settings: Partial<RunSettings> = {}): Event => ({
  _tag: "run_started",
  time: NO_TIME,
  run_id: "log_test",
  question: "What is 2+2?",
  agents: ids.map((id, i) => ({ id, anon_id: `agent${i + 1}`, backend: "scripted", model: null })),
  settings: { ...defaultSettings, ...settings },
})

export const roundStarted = (
  agent: string,
  round: number,
  shown: ReadonlyArray<string>,
  options: { readonly voteOnly?: boolean; readonly restart?: boolean } = {},
): Event => ({
  _tag: "round_started",
  time: NO_TIME,
  agent,
  round,
  shown,
  vote_only: options.voteOnly ?? false,
  restart: options.restart ?? false,
})

export const roundCancelled = (agent: string, round: number): Event => ({
  _tag: "round_cancelled",
  time: NO_TIME,
  agent,
  round,
  reason: "new_answer",
})

/** A round call of `agent` that came back with a reply (`error` null) or failed. */
export const callEnded = (agent: string, round: number, call: number, error: string | null = null): Event => ({
  _tag: "call_end",
  time: NO_TIME,
  call,
  agent,
  round,
  role: "round",
  model: null,
  seconds: 1,
  input_tokens: null,
  cached_input_tokens: null,
  output_tokens: null,
  reasoning_tokens: null,
  truncated: null,
  cost: null,
  error,
  reply: error === null ? { text: "", tool_calls: [], parts: [] } : null,
})

export const updateInjected = (agent: string, round: number, shown: ReadonlyArray<string>, afterVote = false): Event => ({
  _tag: "update_injected",
  time: NO_TIME,
  agent,
  round,
  shown,
  after_vote: afterVote,
})

export const answer = (agent: string, round: number, label: string, content: string): Event => ({
  _tag: "answer_submitted",
  time: NO_TIME,
  agent,
  round,
  label,
  content,
})

export const vote = (agent: string, round: number, target: string, targetLabel: string, reason = "best"): Event => ({
  _tag: "vote_cast",
  time: NO_TIME,
  agent,
  round,
  target,
  target_label: targetLabel,
  reason,
})

export const voteIgnored = (agent: string, round: number, target: string, reason: "stale" | "invalid_target" | "deferred"): Event => ({
  _tag: "vote_ignored",
  time: NO_TIME,
  agent,
  round,
  target,
  reason,
})

export const agentFailed = (agent: string, round: number, kind: "error" | "timeout" = "error", message = "boom"): Event => ({
  _tag: "agent_failed",
  time: NO_TIME,
  agent,
  round,
  kind,
  message,
})

export const presentationStarted = (
  agent: string,
  label: string,
  votes: Readonly<Record<string, number>>,
  options: { readonly isTie?: boolean; readonly strategy?: FinalAnswerStrategy; readonly callsModel?: boolean } = {},
): Event => ({
  _tag: "presentation_started",
  time: NO_TIME,
  agent,
  label,
  votes,
  is_tie: options.isTie ?? false,
  strategy: options.strategy ?? "winner_present",
  calls_model: options.callsModel ?? true,
})

export const finalAnswer = (agent: string, label: string, source: FinalSource, content: string): Event => ({
  _tag: "final_answer",
  time: NO_TIME,
  agent,
  label,
  source,
  content,
})

export const runFinished = (reason: FinishReason, winner: string | null, message: string): Event => ({
  _tag: "run_finished",
  time: NO_TIME,
  reason,
  winner,
  message,
})

// ---------------------------------------------------------------- replies

export const answered = (agent: string, round: number, content: string): Reply => ({ _tag: "answered", agent, round, content })

export const voted = (agent: string, round: number, targetAnonId: string, reason = "best"): Reply => ({
  _tag: "voted",
  agent,
  round,
  targetAnonId,
  reason,
})

export const failed = (agent: string, round: number, kind: "error" | "timeout" = "error", message = "boom"): Reply => ({
  _tag: "failed",
  agent,
  round,
  kind,
  message,
})

export const presented = (agent: string, content: string): Reply => ({ _tag: "presented", agent, content })

export const presentationFailed = (agent: string, message = "boom"): Reply => ({ _tag: "presentation_failed", agent, message })

// ---------------------------------------------------------------- given / when / then

/** An event without its time, as `then` compares them. */
export const withoutTime = (event: Event): Omit<Event, "time"> => {
  const { time: _time, ...rest } = event
  return rest
}

/** Stamps events with increasing times from `at(from)`. */
export const stamp = (events: ReadonlyArray<Event>, from = 0): ReadonlyArray<Event> =>
  events.map((e, i) => ({ ...e, time: at(from + i) }) as Event)

export interface Outcome {
  /** The events the `when` step produced, with their time. */
  readonly events: ReadonlyArray<Event>
  /** The commands, when the `when` step was a decision. */
  readonly commands: ReadonlyArray<Command>
  /** The state after the given events and the produced events. */
  readonly state: State
  /** Asserts the produced events, in order, ignoring their time. */
  readonly then: (...expected: ReadonlyArray<Event>) => Outcome
  /** Asserts the `when` step produced no event. */
  readonly thenNothing: () => Outcome
}

export interface Given {
  readonly events: ReadonlyArray<Event>
  /** The fold of the given events. */
  readonly state: State
  /** The time of the `when` step: one second after the last given event. */
  readonly now: string
  /** A reply arrives and is judged; or a command is recorded as its event. */
  readonly when: (input: Reply | Command) => Outcome
  /** The decider runs once; its commands are recorded as events. */
  readonly whenDecided: () => Outcome
  /** The run is stopped from outside. */
  readonly whenStopped: (reason: Exclude<FinishReason, "completed">, options?: { readonly message?: string }) => Outcome
  /** The given events and more, for chaining a scenario. */
  readonly and: (...more: ReadonlyArray<Event>) => Given
}

const outcome = (state: State, events: ReadonlyArray<Event>, commands: ReadonlyArray<Command>): Outcome => {
  const self: Outcome = {
    events,
    commands,
    state: foldEvents(events, state),
    then: (...expected) => {
      expect(events.map(withoutTime)).toEqual(expected.map(withoutTime))
      return self
    },
    thenNothing: () => {
      expect(events).toEqual([])
      return self
    },
  }
  return self
}

const COMMAND_TAGS: ReadonlySet<string> = new Set<Command["_tag"]>([
  "StartRound",
  "CancelRound",
  "StartPresentation",
  "UseStoredAnswer",
  "FinishRun",
  "StopRun",
])
const isCommand = (input: Reply | Command): input is Command => COMMAND_TAGS.has(input._tag)

export const given = (...input: ReadonlyArray<Event | ReadonlyArray<Event>>): Given => {
  const events = stamp(input.flat() as ReadonlyArray<Event>)
  const state = foldEvents(events)
  const now = at(events.length)
  return {
    events,
    state,
    now,
    when: (input) =>
      isCommand(input) ? outcome(state, commandEvents(state, input, now), [input]) : outcome(state, judgeReply(state, input, now), []),
    whenDecided: () => {
      const commands = decide(state)
      return outcome(
        state,
        commands.flatMap((c) => commandEvents(state, c, now)),
        commands,
      )
    },
    whenStopped: (reason, options = {}) => outcome(state, stopRun(state, reason, options.message ?? `stopped: ${reason}`, now), []),
    and: (...more) => given(...input, ...more),
  }
}
