/**
 * The permission gate: every tool call of an agent with a `permissions:` block passes it before it runs.
 *
 * Contract: `makePermissionGate(deps)` gives `check(call)`, run by the tool
 * runner after the call's `tool_call_started` and before the call acts: null
 * when the call may run, else the `ToolRunError` (`refused`) the model is
 * told. It decides with the agent's policy (`domain/permissions/`): the
 * hardline, the rules, the risk tier. An `ask` is appended as
 * `permission_asked` (and settled) before anyone is asked, then answered:
 * with `approval_mode: policy`, by the person at the terminal when there is
 * one (`PermissionAsker`), else by the automation policy; with
 * `approval_mode: file`, through a request file in the log directory
 * (`approval-files.ts`); denied when no answer comes in time. Every decision is appended as
 * `permission_decided` before the call goes on. A call run again by a resume
 * keeps the decision recorded for it (`recorded`, by its agent, round and
 * call id): nobody is asked again, and nothing new is appended. An agent
 * without a policy passes, and nothing is appended (the engine is opt-in, as
 * in MassGen).
 */
import { Context, Effect, Option } from "effect"
import { type CallRole, type Event, PERMISSION_TARGET_MAX } from "../../domain/events/index.ts"
import { type AgentPolicy, decidePermission, policyAnswer } from "../../domain/permissions/index.ts"
import { truncate } from "../../lib/text.ts"
import { askByFile, requestId } from "./approval-files.ts"
import { ToolRunError } from "./tool-provider.ts"

type Decided = Extract<Event, { _tag: "permission_decided" }>

export interface GatedCall {
  readonly tool_call: number
  readonly agent: string
  readonly round: number
  readonly role: CallRole
  readonly call_id: string
  readonly tool: string
  readonly server: string | null
  readonly args: Record<string, unknown>
}

/** What a person is asked of one call. */
export interface HumanQuestion {
  readonly agent: string
  readonly tool: string
  readonly action: string
  readonly target: string
  readonly rule: string | null
  readonly risk: string
  readonly reason: string
}

/**
 * The person at the terminal, when there is one to ask (a run that is not `--automation`, on a
 * terminal: `cli/run/permission-prompt.ts`): true to allow. Without it, asks go to the automation policy.
 */
export class PermissionAsker extends Context.Tag("massgen/PermissionAsker")<
  PermissionAsker,
  { readonly ask: (question: HumanQuestion) => Effect.Effect<boolean> }
>() {}

export interface PermissionGateDeps {
  readonly policyOf: (agent: string) => AgentPolicy | null
  /** The decisions a resumed run's log holds, by `decisionKey`. */
  readonly recorded: ReadonlyMap<string, Decided>
  /** The run's log directory, where request files go. */
  readonly logDir: string
  readonly emit: (event: Event) => Effect.Effect<void>
  readonly now: Effect.Effect<string>
  /** The person to ask with `approval_mode: policy`, when there is one. */
  readonly human?: PermissionAsker["Type"]
}

export const decisionKey = (e: { readonly agent: string; readonly role: CallRole; readonly round: number; readonly call_id: string }) =>
  JSON.stringify([e.agent, e.role, e.round, e.call_id])

/** The decisions of a log, by call: what a resume keeps. */
export const recordedDecisions = (events: ReadonlyArray<Event>): ReadonlyMap<string, Decided> =>
  new Map(events.flatMap((e) => (e._tag === "permission_decided" ? [[decisionKey(e), e] as const] : [])))

const denial = (reason: string) => new ToolRunError({ reason: "refused", detail: `permission denied: ${reason}` })

export const makePermissionGate = (deps: PermissionGateDeps) => {
  const check = (call: GatedCall): Effect.Effect<ToolRunError | null> =>
    Effect.gen(function* () {
      const policy = deps.policyOf(call.agent)
      if (policy === null) return null
      const kept = deps.recorded.get(decisionKey(call))
      if (kept !== undefined) return kept.decision === "allow" ? null : denial(kept.reason)
      const d = decidePermission(policy.rules, { tool: call.tool, server: call.server, args: call.args })
      const fields = {
        tool_call: call.tool_call,
        agent: call.agent,
        round: call.round,
        role: call.role,
        call_id: call.call_id,
        tool: call.tool,
        action: d.action,
        target: truncate(d.target, PERMISSION_TARGET_MAX),
        risk: d.risk,
        rule: d.rule,
      }
      const decided = (allowed: boolean, by: Decided["by"], reason: string) =>
        Effect.as(
          Effect.flatMap(deps.now, (time) =>
            deps.emit({ _tag: "permission_decided", time, ...fields, decision: allowed ? "allow" : "deny", by, reason }),
          ),
          allowed ? null : denial(reason),
        )
      if (d.verdict !== "ask") return yield* decided(d.verdict === "allow", d.by, d.reason)
      const file = policy.approvalMode === "file"
      const human = file ? undefined : deps.human
      const id = file ? requestId(call.agent, call.role, call.round, call.call_id) : null
      const time = yield* deps.now
      const via = file ? "response_file" : human !== undefined ? "human" : "policy"
      yield* deps.emit({ _tag: "permission_asked", time, ...fields, via, request: id, reason: d.reason })
      if (human !== undefined) {
        const question = {
          agent: call.agent,
          tool: call.tool,
          action: d.action,
          target: d.target,
          rule: d.rule,
          risk: d.risk,
          reason: d.reason,
        }
        const answer = yield* Effect.timeoutOption(human.ask(question), `${policy.timeoutSeconds} seconds`)
        return yield* Option.match(answer, {
          onNone: () =>
            decided(false, "timeout", `no answer at the terminal within ${policy.timeoutSeconds}s (approval_timeout_seconds): denied`),
          onSome: (allowed) => decided(allowed, "human", allowed ? "allowed at the terminal" : "denied at the terminal"),
        })
      }
      if (id === null) {
        const answer = policyAnswer(policy.automationDefault, d.risk)
        return yield* decided(answer.allowed, "policy", `${d.reason}; ${answer.reason}`)
      }
      const answer = yield* askByFile(
        deps.logDir,
        { id, ...fields, reason: d.reason, asked_at: time, timeout_seconds: policy.timeoutSeconds },
        policy.timeoutSeconds,
      )
      return yield* decided(answer.allowed, answer.by, answer.reason)
    })
  return { check }
}

export type PermissionGate = ReturnType<typeof makePermissionGate>
