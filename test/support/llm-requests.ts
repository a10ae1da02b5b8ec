/**
 * `LlmRequest` fixtures for backend tests: a voting round offering both workflow
 * tools (vote enum agent1..agent3), and a presentation offering none.
 */
import type { LlmMessage, LlmRequest, ToolSpec } from "../../src/domain/llm.ts"

export const newAnswerTool: ToolSpec = {
  name: "new_answer",
  description: "Provide an improved answer to the ORIGINAL MESSAGE",
  parameters: {
    type: "object",
    properties: { content: { type: "string", description: "Your improved answer." } },
    required: ["content"],
  },
}

export const voteTool: ToolSpec = {
  name: "vote",
  description: "Vote for the best agent to present final answer",
  parameters: {
    type: "object",
    properties: {
      agent_id: { type: "string", enum: ["agent1", "agent2", "agent3"], description: "Anonymous agent ID to vote for" },
      reason: { type: "string", description: "Brief reason why this agent has the best answer" },
    },
    required: ["agent_id", "reason"],
  },
}

export const roundRequest = (messages: ReadonlyArray<LlmMessage> = [{ role: "user", content: "What is 2+2?" }]): LlmRequest => ({
  agentId: "agent_a",
  system: "You are agent_a.",
  messages,
  tools: [newAnswerTool, voteTool],
  context: { kind: "round", selfAnonId: "agent1", shown: [], voteOnly: false },
})

export const presentationRequest = (): LlmRequest => ({
  agentId: "agent_a",
  system: "Present the final answer.",
  messages: [{ role: "user", content: "Present it." }],
  tools: [],
  context: { kind: "presentation", selfAnonId: "agent1", shown: [] },
})

/** A conversation with an earlier tool call and its result, to check the message mapping. */
export const followUpMessages: ReadonlyArray<LlmMessage> = [
  { role: "user", content: "What is 2+2?" },
  { role: "assistant", content: "Let me answer.", toolCalls: [{ id: "call_9", name: "new_answer", arguments: '{"content":"4"}' }] },
  { role: "tool", toolCallId: "call_9", name: "new_answer", content: "recorded" },
  { role: "user", content: "Now vote." },
]

/** Agent tools as MCP servers name them (`mcp__<server>__<tool>`, with `-` and `__` in names). */
export const echoTool: ToolSpec = {
  name: "mcp__everything__echo",
  description: "Echoes back the input",
  parameters: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
}

export const sumTool: ToolSpec = {
  name: "mcp__everything__get-sum",
  description: "Returns the sum of two numbers",
  parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
}

/** A round offering the workflow tools and two agent tools. */
export const toolRoundRequest = (messages: ReadonlyArray<LlmMessage> = [{ role: "user", content: "What is 2+2?" }]): LlmRequest => ({
  ...roundRequest(messages),
  tools: [newAnswerTool, voteTool, echoTool, sumTool],
})
