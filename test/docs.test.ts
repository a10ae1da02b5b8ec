/** The documents promise to list every event type and field, every flag and every config key. */
import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { Event, EVENT_TYPES } from "../src/domain/events.ts"

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
