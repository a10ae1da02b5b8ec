/**
 * MassGen's checklist-gated voting (`voting_sensitivity: checklist_gated`): the `submit_checklist` tool and the gate on votes.
 *
 * A round of an agent that has an answer, showing answers, under `RunSettings.checklist`, offers
 * `submit_checklist` (MassGen's name and arguments: `scores`, per answer label then per criterion,
 * `{"agent1.1": {"E1": {"score": 8, "reasoning": "..."}}}`, and `report_path`, accepted and unused)
 * (`withChecklist`). The round machine evaluates a call of it itself (`checklistStep`): an accepted
 * submission scores every shown answer on every criterion; the best answer (highest total, ties to
 * the first label) passes a criterion at `cutoff` or more, and the verdict is `vote` when it passes
 * `required` of them, else `new_answer`: both from `voting_threshold` and the answers the agent has
 * left, as MassGen's `ChecklistGate` derives them (`gateOf`). Each call is a `checklist_submitted`
 * event, so replay and resume make it again from the recorded reply. A vote of such a round counts only
 * after an accepted submission covering every answer it shows (`gateVote`, else `checklist_required`).
 * Pure.
 */
import type { ChecklistSettings, Event } from "../events/index.ts"
import type { LlmMessage, LlmReply, LlmRequest, RoundContext, ToolSpec } from "../llm.ts"
import type { AgentState } from "../state/index.ts"

export const CHECKLIST_TOOL = "submit_checklist"

/** What a checklist round's context carries: the criteria and the gate's two knobs. */
export type ChecklistGate = NonNullable<RoundContext["checklist"]>

const roundHalfEven = (x: number): number => {
  const r = Math.round(x)
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r
}

/** MassGen's gate: the threshold raised as the answer budget runs out, then how many criteria must pass, at which score. */
export const gateOf = (threshold: number, remaining: number, total: number, items: number): { required: number; cutoff: number } => {
  let effective = threshold
  if (total > 0) {
    const ratio = remaining / total
    if (remaining <= 2) effective += 2
    else if (ratio <= 0.4) effective += 1
    if (ratio >= 0.7) effective -= 1
  }
  effective = Math.max(0, Math.min(10, effective))
  const floor = Math.max(1, Math.floor((items + 1) / 2))
  const required = Math.max(floor, items - roundHalfEven(((items - floor) * effective) / 10))
  return { required, cutoff: Math.max(4, Math.floor(10 - effective * 0.5)) }
}

const toolSpec: ToolSpec = {
  name: CHECKLIST_TOOL,
  description:
    "Submit your checklist evaluation before you vote: score every answer shown, by its full label (agent1.1), on every criterion (E1, E2, ...) from 0 to 10: " +
    '{"agent1.1": {"E1": {"score": 8, "reasoning": "..."}, ...}, "agent2.1": {...}}. The result gives the verdict: vote, or give a new answer.',
  parameters: {
    type: "object",
    properties: {
      scores: { type: "object", description: "Scores by answer label, then by criterion id", additionalProperties: true },
      report_path: { type: "string", description: "A gap report in your workspace (optional)" },
    },
    required: ["scores"],
  },
}

/** `request` (a round of `a`) with `submit_checklist` offered and the criteria told, when the run gates votes on it. */
export const withChecklist = (
  request: LlmRequest,
  settings: ChecklistSettings | undefined,
  a: AgentState,
  maxAnswers: number | null,
): LlmRequest => {
  const ctx = request.context
  if (settings === undefined || ctx.kind !== "round" || ctx.answerOnly === true || ctx.shown.length === 0 || a.answers.length === 0) {
    return request
  }
  const total = maxAnswers ?? 5
  const gate = gateOf(settings.voting_threshold || 5, Math.max(0, total - a.answers.length), total, settings.criteria.length)
  const criteria = settings.criteria.map((c) => `- ${c.id}: ${c.text}`).join("\n")
  const system =
    `${request.system}\nBefore you vote, score every answer shown against these criteria with \`${CHECKLIST_TOOL}\` ` +
    `(each from 0 to 10; a criterion passes at ${gate.cutoff} or more, and the best answer must pass ${gate.required} of ${settings.criteria.length}); ` +
    `its verdict says whether to vote or to give a better answer with \`new_answer\`. A vote counts only after an accepted submission.\n${criteria}`
  const context: RoundContext = { ...ctx, checklist: { criteria: settings.criteria, ...gate } }
  return { ...request, system, tools: [...request.tools, toolSpec], context }
}

type Scored = Omit<Extract<Event, { _tag: "checklist_submitted" }>, "_tag" | "time" | "agent" | "round">

const scoreOf = (entry: unknown): number | null => {
  const raw = entry !== null && typeof entry === "object" ? (entry as Record<string, unknown>).score : entry
  const n = typeof raw === "string" ? Number(raw) : raw
  return typeof n === "number" && Number.isFinite(n) ? Math.max(0, Math.min(10, Math.round(n))) : null
}

/** A `submit_checklist` call's arguments judged against the round's shown answers and gate. */
export const evaluate = (gate: ChecklistGate, ctx: RoundContext, argumentsText: string): Scored => {
  const refused = (message: string): Scored => ({
    accepted: false,
    message,
    scores: {},
    best_label: null,
    true_count: 0,
    required: gate.required,
    cutoff: gate.cutoff,
    verdict: null,
  })
  let args: unknown
  try {
    args = JSON.parse(argumentsText === "" ? "{}" : argumentsText)
  } catch {
    return refused("the arguments are not JSON")
  }
  const raw = args !== null && typeof args === "object" ? (args as Record<string, unknown>).scores : undefined
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return refused("`scores` must be an object")
  const given = raw as Record<string, unknown>
  const ids = gate.criteria.map((c) => c.id)
  // One answer shown: flat scores (E1, E2, ...) are its scores.
  const only = ctx.shown.length === 1 && ids.some((id) => id in given) ? { [ctx.shown[0]!.label]: given } : given
  const scores: Record<string, Record<string, number>> = {}
  const missing: Array<string> = []
  for (const answer of ctx.shown) {
    const entry = only[answer.label] ?? only[answer.anonId]
    const byCriterion = entry !== null && typeof entry === "object" ? (entry as Record<string, unknown>) : {}
    const row: Record<string, number> = {}
    for (const id of ids) {
      const score = scoreOf(byCriterion[id])
      if (score === null) missing.push(`${answer.label} ${id}`)
      else row[id] = score
    }
    scores[answer.label] = row
  }
  if (missing.length > 0) return refused(`score every criterion of every answer shown; missing: ${missing.join(", ")}`)
  const total = (label: string) => Object.values(scores[label]!).reduce((x, y) => x + y, 0)
  const best = ctx.shown.map((a) => a.label).reduce((b, label) => (total(label) > total(b) ? label : b))
  const trueCount = ids.filter((id) => scores[best]![id]! >= gate.cutoff).length
  const verdict = trueCount >= gate.required ? "vote" : "new_answer"
  const message = `${trueCount} of ${ids.length} criteria passed for ${best} (required: ${gate.required}). Verdict: ${verdict}.`
  return { accepted: true, message, scores, best_label: best, true_count: trueCount, required: gate.required, cutoff: gate.cutoff, verdict }
}

/** The labels the last accepted submission of a round scored; a vote needs them to cover what the round shows. */
export const covers = (scored: ReadonlyArray<string> | undefined, ctx: RoundContext): boolean =>
  scored !== undefined && ctx.shown.every((a) => scored.includes(a.label))

/** What the model is told when it votes before an accepted submission covering every answer shown. */
export const checklistRequired = (ctx: RoundContext): string =>
  `Call ${CHECKLIST_TOOL} first: score every answer shown (${ctx.shown.map((a) => a.label).join(", ")}) on every criterion; your vote counts after an accepted submission.`

/** The tool messages of a reply's calls: the checklist's result for each `submit_checklist`, a refusal for any other. */
export const checklistResults = (reply: LlmReply, results: ReadonlyMap<string, Scored>): ReadonlyArray<LlmMessage> =>
  reply.toolCalls.map((c): LlmMessage => {
    const r = results.get(c.id)
    if (r === undefined) {
      return { role: "tool", toolCallId: c.id, name: c.name, content: `not run: call ${CHECKLIST_TOOL} on its own`, isError: true }
    }
    const body = r.accepted
      ? {
          status: "accepted",
          verdict: r.verdict,
          explanation: r.message,
          best_agent: r.best_label,
          true_count: r.true_count,
          required: r.required,
        }
      : { status: "validation_error", explanation: `Not accepted: ${r.message}. Submit again.` }
    return {
      role: "tool",
      toolCallId: c.id,
      name: c.name,
      content: JSON.stringify(body),
      ...(r.accepted ? {} : { isError: true as const }),
    }
  })
