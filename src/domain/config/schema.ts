/**
 * The building blocks of the config's schemas and of its problems.
 *
 * `file.ts` (the file as a whole) and `tools.ts` (an agent's tools
 * and provider settings) are made of these: optional keys that must be
 * written as they are, closed sets of strings, the number types, each with a
 * one-line message that names what was expected and what was found; a
 * `ConfigProblem` is one such message at a key's path. Pure.
 */
import { Schema } from "effect"
import { closest } from "../../lib/did-you-mean.ts"

export const opt = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** A closed set of strings whose error lists the choices and the value found, and the choice a typo away from it (`did-you-mean.ts`). */
export const oneOf = <const L extends ReadonlyArray<string>>(...values: L) =>
  Schema.Literal(...values).annotations({
    message: (issue) => {
      const near = typeof issue.actual === "string" ? closest(issue.actual, values) : null
      return {
        message: `Expected one of ${values.join(", ")}, found ${JSON.stringify(issue.actual)}${near !== null ? `; did you mean ${near}?` : ""}`,
        override: true,
      }
    },
  })

/** A finite number: YAML's .inf and an overflowing 1e400 are not numbers a run can use or log. */
export const FiniteNumber = Schema.Number.pipe(
  Schema.finite({ message: (issue) => `Expected a finite number, found ${String(issue.actual)}` }),
)
export const found = (issue: { readonly actual: unknown }) => `, found ${JSON.stringify(issue.actual)}`
export const PositiveNumber = FiniteNumber.pipe(Schema.positive({ message: (issue) => `Expected a number above 0${found(issue)}` }))
export const NonNegativeInt = FiniteNumber.pipe(
  Schema.int({ message: (issue) => `Expected a whole number${found(issue)}` }),
  Schema.nonNegative({ message: (issue) => `Expected a number of 0 or more${found(issue)}` }),
)
export const PositiveInt = FiniteNumber.pipe(
  Schema.int({ message: (issue) => `Expected a whole number${found(issue)}` }),
  Schema.positive({ message: (issue) => `Expected a number of 1 or more${found(issue)}` }),
)

/**
 * What a problem stops: absent, the config is invalid; `env`, an unset `${VAR}`, and
 * `key`, a missing API key (a run stops on them, `--validate` warns unless `--check-keys`);
 * `warning`, nothing (a key a run ignores).
 */
export type ProblemKind = "env" | "key" | "warning"

export interface ConfigProblem {
  /** Dotted path of the key, `agents[0].backend.type`; empty for the whole document. */
  readonly path: string
  readonly message: string
  /** What to write instead, when there is a likely fix (`did you mean skip_final_presentation?`). */
  readonly suggestion?: string
  readonly kind?: ProblemKind
}

export const formatProblem = (p: ConfigProblem): string =>
  `${p.path === "" ? "" : `${p.path}: `}${p.message}${p.suggestion !== undefined ? `; ${p.suggestion}` : ""}`

export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`), "")

export const valueAt = (doc: unknown, path: ReadonlyArray<PropertyKey>): unknown =>
  path.reduce<unknown>(
    (node, key) => (node !== null && typeof node === "object" ? (node as Record<PropertyKey, unknown>)[key] : undefined),
    doc,
  )

/** `doc` without the key at `path` (copies along the path; `doc` is not changed); an array element becomes undefined. */
export const deleteAt = (doc: unknown, path: ReadonlyArray<PropertyKey>): unknown => {
  if (path.length === 0 || doc === null || typeof doc !== "object") return doc
  const [key, ...rest] = path as [PropertyKey, ...Array<PropertyKey>]
  const copy = (Array.isArray(doc) ? [...doc] : { ...doc }) as Record<PropertyKey, unknown>
  if (rest.length > 0) copy[key] = deleteAt(copy[key], rest)
  else if (Array.isArray(copy)) copy[key] = undefined
  else delete copy[key]
  return copy
}

/** `doc` with the value at `path` replaced (copies along the path; `doc` is not changed). */
export const setAt = (doc: unknown, path: ReadonlyArray<PropertyKey>, value: unknown): unknown => {
  if (path.length === 0) return value
  if (doc === null || typeof doc !== "object") return doc
  const [key, ...rest] = path as [PropertyKey, ...Array<PropertyKey>]
  const copy = (Array.isArray(doc) ? [...doc] : { ...doc }) as Record<PropertyKey, unknown>
  copy[key] = setAt(copy[key], rest, value)
  return copy
}
