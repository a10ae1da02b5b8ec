/**
 * Planning mode on a tool provider: its irreversible tools refused in an agent's rounds, run in the presentation.
 *
 * `withPlanningMode(provider, nature, blocked)` is `provider` with each tool
 * judged once by `planningModeBlock` (`domain/tools/planning/mode.ts`); a call
 * of a refused tool outside the presentation fails with reason `refused`, so
 * the tool runner records it (`tool_call_finished`, `ok: false`) and the model
 * is told why as its error result; it is refused before the permission gate
 * (`refuses`), so nobody is asked about it. A provider without a refused tool is itself.
 */
import { Effect } from "effect"
import type { CallRole } from "../../domain/events/index.ts"
import { planningModeBlock, planningModeRefusal, type ToolNature } from "../../domain/tools/planning/mode.ts"
import { type ToolProvider, ToolRunError } from "./tool-provider.ts"

export const withPlanningMode = (provider: ToolProvider, nature: ToolNature, blocked: ReadonlyArray<string> | null): ToolProvider => {
  const refused = new Map<string, string>()
  for (const t of provider.tools) {
    const why = planningModeBlock({ name: t.spec.name, nature: t.server !== null ? "mcp" : nature, readOnly: t.readOnly === true }, blocked)
    if (why !== null) refused.set(t.spec.name, why)
  }
  if (refused.size === 0) return provider
  const refuses = (name: string, role: CallRole | undefined): ToolRunError | null => {
    const why = refused.get(name)
    return why !== undefined && role !== "presentation"
      ? new ToolRunError({ reason: "refused", detail: planningModeRefusal(name, why) })
      : null
  }
  return {
    tools: provider.tools,
    run: (name, args, context) => {
      const refusal = refuses(name, context?.role)
      return refusal !== null ? Effect.fail(refusal) : provider.run(name, args, context)
    },
    refuses: (name, role) => refuses(name, role) ?? provider.refuses?.(name, role) ?? null,
  }
}
