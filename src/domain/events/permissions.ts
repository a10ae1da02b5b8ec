/**
 * The permission ledger (`index.ts`): what the permission engine decided of a tool call, before the call acts.
 *
 * Contract: with a `permissions:` block (`domain/permissions/`), every tool call of an agent has,
 * after its `tool_call_started` and before anything of it runs, a `permission_decided`; a call the
 * rules ask about has a `permission_asked` before it, appended (and settled) before the question
 * leaves the process (a request file, a prompt). A denied call runs nothing: its
 * `tool_call_finished` is an error result that says so. A call run again by a resume keeps the
 * decision recorded for its `call_id` (no new ask, no new event). Both name the call as its
 * `tool_call_started` does (`tool_call`, `agent`, `round`, `role`, `call_id`, `tool`), and what the
 * rules read of it: its `action` and `target` (cut to `PERMISSION_TARGET_MAX` characters, the
 * ledger's bounded summary of the arguments), its `risk` tier, and the `rule` that matched (its
 * verdict and text, `deny: command(rm *)`), null when none did.
 */
import { Schema } from "effect"
import { toolCallNames } from "./calls.ts"
import { defineEvent } from "./fields.ts"

/** The most characters of a call's target the ledger keeps. */
export const PERMISSION_TARGET_MAX = 400

const askedFields = {
  ...toolCallNames,
  action: Schema.Literal("command", "read_file", "write_file", "read_url", "mcp"),
  target: Schema.String,
  risk: Schema.Literal("low", "medium", "high"),
  rule: Schema.NullOr(Schema.String),
}

/**
 * The rules ask about the call; `via` says who is asked: the automation `policy`, a `human`, or a
 * `response_file` (then `request` is the request's id: `permissions/requests/<request>.json`).
 */
export const PermissionAsked = defineEvent("permission_asked", {
  ...askedFields,
  via: Schema.Literal("policy", "human", "response_file"),
  request: Schema.NullOr(Schema.String),
  reason: Schema.String,
})

/**
 * The call is allowed or denied, `by` the hardline, a rule, its risk tier (no rule matched), or
 * for an ask the policy, a human, a response file, or the `timeout` (no answer in time: denied);
 * `reason` says why in words, as the model is told of a denial.
 */
export const PermissionDecided = defineEvent("permission_decided", {
  ...askedFields,
  decision: Schema.Literal("allow", "deny"),
  by: Schema.Literal("hardline", "rule", "risk", "policy", "human", "response_file", "timeout"),
  reason: Schema.String,
})
