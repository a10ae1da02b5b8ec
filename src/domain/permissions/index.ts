/**
 * The permission engine's pure parts: MassGen's `permissions:` rules, the decision of a tool call, and the policy of an agent.
 *
 * A tool call is read as an action and its targets (`actions.ts`), a
 * command's text as the shell would run it (`command-text.ts`), and decided
 * (`decide.ts`): the hardline first, then deny, allow and ask rules
 * (`rules.ts`, deny winning across every scope), then its risk tier
 * (`risk.ts`); an `ask` is answered by the automation policy, a human or a
 * response file (the services do the asking, `services/tools/permission-gate.ts`).
 * An agent's policy comes from the config's blocks (`policy.ts`).
 * docs/permissions.md is the user's account of it.
 */
export { type ActionOf, actionOf, type CallFacts } from "./actions.ts"
export { type CommandReading, forms, isOpaque, readCommand, type SimpleCommand } from "./command-text.ts"
export {
  AUTOMATION_DEFAULTS,
  type AutomationDefault,
  DECIDERS,
  type Decider,
  decidePermission,
  type PermissionDecision,
  policyAnswer,
} from "./decide.ts"
export {
  type AgentPolicy,
  APPROVAL_MODES,
  type ApprovalMode,
  agentPolicy,
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  type PermissionsBlock,
} from "./policy.ts"
export { RISK_TIERS, type RiskTier } from "./risk.ts"
export {
  ACTIONS,
  type Action,
  globMatcher,
  parseRule,
  ROLE_NAMES,
  ROLES,
  type Role,
  type Rule,
  type RuleSet,
  ruleSetOf,
  VERDICTS,
  type Verdict,
} from "./rules.ts"
