/**
 * A fast writer of plain data as YAML, or `undefined` when the data is not
 * plain enough (the caller then uses the `yaml` package's `stringify`).
 *
 * Contract: when `stringifyYamlSubset(value)` returns a text, it is the text
 * `yaml`'s `stringify(value)` returns with its default options, byte for byte
 * (block style, 2 spaces, sequences indented under their key). It gives up
 * on anything whose writing it does not know exactly: a string `yaml` would
 * fold (long), write as a block scalar (several lines), single-quote or escape
 * (`"`, `\`, control and other unusual characters), or mark (document markers),
 * a key that is not an identifier, a number written with an exponent, -0, a
 * non-finite number, `undefined`, a sequence directly in a sequence, a
 * top-level value that is not a non-empty mapping, and any object that is not
 * a plain object or array. An `execution_metadata.yaml` of 200 agents takes
 * it about 3 ms, `yaml` about 20.
 */

/** Thrown inside the writer when the value leaves the subset; never escapes. */
class OutOfSubset {}
const out = (): never => {
  throw new OutOfSubset()
}

/** Strings `yaml` may write otherwise than plain or simply double-quoted: controls, line breaks, separators, surrogates, BOM, and the rest past U+FFFD. */
const UNUSUAL = /[^\x20-\x7e\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]/
/** `yaml`'s test for a string that cannot be plain (stringifyString.js, plainString). */
const NOT_PLAIN = /^[\n\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]$/
const DOCUMENT_MARKER = /^(%|---|\.\.\.)/m
/** The core schema's tests of a plain scalar that is not a string (null, bool, int, float, in yaml's words), in one: `yaml` quotes a string that passes it. */
const NOT_STRING = new RegExp(
  [
    /^(?:~|[Nn]ull|NULL)?$/,
    /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/,
    /^0o[0-7]+$/,
    /^[-+]?[0-9]+$/,
    /^0x[0-9a-fA-F]+$/,
    /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/,
    /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/,
    /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/,
  ]
    .map((r) => `(?:${r.source})`)
    .join("|"),
)
const KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/
/** Far below where `yaml` folds a line (80 columns less the indentation, never under 21). */
const MAX_LINE = 70

const isPlainObject = (v: object): v is Record<string, unknown> => {
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

const str = (s: string, column: number): string => {
  if (column + s.length + 2 > MAX_LINE || UNUSUAL.test(s) || DOCUMENT_MARKER.test(s)) return out()
  if (!NOT_PLAIN.test(s) && !NOT_STRING.test(s)) return s
  // Quoted, double (no `"` in it), with nothing to escape (no `\`).
  return s.includes('"') || s.includes("\\") ? out() : `"${s}"`
}

const scalar = (v: unknown, column: number): string => {
  if (v === null) return "null"
  if (typeof v === "boolean") return v ? "true" : "false"
  if (typeof v === "number") return Number.isFinite(v) && !Object.is(v, -0) && /^-?[0-9]+(?:\.[0-9]+)?$/.test(String(v)) ? String(v) : out()
  if (typeof v === "string") return str(v, column)
  return out()
}

const key = (k: string): string => (KEY.test(k) && !NOT_STRING.test(k) && k.length < 40 ? k : out())

/** The lines of `v` after `prefix` (`key:` or `-`), each at `indent` spaces when it takes lines of its own. */
const entry = (prefix: string, v: unknown, indent: number, lines: Array<string>): void => {
  if (v === null || typeof v !== "object") {
    lines.push(`${prefix} ${scalar(v, prefix.length + 1)}`)
    return
  }
  if (Array.isArray(v)) {
    if (v.length === 0) lines.push(`${prefix} []`)
    else if (prefix.endsWith("-")) out()
    else lines.push(prefix), sequence(v, indent, lines)
    return
  }
  if (!isPlainObject(v)) return out()
  if (Object.keys(v).length === 0) lines.push(`${prefix} {}`)
  else if (prefix.endsWith("-")) {
    // `- key: value`, the mapping's other keys under its first.
    const start = lines.length
    mapping(v, indent, lines)
    lines[start] = `${prefix} ${lines[start]!.slice(indent)}`
  } else lines.push(prefix), mapping(v, indent, lines)
}

const mapping = (v: Record<string, unknown>, indent: number, lines: Array<string>): void => {
  const pad = " ".repeat(indent)
  for (const [k, item] of Object.entries(v)) entry(`${pad}${key(k)}:`, item, indent + 2, lines)
}

const sequence = (v: ReadonlyArray<unknown>, indent: number, lines: Array<string>): void => {
  const pad = " ".repeat(indent)
  for (let i = 0; i < v.length; i++) {
    if (!(i in v)) out()
    entry(`${pad}-`, v[i], indent + 2, lines)
  }
}

/** `yaml`'s `stringify(value)`, when `value` is a non-empty mapping of plain data; `undefined` otherwise. */
export const stringifyYamlSubset = (value: unknown): string | undefined => {
  if (value === null || typeof value !== "object" || Array.isArray(value) || !isPlainObject(value) || Object.keys(value).length === 0)
    return undefined
  try {
    const lines: Array<string> = []
    mapping(value, 0, lines)
    return `${lines.join("\n")}\n`
  } catch (e) {
    if (e instanceof OutOfSubset) return undefined
    throw e
  }
}
