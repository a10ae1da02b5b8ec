/**
 * The round machine: how one round (or the winner's presentation) proceeds, as pure transitions.
 *
 * It is the one place that knows the procedure of a round. `services/orchestrator/agent-round.ts`
 * interprets it with effects (calls, retries, timeouts); replay (`domain/replay/index.ts`)
 * feeds it the replies recorded in the log. A transition takes what came back
 * (a model reply, a failed call, tool results) and returns the machine's next
 * state, the events to append (`reply_rejected`), and the next step:
 * - `call_model`: send `request` (the base request of the round, then the
 *   transcript so far) as attempt `attempt`;
 * - `run_tools`: run `calls` and hand their results to `onToolResults`;
 * - `done`: the round's result, a `Reply` for the decider to judge.
 *
 * Each model reply is classified (`classifyReply`): a correct workflow call ends
 * the round; calls of other tools the request offers are a tool step; anything
 * else is invalid, with a closed reason and the message the model is told
 * (as MassGen: several `vote` calls; an answer whose text is one the round
 * shows, "Answer already provided by agentN.M..."; one too close to a shown
 * answer for `answer_novelty_requirement`). `new_answer` content given as a
 * JSON object or array is taken as its JSON text. An
 * invalid reply uses up an attempt (`MAX_ATTEMPTS` per round); a tool step uses
 * up a tool step (`MAX_TOOL_STEPS`): the two budgets are separate. A tool
 * step past the cap is refused as `tool_limit`, which tells the model to finish.
 * A presentation may take tool steps too; its first reply that calls no offered
 * tool (or any reply once its tool steps are spent) is the final answer.
 *
 * The results of a tool step may come back at once (`onToolResults`, a live
 * round) or one by one as the log records them (`onToolRecorded`, replay and
 * resume): a `run_tools` step lists only the calls that have no result yet,
 * which is what a resumed round runs (again, for a call cut off by the crash).
 *
 * Words: the *transcript* of a round is what follows its base request's
 * messages: earlier replies, the problems it was told of, and tool results.
 */
import type { CallRole, Event, RecordedReply, RejectionReason } from "../events/index.ts"
import { argumentsText } from "../events/index.ts"
import { type LlmMessage, type LlmReply, type LlmRequest, noUsage, type ShownAnswer, type ToolCall } from "../llm.ts"
import { CHECKLIST_TOOL, checklistRequired, checklistResults, covers, evaluate } from "./checklist.ts"
import type { Reply } from "./decide.ts"
import {
  DEFERRED_VOTING,
  duplicateProblem,
  noveltyProblem,
  retryMessages,
  STALE_VOTE_RESULT,
  updateMessage,
  votableIds,
  voteTool,
} from "./prompts.ts"
import { evaluationVerdict } from "./restarts.ts"

/** Attempts a round has at a valid reply. */
export const MAX_ATTEMPTS = 3
/** Tool steps a round (or a presentation) may take before it must answer or vote (or give its final text). */
export const MAX_TOOL_STEPS = 25

export const WORKFLOW_TOOLS: ReadonlySet<string> = new Set(["new_answer", "vote"])

export interface RoundMachine {
  readonly agent: string
  readonly round: number
  readonly role: CallRole
  readonly request: LlmRequest
  readonly transcript: ReadonlyArray<LlmMessage>
  /** The attempt the next (or current) model call serves, from 1. */
  readonly attempt: number
  /** Tool steps taken so far. */
  readonly toolSteps: number
  /** Tool calls waiting for their results (the `run_tools` step). */
  readonly pendingTools: ReadonlyArray<ToolCall>
  /** Results of pending calls already recorded (replay, resume). */
  readonly recordedTools: ReadonlyArray<ToolResult>
  readonly maxAttempts: number
  readonly maxToolSteps: number
  /** The labels the round's last accepted `submit_checklist` scored (checklist-gated voting); absent before one. */
  readonly checklist?: ReadonlyArray<string>
}

export type Step =
  | { readonly _tag: "call_model"; readonly request: LlmRequest; readonly attempt: number }
  | { readonly _tag: "run_tools"; readonly calls: ReadonlyArray<ToolCall> }
  /** `answered`: the model reply the round ended on, when it ended on one (a vote an update may yet make stale). */
  | { readonly _tag: "done"; readonly reply: Reply; readonly answered?: LlmReply }

export interface Transition {
  readonly machine: RoundMachine
  readonly events: ReadonlyArray<Event>
  readonly step: Step
}

export interface ToolResult {
  readonly callId: string
  readonly name: string
  readonly content: string
  /** True when the call failed (its `tool_call_finished` is not `ok`); the model is told so where its API can say it. */
  readonly isError?: boolean
}

export type Classified =
  | { readonly _tag: "workflow"; readonly reply: Reply }
  | { readonly _tag: "tool_calls"; readonly calls: ReadonlyArray<ToolCall> }
  | { readonly _tag: "invalid"; readonly reason: RejectionReason; readonly message: string }

export interface StartInput {
  readonly agent: string
  readonly round: number
  readonly role: CallRole
  readonly request: LlmRequest
  readonly maxAttempts?: number
  readonly maxToolSteps?: number
}

const parseArgs = (text: string): Record<string, unknown> | null => {
  try {
    const value: unknown = JSON.parse(text === "" ? "{}" : text)
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/** What a reply of a round does: one correct workflow call, a tool step, or nothing valid (and why). */
export const classifyReply = (agent: string, round: number, request: LlmRequest, reply: LlmReply): Classified => {
  const ctx = request.context
  const calls = reply.toolCalls
  const known = calls.filter((c) => WORKFLOW_TOOLS.has(c.name))
  const invalid = (reason: RejectionReason, message: string): Classified => ({ _tag: "invalid", reason, message })
  if (known.length === 0) {
    if (calls.length === 0) return invalid("no_tool_call", "Your reply called no tool.")
    const offered = new Set(request.tools.map((t) => t.name))
    const unknown = calls.filter((c) => !offered.has(c.name))
    if (unknown.length > 0) {
      const workflow = request.tools.filter((t) => WORKFLOW_TOOLS.has(t.name)).map((t) => t.name)
      return invalid("unknown_tool", `Unknown tool ${unknown.map((c) => c.name).join(", ")}: only ${workflow.join(" and ")} exist.`)
    }
    return { _tag: "tool_calls", calls }
  }
  if (new Set(known.map((c) => c.name)).size > 1) return invalid("both_tools", "Call either new_answer or vote, not both.")
  if (known.length > 1 && known[0]!.name === "vote")
    return invalid("several_votes", "Call vote once: you called it several times in one reply.")
  const first = known[0]!
  const args = parseArgs(first.arguments)
  if (args === null) return invalid("bad_arguments", `The arguments of ${first.name} are not a JSON object.`)
  if (first.name === "new_answer") {
    if (ctx.kind === "round" && ctx.voteOnly) return invalid("answer_limit", "You reached your limit of answers: call vote.")
    const content = answerText(args.content)
    if (content === null) return invalid("bad_arguments", "new_answer needs a content string.")
    if (content.trim() === "") return invalid("empty_answer", "new_answer needs a non-empty content.")
    if (ctx.kind === "round") {
      const same = ctx.shown.find((a) => a.content.trim() === content.trim())
      if (same !== undefined) return invalid("duplicate_answer", duplicateProblem(same.label))
      const notNovel = ctx.novelty === undefined ? null : noveltyProblem(content, ctx.shown, ctx.novelty)
      if (notNovel !== null) return invalid("answer_not_novel", notNovel)
    }
    return { _tag: "workflow", reply: { _tag: "answered", agent, round, content } }
  }
  if (ctx.kind === "round" && ctx.answerOnly === true) return invalid("invalid_vote_target", DEFERRED_VOTING)
  const valid = votableIds(ctx.shown)
  if (valid.length === 0) return invalid("invalid_vote_target", "Cannot vote when no answers exist. Use new_answer.")
  if (typeof args.agent_id !== "string" || !valid.includes(args.agent_id)) {
    return invalid("invalid_vote_target", `Invalid agent_id ${JSON.stringify(args.agent_id)}. Valid agents: ${valid.join(", ")}.`)
  }
  const reason = typeof args.reason === "string" ? args.reason : ""
  return { _tag: "workflow", reply: { _tag: "voted", agent, round, targetAnonId: args.agent_id, reason } }
}

/** `new_answer`'s content as text: a string as it is, an object or array as its JSON; null for anything else. */
const answerText = (content: unknown): string | null =>
  typeof content === "string" ? content : content !== null && typeof content === "object" ? JSON.stringify(content, null, 2) : null

const callModel = (machine: RoundMachine): Step => ({
  _tag: "call_model",
  request: { ...machine.request, messages: [...machine.request.messages, ...machine.transcript] },
  attempt: machine.attempt,
})

/** A round (or presentation) begins: its first step is a call of the model with the base request. */
export const startRound = (input: StartInput): Transition => {
  const machine: RoundMachine = {
    agent: input.agent,
    round: input.round,
    role: input.role,
    request: input.request,
    transcript: [],
    attempt: 1,
    toolSteps: 0,
    pendingTools: [],
    recordedTools: [],
    maxAttempts: input.role !== "round" ? 1 : (input.maxAttempts ?? MAX_ATTEMPTS),
    maxToolSteps: input.maxToolSteps ?? MAX_TOOL_STEPS,
  }
  return { machine, events: [], step: callModel(machine) }
}

const done = (machine: RoundMachine, reply: Reply, events: ReadonlyArray<Event> = [], answered?: LlmReply): Transition => ({
  machine: { ...machine, pendingTools: [], recordedTools: [] },
  events,
  step: answered === undefined ? { _tag: "done", reply } : { _tag: "done", reply, answered },
})

/** The model replied to the current call. */
export const onModelReply = (machine: RoundMachine, reply: LlmReply, time: string): Transition => {
  const { agent, round } = machine
  // The presenter's evaluation (`restarts.ts`): submit or restart_orchestration decides; other offered tools are a step.
  if (machine.role === "evaluation") {
    const verdict = evaluationVerdict(reply)
    if (verdict !== null) return done(machine, { _tag: "evaluated", agent, ...verdict })
    const offered = new Set(machine.request.tools.map((t) => t.name))
    const usesTools = reply.toolCalls.length > 0 && reply.toolCalls.every((c) => offered.has(c.name))
    if (!usesTools || machine.toolSteps >= machine.maxToolSteps) return done(machine, { _tag: "evaluated", agent, verdict: "none" })
    return toolStep(machine, reply, reply.toolCalls)
  }
  if (machine.role === "presentation") {
    const offered = new Set(machine.request.tools.map((t) => t.name))
    const usesTools = reply.toolCalls.length > 0 && reply.toolCalls.every((c) => offered.has(c.name))
    if (!usesTools || machine.toolSteps >= machine.maxToolSteps) return done(machine, { _tag: "presented", agent, content: reply.text })
    return toolStep(machine, reply, reply.toolCalls)
  }
  const ctx = machine.request.context
  const checklist = ctx.kind === "round" ? ctx.checklist : undefined
  if (checklist !== undefined && machine.toolSteps < machine.maxToolSteps && reply.toolCalls.some((c) => c.name === CHECKLIST_TOOL)) {
    return checklistTurn(machine, reply, time)
  }
  let classified = classifyReply(agent, round, machine.request, reply)
  if (checklist !== undefined && ctx.kind === "round" && classified._tag === "workflow" && classified.reply._tag === "voted") {
    if (!covers(machine.checklist, ctx)) classified = { _tag: "invalid", reason: "checklist_required", message: checklistRequired(ctx) }
  }
  if (classified._tag === "tool_calls" && machine.toolSteps >= machine.maxToolSteps) {
    classified = {
      _tag: "invalid",
      reason: "tool_limit",
      message: `You used all ${machine.maxToolSteps} tool steps of this round: finish with new_answer or vote.`,
    }
  }
  switch (classified._tag) {
    case "workflow":
      return done(machine, classified.reply, [], reply)
    case "tool_calls":
      return toolStep(machine, reply, classified.calls)
    case "invalid": {
      const rejected: Event = {
        _tag: "reply_rejected",
        time,
        agent,
        round,
        attempt: machine.attempt,
        reason: classified.reason,
        message: classified.message,
      }
      if (machine.attempt >= machine.maxAttempts) {
        const message = `no valid tool call after ${machine.maxAttempts} attempts: ${classified.message}`
        return done(machine, { _tag: "failed", agent, round, kind: "error", message }, [rejected])
      }
      const next: RoundMachine = {
        ...machine,
        transcript: [...machine.transcript, ...retryMessages(reply.text, classified.message)],
        attempt: machine.attempt + 1,
      }
      return { machine: next, events: [rejected], step: callModel(next) }
    }
  }
}

/** A reply that calls `submit_checklist`: each call is judged here (`checklist_submitted`), and the model is called again. */
const checklistTurn = (machine: RoundMachine, reply: LlmReply, time: string): Transition => {
  const ctx = machine.request.context
  if (ctx.kind !== "round" || ctx.checklist === undefined) return { machine, events: [], step: callModel(machine) }
  const results = new Map(
    reply.toolCalls.filter((c) => c.name === CHECKLIST_TOOL).map((c) => [c.id, evaluate(ctx.checklist!, ctx, c.arguments)]),
  )
  const events: ReadonlyArray<Event> = [...results.values()].map((r) => ({
    _tag: "checklist_submitted",
    time,
    agent: machine.agent,
    round: machine.round,
    ...r,
  }))
  const accepted = [...results.values()].filter((r) => r.accepted).at(-1)
  const next: RoundMachine = {
    ...machine,
    transcript: [
      ...machine.transcript,
      { role: "assistant", content: reply.text, toolCalls: reply.toolCalls, ...(reply.parts?.length ? { parts: reply.parts } : {}) },
      ...checklistResults(reply, results),
    ],
    toolSteps: machine.toolSteps + 1,
    ...(accepted === undefined ? {} : { checklist: Object.keys(accepted.scores) }),
  }
  return { machine: next, events, step: callModel(next) }
}

/** A reply that calls tools: it joins the transcript, and its calls run. */
const toolStep = (machine: RoundMachine, reply: LlmReply, calls: ReadonlyArray<ToolCall>): Transition => {
  const next: RoundMachine = {
    ...machine,
    transcript: [
      ...machine.transcript,
      { role: "assistant", content: reply.text, toolCalls: calls, ...(reply.parts?.length ? { parts: reply.parts } : {}) },
    ],
    pendingTools: calls,
    recordedTools: [],
  }
  return { machine: next, events: [], step: { _tag: "run_tools", calls } }
}

/** The current call failed for good (its retries, if any, are spent). */
export const onCallFailed = (machine: RoundMachine, message: string): Transition =>
  machine.role === "evaluation"
    ? done(machine, { _tag: "evaluated", agent: machine.agent, verdict: "none" })
    : machine.role === "presentation"
      ? done(machine, { _tag: "presentation_failed", agent: machine.agent, message })
      : done(machine, { _tag: "failed", agent: machine.agent, round: machine.round, kind: "error", message })

/**
 * The pending tool calls without a recorded result came back: every result joins
 * the transcript, in the order of the calls, and the model is called again.
 */
export const onToolResults = (machine: RoundMachine, results: ReadonlyArray<ToolResult>): Transition => {
  const byId = new Map([...machine.recordedTools, ...results].map((r) => [r.callId, r]))
  const messages: Array<LlmMessage> = machine.pendingTools.map((call) => {
    const result = byId.get(call.id)
    const content = result?.content ?? "error: the tool gave no result"
    return {
      role: "tool",
      toolCallId: call.id,
      name: call.name,
      content,
      ...(result === undefined || result.isError === true ? { isError: true as const } : {}),
    }
  })
  const next: RoundMachine = {
    ...machine,
    transcript: [...machine.transcript, ...messages],
    toolSteps: machine.toolSteps + 1,
    pendingTools: [],
    recordedTools: [],
  }
  return { machine: next, events: [], step: callModel(next) }
}

/**
 * New answers reach the round (injection, `update_injected`): it goes on with
 * `shown` and an update message, the `vote` offer widened to the agents now
 * shown. `staleVote` is the reply whose vote did not see them, when the update
 * comes right after it: the vote is answered as not counted and the model is
 * asked again in the same round.
 */
export const onUpdate = (machine: RoundMachine, shown: ReadonlyArray<ShownAnswer>, staleVote: LlmReply | null): Transition => {
  const ctx = machine.request.context
  if (ctx.kind !== "round") return { machine, events: [], step: callModel(machine) }
  const ids = votableIds(shown)
  const others = machine.request.tools.filter((t) => t.name !== "vote")
  const at = others.findIndex((t) => t.name === "new_answer") + 1
  const tools = ids.length === 0 || ctx.answerOnly === true ? others : [...others.slice(0, at), voteTool(ids), ...others.slice(at)]
  const answered: ReadonlyArray<LlmMessage> =
    staleVote === null
      ? []
      : [
          {
            role: "assistant",
            content: staleVote.text,
            toolCalls: staleVote.toolCalls,
            ...(staleVote.parts?.length ? { parts: staleVote.parts } : {}),
          },
          ...staleVote.toolCalls.map((c): LlmMessage => ({ role: "tool", toolCallId: c.id, name: c.name, content: STALE_VOTE_RESULT })),
        ]
  const next: RoundMachine = {
    ...machine,
    request: { ...machine.request, tools, context: { ...ctx, shown } },
    transcript: [...machine.transcript, ...answered, { role: "user", content: updateMessage(ctx.shown, shown) }],
    pendingTools: [],
  }
  return { machine: next, events: [], step: callModel(next) }
}

/** The calls of a tool step that have no result yet. */
export const unfinishedTools = (machine: RoundMachine): ReadonlyArray<ToolCall> =>
  machine.pendingTools.filter((c) => !machine.recordedTools.some((r) => r.callId === c.id))

/** What a round is told at MassGen's soft round timeout, and at its hard one. */
export const TIME_WARNINGS = {
  soft: "Time is nearly up for this round: wrap up now, and call `new_answer` with your best answer or `vote`.",
  hard: "Time is up for this round: your other tools are no longer available. Call `new_answer` or `vote` now.",
} as const

/**
 * The round passed its soft or hard time limit (`round_time_warned`), at a step
 * boundary: it is told so before its next call; from the hard limit on, only the
 * workflow tools are offered (a call of another is refused as an unknown tool).
 */
export const onTimeWarning = (machine: RoundMachine, stage: "soft" | "hard"): Transition => {
  const tools = stage === "hard" ? machine.request.tools.filter((t) => WORKFLOW_TOOLS.has(t.name)) : machine.request.tools
  const next: RoundMachine = {
    ...machine,
    request: { ...machine.request, tools },
    transcript: [...machine.transcript, { role: "user", content: TIME_WARNINGS[stage] }],
    pendingTools: [],
  }
  return { machine: next, events: [], step: callModel(next) }
}

/**
 * The log recorded the result of one pending tool call: once every pending call
 * has one, the model is called again; until then the step runs the others.
 * A result of no pending call changes nothing.
 */
export const onToolRecorded = (machine: RoundMachine, result: ToolResult): Transition => {
  const known = machine.pendingTools.some((c) => c.id === result.callId)
  const next: RoundMachine = known
    ? { ...machine, recordedTools: [...machine.recordedTools.filter((r) => r.callId !== result.callId), result] }
    : machine
  const left = unfinishedTools(next)
  if (known && left.length === 0) return onToolResults(next, [])
  return { machine: next, events: [], step: { _tag: "run_tools", calls: left } }
}

/** A model reply as `call_end` records it. */
export const recordReply = (reply: LlmReply): RecordedReply => ({
  text: reply.text,
  tool_calls: reply.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
  // What a provider sent as JSON is JSON.
  parts: (reply.parts ?? []) as RecordedReply["parts"],
})

/**
 * A recorded reply as the machine reads it (usage and the raw reply are not part of the record),
 * the arguments it references read through `blobOf`; null when one of their blobs is missing.
 */
export const replyOfRecord = (record: RecordedReply, blobOf?: (hash: string) => string | undefined): LlmReply | null => {
  const toolCalls: Array<ToolCall> = []
  for (const c of record.tool_calls) {
    const args = argumentsText(c.arguments, blobOf)
    if (args === undefined) return null
    toolCalls.push({ id: c.id, name: c.name, arguments: args })
  }
  return { text: record.text, reasoning: "", toolCalls, usage: noUsage, truncated: null, raw: null, parts: record.parts }
}
