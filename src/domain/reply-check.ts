/**
 * Whether a reply of a round used exactly one workflow tool, correctly.
 *
 * `checkReply` is the rule a round applies to each reply (`services/agent-round.ts`)
 * and replay applies to each recorded reply (`replay.ts`): one of `new_answer`
 * and `vote`, with a JSON object of arguments; `new_answer` only while the
 * round is not vote-only and with non-empty content; `vote` only for an agent
 * whose answer the round shows. A refused reply has a closed `reason` and the
 * message the agent is told. Pure.
 */
import type { Reply } from "./decide.ts"
import type { RejectionReason } from "./events.ts"
import type { LlmReply, LlmRequest } from "./llm.ts"
import { votableIds } from "./prompts.ts"

/** Attempts a round has at a valid reply. */
export const MAX_ATTEMPTS = 3

export interface ReplyCheckInput {
  readonly agent: string
  readonly round: number
  readonly request: LlmRequest
}

export type Checked =
  | { readonly ok: true; readonly reply: Reply }
  | { readonly ok: false; readonly reason: RejectionReason; readonly message: string }

const parseArgs = (text: string): Record<string, unknown> | null => {
  try {
    const value: unknown = JSON.parse(text === "" ? "{}" : text)
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/** Whether a reply used exactly one workflow tool, correctly, for this round. */
export const checkReply = (input: ReplyCheckInput, reply: LlmReply): Checked => {
  const ctx = input.request.context
  const calls = reply.toolCalls
  const known = calls.filter((c) => c.name === "new_answer" || c.name === "vote")
  const reject = (reason: RejectionReason, message: string): Checked => ({ ok: false, reason, message })
  if (known.length === 0) {
    return calls.length === 0
      ? reject("no_tool_call", "Your reply called no tool.")
      : reject("unknown_tool", `Unknown tool ${calls.map((c) => c.name).join(", ")}: only new_answer and vote exist.`)
  }
  if (new Set(known.map((c) => c.name)).size > 1) return reject("both_tools", "Call either new_answer or vote, not both.")
  const first = known[0]!
  const args = parseArgs(first.arguments)
  if (args === null) return reject("bad_arguments", `The arguments of ${first.name} are not a JSON object.`)
  if (first.name === "new_answer") {
    if (ctx.kind === "round" && ctx.voteOnly) {
      return reject("answer_limit", "You reached your limit of answers: call vote.")
    }
    if (typeof args.content !== "string") return reject("bad_arguments", "new_answer needs a content string.")
    if (args.content.trim() === "") return reject("empty_answer", "new_answer needs a non-empty content.")
    return { ok: true, reply: { _tag: "answered", agent: input.agent, round: input.round, content: args.content } }
  }
  const valid = votableIds(ctx.shown)
  if (valid.length === 0) return reject("invalid_vote_target", "Cannot vote when no answers exist. Use new_answer.")
  if (typeof args.agent_id !== "string" || !valid.includes(args.agent_id)) {
    return reject("invalid_vote_target", `Invalid agent_id ${JSON.stringify(args.agent_id)}. Valid agents: ${valid.join(", ")}.`)
  }
  const reason = typeof args.reason === "string" ? args.reason : ""
  return { ok: true, reply: { _tag: "voted", agent: input.agent, round: input.round, targetAnonId: args.agent_id, reason } }
}

