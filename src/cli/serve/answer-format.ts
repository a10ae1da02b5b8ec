/**
 * A JSON answer format of a request (`response_format`, `text.format`): what it asks and whether an answer keeps to it.
 *
 * Contract: `readAnswerFormat(given, field, api)` reads the format object of a
 * Chat Completions (`{type, json_schema: {name, schema, strict}}`) or
 * Responses (`{type, name, schema, strict}`) request: null for none or
 * `text`, a `json_object` or a `json_schema` format (its schema compiled by Ajv
 * for the draft its `$schema` names: 2020-12, 2019-09, else draft-07; `format`
 * is an annotation, not checked), or a
 * 400 naming the field. `answerProblem(text, format)` is null when `text`, trimmed
 * and with a Markdown code fence around it removed (`answerText`), is a JSON
 * object (`json_object`) or a JSON value the schema accepts (`json_schema`), else
 * what is wrong, in one line. `formatInstruction` is what the presenter is told.
 */
import Ajv, { type ValidateFunction } from "ajv"
import Ajv2019 from "ajv/dist/2019"
import Ajv2020 from "ajv/dist/2020"
import { badRequest, isObject, type WireError } from "./wire-error.ts"

export type AnswerFormat =
  | { readonly type: "json_object" }
  | {
      readonly type: "json_schema"
      readonly name: string
      readonly schema: Record<string, unknown>
      readonly strict: boolean
      readonly validate: ValidateFunction
    }

const compilers = new Map<string, Ajv>()
/** The validator of a schema's `$schema` draft (2020-12, 2019-09, else draft-07), made at the first such schema. */
const compiler = (schema: Record<string, unknown>): Ajv => {
  const draft = typeof schema.$schema === "string" ? (/2020-12|2019-09/.exec(schema.$schema)?.[0] ?? "07") : "07"
  const made = compilers.get(draft)
  if (made !== undefined) return made
  const options = { strict: false, validateFormats: false, allErrors: false }
  const fresh = draft === "2020-12" ? new Ajv2020(options) : draft === "2019-09" ? new Ajv2019(options) : new Ajv(options)
  compilers.set(draft, fresh)
  return fresh
}

export const readAnswerFormat = (given: unknown, field: string, api: "chat" | "responses"): AnswerFormat | null | WireError => {
  if (given === undefined || given === null) return null
  if (!isObject(given)) return badRequest(`${field} must be an object with a type`, field, "invalid_value")
  if (given.type === "text") return null
  if (given.type === "json_object") return { type: "json_object" }
  if (given.type !== "json_schema")
    return badRequest(
      `${field}.type ${JSON.stringify(given.type)} is not supported (text, json_object, json_schema)`,
      `${field}.type`,
      "invalid_value",
    )
  const spec = api === "chat" ? given.json_schema : given
  const at = api === "chat" ? `${field}.json_schema` : field
  if (!isObject(spec) || typeof spec.name !== "string" || spec.name === "")
    return badRequest(`${at}.name is required: a non-empty string`, `${at}.name`, "invalid_value")
  const schema = spec.schema ?? {}
  if (!isObject(schema)) return badRequest(`${at}.schema must be a JSON Schema object`, `${at}.schema`, "invalid_value")
  try {
    return { type: "json_schema", name: spec.name, schema, strict: spec.strict === true, validate: compiler(schema).compile(schema) }
  } catch (e) {
    return badRequest(
      `${at}.schema is not a valid JSON Schema: ${e instanceof Error ? e.message : String(e)}`,
      `${at}.schema`,
      "invalid_value",
    )
  }
}

/** The answer's JSON text: trimmed, and without a Markdown code fence around it. */
export const answerText = (text: string): string => {
  const trimmed = text.trim()
  const fenced = /^```[a-zA-Z]*\n([\s\S]*?)\n?```$/.exec(trimmed)
  return fenced ? fenced[1]!.trim() : trimmed
}

export const answerProblem = (text: string, format: AnswerFormat): string | null => {
  let value: unknown
  try {
    value = JSON.parse(answerText(text))
  } catch (e) {
    return `not valid JSON (${e instanceof Error ? e.message : String(e)})`
  }
  if (format.type === "json_object") return isObject(value) ? null : "valid JSON, but not a JSON object"
  if (format.validate(value)) return null
  const first = format.validate.errors?.[0]
  return `does not match the schema ${JSON.stringify(format.name)}: ${first ? `${first.instancePath || "the value"} ${first.message}` : "invalid"}`
}

/** What the presenter is told of the format, after its system message. */
export const formatInstruction = (format: AnswerFormat): string =>
  format.type === "json_object"
    ? "Give the final answer as a single JSON object, and nothing else: no prose, no code fence."
    : `Give the final answer as a single JSON value that matches this JSON Schema (${format.name}), and nothing else: no prose, no code fence.\n${JSON.stringify(format.schema)}`

/** What the presenter is told when its answer did not keep to the format, before it is asked once more. */
export const retryInstruction = (problem: string): string =>
  `That answer is ${problem}. Reply again with only the JSON the format asks for.`
