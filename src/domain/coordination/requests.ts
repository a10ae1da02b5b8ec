/**
 * The request an agent is sent, read off the state: for its round in flight, or its presentation.
 *
 * The orchestrator builds every call from these, right after folding the
 * `round_started` or `presentation_started` that begins the work, and replay
 * (`domain/replay/index.ts`) builds the same request at the same point to compare it with
 * the recorded one. Pure: the same state gives the same request. An agent's
 * own tools (`tools`: command tools, MCP tools) are offered after the workflow
 * tools, in every round and in the presentation.
 */
import type { Agent } from "../config/index.ts"
import type { LlmRequest, ShownAnswer, ToolSpec } from "../llm.ts"
import type { State } from "../state/index.ts"
import { noVoteRun, votingDeferred } from "./decide.ts"
import { presentationRequest, roundRequest } from "./prompts.ts"
import { EVALUATION_TOOLS, evaluationRequest, restartContext } from "./restarts.ts"

/** Shown answers by the answers record and the labels array they were read from: answers of a label never change. */
const shownOf = new WeakMap<object, WeakMap<ReadonlyArray<string>, ReadonlyArray<ShownAnswer>>>()

/** The answers behind `labels`, as a request shows them (the same array for the same labels array, so rounds share what they show). */
export const shownAnswers = (state: State, labels: ReadonlyArray<string>): ReadonlyArray<ShownAnswer> => {
  let byLabels = shownOf.get(state.answers)
  if (byLabels === undefined) shownOf.set(state.answers, (byLabels = new WeakMap()))
  const known = byLabels.get(labels)
  if (known !== undefined) return known
  const shown = labels.flatMap((label) => {
    const answer = state.answers[label]
    return answer ? [{ label, anonId: label.split(".")[0]!, content: answer.content }] : []
  })
  // Only a list that names every label is kept: an answer not folded yet may come later.
  if (shown.length === labels.length) byLabels.set(labels, shown)
  return shown
}

/** `request` with the agent's own tools offered too, and the system message saying how to use them. */
const withAgentTools = (request: LlmRequest, tools: ReadonlyArray<ToolSpec>, finish: string): LlmRequest =>
  tools.length === 0
    ? request
    : {
        ...request,
        system: `${request.system}\nYou may call your other tools (${tools.map((t) => t.name).join(", ")}) first, as often as you need; then ${finish}.`,
        tools: [...request.tools, ...tools],
      }

/** The request of `agent`'s round in flight; null when it has none. */
export const requestForRound = (state: State, agent: Agent, tools: ReadonlyArray<ToolSpec> = []): LlmRequest | null => {
  const inFlight = state.agents.find((a) => a.info.id === agent.id)?.inFlight ?? null
  if (state.run === null || inFlight === null) return null
  const request = roundRequest({
    agentId: agent.id,
    selfAnonId: agent.anonId,
    systemMessage: agent.systemMessage,
    question: state.run.question,
    conversation: state.run.conversation,
    shown: shownAnswers(state, inFlight.shown),
    voteOnly: inFlight.voteOnly,
    votingSensitivity: agent.votingSensitivity ?? state.run.settings.voting_sensitivity ?? "lenient",
    novelty: state.run.settings.answer_novelty_requirement ?? "lenient",
    answerOnly: votingDeferred(state),
  })
  return withAgentTools(withRestartContext(state, request), tools, inFlight.voteOnly ? "call vote" : "call new_answer or vote")
}

/** A round of a later attempt opens with why the attempt before was restarted (MassGen's restart context, before the task). */
const withRestartContext = (state: State, request: LlmRequest): LlmRequest => {
  const context = restartContext(state)
  const [first, ...rest] = request.messages
  if (context === null || first === undefined || first.role !== "user") return request
  return { ...request, messages: [{ ...first, content: `${context}\n\n${first.content}` }, ...rest] }
}

/** The request of the presenter's evaluation of the final answer (`restarts.ts`); null unless `agent` is evaluating. */
export const requestForEvaluation = (state: State, agent: Agent, tools: ReadonlyArray<ToolSpec> = []): LlmRequest | null => {
  const request = evaluationRequest(state, agent)
  const own = tools.filter((t) => !EVALUATION_TOOLS.some((e) => e.name === t.name))
  return request === null ? null : withAgentTools(request, own, "call submit or restart_orchestration")
}

/** The request of the winner's presentation; null unless `agent` is presenting. */
export const requestForPresentation = (state: State, agent: Agent, tools: ReadonlyArray<ToolSpec> = []): LlmRequest | null => {
  const p = state.presentation
  if (state.run === null || p === null || p.agent !== agent.id) return null
  const request = presentationRequest({
    agentId: agent.id,
    selfAnonId: agent.anonId,
    systemMessage: agent.systemMessage,
    question: state.run.question,
    conversation: state.run.conversation,
    answers: state.agents.flatMap((a) => {
      const label = a.answers[a.answers.length - 1]
      const answer = label ? state.answers[label] : undefined
      return answer ? [{ agentId: a.info.id, label: answer.label, content: answer.content, own: a.info.id === agent.id }] : []
    }),
    shown: shownAnswers(state, Object.keys(p.votes)),
    voteReasons: state.agents.flatMap((a) => (a.vote?.target === agent.id ? [a.vote.reason] : [])),
    isTie: p.isTie,
    strategy: state.run.settings.final_answer_strategy,
    voteHeld: !noVoteRun(state.run.settings, state.agents.length),
  })
  return withAgentTools(request, tools, "reply with the final answer itself")
}
