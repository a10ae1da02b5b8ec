/**
 * A fast reader of the plain YAML most configs are written in, or `undefined`
 * when the text is not that plain (the caller then parses it with the `yaml`
 * package, whose result and errors stay the reference).
 *
 * Contract: when `parseYamlSubset(text)` returns a value, it is the value the
 * `yaml` package's `parse(text)` returns (YAML 1.2 core schema): same keys in
 * the same order, same scalars. It gives up (`undefined`) on anything it does
 * not read exactly as `yaml` does, rather than guess: anchors, aliases, merge
 * keys, tags, directives, several documents, block scalars (`|`, `>`),
 * multi-line scalars or flow collections, quoted or complex keys, keys that
 * are not identifiers or that the core schema reads as null or a boolean, a
 * duplicate key (which `yaml` refuses), tabs, carriage returns, control
 * characters, escapes other than `\" \\ \n \t \/`, scalars that could be
 * read as octal, hex or special floats, flow collections nested more than
 * `MAX_FLOW_DEPTH` deep, and every syntax error. In the compiled
 * binary it reads a 200-agent config in about 3 ms, where `yaml` takes 50.
 *
 * Words: *plain scalar* is YAML's unquoted scalar; *flow* is `{ }` / `[ ]`.
 */

/** Thrown inside the reader when the text leaves the subset; never escapes. */
class OutOfSubset {}
const out = (): never => {
  throw new OutOfSubset()
}

interface Line {
  readonly indent: number
  readonly text: string
}

const KEY = /^([A-Za-z_][A-Za-z0-9_-]*):(?: |$)/
const FLOW_KEY = /^([A-Za-z_][A-Za-z0-9_-]*): /
/** Keys the core schema reads as null or a boolean (their JS key is then not the text), and the prototype's. */
const RESERVED_KEYS = new Set(["null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "__proto__"])
const INT = /^-?[0-9]+$/
const FLOAT = /^-?(?:[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/
/** What a plain scalar may start with here: a letter, a digit, `_`, `/`, `(`, `$`, or `-` before a digit. */
const PLAIN_START = /^(?:[A-Za-z0-9_/($]|-[0-9])/
/** Characters `yaml` may read in ways this reader does not: controls, tabs, CR, NEL, line/paragraph separators, BOM. */
const UNSAFE_CHARS = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]/

const newKey = (obj: Record<string, unknown>, key: string): string => {
  if (RESERVED_KEYS.has(key) || Object.hasOwn(obj, key)) out()
  return key
}

/** The value of a plain scalar under the core schema; gives up on the forms it does not resolve exactly as `yaml`. */
const resolvePlain = (s: string): unknown => {
  if (s === "" || !PLAIN_START.test(s) || s.includes("#") || s.includes(": ") || s.endsWith(":")) return out()
  switch (s) {
    case "null":
    case "Null":
    case "NULL":
      return null
    case "true":
    case "True":
    case "TRUE":
      return true
    case "false":
    case "False":
    case "FALSE":
      return false
  }
  if (/^0[oxOX]/.test(s)) return out()
  // As the core schema's int and float resolve them.
  if (INT.test(s)) return Number.parseInt(s, 10)
  if (FLOAT.test(s)) return Number.parseFloat(s)
  return s
}

/** A quoted scalar starting at `s[i]`: its value and the index after its closing quote. */
const quoted = (s: string, i: number): [string, number] => {
  const q = s[i]
  let value = ""
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j]!
    if (q === "'") {
      if (c !== "'") value += c
      else if (s[j + 1] === "'") (value += "'"), j++
      else return [value, j + 1]
    } else if (c === '"') return [value, j + 1]
    else if (c === "\\") {
      const e = s[++j]
      if (e === '"' || e === "\\" || e === "/") value += e
      else if (e === "n") value += "\n"
      else if (e === "t") value += "\t"
      else out()
    } else value += c
  }
  return out()
}

/** Without its trailing spaces (YAML's white space here: tabs are out of the subset, other Unicode spaces are content). */
const trimSpacesEnd = (s: string): string => {
  // A loop, not / +$/: that regex is quadratic on a long run of spaces before the end.
  let end = s.length
  while (end > 0 && s.charCodeAt(end - 1) === 32) end--
  return s.slice(0, end)
}
const trimSpacesStart = (s: string): string => s.replace(/^ +/, "")

const skipSpaces = (s: string, i: number): number => {
  while (s[i] === " ") i++
  return i
}

/** Deeper flow collections are left to `yaml` (and to the caller's depth limit), so this reader never runs out of stack. */
const MAX_FLOW_DEPTH = 64

/** A flow node starting at `s[i]`, `depth` collections deep: its value and the index after it. */
const flowNode = (s: string, i: number, depth = 0): [unknown, number] => {
  const c = s[i]
  if (c === '"' || c === "'") return quoted(s, i)
  if (c === "{" || c === "[") {
    if (depth >= MAX_FLOW_DEPTH) return out()
    const close = c === "{" ? "}" : "]"
    const map: Record<string, unknown> = {}
    const seq: Array<unknown> = []
    let j = skipSpaces(s, i + 1)
    if (s[j] === close) return [c === "{" ? map : seq, j + 1]
    for (;;) {
      if (c === "{") {
        const m = FLOW_KEY.exec(s.slice(j))
        if (m === null) return out()
        const key = newKey(map, m[1]!)
        const [value, next] = flowNode(s, skipSpaces(s, j + m[0].length), depth + 1)
        map[key] = value
        j = next
      } else {
        const [value, next] = flowNode(s, j, depth + 1)
        seq.push(value)
        j = next
      }
      j = skipSpaces(s, j)
      if (s[j] === close) return [c === "{" ? map : seq, j + 1]
      if (s[j] !== ",") return out()
      j = skipSpaces(s, j + 1)
      // A trailing comma, or one with nothing after it.
      if (s[j] === close || s[j] === "," || j >= s.length) return out()
    }
  }
  let j = i
  while (j < s.length && !",[]{}:#".includes(s[j]!)) j++
  return [resolvePlain(trimSpacesEnd(s.slice(i, j))), j]
}

/** The value written after `key: ` or `- ` on one line (a comment may follow it). */
const inlineValue = (s: string): unknown => {
  const c = s[0]
  if (c === '"' || c === "'" || c === "{" || c === "[") {
    const [value, next] = flowNode(s, 0)
    const rest = s.slice(next)
    return rest === "" || /^ +#/.test(rest) ? value : out()
  }
  const comment = s.indexOf(" #")
  return resolvePlain(trimSpacesEnd(comment === -1 ? s : s.slice(0, comment)))
}

const isItem = (text: string): boolean => text === "-" || text.startsWith("- ")
const isEmptyValue = (rest: string): boolean => rest === "" || rest.startsWith("#")

class Reader {
  pos = 0
  constructor(readonly lines: Array<Line>) {}

  node(): unknown {
    const line = this.lines[this.pos]!
    return isItem(line.text) ? this.sequence(line.indent) : this.mapping(line.indent)
  }

  /** The value of a key or item that ends its line: the block below it, deeper than `indent` (a sequence may be at `indent` under a key), or null. */
  nested(indent: number, seqAtIndent: boolean): unknown {
    const next = this.lines[this.pos]
    if (next === undefined) return null
    if (next.indent > indent || (seqAtIndent && next.indent === indent && isItem(next.text))) return this.node()
    return null
  }

  /** After a value on its own line, no deeper line may follow (it would continue the scalar, or be an error). */
  endOfValue(indent: number): void {
    const next = this.lines[this.pos]
    if (next !== undefined && next.indent > indent) out()
  }

  mapping(indent: number): Record<string, unknown> {
    const map: Record<string, unknown> = {}
    while (this.pos < this.lines.length && this.lines[this.pos]!.indent === indent) {
      const { text } = this.lines[this.pos]!
      const m = KEY.exec(text)
      if (m === null) return out()
      const key = newKey(map, m[1]!)
      const rest = trimSpacesStart(text.slice(m[0].length))
      this.pos++
      if (isEmptyValue(rest)) map[key] = this.nested(indent, true)
      else {
        map[key] = inlineValue(rest)
        this.endOfValue(indent)
      }
    }
    return map
  }

  sequence(indent: number): Array<unknown> {
    const seq: Array<unknown> = []
    while (this.pos < this.lines.length && this.lines[this.pos]!.indent === indent && isItem(this.lines[this.pos]!.text)) {
      const { text } = this.lines[this.pos]!
      const rest = trimSpacesStart(text.slice(1))
      if (isEmptyValue(rest)) {
        this.pos++
        seq.push(this.nested(indent, false))
      } else if (KEY.test(rest)) {
        // `- key: value`: a mapping whose keys are in the column of its first one.
        this.lines[this.pos] = { indent: indent + text.length - rest.length, text: rest }
        seq.push(this.mapping(indent + text.length - rest.length))
      } else if (isItem(rest)) return out()
      else {
        this.pos++
        seq.push(inlineValue(rest))
        this.endOfValue(indent)
      }
    }
    return seq
  }
}

/** The value `yaml`'s `parse(text)` gives, when `text` is in the plain subset; `undefined` otherwise. */
export const parseYamlSubset = (text: string): unknown => {
  if (UNSAFE_CHARS.test(text)) return undefined
  const lines: Array<Line> = []
  for (const raw of text.split("\n")) {
    const body = trimSpacesStart(raw)
    if (body === "" || body.startsWith("#")) continue
    lines.push({ indent: raw.length - body.length, text: trimSpacesEnd(body) })
  }
  if (lines.length === 0) return undefined
  try {
    const reader = new Reader(lines)
    const value = reader.node()
    return reader.pos === lines.length ? value : undefined
  } catch (e) {
    if (e instanceof OutOfSubset) return undefined
    throw e
  }
}
