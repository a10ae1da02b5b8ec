/**
 * `${VAR}` references in the config, and what of the document may be shown.
 *
 * `expandEnv(value, env, problems)` expands every `${VAR}` in the strings of a
 * parsed document (MCP entries are left to their servers, `mcp.ts`),
 * noting each variable that is not set. `shownMessage` is a problem's message
 * as it may be shown: a value that holds a reference as written, no value of a
 * variable it names, no URL credential (`safe-url.ts`). `maskSecrets(raw)` is
 * the document as it may be logged (`execution_metadata.yaml`). Pure: the
 * environment comes in as a map.
 *
 * Words: a *whole reference* is a value that is one `${VAR}` and nothing else;
 * `scalarOf` reads its expansion as a number or a boolean where one is expected.
 */
import { maskUrlCredentials } from "../../lib/safe-url.ts"
import { type ConfigProblem, formatPath } from "./schema.ts"

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/** Expands `${VAR}` in every string of `value`, noting each variable that is not set. */
export const expandEnv = (
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  problems: Array<ConfigProblem>,
  path: ReadonlyArray<PropertyKey> = [],
): unknown => {
  // MCP entries are expanded when their server starts, for the agents that use them (`domain/config/mcp.ts`).
  if (path.at(-1) === "mcp_servers" && path.at(-2) === "backend") return value
  if (typeof value === "string") {
    return value.replace(ENV_REF, (_, name: string) => {
      const found = env[name]
      if (found === undefined) {
        problems.push({ path: formatPath(path), message: `environment variable ${name} is not set` })
        return ""
      }
      return found
    })
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, problems, [...path, i]))
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, problems, [...path, k])]))
  }
  return value
}

/** Whether `value` (a string, or any string within it) holds a `${VAR}` reference. */
const holdsReference = (value: unknown): boolean =>
  typeof value === "string"
    ? new RegExp(ENV_REF.source).test(value)
    : value !== null && typeof value === "object" && Object.values(value).some(holdsReference)

/**
 * What a message about `written` (a part of the document as written) may not
 * show, and what it shows instead: each expanded string that holds a reference,
 * quoted (the string as written, quoted), and the value of each variable named
 * (`${NAME}`), longest first.
 */
const hiddenValues = (written: unknown, env: Readonly<Record<string, string | undefined>>): ReadonlyArray<readonly [string, string]> => {
  const pairs: Array<readonly [string, string]> = []
  const visit = (value: unknown): void => {
    if (typeof value === "string") {
      if (!holdsReference(value)) return
      pairs.push([JSON.stringify(expandEnv(value, env, [])), JSON.stringify(value)])
      for (const [, name] of value.matchAll(ENV_REF)) {
        const found = env[name!]
        if (found !== undefined && found.length >= MIN_HIDDEN_CHARS) pairs.push([found, `\${${name}}`])
      }
    } else if (value !== null && typeof value === "object") Object.values(value).forEach(visit)
  }
  visit(written)
  return pairs.sort((a, b) => b[0].length - a[0].length)
}

/** Variable values shorter than this (`9`, `true`) are only hidden where the message says what it found. */
const MIN_HIDDEN_CHARS = 4

/**
 * A problem's message as it may be shown: what was found, as written when it
 * holds a reference; no value of a variable it names; no URL credential.
 */
export const shownMessage = (message: string, written: unknown, env: Readonly<Record<string, string | undefined>>): string => {
  if (!holdsReference(written)) return maskUrlCredentials(message)
  let out = message.replace(/, found [\s\S]*$/, `, found ${isWholeReference(written) ? String(written) : JSON.stringify(written)}`)
  for (const [value, shown] of hiddenValues(written, env)) out = out.split(value).join(shown)
  return maskUrlCredentials(out)
}

/** Whether `value` is one whole `${VAR}` reference. */
export const isWholeReference = (value: unknown): boolean => typeof value === "string" && /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value)

/** A number or a boolean when `value` is the text of one (as YAML would read it unquoted), else `value`. */
export const scalarOf = (value: unknown): unknown => {
  if (typeof value !== "string") return value
  const text = value.trim()
  if (text === "true" || text === "false") return text === "true"
  return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text) ? Number(text) : value
}

const SECRET_KEY = /(api_?key|token|secret|password|authorization)/i

/** The raw config as it may be logged: literal secrets become `***`, and URL credentials too; `${VAR}` references stay. */
export const maskSecrets = (value: unknown, key = ""): unknown => {
  if (typeof value === "string") return SECRET_KEY.test(key) && !isWholeReference(value) ? "***" : maskUrlCredentials(value)
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, key))
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, k)]))
  }
  return value
}
