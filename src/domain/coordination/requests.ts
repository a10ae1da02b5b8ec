/**
 * The request an agent is sent, read off the state: for its round in flight, or its presentation.
 *
 * The orchestrator builds every call from these, right after folding the
 * `round_started` or `presentation_started` that begins the work, and replay
 * (`domain/replay/index.ts`) builds the same request at the same point to compare it with
 * the recorded one. Pure: the same state gives the same request. An agent's
 * own tools (`tools`: command tools, MCP tools) are offered after the workflow
 * tools, in every round and in the presentation. The files sent with the
 * question (`run_started.media`) go with the question's message, each to the
 * agents it is for.
 */
import type { Agent } from "../config/index.ts"
import type { QuestionMedia } from "../events/index.ts"
import type { LlmRequest, MediaPart, ShownAnswer, ToolSpec } from "../llm.ts"
import { MEMORY_PRESENTER_NOTE, memorySection, skillsSection } from "../skills/sections.ts"
import { memoryKey, type State } from "../state/index.ts"
import { withChecklist } from "./checklist.ts"
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

/** The skills and memory sections of a round's system message, as the run's settings and records say (`domain/skills/sections.ts`). */
const roundSections = (state: State, agent: Agent, round: number): ReadonlyArray<string> => {
  const settings = state.run?.settings
  return [
    settings?.use_skills === true ? skillsSection(state.skills ?? []) : "",
    // Memory lives in a workspace: an agent without one is told nothing of it.
    settings?.memory_filesystem_mode === true && agent.backend.cwd !== undefined
      ? memorySection(state.memory[memoryKey(agent.id, round)] ?? [], settings.memory_capture)
      : "",
  ]
}

/** The files of the question sent to `agentId`, as media parts (the same array for the same files, so rounds share it). */
const mediaOf = new WeakMap<ReadonlyArray<QuestionMedia>, Map<string, ReadonlyArray<MediaPart>>>()
const questionMedia = (media: ReadonlyArray<QuestionMedia>, agentId: string): ReadonlyArray<MediaPart> => {
  if (media.length === 0) return []
  let byAgent = mediaOf.get(media)
  if (byAgent === undefined) mediaOf.set(media, (byAgent = new Map()))
  const known = byAgent.get(agentId)
  if (known !== undefined) return known
  const parts = media
    .filter((m) => m.agent === undefined || m.agent === agentId)
    .map(
      (m): MediaPart => ({
        kind: m.kind,
        mediaType: m.media_type,
        name: m.name,
        ...(m.data !== undefined ? { data: m.data } : {}),
        ...(m.url !== undefined ? { url: m.url } : {}),
      }),
    )
  byAgent.set(agentId, parts)
  return parts
}

/** `request` with the question's files sent with its first message (the question). */
const withQuestionMedia = (request: LlmRequest, state: State, agentId: string): LlmRequest => {
  const media = questionMedia(state.run?.media ?? [], agentId)
  const [first, ...rest] = request.messages
  if (media.length === 0 || first === undefined || first.role !== "user") return request
  return { ...request, messages: [{ ...first, media }, ...rest] }
}

/** The request of `agent`'s round in flight; null when it has none. */
export const requestForRound = (state: State, agent: Agent, tools: ReadonlyArray<ToolSpec> = []): LlmRequest | null => {
  const a = state.agents.find((b) => b.info.id === agent.id)
  const inFlight = a?.inFlight ?? null
  if (state.run === null || a === undefined || inFlight === null) return null
  const base = roundRequest({
    agentId: agent.id,
    selfAnonId: agent.anonId,
    // Planning mode's instruction holds in rounds only: the presenter carries the plan out.
    systemMessage:
      agent.planningInstruction === undefined
        ? agent.systemMessage
        : [agent.systemMessage?.trim(), agent.planningInstruction].filter((s) => s !== undefined && s !== "").join("\n\n"),
    question: state.run.question,
    conversation: state.run.conversation,
    shown: shownAnswers(state, inFlight.shown),
    voteOnly: inFlight.voteOnly,
    votingSensitivity: agent.votingSensitivity ?? state.run.settings.voting_sensitivity ?? "lenient",
    novelty: state.run.settings.answer_novelty_requirement ?? "lenient",
    answerOnly: votingDeferred(state),
    sections: roundSections(state, agent, inFlight.round),
  })
  const request = withChecklist(base, state.run.settings.checklist, a, state.run.settings.max_new_answers_per_agent)
  return withAgentTools(
    withRestartContext(state, withQuestionMedia(request, state, agent.id)),
    tools,
    inFlight.voteOnly ? "call vote" : "call new_answer or vote",
  )
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
    sections:
      state.run.settings.memory_filesystem_mode === true && agent.backend.cwd !== undefined
        ? [memorySection(state.memory[memoryKey(agent.id, "present")] ?? []), MEMORY_PRESENTER_NOTE]
        : [],
  })
  return withAgentTools(withQuestionMedia(request, state, agent.id), tools, "reply with the final answer itself")
}
