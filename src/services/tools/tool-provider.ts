/**
 * A tool provider: where an agent's own tools come from (MCP servers, command tools, the scripted backend's tools).
 *
 * A provider lists the tools it offers (`ToolSpec`s as the model sees them, with
 * the MCP server each belongs to) and runs one call of one of them. It returns
 * the tool's text as the tool gave it: limits on time and size, concurrency,
 * events and the messages the model is told belong to the caller (the round),
 * not to the provider. A call that fails fails with a `ToolRunError`; an
 * interrupted call stops the tool.
 *
 * Words: a *tool* here is one the agent may call besides the workflow tools
 * (`new_answer`, `vote`); an MCP tool is named `mcp__<server>__<tool>`.
 */
import { Effect, Schema } from "effect"
import type { CallRole, Event } from "../../domain/events/index.ts"
import { ToolKind } from "../../domain/events/index.ts"
import type { ToolSpec } from "../../domain/llm.ts"
import type { State } from "../../domain/state/index.ts"

export interface ProvidedTool {
  readonly spec: ToolSpec
  /** The MCP server the tool belongs to; null for a command tool or a scripted one. */
  readonly server: string | null
  /** Its MCP server marks it read-only (`annotations.readOnlyHint`): planning mode lets it run (`domain/tools/planning/mode.ts`). */
  readonly readOnly?: boolean
}

export const ToolRunErrorReason = Schema.Literal("failed", "server_down", "bad_arguments", "refused", "unknown_tool")
export type ToolRunErrorReason = typeof ToolRunErrorReason.Type

export class ToolRunError extends Schema.TaggedError<ToolRunError>()("ToolRunError", {
  reason: ToolRunErrorReason,
  detail: Schema.String,
}) {
  override get message(): string {
    return `${this.reason.replace("_", " ")}: ${this.detail}`
  }
}

/**
 * An agent's tools could not be made ready: what did not start (`kind`, `name`:
 * the MCP server, `agent/tool`, the agent) and the one line that says why
 * (`problem`, the message of the failure: `MCP server db did not start: ...`).
 */
export class ToolStartError extends Schema.TaggedError<ToolStartError>()("ToolStartError", {
  kind: ToolKind,
  name: Schema.String,
  problem: Schema.String,
}) {
  override get message(): string {
    return this.problem
  }
}

/**
 * Where a call runs, for the providers that need it (the file tools): the
 * agent and its round, the call's run-wide number, the run's state when the
 * call runs, and a way to record facts of the call before it returns.
 */
export interface ToolContext {
  readonly agent: string
  readonly round: number
  readonly role: CallRole
  readonly toolCall: number
  /** The id the model gave the call (the same when a stopped run's call runs again). */
  readonly callId: string
  readonly state: Effect.Effect<State>
  readonly emit: (event: Event) => Effect.Effect<void>
  readonly now: Effect.Effect<string>
}

export interface ToolProvider {
  readonly tools: ReadonlyArray<ProvidedTool>
  /** Runs one call of the tool named `name` (as in `tools`) with its parsed JSON arguments. */
  readonly run: (name: string, args: Record<string, unknown>, context?: ToolContext) => Effect.Effect<string, ToolRunError>
  /** Why a call of `name` in `role` is refused before anything of it runs, the permission gate included (planning mode); null or absent: none. */
  readonly refuses?: (name: string, role: CallRole) => ToolRunError | null
}

/** A provider with no tools. */
export const noTools: ToolProvider = {
  tools: [],
  run: (name) => Effect.fail(new ToolRunError({ reason: "unknown_tool", detail: `no tool named ${name}` })),
}
