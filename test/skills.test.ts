/**
 * The parts of skills and memory mode: SKILL.md frontmatter (bad input refused in one line), the scan of
 * the skills directory, `~/.agent/skills` and earlier runs (MassGen's order, dedupe by name), and the
 * sections a round's system message gets.
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import { decodeConfig } from "../src/domain/config/index.ts"
import { memoryFrontmatter, skillFrontmatter } from "../src/domain/skills/frontmatter.ts"
import { memorySection, skillsSection } from "../src/domain/skills/sections.ts"
import { findSkills } from "../src/services/skills/offer.ts"

const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n`

describe("skillFrontmatter", () => {
  test("reads name and description; a missing name leaves the folder's", () => {
    expect(skillFrontmatter(skill("pdf", "PDF forms"))).toEqual({ name: "pdf", description: "PDF forms" })
    expect(skillFrontmatter("---\ndescription: no name\n---\nbody")).toEqual({ name: null, description: "no name" })
  })
  test.each([
    ["no frontmatter", "# just text\n", "it does not open with a --- line (YAML frontmatter with name and description)"],
    ["an unclosed block", "---\nname: x\n", "its frontmatter is not closed by a --- line"],
    ["a list", "---\n- a\n- b\n---\n", "its frontmatter is not a YAML mapping (name: ..., description: ...)"],
    ["a name that is a list", "---\nname:\n  - a\n---\n", "its name is not a string"],
  ])("refuses %s in one line", (_what, text, problem) => {
    const got = skillFrontmatter(text)
    expect(got).toEqual({ problem })
    expect(problem).not.toContain("\n")
  })
  test("a block YAML cannot read is read as key: value lines, as MassGen does", () => {
    expect(skillFrontmatter("---\nname: a\ndescription: Use when: the user asks\n---\n")).toEqual({
      name: "a",
      description: "Use when: the user asks",
    })
  })
  test("memoryFrontmatter: key: value lines and the body; none without a block", () => {
    expect(memoryFrontmatter("---\nname: a\ndescription: b: c\n---\n\nText\n")).toEqual({
      meta: { name: "a", description: "b: c" },
      body: "Text",
    })
    expect(memoryFrontmatter("plain\n")).toEqual({ meta: {}, body: "plain" })
  })
})

describe("findSkills", () => {
  test("the skills directory, then ~/.agent/skills, then earlier runs newest first; a name twice is offered once", async () => {
    const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-skills-"))
    const put = (dir: string, text: string) => {
      fs.mkdirSync(dir, { recursive: true })
      fs.writeFileSync(nodePath.join(dir, "SKILL.md"), text)
    }
    put(nodePath.join(root, "project", "b"), skill("Beta", "first beta"))
    put(nodePath.join(root, "project", "a"), skill("alpha", "a"))
    // Full YAML (a folded description) where the plain subset stops.
    put(nodePath.join(root, "project", "c"), "---\nname: gamma\ndescription: >\n  folded\n  text\n---\n")
    put(nodePath.join(root, "home", "beta"), skill("beta", "second beta"))
    const logs = nodePath.join(root, "logs")
    put(nodePath.join(logs, "log_1", "final", "agent_a", "workspace", "tasks", "evolving_skill"), skill("old", "older run"))
    put(nodePath.join(logs, "log_2", "final", "agent_a", "workspace", "tasks", "evolving_skill"), skill("new", "newer run"))
    fs.mkdirSync(nodePath.join(logs, "log_3"), { recursive: true })
    const found = await Effect.runPromise(
      findSkills(
        { project: nodePath.join(root, "project"), user: nodePath.join(root, "home"), previousRuns: logs },
        nodePath.join(logs, "log_3"),
      ),
    )
    expect(found.skills.map((s) => [s.name, s.location, s.path])).toEqual([
      ["alpha", "project", "skills/alpha"],
      ["Beta", "project", "skills/beta"],
      ["gamma", "project", "skills/gamma"],
      ["new", "previous_session", "skills/new"],
      ["old", "previous_session", "skills/old"],
    ])
    expect(found.skills.find((s) => s.name === "gamma")?.description).toBe("folded text")
    expect(found.skipped).toEqual([
      { source: "~/.agent/skills/beta", reason: `a skill named beta was found first (${nodePath.join(root, "project", "b")})` },
    ])
    expect(fs.readFileSync(nodePath.join(logs, "log_3", "skills", "beta", "SKILL.md"), "utf8")).toBe(skill("Beta", "first beta"))
    fs.rmSync(root, { recursive: true, force: true })
  })
})

describe("the system message's sections", () => {
  test("skills: each skill's name, location, description and SKILL.md path; none: no section", () => {
    const text = skillsSection([{ name: "pdf", description: "PDF forms", location: "user", path: "skills/pdf", sha256: "0", files: 1 }])
    expect(text).toContain("- pdf (user): PDF forms\n  .agent/skills/pdf/SKILL.md")
    expect(skillsSection([])).toBe("")
  })
  test("memory: the folders, short-term files whole, long-term by description, whose they are", () => {
    const file = { sha256: "0", bytes: 1 }
    const text = memorySection([
      { ...file, from: "workspace", tier: "short_term", name: "notes.md", description: "", content: "remember 4" },
      { ...file, from: "agent2.1", tier: "long_term", name: "deep.md", description: "a long analysis", content: "" },
    ])
    expect(text).toContain("memory/short_term/<name>.md")
    expect(text).toContain("- memory/short_term/notes.md (your workspace)\n```\nremember 4\n```")
    expect(text).toContain("- memory/long_term/deep.md (the workspace of answer agent2.1): a long analysis")
    expect(memorySection([])).toContain("(none yet)")
  })
})

describe("the config keys of skills and memory", () => {
  const settingsOf = (coordination: Record<string, unknown>, orchestrator: Record<string, unknown> = {}) => {
    const decoded = decodeConfig(
      { agents: [{ id: "a", backend: { type: "scripted", cwd: "w" } }], orchestrator: { ...orchestrator, coordination } },
      {},
    )
    return Either.getOrThrow(decoded)
  }
  test("use_skills and enable_memory_filesystem_mode are accepted and recorded in the settings; skills_directory defaults to .agent/skills", () => {
    const config = settingsOf({ use_skills: true, enable_memory_filesystem_mode: true })
    expect(config.settings).toMatchObject({ use_skills: true, memory_filesystem_mode: true })
    expect(config.skills).toEqual({ directory: ".agent/skills", previousSessions: false })
    expect(settingsOf({ use_skills: false }).settings.use_skills).toBeUndefined()
  })
  test("learning_capture_mode, as MassGen reads it: when rounds may write memory", () => {
    const capture = (c: Record<string, unknown>, o?: Record<string, unknown>) =>
      settingsOf({ enable_memory_filesystem_mode: true, ...c }, o).settings.memory_capture
    expect(capture({})).toBeUndefined()
    expect(capture({ learning_capture_mode: "round" })).toBeUndefined()
    expect(capture({ learning_capture_mode: "verification_and_final_only" })).toBe("verification")
    expect(capture({ learning_capture_mode: "final_only" })).toBe("final")
    // No presentation to consolidate: rounds write memory, unless the fallback is turned off.
    expect(capture({ learning_capture_mode: "final_only" }, { skip_final_presentation: true })).toBeUndefined()
    expect(
      capture({ learning_capture_mode: "final_only", disable_final_only_round_capture_fallback: true }, { skip_final_presentation: true }),
    ).toBe("final")
  })
  test("a round of a run that captures memory at the end is told to write none (but the verification memo)", () => {
    expect(memorySection([], "final")).toContain("write no memory file.")
    expect(memorySection([], "verification")).toContain("memory/short_term/verification_latest.md")
    expect(memorySection([])).not.toContain("write no memory file")
  })
})
