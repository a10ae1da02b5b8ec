/**
 * Orchestration restarts (MassGen's `max_orchestration_restarts`): the presenter's post-evaluation and what it decides.
 *
 * MassGen's behaviour (v0.1.91 `orchestrator.py`, `post_evaluate_answer`, `handle_restart`): a run has
 * `1 + max_orchestration_restarts` attempts. After the final answer of an attempt that is not the last, the
 * presenter is asked once more, with the task and the final answer, and offered two tools: `submit`
 * (`confirmed: true`), the answer stands; `restart_orchestration` (`reason`, `instructions`), coordination starts
 * again as the next attempt, every agent's round opening with the reason, the instructions and the answer set
 * aside. A reply that calls neither, a failed call and a timeout confirm the answer, as MassGen's auto-submit.
 * The last attempt's final answer is not evaluated. A restart keeps the agents' workspaces (MassGen's too).
 *
 * Contract: `afterFinal(state)` is what `decide` asks for once an attempt has its final answer (an evaluation,
 * or the run's end); `judgeEvaluation` turns the evaluation's reply into its event; `evaluationVerdict` reads a
 * model reply for the round machine; `evaluationRequest` and `restartContext` are what the presenter and the
 * agents of a later attempt are sent. Pure. Words as in `domain/events/attempts.ts`.
 */
import type { Event, RunSettings } from "../events/index.ts"
import type { LlmReply, LlmRequest, ToolSpec } from "../llm.ts"
import { attemptsOf, type State } from "../state/index.ts"

export const SUBMIT_TOOL = "submit"
export const RESTART_TOOL = "restart_orchestration"

/** The attempts a run may have: 1 and its restarts. */
export const maxAttempts = (settings: RunSettings): number => 1 + (settings.max_orchestration_restarts ?? 0)

/** What the presenter's evaluation decided: the answer stands, or another attempt with why and what to do. */
export type Verdict =
  | { readonly verdict: "submit" | "none" }
  | { readonly verdict: "restart"; readonly reason: string; readonly instructions: string }

const submitTool: ToolSpec = {
  name: SUBMIT_TOOL,
  description: "Confirm that the final answer fully addresses the task: the run ends with it",
  parameters: {
    type: "object",
    properties: { confirmed: { type: "boolean", enum: [true], description: "Always true: the answer is confirmed" } },
    required: ["confirmed"],
  },
}

const restartTool: ToolSpec = {
  name: RESTART_TOOL,
  description: "Judge the final answer incomplete: coordination starts again, every agent told the reason and the instructions",
  parameters: {
    type: "object",
    properties: {
      reason: { type: "string", description: "What the final answer lacks or gets wrong" },
      instructions: { type: "string", description: "What the agents should do differently in the next attempt" },
    },
    required: ["reason", "instructions"],
  },
}

export const EVALUATION_TOOLS: ReadonlyArray<ToolSpec> = [submitTool, restartTool]

const text = (value: unknown, fallback: string): string => (typeof value === "string" && value.trim() !== "" ? value : fallback)

/** The decision a reply of the evaluation makes; null when it calls neither tool (it may be using others). */
export const evaluationVerdict = (reply: LlmReply): Verdict | null => {
  for (const call of reply.toolCalls) {
    if (call.name === SUBMIT_TOOL) return { verdict: "submit" }
    if (call.name !== RESTART_TOOL) continue
    let args: Record<string, unknown> = {}
    try {
      const parsed: unknown = JSON.parse(call.arguments === "" ? "{}" : call.arguments)
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) args = parsed as Record<string, unknown>
    } catch {}
    return {
      verdict: "restart",
      reason: text(args.reason, "No reason provided"),
      instructions: text(args.instructions, "No instructions provided"),
    }
  }
  return null
}

/** After an attempt's final answer: evaluate it while attempts remain and it is not confirmed, else end the run. */
export const afterFinal = (
  state: State,
): ReadonlyArray<
  | { readonly _tag: "StartEvaluation"; readonly agent: string; readonly attempt: number }
  | { readonly _tag: "FinishRun"; readonly reason: "completed"; readonly winner: string; readonly message: string }
> => {
  const final = state.final
  const run = state.run
  if (final === null || run === null) return []
  const at = attemptsOf(state)
  const last = at.attempt >= maxAttempts(run.settings)
  // A salvaged answer is a stand-in: nothing evaluates it.
  if (!last && !at.confirmed && final.source !== "salvaged") {
    return at.evaluating === null ? [{ _tag: "StartEvaluation", agent: final.agent, attempt: at.attempt }] : []
  }
  const message = at.attempt > 1 ? `every live agent voted (attempt ${at.attempt})` : "every live agent voted"
  return [{ _tag: "FinishRun", reason: "completed", winner: final.agent, message }]
}

/** The event the evaluation's reply causes; none when no evaluation of `agent` is in flight. */
export const judgeEvaluation = (state: State, agent: string, verdict: Verdict, time: string): ReadonlyArray<Event> => {
  const at = attemptsOf(state)
  if (at.evaluating?.agent !== agent || state.final === null) return []
  if (verdict.verdict === "restart") {
    const { reason, instructions } = verdict
    return [{ _tag: "orchestration_restarted", time, agent, attempt: at.attempt + 1, reason, instructions }]
  }
  return [{ _tag: "answer_confirmed", time, agent, attempt: at.attempt, how: verdict.verdict === "submit" ? "submitted" : "no_decision" }]
}

/** The evaluation request: the presenter, the task and the final answer, with `submit` and `restart_orchestration` offered. */
export const evaluationRequest = (
  state: State,
  agent: { readonly id: string; readonly anonId: string; readonly systemMessage: string | null },
): LlmRequest | null => {
  const run = state.run
  const final = state.final
  if (run === null || final === null || attemptsOf(state).evaluating?.agent !== agent.id) return null
  const user = [
    `<ORIGINAL MESSAGE>\n${run.question}\n<END OF ORIGINAL MESSAGE>`,
    `FINAL ANSWER TO EVALUATE:\n${final.content}`,
    `Check whether this answer fully addresses the original message. Then call ${SUBMIT_TOOL}(confirmed=true) if it does, or ${RESTART_TOOL}(reason, instructions) if another attempt should improve it.`,
  ].join("\n\n")
  const system = "You presented the final answer. Evaluate it before it reaches the user."
  return {
    agentId: agent.id,
    system: agent.systemMessage ? `${agent.systemMessage}\n\n${system}` : system,
    messages: [{ role: "user", content: user }],
    tools: EVALUATION_TOOLS,
    context: { kind: "presentation", selfAnonId: agent.anonId, shown: [] },
  }
}

/** What a round of a later attempt opens with: why the attempt before was restarted, what to do, its answer; null in attempt 1. */
export const restartContext = (state: State): string | null => {
  const restart = attemptsOf(state).restarts.at(-1)
  if (restart === undefined) return null
  return [
    "<PREVIOUS ATTEMPT FEEDBACK>",
    `The previous attempt of this task was restarted by its presenter because:\n${restart.reason}`,
    `Instructions for this attempt:\n${restart.instructions}`,
    `The previous attempt's final answer, for reference:\n${restart.previousAnswer}`,
    "<END OF PREVIOUS ATTEMPT FEEDBACK>",
  ].join("\n\n")
}
