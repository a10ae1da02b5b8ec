/**
 * The events of skills and memory (`index.ts`, `domain/skills/`): the SKILL.md bundles a run offers its agents, and
 * the memory files that reach a round's prompt.
 *
 * Contract: `skills_offered` is appended once, before the first round, when `use_skills` is on; a resume and
 * replay offer what it names (its copies are in the log directory, `skills/<dir>/`), never a new scan.
 * `memory_loaded` is appended after a round's `round_started` and before its first call when memory filesystem
 * mode is on: the files its prompt shows, with their content (short-term) and digests; `memory_restored`, before
 * the first round of a session's turn, the previous turn's memory files copied into the workspaces. Words as in `index.ts`.
 */
import { Schema } from "effect"
import { AgentId, Count, defineEvent } from "./fields.ts"

/** Where a skill was found, in MassGen's words: the skills directory, `~/.agent/skills`, or a previous run's final workspace. */
export const SkillLocation = Schema.Literal("project", "user", "previous_session")
export type SkillLocation = typeof SkillLocation.Type

/** One skill offered: its frontmatter's name and description, its copy (relative to the log directory) and its SKILL.md's digest. */
export const OfferedSkill = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  location: SkillLocation,
  /** The copy of the bundle, `skills/<dir>`, relative to the log directory; agents read it as `.agent/skills/<dir>/`. */
  path: Schema.String,
  /** SHA-256 of its SKILL.md, as copied. */
  sha256: Schema.String,
  files: Count,
})
export type OfferedSkill = typeof OfferedSkill.Type

/** A bundle the scan did not offer, with why in one line. */
export const SkippedSkill = Schema.Struct({ source: Schema.String, reason: Schema.String })
export type SkippedSkill = typeof SkippedSkill.Type

/** The skills the run offers every agent, found once before the first round (`use_skills`). */
export const SkillsOffered = defineEvent("skills_offered", {
  skills: Schema.Array(OfferedSkill),
  skipped: Schema.Array(SkippedSkill),
})

export const MemoryTier = Schema.Literal("short_term", "long_term")
export type MemoryTier = typeof MemoryTier.Type

/**
 * One memory file a round's prompt names: `memory/<tier>/<name>` of the agent's own workspace (`from: "workspace"`)
 * or of the snapshot of a shown answer (`from`: its label). A short-term file's content is shown whole (up to the cap,
 * `cut` then); a long-term one is listed by its description only (`content` empty).
 */
export const MemoryFile = Schema.Struct({
  from: Schema.String,
  tier: MemoryTier,
  name: Schema.String,
  description: Schema.String,
  sha256: Schema.String,
  bytes: Count,
  content: Schema.String,
  cut: Schema.optionalWith(Schema.Boolean, { exact: true }),
})
export type MemoryFile = typeof MemoryFile.Type

/**
 * The memory files `agent`'s round `round` is shown (memory filesystem mode), read after its start and before its
 * first call; with `presentation: true`, those the presenter is shown (`round`: the presentation's).
 */
export const MemoryLoaded = defineEvent("memory_loaded", {
  agent: AgentId,
  round: Count,
  files: Schema.Array(MemoryFile),
  presentation: Schema.optionalWith(Schema.Boolean, { exact: true }),
})

/** One memory file copied from the previous turn (`memory_restored`). */
export const RestoredMemoryFile = Schema.Struct({ tier: MemoryTier, name: Schema.String, sha256: Schema.String, bytes: Count })
export type RestoredMemoryFile = typeof RestoredMemoryFile.Type

/**
 * Memory filesystem mode in a turn of a session: the memory files of the previous turn's final workspace (`from`,
 * its log directory; the winner's `final/<agent>/workspace/memory/`) were copied into the workspaces of `agents`,
 * before the first round. Appended after the copies; a resumed run that has it copies nothing again.
 */
export const MemoryRestored = defineEvent("memory_restored", {
  from: Schema.String,
  agents: Schema.Array(AgentId),
  files: Schema.Array(RestoredMemoryFile),
})
