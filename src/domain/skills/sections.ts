/**
 * What a round's system message says of skills and memory (MassGen's skills and memory sections, in massgen's words).
 *
 * `skillsSection(skills)` lists the skills a run offers (`skills_offered`):
 * each one's name, description, where it was found, and where its SKILL.md is
 * (`.agent/skills/<dir>/SKILL.md`, read-only). `memorySection(files)` tells
 * the agent of its memory folders (`memory/short_term/`, shown every round;
 * `memory/long_term/`, listed, read when needed) and the file format, then
 * shows the files its round was given (`memory_loaded`): short-term ones
 * whole, long-term ones by name and description, its own first, then those
 * of the answers it is shown. The presenter is shown its memories and the
 * other agents', and asked to consolidate them in its workspace
 * (`MEMORY_PRESENTER_NOTE`). Pure: replay builds the same text.
 *
 * Words: a *skill* is a SKILL.md bundle; a *memory file* is a markdown file of a workspace's `memory/` folders.
 */
import type { MemoryFile, OfferedSkill } from "../events/index.ts"

/** Where an agent reads the skills offered: relative to its workspace, read-only (`domain/workspaces/paths.ts`). */
export const SKILLS_PREFIX = ".agent/skills"
/** The memory folders of a workspace, as MassGen lays them out. */
export const MEMORY_DIRS = { short_term: "memory/short_term", long_term: "memory/long_term" } as const

/** The folder name of a skill's copy (`skills/<dir>`). */
const dirOf = (skill: OfferedSkill): string => skill.path.split("/").pop() ?? skill.name

export const skillsSection = (skills: ReadonlyArray<OfferedSkill>): string =>
  skills.length === 0
    ? ""
    : [
        "## Skills",
        "Skills are folders of instructions and resources for particular kinds of work. Before a task one of them fits, read its SKILL.md with read_file and follow it; a skill's folder may hold more files that its SKILL.md names. Skills are read-only. Use only the skills below, and do not read one again once it is in your context.",
        "<skills>",
        ...skills.map(
          (s) =>
            `- ${s.name} (${s.location}): ${s.description === "" ? "(no description)" : s.description}\n  ${SKILLS_PREFIX}/${dirOf(s)}/SKILL.md`,
        ),
        "</skills>",
      ].join("\n")

const fence = (text: string): string => {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const ticks = "`".repeat(longest + 1)
  return `${ticks}\n${text}\n${ticks}`
}

const whose = (from: string): string => (from === "workspace" ? "your workspace" : `the workspace of answer ${from}`)

const shown = (f: MemoryFile): string =>
  f.tier === "short_term"
    ? `- ${MEMORY_DIRS.short_term}/${f.name} (${whose(f.from)})${f.cut === true ? ` (first part of ${f.bytes} bytes)` : ""}\n${fence(f.content)}`
    : `- ${MEMORY_DIRS.long_term}/${f.name} (${whose(f.from)}): ${f.description === "" ? "(no description)" : f.description}`

/** What a round may write of memory, by `memory_capture` (absent: every round writes memory). */
const CAPTURE_RULES: Readonly<Record<"verification" | "final", string>> = {
  final:
    "In this run memory is written only at the end, by the presenter: in your rounds, read the memories below as guidance and write no memory file.",
  verification: `In this run memory is written only at the end, by the presenter: in your rounds, read the memories below as guidance and write no memory file but one, ${MEMORY_DIRS.short_term}/verification_latest.md, which you keep up to date with how you checked your answer (the commands and files, what they showed, what was not checked), so that the next round can check it again.`,
}

/** The memory section; `capture`: the run's `memory_capture`, for a round (a presentation writes memory). */
export const memorySection = (files: ReadonlyArray<MemoryFile>, capture?: "verification" | "final"): string => {
  const short = files.filter((f) => f.tier === "short_term")
  const long = files.filter((f) => f.tier === "long_term")
  return [
    "## Memory",
    "Keep what you learn for later rounds as markdown files in your workspace, so that you and the other agents do not repeat mistakes or work:",
    `- ${MEMORY_DIRS.short_term}/<name>.md: short notes needed every round (preferences, current findings, decisions and why); their whole text is shown to every round.`,
    `- ${MEMORY_DIRS.long_term}/<name>.md: longer write-ups needed now and then (analyses, lessons with their context); rounds are shown their names and descriptions, read one with read_file when it helps.`,
    "Open each file with YAML frontmatter: a --- line, then name:, description:, created: and updated: lines, then a --- line, then the text. A file of the same name replaces the old one.",
    ...(capture !== undefined ? [CAPTURE_RULES[capture]] : []),
    short.length > 0 ? `### Short-term memories\n${short.map(shown).join("\n")}` : "### Short-term memories\n(none yet)",
    ...(long.length > 0 ? [`### Long-term memories\n${long.map(shown).join("\n")}`] : []),
  ].join("\n")
}

/** What the presenter is asked of memory (MassGen's memory consolidation at the presentation), after the memories it is shown. */
export const MEMORY_PRESENTER_NOTE = [
  "### Consolidating memory",
  `Before your final answer, bring together in your own workspace what is worth keeping for later work: the memories above, your own and the other agents', merged without repeats, each kept in its clearest form, in ${MEMORY_DIRS.short_term}/ (short, needed every time) and ${MEMORY_DIRS.long_term}/ (longer, needed now and then), each with its frontmatter. Your workspace's files become the run's final workspace.`,
].join("\n")
