/**
 * The skills a run offers: the SKILL.md bundles found, copied into the log directory, as `skills_offered` records them.
 *
 * `findSkills(sources, logDir)` looks, in MassGen's order, in the skills
 * directory (`skills_directory`, made absolute from the working directory),
 * in `~/.agent/skills` (unless it is the same folder), and, with
 * `load_previous_session_skills`, in the earlier runs of the log root, newest
 * first (`log_<time>/final/<agent>/workspace/tasks/evolving_skill/SKILL.md`: the
 * skill a winner wrote). A bundle is a folder holding a SKILL.md whose
 * frontmatter is read by `domain/skills/frontmatter.ts`; one that is refused,
 * or whose name (case aside) was found first elsewhere, is `skipped` with why
 * in one line. Each skill offered is copied (`tree-copy.ts`: no link
 * followed, within the default workspace limits) to `skills/<dir>/` of the
 * log directory, which the file tools give agents read-only as
 * `.agent/skills/<dir>/`; its digest is its copy's SKILL.md's. `skills/` is
 * cleared first: a run stopped before its `skills_offered` finds them again.
 * MassGen's built-in skills are its own prose, not shipped: none is offered.
 *
 * Words: a *bundle* is a skill's folder; its *source* is where it was found.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { OfferedSkill, SkillLocation, SkippedSkill } from "../../domain/events/index.ts"
import { skillFrontmatter } from "../../domain/skills/frontmatter.ts"
import { hashText } from "../../lib/sha256.ts"
import { parseYamlSubset } from "../../lib/yaml-subset.ts"
import { copyTree } from "../tools/tree-copy.ts"

/** Where the copies are, relative to the log directory. */
export const SKILLS_DIR = "skills"

export interface SkillSources {
  /** `skills_directory`, absolute. */
  readonly project: string
  /** `~/.agent/skills`, absolute; null when there is no home. */
  readonly user: string | null
  /** The log root whose earlier runs' skills are offered (`load_previous_session_skills`); null: none. */
  readonly previousRuns: string | null
}

interface Found {
  readonly location: SkillLocation
  /** The bundle's folder. */
  readonly dir: string
  /** The bundle as messages name it. */
  readonly shown: string
}

const isDir = (p: string): boolean => {
  try {
    return statSync(p).isDirectory()
  } catch {
    return false
  }
}
const list = (dir: string): ReadonlyArray<string> => {
  try {
    return readdirSync(dir).sort()
  } catch {
    return []
  }
}
const real = (p: string): string => {
  try {
    return realpathSync(p)
  } catch {
    return p
  }
}

const bundlesIn = (root: string, location: SkillLocation, shownRoot: string): ReadonlyArray<Found> =>
  list(root).flatMap((name) => {
    const dir = nodePath.join(root, name)
    return isDir(dir) && existsSync(nodePath.join(dir, "SKILL.md")) ? [{ location, dir, shown: `${shownRoot}/${name}` }] : []
  })

/** The skills earlier runs' winners wrote, newest run first. */
const previousBundles = (logRoot: string, logDir: string): ReadonlyArray<Found> =>
  list(logRoot)
    .filter((name) => name.startsWith("log_") && real(nodePath.join(logRoot, name)) !== real(logDir))
    .reverse()
    .flatMap((run) =>
      list(nodePath.join(logRoot, run, "final")).flatMap((agent) => {
        const dir = nodePath.join(logRoot, run, "final", agent, "workspace", "tasks", "evolving_skill")
        return existsSync(nodePath.join(dir, "SKILL.md"))
          ? [{ location: "previous_session" as const, dir, shown: `${run}/final/${agent}/workspace/tasks/evolving_skill` }]
          : []
      }),
    )

/** A folder name for a skill's copy: its name in letters, digits, `.`, `_` and `-`, unique in the run. */
const copyName = (name: string, taken: Set<string>): string => {
  const base =
    name
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, "-")
      .replace(/^[-.]+/, "")
      .slice(0, 64) || "skill"
  let dir = base
  for (let n = 2; taken.has(dir); n++) dir = `${base}-${n}`
  taken.add(dir)
  return dir
}

/** YAML as MassGen reads a frontmatter block: the plain subset, else the `yaml` package (loaded for a scan only), else undefined. */
const yamlParser = async (): Promise<(block: string) => unknown> => {
  const { parse } = await import("yaml")
  return (block) => {
    const plain = parseYamlSubset(block)
    if (plain !== undefined) return plain
    try {
      return parse(block) ?? undefined
    } catch {
      return undefined
    }
  }
}

export interface SkillsFound {
  readonly skills: ReadonlyArray<OfferedSkill>
  readonly skipped: ReadonlyArray<SkippedSkill>
}

/** Finds the skills of `sources` and copies each into `logDir/skills/` (see the module's docstring). */
export const findSkills = (sources: SkillSources, logDir: string): Effect.Effect<SkillsFound> =>
  Effect.promise(async () => {
    const found: Array<Found> = [...bundlesIn(sources.project, "project", sources.project)]
    if (sources.user !== null && real(sources.user) !== real(sources.project))
      found.push(...bundlesIn(sources.user, "user", "~/.agent/skills"))
    if (sources.previousRuns !== null) found.push(...previousBundles(sources.previousRuns, logDir))
    const target = nodePath.join(logDir, SKILLS_DIR)
    rmSync(target, { recursive: true, force: true })
    const parse = await yamlParser()
    const skills: Array<OfferedSkill> = []
    const skipped: Array<SkippedSkill> = []
    const names = new Map<string, string>()
    const taken = new Set<string>()
    for (const f of found) {
      let text: string
      try {
        text = readFileSync(nodePath.join(f.dir, "SKILL.md"), "utf8")
      } catch (e) {
        skipped.push({ source: f.shown, reason: `its SKILL.md cannot be read (${(e as { code?: string }).code ?? "error"})` })
        continue
      }
      const meta = skillFrontmatter(text, parse)
      if ("problem" in meta) {
        skipped.push({ source: f.shown, reason: `SKILL.md: ${meta.problem}` })
        continue
      }
      const name = meta.name ?? nodePath.basename(f.dir)
      const first = names.get(name.toLowerCase())
      if (first !== undefined) {
        skipped.push({ source: f.shown, reason: `a skill named ${name} was found first (${first})` })
        continue
      }
      const dir = copyName(name, taken)
      try {
        const made = await copyTree(f.dir, nodePath.join(target, dir))
        const copied = readFileSync(nodePath.join(target, dir, "SKILL.md"))
        names.set(name.toLowerCase(), f.shown)
        skills.push({
          name,
          description: meta.description,
          location: f.location,
          path: `${SKILLS_DIR}/${dir}`,
          sha256: hashText(copied),
          files: made.files,
        })
      } catch (e) {
        rmSync(nodePath.join(target, dir), { recursive: true, force: true })
        skipped.push({ source: f.shown, reason: `it cannot be copied: ${e instanceof Error ? e.message : String(e)}` })
      }
    }
    return { skills, skipped }
  })

/** The sources of `use_skills`: `skills_directory` from `cwd` (as MassGen resolves it), `~/.agent/skills`, and the log root of `logDir`. */
export const skillSourcesOf = (
  setting: { readonly directory: string; readonly previousSessions: boolean },
  cwd: string,
  home: string | null,
  logDir: string,
): SkillSources => ({
  project: nodePath.resolve(
    cwd,
    setting.directory.startsWith("~/") && home !== null ? nodePath.join(home, setting.directory.slice(2)) : setting.directory,
  ),
  user: home === null ? null : nodePath.join(home, ".agent", "skills"),
  previousRuns: setting.previousSessions ? nodePath.dirname(nodePath.resolve(logDir)) : null,
})
