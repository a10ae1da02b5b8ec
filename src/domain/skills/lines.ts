/**
 * The line a view shows for `skills_offered`, `memory_loaded` and `memory_restored` (the timeline, the plain lines). Pure.
 */
import { count, oneLine } from "../../lib/text.ts"
import type { Event } from "../events/index.ts"

type SkillEvent = Extract<Event, { _tag: "skills_offered" | "memory_loaded" | "memory_restored" }>

export const skillEventLine = (event: SkillEvent): string => {
  switch (event._tag) {
    case "skills_offered":
      return `skills offered: ${event.skills.length === 0 ? "none" : oneLine(event.skills.map((s) => s.name).join(", "), 80)}${event.skipped.length > 0 ? ` (${count(event.skipped.length, "bundle")} skipped)` : ""}`
    case "memory_loaded":
      return `memory shown to ${event.presentation === true ? "the presentation" : `round ${event.round}`}: ${count(event.files.length, "file")}`
    case "memory_restored":
      return `memory of the previous turn restored: ${count(event.files.length, "file")}`
  }
}
