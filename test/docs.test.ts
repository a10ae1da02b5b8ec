/** The documents promise to list every event type and field, every flag and every config key. */
import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { EVENT_TYPES, Event } from "../src/domain/events/index.ts"

const eventsDoc = readFileSync(new URL("../docs/events.md", import.meta.url), "utf8")

describe("docs/events.md", () => {
  test.each([...EVENT_TYPES])("names event type %s with a heading", (type) => {
    expect(eventsDoc).toContain(`### \`${type}\``)
  })

  test("names every field of every event type in its section", () => {
    for (const member of Event.members) {
      const type = member.fields._tag.literals[0]
      const section = eventsDoc.split(`### \`${type}\``)[1]?.split("\n### ")[0] ?? ""
      for (const field of Object.keys(member.fields).filter((f) => f !== "_tag" && f !== "time")) {
        expect({ type, field, documented: section.includes(`\`${field}\``) }).toEqual({ type, field, documented: true })
      }
    }
  })
})

describe("README.md", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
  test("documents every flag and subcommand the help text lists", async () => {
    const { HELP } = await import("../src/cli/help.ts")
    const flags = [...new Set(HELP.match(/--[a-z][a-z-]+/g) ?? [])]
    expect(flags.length).toBeGreaterThan(10)
    expect(flags.filter((f) => !readme.includes(f))).toEqual([])
    for (const sub of ["resume", "replay", "status", "viewer", "doctor", "serve", "sessions"]) expect(readme).toContain(`massgen ${sub}`)
  })
  test("documents every top-level and orchestrator config key", () => {
    for (const key of [
      "agents:",
      "system_message",
      "orchestrator:",
      "max_new_answers_per_agent",
      "skip_final_presentation",
      "final_answer_strategy",
      "budget_usd",
      "timeout_settings:",
      "orchestrator_timeout_seconds",
      "agent_timeout_seconds",
      "pricing:",
      "MASSGEN_LOG_BASE_DIR",
    ]) {
      expect(readme).toContain(key)
    }
  })
})
