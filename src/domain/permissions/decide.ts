/**
 * The permission decision of one tool call, and how an `ask` is answered by a policy.
 *
 * `decidePermission(rules, call)` reads, in MassGen's order: the *hardline*
 * first, which no rule, policy or answer can loosen (a command the
 * dangerous-command guard names, `domain/tools/command-guard.ts`, in the
 * call's command text or any command it runs); then the deny rules, the
 * allow rules, the ask rules (the first of each that matches); and when no
 * rule matches, the call's risk tier (`risk.ts`): `low` is allowed, `medium`
 * and `high` are asked. `policyAnswer(default, risk)` answers an `ask` with
 * no human: `allow-all`, `deny-all`, or `risk-based` (MassGen's default:
 * `high` denied, the rest allowed).
 *
 * A command's text is matched as `command-text.ts` reads it: a deny or ask
 * rule matches when it matches the text as written or any of its simple
 * commands (in any of their forms), or when text cannot tell what the
 * command runs (a computed program: a deny on commands cannot be checked, so
 * it holds). An allow rule matches only when it matches every simple command
 * (a chain is allowed only when each of its commands is), and a command whose
 * program is computed only by the pattern `*`. Pure.
 */

import { dangerousCommand } from "../tools/command-guard.ts"
import { actionOf, type CallFacts, commandTexts } from "./actions.ts"
import { type CommandReading, forms, isOpaque, readCommand } from "./command-text.ts"
import { type RiskTier, riskOf } from "./risk.ts"
import type { Action, Rule, RuleSet, Verdict } from "./rules.ts"

/** Who decided: the hardline, a rule, the risk tier (no rule matched); for an ask, the policy, a human, a response file, or the timeout. */
export const DECIDERS = ["hardline", "rule", "risk", "policy", "human", "response_file", "timeout"] as const
export type Decider = (typeof DECIDERS)[number]

export const AUTOMATION_DEFAULTS = ["risk-based", "allow-all", "deny-all"] as const
export type AutomationDefault = (typeof AUTOMATION_DEFAULTS)[number]

export interface PermissionDecision {
  readonly verdict: "allow" | "deny" | "ask"
  readonly by: "hardline" | "rule" | "risk"
  /** The rule that decided, as written, with its verdict (`deny: command(rm *)`); null when none did. */
  readonly rule: string | null
  readonly risk: RiskTier
  readonly action: Action
  /** The call's target as the rules read it (its targets joined by `, `). */
  readonly target: string
  /** Why, in words, for the ledger and the model. */
  readonly reason: string
}

const ruleText = (r: Rule) => `${r.verdict}: ${r.text}`

/** The first rule of `rules` (all of `verdict`) that matches the call, reading commands as the file says. */
const firstMatch = (
  verdict: Verdict,
  rules: ReadonlyArray<Rule>,
  action: Action,
  targets: ReadonlyArray<string>,
  reading: CommandReading | null,
): Rule | undefined => {
  const applies = rules.filter((r) => r.action === "*" || r.action === action)
  if (reading === null) {
    // Several targets (a move): a deny or an ask holds when any matches, an allow only when all do.
    return applies.find((r) => (verdict === "allow" ? targets.every(r.matches) : targets.some(r.matches)))
  }
  const raw = targets[0]!.trim()
  if (verdict !== "allow") {
    return applies.find((r) => isOpaque(reading) || r.matches(raw) || reading.commands.some((c) => forms(c).some(r.matches)))
  }
  if (isOpaque(reading)) return applies.find((r) => r.pattern === "*")
  if (reading.commands.length === 0) return applies.find((r) => r.matches(raw))
  const covering = reading.commands.map((c) => applies.find((r) => forms(c).some(r.matches)))
  return covering.every((r) => r !== undefined) ? covering[0] : undefined
}

/** The accident a call's command text is (itself or any command it runs), or null. */
const hardline = (texts: ReadonlyArray<string>): string | null => {
  for (const text of texts) {
    const direct = dangerousCommand(text)
    if (direct !== null) return direct
    for (const c of readCommand(text).commands) {
      const inner = dangerousCommand(c.words.slice(c.program).join(" "))
      if (inner !== null) return inner
    }
  }
  return null
}

export const decidePermission = (rules: RuleSet, call: CallFacts): PermissionDecision => {
  const { action, targets } = actionOf(call)
  const reading = action === "command" ? readCommand(targets[0]!) : null
  const risk = riskOf(action, call.tool, targets[0]!, reading)
  const base = { action, target: targets.join(", "), risk }
  const accident = hardline(action === "command" ? targets : commandTexts(call.args))
  if (accident !== null)
    return { ...base, verdict: "deny", by: "hardline", rule: null, reason: `the hardline blocklist never allows ${accident}` }
  for (const verdict of ["deny", "allow", "ask"] as const) {
    const rule = firstMatch(verdict, rules[verdict], action, targets, reading)
    if (rule === undefined) continue
    const opaque = verdict !== "allow" && reading !== null && isOpaque(reading) && !rule.matches(targets[0]!.trim())
    const reason = opaque
      ? `the rule ${ruleText(rule)} holds: what this command runs is computed when it runs, so text cannot tell it apart`
      : `the rule ${ruleText(rule)} matches`
    return { ...base, verdict, by: "rule", rule: ruleText(rule), reason }
  }
  return risk === "low"
    ? { ...base, verdict: "allow", by: "risk", rule: null, reason: "no rule matches and the call is low risk" }
    : { ...base, verdict: "ask", by: "risk", rule: null, reason: `no rule matches and the call is ${risk} risk` }
}

/** The answer of the automation policy to an ask. */
export const policyAnswer = (policy: AutomationDefault, risk: RiskTier): { readonly allowed: boolean; readonly reason: string } => {
  switch (policy) {
    case "allow-all":
      return { allowed: true, reason: "the automation policy allow-all" }
    case "deny-all":
      return { allowed: false, reason: "the automation policy deny-all" }
    case "risk-based":
      return risk === "high"
        ? { allowed: false, reason: "the automation policy risk-based denies high-risk calls" }
        : { allowed: true, reason: `the automation policy risk-based allows ${risk}-risk calls` }
  }
}
