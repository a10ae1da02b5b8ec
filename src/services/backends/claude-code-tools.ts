/**
 * massgen's tools as a CLI agent sees them: an in-process MCP server, and the prompt of one call.
 *
 * `workflowServer(request)` serves the request's workflow tools (`new_answer`,
 * `vote`) to the CLI as the MCP server `massgen` (its tools are
 * `mcp__massgen__<name>` there). A call is checked as the round machine checks
 * a reply (`classifyReply`): a call the round would refuse is an error result
 * the CLI's model reads and can mend in the same session; the first valid one
 * is kept (`accepted`) and the model is told to end its turn; any later one is
 * refused. The call that ends the round is still judged by the round machine,
 * from the reply the backend returns. `promptOf(request)` is the request's
 * conversation as the one prompt of a fresh CLI session.
 *
 * Words: the *accepted* call is the workflow call a CLI session ends with.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { classifyReply, WORKFLOW_TOOLS } from "../../domain/coordination/round-machine.ts"
import { type LlmRequest, noUsage, type ToolCall } from "../../domain/llm.ts"

/** The MCP server's name: its tools are `mcp__massgen__new_answer` and `mcp__massgen__vote` in the CLI. */
export const SERVER_NAME = "massgen"
export const MCP_PREFIX = `mcp__${SERVER_NAME}__`

export interface WorkflowServer {
  /** The server's config for the SDK's `mcpServers`. */
  readonly config: { readonly type: "sdk"; readonly name: string; readonly instance: McpServer }
  /** The CLI names of the tools it serves. */
  readonly toolNames: ReadonlyArray<string>
  /** The valid workflow call the session made; null until one is made. */
  readonly accepted: () => ToolCall | null
}

const text = (t: string, isError = false) => ({ content: [{ type: "text" as const, text: t }], ...(isError ? { isError: true } : {}) })

export const workflowServer = (request: LlmRequest): WorkflowServer => {
  const tools = request.context.kind === "round" ? request.tools.filter((t) => WORKFLOW_TOOLS.has(t.name)) : []
  const mcp = new McpServer({ name: SERVER_NAME, version: "1.0.0" }, { capabilities: { tools: {} } })
  let accepted: ToolCall | null = null
  let calls = 0
  mcp.server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.parameters,
      // Offered at once, never behind the CLI's tool search.
      _meta: { "anthropic/alwaysLoad": true },
    })),
  }))
  mcp.server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const name = req.params.name
    if (!tools.some((t) => t.name === name)) return text(`error: no tool named ${name}`, true)
    if (accepted !== null) return text(`error: ${accepted.name} was already recorded: end your turn now, calling no more tools.`, true)
    calls += 1
    const call: ToolCall = { id: `cli_call_${calls}`, name, arguments: JSON.stringify(req.params.arguments ?? {}) }
    const reply = { text: "", reasoning: "", toolCalls: [call], usage: noUsage, truncated: null, raw: null }
    const verdict = classifyReply(request.agentId, 0, request, reply)
    if (verdict._tag !== "workflow") return text(`error: ${verdict._tag === "invalid" ? verdict.message : "not a workflow call"}`, true)
    accepted = call
    return text(`${name} recorded. End your turn now: call no more tools.`)
  })
  return {
    config: { type: "sdk", name: SERVER_NAME, instance: mcp },
    toolNames: tools.map((t) => `${MCP_PREFIX}${t.name}`),
    accepted: () => accepted,
  }
}

/** A tool call as the prompt shows it. */
const callText = (c: ToolCall): string => `[called ${c.name} with ${c.arguments}]`

/** The request's messages as one prompt: a lone user message as it is, a conversation with its turns marked. */
export const promptOf = (request: LlmRequest): string => {
  const ms = request.messages
  if (ms.length === 1 && ms[0]?.role === "user") return ms[0].content
  return ms
    .map((m) => {
      if (m.role === "user") return `## user\n${m.content}`
      if (m.role === "tool") return `## result of ${m.name}${m.isError ? " (error)" : ""}\n${m.content}`
      return `## you (assistant)\n${[m.content, ...(m.toolCalls ?? []).map(callText)].filter((t) => t !== "").join("\n")}`
    })
    .join("\n\n")
}
