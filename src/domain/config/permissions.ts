/**
 * The config keys of the permission engine: MassGen's `permissions:` block, checked.
 *
 * A block sits on an agent's `backend:` (MassGen's place) or at the top of
 * the config (massgen's: for every agent, `domain/permissions/policy.ts`
 * merges the two). Its keys: `enabled`, `role` (MassGen's presets),
 * `rules: {allow, ask, deny}` (lists of `action(pattern)` rules, each read
 * by `parseRule`: a rule that does not read is an error naming it),
 * `automation_default`, `approval_mode` (`policy` or `file`),
 * `approval_timeout_seconds` (massgen's own: how long a request file waits),
 * and MassGen's `audit` and `persist_approvals` where they mean what massgen
 * does (the ledger is always written; no grant is kept for later runs): any
 * other value is refused, as are MassGen's keys massgen does not have and
 * every unknown key in the block (`compat.ts`). Pure.
 */
import { Schema } from "effect"
import { APPROVAL_MODES, AUTOMATION_DEFAULTS, parseRule, ROLE_NAMES, type Verdict } from "../permissions/index.ts"
import { oneOf, opt, PositiveNumber } from "./schema.ts"

const RuleText = (verdict: Verdict) =>
  Schema.String.pipe(
    Schema.filter((text) => {
      const rule = parseRule(text, verdict)
      return typeof rule === "string" ? rule : true
    }),
  )

const RuleList = (verdict: Verdict) =>
  Schema.Array(RuleText(verdict)).annotations({ identifier: `a list of ${verdict} rules such as command(rm *)` })

const only = <const V extends boolean>(value: V, message: string) =>
  Schema.Literal(value).annotations({ message: () => ({ message, override: true }) })

export const PermissionsConfig = Schema.Struct({
  enabled: opt(Schema.Boolean),
  role: opt(oneOf(...ROLE_NAMES)),
  rules: opt(
    Schema.Struct({ allow: opt(RuleList("allow")), ask: opt(RuleList("ask")), deny: opt(RuleList("deny")) }).annotations({
      identifier: "a rules mapping {allow, ask, deny}",
    }),
  ),
  automation_default: opt(oneOf(...AUTOMATION_DEFAULTS)),
  approval_mode: opt(oneOf(...APPROVAL_MODES)),
  approval_timeout_seconds: opt(PositiveNumber),
  audit: opt(only(true, "false is not supported: the ledger is the run's events.jsonl, which is always written")),
  persist_approvals: opt(only(false, "true is not supported: massgen keeps no approval for a later run (write an allow rule instead)")),
}).annotations({ identifier: "a permissions mapping" })
