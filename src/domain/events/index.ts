/**
 * The events of a run: what happened, defined once, in the order it happened.
 *
 * A run appends one event per line to `events.jsonl` in its log directory (see
 * `services/event-store/index.ts` and `domain/log/index.ts`): a JSON object with the
 * file's schema version (`schema`), the event's wire name (`type`), the moment
 * it happened (`time`, UTC, ISO 8601), the event's own fields and, on the
 * events that have them, the writing process's machine facts (`meta`,
 * `EventMeta`): the *envelope*. The file is the source of truth:
 * the run's state is the fold of its events (`domain/state/index.ts`), and `status.json`,
 * `coordination_events.json` and `snapshot_mappings.json` are projections of it.
 *
 * Every event type is a past-tense fact with a snake_case wire name. The
 * registry (`EVENT_TYPES`) is derived from the union of the definitions
 * (`Event`, below); it is never kept by hand. `docs/events.md` lists every type and field.
 *
 * Words: an *agent* is named by its config id (`agent_a`) and, to the other
 * agents, by its anonymous id (`agent1`, its 1-based place in the config);
 * an *answer label* is `agentN.M`, the M-th answer of agentN; a *round* is one
 * piece of work of one agent (numbered per agent from 1) that ends in an answer,
 * a vote, a failure or a cancellation. An agent's id is a safe name
 * (`run-paths.ts`), as the config requires: it names the agent's files, so a
 * line that names an agent otherwise does not decode. Counters (rounds, calls, attempts,
 * retries, tokens, votes) are whole numbers of 0 or more; amounts (seconds,
 * dollars) are finite numbers of 0 or more.
 *
 * The definitions are grouped by concern: `run.ts` (the run's life, its
 * settings, `EventMeta`), `rounds.ts` (coordination), `calls.ts`
 * (model and tool calls), `attempts.ts` (orchestration restarts), `permissions.ts` (the permission ledger), `files.ts`
 * (snapshots, final files, context writes), `plans.ts` (task plans), on the field types of `fields.ts`. This file holds the union.
 */
import { Schema } from "effect"
import { AnswerConfirmed, EvaluationStarted, OrchestrationRestarted } from "./attempts.ts"
import { CallEnded, CallRetried, CallStarted, HostedToolUsed, ToolCallFinished, ToolCallStarted } from "./calls.ts"
import { ChecklistSubmitted } from "./checklist.ts"
import { ContextPathWritten, ContextWriteIntended, WorkspaceFinalized, WorkspaceSnapshotted } from "./files.ts"
import { PermissionAsked, PermissionDecided } from "./permissions.ts"
import { TaskPlanUpdated } from "./plans.ts"
import {
  AgentFailed,
  AnswerSubmitted,
  FinalAnswerChosen,
  PresentationStarted,
  ReplyRejected,
  RoundCancelled,
  RoundStarted,
  RoundTimeWarned,
  UpdateInjected,
  VoteCast,
  VoteIgnored,
} from "./rounds.ts"
import { RunFinished, RunResumed, RunStarted, ToolStartFailed } from "./run.ts"
import { MemoryLoaded, MemoryRestored, SkillsOffered } from "./skills.ts"

export * from "./attempts.ts"
export * from "./calls.ts"
export * from "./checklist.ts"
export { Time } from "./fields.ts"
export * from "./files.ts"
export * from "./permissions.ts"
export * from "./plans.ts"
export * from "./rounds.ts"
export * from "./run.ts"
export * from "./skills.ts"
export { attemptText, ignoredVoteText, resumedText } from "./text.ts"

/**
 * The version of the events file's format: it changes when an event loses or changes a field.
 * 2: `log_dir`, `pid` and `version` left run_started and run_resumed for the line's `meta`;
 * times are ISO instants and counters whole numbers.
 */
export const SCHEMA_VERSION = 2

/** Every event type, decoded by its `type` field on the wire. */
export const Event = Schema.Union(
  RunStarted,
  RunResumed,
  ToolStartFailed,
  RoundStarted,
  RoundCancelled,
  UpdateInjected,
  RoundTimeWarned,
  ReplyRejected,
  AnswerSubmitted,
  VoteCast,
  VoteIgnored,
  CallStarted,
  CallEnded,
  CallRetried,
  ToolCallStarted,
  ToolCallFinished,
  HostedToolUsed,
  PermissionAsked,
  PermissionDecided,
  AgentFailed,
  PresentationStarted,
  FinalAnswerChosen,
  RunFinished,
  WorkspaceSnapshotted,
  WorkspaceFinalized,
  ContextWriteIntended,
  ContextPathWritten,
  TaskPlanUpdated,
  SkillsOffered,
  MemoryLoaded,
  MemoryRestored,
  ChecklistSubmitted,
  EvaluationStarted,
  AnswerConfirmed,
  OrchestrationRestarted,
)
export type Event = typeof Event.Type

/** Wire names of every event type, derived from the union. */
export const EVENT_TYPES: ReadonlyArray<Event["_tag"]> = Event.members.map((m) => m.fields._tag.literals[0])

/** The payload of an event of a given tag, without its tag (what a constructor takes). */
export type EventFields<T extends Event["_tag"]> = Omit<Extract<Event, { _tag: T }>, "_tag">
