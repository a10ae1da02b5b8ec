/**
 * What replay (`index.ts`) makes again at a point of a recorded run, and how it is held to the record.
 *
 * Contract: `sameDecision` says whether two events record the same decision (alike as JSON but for
 * where and when they happened); `requestKey` is what of a request is compared with the recorded one.
 * `decided` gives the decider's events now, `baseRequest` the request this code builds for an agent's
 * round or presentation, and `agentToolsOf` the agent's own tools a request offers. All pure.
 *
 * Words: an agent's *own tools* are the tools of its request but the workflow tools (`new_answer`, `vote`) and `submit_checklist`.
 */

import { sameJsonWithout } from "../../lib/json-equal.ts"
import type { Agent } from "../config/index.ts"
import { CHECKLIST_TOOL } from "../coordination/checklist.ts"
import { type Command, commandEvents, decide } from "../coordination/decide.ts"
import { requestForEvaluation, requestForPresentation, requestForRound } from "../coordination/requests.ts"
import { WORKFLOW_TOOLS } from "../coordination/round-machine.ts"
import type { Event } from "../events/index.ts"
import { type LlmRequest, type ToolSpec, withoutErrorFlags } from "../llm.ts"
import type { State } from "../state/index.ts"

/** Fields that say where and when a run happened, not what it decided. */
const ENVIRONMENT_FIELDS = new Set(["time", "seconds", "run_id"])

/** Whether two events record the same decision: alike as JSON, but for where and when they happened (`ENVIRONMENT_FIELDS`). */
export const sameDecision = (a: Event, b: Event): boolean => sameJsonWithout(a, b, ENVIRONMENT_FIELDS)

/** What of a request must be the same as the recorded one: its system prompt, messages and tools. */
/** A request as compared; `flags`: with the error flags of tool results (a log that recorded none is compared without them). */
export const requestKey = (r: LlmRequest, flags: boolean): string =>
  JSON.stringify({ system: r.system, messages: flags ? r.messages : withoutErrorFlags(r.messages), tools: r.tools })

/** The events of the decider's commands now, the one like `like` first. */
export const decided = (state: State, time: string, like?: Event): ReadonlyArray<Event> => {
  const events = decide(state).flatMap((c: Command) => commandEvents(state, c, time))
  const match = like === undefined ? undefined : events.find((e) => e._tag === like._tag && sameDecision(e, like))
  return match === undefined ? events : [match, ...events.filter((e) => e !== match)]
}

/** The request this code builds for an agent's current round or presentation, before its transcript. */
export const baseRequest = (
  state: State,
  agents: ReadonlyArray<Agent>,
  agentId: string,
  role: "round" | "presentation" | "evaluation",
  tools: ReadonlyArray<ToolSpec>,
): LlmRequest | null => {
  const agent = agents.find((a) => a.id === agentId)
  if (agent === undefined) return null
  if (role === "evaluation") return requestForEvaluation(state, agent, tools)
  return role === "round" ? requestForRound(state, agent, tools) : requestForPresentation(state, agent, tools)
}

/** The agent's own tools a request offers (all but the workflow tools and `submit_checklist`, which the round offers itself). */
export const ownTools = (request: LlmRequest): ReadonlyArray<ToolSpec> =>
  request.tools.filter((tool) => !WORKFLOW_TOOLS.has(tool.name) && tool.name !== CHECKLIST_TOOL)

/**
 * An agent's own tools: from `toolsOf` when given, else as the first recorded request of the agent offers
 * them (found once per agent), else none.
 */
export const agentToolsOf = (
  recorded: ReadonlyArray<Event>,
  requestOf: (call: number) => LlmRequest | null | undefined,
  toolsOf: ((agent: string) => ReadonlyArray<ToolSpec>) | undefined,
): ((agent: string) => ReadonlyArray<ToolSpec>) => {
  if (toolsOf) return toolsOf
  const found = new Map<string, ReadonlyArray<ToolSpec>>()
  return (agent) => {
    let tools = found.get(agent)
    if (tools === undefined) {
      const call = recorded.find((e) => e._tag === "call_start" && e.agent === agent && requestOf(e.call))
      tools = call?._tag === "call_start" ? ownTools(requestOf(call.call)!) : []
      found.set(agent, tools)
    }
    return tools
  }
}
