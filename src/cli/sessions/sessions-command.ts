/**
 * `massgen sessions [--json]`: the sessions under `.massgen/sessions/`, the most recent first.
 *
 * One line per session: its id, its number of turns, its cost (the sum of its
 * turns' priced calls; `$—` when none was priced) and its last question (one
 * line, cut at 60 characters); `--json` prints a list of `{id, turns, cost_usd,
 * last_question, last_log_dir}`. No session: a line saying so, exit 0.
 */
import { Effect } from "effect"
import { plainJson } from "../../lib/plain-text.ts"
import { formatCost } from "../../lib/text.ts"
import { preview } from "../run/automation-output.ts"
import { sessionIds, sessionsDir, turnsOf } from "./session-store.ts"

export const sessionsCommand = (
  json: boolean,
  ctx: { readonly env: Readonly<Record<string, string | undefined>>; readonly cwd: string; readonly print: (line: string) => void },
) =>
  Effect.sync(() => {
    const dir = sessionsDir(ctx.env, ctx.cwd)
    const sessions = sessionIds(dir).map((id) => {
      const turns = turnsOf(dir, id)
      const costs = turns.flatMap((t) => (t.state?.usage.cost != null ? [t.state.usage.cost] : []))
      const last = turns.at(-1)
      return {
        id,
        turns: turns.length,
        cost_usd: costs.length === 0 ? null : costs.reduce((a, b) => a + b, 0),
        last_question: last?.state?.run?.question ?? null,
        last_log_dir: last?.log_dir ?? null,
      }
    })
    if (json) ctx.print(plainJson(sessions, 2))
    else if (sessions.length === 0) ctx.print(`No sessions under ${dir}.`)
    else {
      const width = Math.max(2, ...sessions.map((s) => s.id.length))
      ctx.print(`${"ID".padEnd(width)}  TURNS  COST      LAST QUESTION`)
      for (const s of sessions)
        ctx.print(
          `${s.id.padEnd(width)}  ${String(s.turns).padStart(5)}  ${formatCost(s.cost_usd).padEnd(8)}  ${preview(s.last_question ?? "", 60)}`,
        )
    }
    return 0
  })
