/**
 * Builders of the model side of a round, for tests of the round machine and its interpreter:
 * the answers a round shows, the round's request, and replies that call tools.
 */

import { roundRequest } from "../../src/domain/coordination/prompts.ts"
import type { LlmReply, LlmRequest, ShownAnswer, ToolCall, ToolSpec } from "../../src/domain/llm.ts"

export const shownOf = (...labels: ReadonlyArray<string>): ReadonlyArray<ShownAnswer> =>
  labels.map((label) => ({ label, anonId: label.split(".")[0]!, content: `content of ${label}` }))

/** The request of agent `a` (agent1)'s round showing `shown`, with `extraTools` offered beside the workflow tools. */
export const request = (shown: ReadonlyArray<ShownAnswer> = [], voteOnly = false, extraTools: ReadonlyArray<ToolSpec> = []): LlmRequest => {
  const base = roundRequest({ agentId: "a", selfAnonId: "agent1", systemMessage: null, question: "What is 2+2?", shown, voteOnly })
  return extraTools.length === 0 ? base : { ...base, tools: [...base.tools, ...extraTools] }
}

export const reply = (text: string, toolCalls: ReadonlyArray<ToolCall> = []): LlmReply => ({
  text,
  reasoning: "",
  toolCalls,
  usage: { inputTokens: 10, cachedInputTokens: 0, outputTokens: 5, reasoningTokens: 0 },
  truncated: false,
  raw: null,
})

let callIds = 0
export const tool = (name: string, args: unknown): ToolCall => ({
  id: `call_${++callIds}`,
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args),
})

export const newAnswer = (content: unknown) => reply("", [tool("new_answer", { content })])
export const voteFor = (agent_id: unknown, reason?: string) =>
  reply("", [tool("vote", reason === undefined ? { agent_id } : { agent_id, reason })])
