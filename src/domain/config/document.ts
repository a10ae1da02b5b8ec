/**
 * The problems of a config document as written, whatever the environment.
 *
 * `documentProblems(doc, unsupported)` finds, once per document: the keys the
 * schema does not know (a warning each, with the keys known there) and
 * MassGen's features massgen does not implement (`compat.ts`); what
 * MassGen's own validator refuses (an agent without `id`); and a
 * `logging_enabled: false` that is not honoured. `unknownKeys(raw)` is the
 * warnings of these, what a run prints and goes on. `rawAgents`, `field` and
 * `unsupportedAgentsOf` read the document before it is decoded. The unknown
 * keys come from a strict decode (excess keys refused), which a document that
 * `surelyNoExcessKeys` clears is spared. Pure.
 */
import { Either, ParseResult, Schema, type SchemaAST } from "effect"
import { featureProblems, UNSUPPORTED_BACKENDS, type UnknownKey } from "./compat.ts"
import { ConfigFile } from "./file.ts"
import { isPythonToolEntry } from "./python-tools.ts"
import { type ConfigProblem, formatPath, valueAt } from "./schema.ts"

/** The raw agent entries, with the path each is at (`agents[1]`, or `agent`). */
export const rawAgents = (raw: Record<string, unknown>): ReadonlyArray<readonly [string, unknown]> =>
  Array.isArray(raw.agents) ? raw.agents.map((a, i) => [`agents[${i}]`, a] as const) : raw.agent !== undefined ? [["agent", raw.agent]] : []

/** `key` of `value` when it is a mapping, else undefined. */
export const field = (value: unknown, key: string): unknown =>
  value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined

/** Where the agents of backends massgen does not support are (`agents[2]`, ...). */
export const unsupportedAgentsOf = (doc: Record<string, unknown>): ReadonlyArray<string> =>
  rawAgents(doc)
    .filter(([, a]) => UNSUPPORTED_BACKENDS[String(field(field(a, "backend"), "type"))] !== undefined)
    .map(([at]) => at)

/** What MassGen's validator refuses that the schema lets through: an agent without `id`, a `chatcompletion` agent without `model`. */
const massgenProblems = (doc: Record<string, unknown>): ReadonlyArray<ConfigProblem> =>
  rawAgents(doc).flatMap(([at, entry]): ReadonlyArray<ConfigProblem> => {
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return []
    const out: Array<ConfigProblem> = []
    if (field(entry, "id") === undefined)
      out.push({ path: `${at}.id`, message: "Expected an id (MassGen requires one), found none", suggestion: `add id: "agent_a"` })
    const backend = field(entry, "backend")
    if (field(backend, "type") === "chatcompletion" && field(backend, "model") === undefined) {
      out.push({
        path: `${at}.backend.model`,
        message: "Expected a model for type chatcompletion, found none",
        suggestion: `add model: "model-name"`,
      })
    }
    return out
  })

const decodeStrict = Schema.decodeUnknownEither(ConfigFile, { errors: "all", onExcessProperty: "error" })

/** Each mapping schema's fields by name, made once per schema (a config of 200 agents asks 400 times). */
const propertyMaps = new WeakMap<SchemaAST.TypeLiteral, ReadonlyMap<PropertyKey, SchemaAST.AST>>()
const propertiesOf = (ast: SchemaAST.TypeLiteral): ReadonlyMap<PropertyKey, SchemaAST.AST> => {
  let map = propertyMaps.get(ast)
  if (map === undefined) propertyMaps.set(ast, (map = new Map(ast.propertySignatures.map((p) => [p.name, p.type]))))
  return map
}

/**
 * Whether decoding `value` as `ast` with excess properties refused is sure to
 * find none (false: it may find some). A walk of the value beside the schema
 * that answers true only where it follows the decoder exactly: mappings
 * (checked key by key, string-keyed records through their values), optional
 * fields, refinements, arrays; false at anything else that holds a mapping
 * or a list (a union of several members), and at every transformation or
 * recursion, which may make a mapping of anything.
 */
export const surelyNoExcessKeys = (ast: SchemaAST.AST, value: unknown): boolean => {
  const scalar = value === null || typeof value !== "object"
  switch (ast._tag) {
    case "Refinement":
      return surelyNoExcessKeys(ast.from, value)
    case "Union": {
      if (scalar) return ast.types.every((t) => surelyNoExcessKeys(t, value))
      const members = ast.types.filter((t) => t._tag !== "UndefinedKeyword")
      return members.length === 1 && surelyNoExcessKeys(members[0]!, value)
    }
    case "TupleType":
      if (!Array.isArray(value)) return true
      return ast.elements.length === 0 && ast.rest.length === 1 && value.every((item) => surelyNoExcessKeys(ast.rest[0]!.type, item))
    case "TypeLiteral": {
      if (scalar || Array.isArray(value)) return true
      const record = value as Record<PropertyKey, unknown>
      const properties = propertiesOf(ast)
      const index = ast.indexSignatures
      if (index.length > 1 || (index.length === 1 && index[0]!.parameter._tag !== "StringKeyword")) return false
      return Reflect.ownKeys(record).every((key) => {
        const type = properties.get(key) ?? (typeof key === "string" ? index[0]?.type : undefined)
        return type !== undefined && surelyNoExcessKeys(type, record[key])
      })
    }
    // A transformation may make a mapping of a scalar (parseJson); these are not followed.
    case "Suspend":
    case "Transformation":
    case "Declaration":
      return false
    default:
      // Keywords, literals, enums: no mapping is taken apart, none is made.
      return true
  }
}

/** The keys the config schema does not know, each with the keys it knows there. Script steps are left out (their union would report the keys of the other step kinds). */
const unknownKeyList = (raw: unknown): ReadonlyArray<UnknownKey> => {
  // The strict decode costs most of a config's reading (each key of each mapping is checked as a union of the known ones): a document the walk clears has none.
  if (surelyNoExcessKeys(ConfigFile.ast, raw)) return []
  const decoded = decodeStrict(raw)
  if (Either.isRight(decoded)) return []
  const seen = new Set<string>()
  return ParseResult.ArrayFormatter.formatErrorSync(decoded.left).flatMap((issue) => {
    const path = formatPath(issue.path)
    // MassGen's Python custom tools have keys of their own (`python-tools.ts` checks them).
    if (
      issue._tag !== "Unexpected" ||
      seen.has(path) ||
      /\.script\[/.test(path) ||
      isPythonToolEntry(valueAt(raw, issue.path.slice(0, -1)))
    )
      return []
    seen.add(path)
    const expected = /expected: (.*)$/.exec(issue.message)?.[1]?.replace(/"/g, "").split(" | ") ?? []
    return [{ path, known: expected }]
  })
}

/** What `documentProblems` found of each document: a run asks twice (its config, then its warnings). */
const documentProblemsOf = new WeakMap<object, ReadonlyArray<ConfigProblem>>()

/**
 * The problems of the document as written, whatever the environment: its
 * unknown keys and MassGen features (but under the agents of `unsupported`
 * backends, which are problems of their own), and what it says of logging.
 * Every warning of `analyzeConfig` is one of these.
 */
export const documentProblems = (doc: Record<string, unknown>, unsupported: ReadonlyArray<string>): ReadonlyArray<ConfigProblem> => {
  const known = documentProblemsOf.get(doc)
  if (known !== undefined) return known
  const unknown = unknownKeyList(doc).filter((k) => !unsupported.some((at) => k.path.startsWith(`${at}.`)))
  const problems: Array<ConfigProblem> = [...featureProblems(unknown), ...massgenProblems(doc)]
  for (const section of ["ui", "display"] as const) {
    if (field(doc[section], "logging_enabled") === false) {
      problems.push({
        path: `${section}.logging_enabled`,
        message:
          "false is not honoured: massgen always writes the run's log directory (events.jsonl is what status, resume and replay read)",
        kind: "warning",
      })
    }
  }
  documentProblemsOf.set(doc, problems)
  return problems
}

/**
 * The warnings a run prints and goes on: keys the config does not know, which
 * a run ignores (most often a typo, `skip_final_presentaton`: each names the
 * key it may stand for), and MassGen features that are ignored. MassGen
 * features that are refused are problems of `decodeConfig`. The same as the
 * warnings of `analyzeConfig(raw, env)`, whatever `env`; found once per
 * document, which `analyzeConfig` reads too.
 */
export const unknownKeys = (raw: unknown): ReadonlyArray<ConfigProblem> => {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return []
  const doc = raw as Record<string, unknown>
  return documentProblems(doc, unsupportedAgentsOf(doc)).filter((p) => p.kind === "warning")
}
