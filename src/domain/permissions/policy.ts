/**
 * An agent's permission policy, made from the config's `permissions:` blocks.
 *
 * MassGen reads `permissions:` on each agent's backend; massgen also reads
 * one at the top of the config, for every agent. `agentPolicy(run, own)`
 * gives the agent's policy, or null when the engine is off for it (no block,
 * or its own block says `enabled: false`, or the run's does and it has none).
 * The rules of every scope are merged by verdict (`mergeRules`: a deny of
 * any scope wins over every allow): the role's preset (its own `role`, else
 * the run's), the run's rules, its own. Its own settings win over the run's:
 * `automation_default` (default `risk-based`), `approval_mode` (`policy`,
 * the default: the automation policy answers every ask; `file`: a
 * request/response file in the log directory, `approval_timeout_seconds`
 * to answer, default `DEFAULT_APPROVAL_TIMEOUT_SECONDS`, then denied). Pure.
 */
import type { AutomationDefault } from "./decide.ts"
import { mergeRules, ROLES, type Role, type RuleSet, ruleSetOf } from "./rules.ts"

export const APPROVAL_MODES = ["policy", "file"] as const
export type ApprovalMode = (typeof APPROVAL_MODES)[number]

/** MassGen's wait for a response file: 300 s. */
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 300

/** A `permissions:` block as the config holds it (checked by `domain/config/permissions.ts`). */
export interface PermissionsBlock {
  readonly enabled?: boolean
  readonly role?: Role
  readonly rules?: { readonly allow?: ReadonlyArray<string>; readonly ask?: ReadonlyArray<string>; readonly deny?: ReadonlyArray<string> }
  readonly automation_default?: AutomationDefault
  readonly approval_mode?: ApprovalMode
  readonly approval_timeout_seconds?: number
  readonly audit?: boolean
  readonly persist_approvals?: boolean
}

export interface AgentPolicy {
  readonly rules: RuleSet
  readonly automationDefault: AutomationDefault
  readonly approvalMode: ApprovalMode
  readonly timeoutSeconds: number
}

export const agentPolicy = (run: PermissionsBlock | undefined, own: PermissionsBlock | undefined): AgentPolicy | null => {
  const enabled = own?.enabled ?? (own !== undefined || run?.enabled !== false)
  if ((run === undefined && own === undefined) || !enabled) return null
  const blocks = [run, own].filter((b): b is PermissionsBlock => b !== undefined)
  const role = own?.role ?? run?.role
  const setting = <K extends keyof PermissionsBlock>(key: K): PermissionsBlock[K] | undefined => own?.[key] ?? run?.[key]
  return {
    rules: mergeRules([...(role !== undefined ? [ROLES[role]] : []), ...blocks.map((b) => ruleSetOf(b.rules ?? {}))]),
    automationDefault: setting("automation_default") ?? "risk-based",
    approvalMode: setting("approval_mode") ?? "policy",
    timeoutSeconds: setting("approval_timeout_seconds") ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  }
}
