/**
 * Permission rules: MassGen's `action(target)` strings, read and matched.
 *
 * A rule is `action(pattern)` or a bare `action` (any target), where the
 * action is one of `ACTIONS` or `*` (any action) and the pattern a glob
 * matched against the whole target, case-sensitive: `*` any run of characters
 * (`/` too, as Python's `fnmatch`), `?` one character, `[abc]`/`[!abc]` a
 * class; every other character stands for itself. `parseRule` gives the rule
 * or the one-line reason it is refused (an unknown action is refused, where
 * MassGen warns and keeps a rule that can never match). A `RuleSet` holds
 * the rules of every scope (role, run, agent) by verdict; `ROLES` are
 * MassGen's role presets. Pure; `globMatcher` never throws.
 *
 * Words: a rule's *verdict* is `allow`, `ask` or `deny`; its *text* is the
 * rule as written, which the ledger names.
 */

export const ACTIONS = ["command", "read_file", "write_file", "read_url", "mcp"] as const
export type Action = (typeof ACTIONS)[number]

export const VERDICTS = ["deny", "allow", "ask"] as const
export type Verdict = (typeof VERDICTS)[number]

export interface Rule {
  readonly text: string
  readonly verdict: Verdict
  readonly action: Action | "*"
  readonly pattern: string
  readonly matches: (target: string) => boolean
}

export interface RuleSet {
  readonly deny: ReadonlyArray<Rule>
  readonly allow: ReadonlyArray<Rule>
  readonly ask: ReadonlyArray<Rule>
}

export const EMPTY_RULES: RuleSet = { deny: [], allow: [], ask: [] }

const escape = (c: string): string => c.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&")

/** The matcher of a glob (`fnmatch` rules, case-sensitive, over the whole text). */
export const globMatcher = (pattern: string): ((text: string) => boolean) => {
  if (pattern === "*") return () => true
  let source = ""
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === "*") source += "[\\s\\S]*"
    else if (c === "?") source += "[\\s\\S]"
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 2)
      if (end === -1) {
        source += "\\["
        continue
      }
      let body = pattern.slice(i + 1, end)
      const negated = body.startsWith("!") || body.startsWith("^")
      if (negated) body = body.slice(1)
      source += `[${negated ? "^" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`
      i = end
    } else source += escape(c)
  }
  try {
    const re = new RegExp(`^${source}$`, "u")
    return (text) => re.test(text)
  } catch {
    // A class no regular expression takes (`[z-a]`): the pattern stands for its own text.
    return (text) => text === pattern
  }
}

const RULE = /^\s*([A-Za-z_*][\w*]*)\s*(?:\(([\s\S]*)\)\s*)?$/

/** The rule `text` of `verdict`, or why it is refused. */
export const parseRule = (text: string, verdict: Verdict): Rule | string => {
  const m = RULE.exec(text)
  if (m === null) return `${JSON.stringify(text)} is not a rule: write action(pattern), e.g. command(rm *) or write_file(/etc/*)`
  const action = m[1]!
  if (action !== "*" && !(ACTIONS as ReadonlyArray<string>).includes(action))
    return `${JSON.stringify(text)}: unknown action ${action} (known: ${ACTIONS.join(", ")}, *)`
  const pattern = m[2] ?? "*"
  return { text, verdict, action: action as Action | "*", pattern, matches: globMatcher(pattern) }
}

/** The rules of `lists` (each already checked by `parseRule`), by verdict; a rule that does not parse is left out. */
export const ruleSetOf = (lists: { readonly [V in Verdict]?: ReadonlyArray<string> }): RuleSet => {
  const of = (v: Verdict) => (lists[v] ?? []).map((t) => parseRule(t, v)).filter((r): r is Rule => typeof r !== "string")
  return { deny: of("deny"), allow: of("allow"), ask: of("ask") }
}

/** Scopes merged by verdict: every deny of every scope is read before any allow, and every allow before any ask. */
export const mergeRules = (sets: ReadonlyArray<RuleSet>): RuleSet => ({
  deny: sets.flatMap((s) => s.deny),
  allow: sets.flatMap((s) => s.allow),
  ask: sets.flatMap((s) => s.ask),
})

export const ROLE_NAMES = ["read-only", "researcher", "read-write", "implementer"] as const
export type Role = (typeof ROLE_NAMES)[number]

const READ_ONLY = { deny: ["write_file(*)", "command(*)"], ask: ["read_url(*)"], allow: ["read_file(*)"] }

/** MassGen's role presets: `read-only` (and its other name `researcher`) reads and never writes or runs; the others add nothing. */
export const ROLES: Readonly<Record<Role, RuleSet>> = {
  "read-only": ruleSetOf(READ_ONLY),
  researcher: ruleSetOf(READ_ONLY),
  "read-write": EMPTY_RULES,
  implementer: EMPTY_RULES,
}
