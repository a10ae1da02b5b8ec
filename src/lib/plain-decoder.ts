/**
 * Plain decoders: a Schema's decoder compiled from its AST into plain checks
 * that build the same output, for the hot path of reading a log.
 *
 * Contract: `plainDecoder(schema)` is null when the schema's AST holds a node
 * it does not follow (a transformation, such as a field with a default; a
 * declaration; an annotation that changes parsing; a union whose members can
 * take the same kind of value); else a function that, for any input, returns
 * either exactly what `Schema.decodeUnknownEither(schema)` gives on the right
 * (an equal value, its keys in the order the decoder writes them: an array,
 * or an object with exactly the struct's fields in their order, whose parts
 * all decode to themselves is given back as it is, else a fresh one), or
 * `UNDECIDED`, for an input the Schema decoder rejects. Callers still take an
 * `UNDECIDED` input to the Schema decoder, which judges it: the plain decoder
 * only saves work on the inputs that decode. It may throw on input nested too
 * deep, as the Schema decoder does. The definitions stay the Schema's:
 * nothing here names an event or a field. A struct's decoder is one function
 * generated from its fields (`new Function`, the field names written as JSON
 * strings): the hot path reads each field once and builds its output as one
 * object literal.
 *
 * `plainValidator(schema)` is the same for `Schema.is(schema)`: compiled from
 * the schema's type side (`AST.typeAST`, where a field with a default is a
 * plain required field), in *check* mode, which builds nothing and reads
 * required fields exactly, as `Schema.is` does (an own key, not one inherited).
 * It says true only where `Schema.is` does; callers may still ask `Schema.is`
 * of a value it says false of, as they take an undecided input to the Schema decoder.
 *
 * Words: *undecided*, an input the plain decoder leaves to the Schema decoder.
 */
import { SchemaAST as AST, Option, type Schema } from "effect"

export const UNDECIDED: unique symbol = Symbol("undecided")
type Plain = (input: unknown) => unknown

/** What a compilation keeps: its compiled nodes, and whether it checks (builds nothing, reads required fields exactly) or decodes. */
interface Compiling {
  readonly memo: Map<AST.AST, Plain>
  readonly check: boolean
}

/**
 * One compilation for all decoders, one for all validators: a node the schemas share (a time, an id, a
 * counter) is compiled once, and what its refinements remember serves every schema that holds it.
 */
const DECODING: Compiling = { memo: new Map(), check: false }
const CHECKING: Compiling = { memo: new Map(), check: true }

/** How many verdicts on strings a refinement remembers before it forgets them all. */
const REMEMBERED = 4096

/** Thrown while compiling: the AST holds a node this does not follow. */
class Unsupported {}

const changesParsing = (ast: AST.AST): boolean =>
  Option.isSome(AST.getParseOptionsAnnotation(ast)) || Option.isSome(AST.getDecodingFallbackAnnotation(ast))

const compile = (ast: AST.AST, c: Compiling): Plain => {
  const known = c.memo.get(ast)
  if (known !== undefined) return known
  if (changesParsing(ast)) throw new Unsupported()
  const plain = compileNode(ast, c)
  c.memo.set(ast, plain)
  return plain
}

const literalUnion = (ast: AST.Union): Set<AST.LiteralValue> | null => {
  const values = new Set<AST.LiteralValue>()
  for (const member of ast.types) {
    if (member._tag !== "Literal" || changesParsing(member)) return null
    values.add(member.literal)
  }
  return values
}

/** The kinds of JavaScript value (`typeof`, with null and arrays apart) an AST can take. */
const kinds = (ast: AST.AST, seen: Set<AST.AST> = new Set()): ReadonlyArray<string> => {
  if (seen.has(ast)) throw new Unsupported()
  seen.add(ast)
  switch (ast._tag) {
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
      return [ast._tag.replace("Keyword", "").toLowerCase()]
    case "UndefinedKeyword":
      return ["undefined"]
    case "Literal":
      return [ast.literal === null ? "null" : typeof ast.literal]
    case "Refinement":
      return kinds(ast.from, seen)
    case "TupleType":
      return ["array"]
    case "TypeLiteral":
      return ["object"]
    case "Union":
      return ast.types.flatMap((member) => kinds(member, seen))
    case "Suspend":
      return kinds(ast.f(), seen)
    default:
      throw new Unsupported()
  }
}

/** The members of a union, when no two can take the same kind of value. */
const disjoint = (ast: AST.Union): ReadonlyArray<AST.AST> => {
  const taken = new Set<string>()
  for (const member of ast.types) {
    for (const kind of new Set(kinds(member))) {
      if (taken.has(kind)) throw new Unsupported()
      taken.add(kind)
    }
  }
  return ast.types
}

const compileNode = (ast: AST.AST, c: Compiling): Plain => {
  switch (ast._tag) {
    case "StringKeyword":
      return (u) => (typeof u === "string" ? u : UNDECIDED)
    case "NumberKeyword":
      return (u) => (typeof u === "number" ? u : UNDECIDED)
    case "BooleanKeyword":
      return (u) => (typeof u === "boolean" ? u : UNDECIDED)
    case "UndefinedKeyword":
      return (u) => (u === undefined ? u : UNDECIDED)
    case "Literal": {
      const literal = ast.literal
      return (u) => (u === literal ? u : UNDECIDED)
    }
    case "Refinement": {
      // A chain of refinements of a string or a number is one check: the kind, then each filter, innermost first.
      const chain: Array<AST.Refinement> = [ast]
      let base: AST.AST = ast.from
      while (base._tag === "Refinement") {
        if (changesParsing(base)) throw new Unsupported()
        chain.unshift(base)
        base = base.from
      }
      const kind = changesParsing(base) ? null : base._tag === "StringKeyword" ? "string" : base._tag === "NumberKeyword" ? "number" : null
      const from = kind === null ? compile(ast.from, c) : null
      const filters = kind === null ? [ast] : chain
      const passes = (a: unknown): boolean => {
        for (const r of filters) if (Option.isSome(r.filter(a, AST.defaultParseOption, r))) return false
        return true
      }
      // A filter is a pure function of its input: its verdicts on values that repeat (ids, labels, rounds) are
      // remembered; on values that do not, remembering costs more than it saves, and stops.
      const verdicts = new Map<string | number, boolean>()
      let remembering = true
      let asked = 0
      let hits = 0
      return (u) => {
        const a = from === null ? (typeof u === kind ? u : UNDECIDED) : from(u)
        if (a === UNDECIDED) return UNDECIDED
        // A map takes -0 for 0: -0 is not remembered, as a filter may tell them apart.
        if (!remembering || (typeof a !== "string" && (typeof a !== "number" || (a === 0 && 1 / a < 0)))) return passes(a) ? a : UNDECIDED
        let verdict = verdicts.get(a)
        asked += 1
        if (verdict === undefined) {
          verdict = passes(a)
          if (verdicts.size >= REMEMBERED) verdicts.clear()
          verdicts.set(a, verdict)
        } else hits += 1
        if (asked === REMEMBERED) {
          remembering = hits * 2 > asked
          if (!remembering) verdicts.clear()
          asked = hits = 0
        }
        return verdict ? a : UNDECIDED
      }
    }
    case "Union": {
      const literals = literalUnion(ast)
      if (literals !== null) return (u) => (literals.has(u as AST.LiteralValue) ? u : UNDECIDED)
      // Of members that take disjoint kinds of values, at most one fits: the one the Schema decoder picks.
      // A literal member (null, mostly) is one comparison, before the others are asked in turn.
      const isLiteral = (member: AST.AST): member is AST.Literal => member._tag === "Literal" && !changesParsing(member)
      const values = disjoint(ast)
        .filter(isLiteral)
        .map((member) => member.literal)
      const members = ast.types.filter((member) => !isLiteral(member)).map((member) => compile(member, c))
      if (values.length === 1 && members.length === 1) {
        const [value] = values
        const member = members[0]!
        return (u) => (u === value ? u : member(u))
      }
      return (u) => {
        if (values.includes(u as AST.LiteralValue)) return u
        for (const member of members) {
          const a = member(u)
          if (a !== UNDECIDED) return a
        }
        return UNDECIDED
      }
    }
    case "TupleType": {
      if (ast.elements.length !== 0 || ast.rest.length !== 1) throw new Unsupported()
      const item = compile(ast.rest[0]!.type, c)
      if (c.check) {
        // The strings its items are found to be, remembered (a decoder is a pure function of its input): the
        // same labels come back array after array.
        const taken = new Set<string>()
        return (u) => {
          if (!Array.isArray(u)) return UNDECIDED
          for (let i = 0; i < u.length; i++) {
            const x = u[i]
            if (typeof x !== "string") {
              if (item(x) === UNDECIDED) return UNDECIDED
            } else if (!taken.has(x)) {
              if (item(x) === UNDECIDED) return UNDECIDED
              if (taken.size >= REMEMBERED) taken.clear()
              taken.add(x)
            }
          }
          return u
        }
      }
      // An array whose items all decode to themselves is given back as it is: a copy would be equal.
      return (u) => {
        if (!Array.isArray(u)) return UNDECIDED
        let out: Array<unknown> | null = null
        for (let i = 0; i < u.length; i++) {
          const a = item(u[i])
          if (a === UNDECIDED) return UNDECIDED
          if (out !== null) out[i] = a
          else if (a !== u[i]) {
            out = u.slice(0, i)
            out[i] = a
          }
        }
        return out ?? u
      }
    }
    case "TypeLiteral":
      return compileTypeLiteral(ast, c)
    case "Suspend": {
      let inner: Plain | null = null
      const f = ast.f
      // Compiled when first used: the AST it names may name this one.
      return (u) => (inner ??= compile(f(), c))(u)
    }
    default:
      throw new Unsupported()
  }
}

const compileTypeLiteral = (ast: AST.TypeLiteral, c: Compiling): Plain => {
  if (ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) throw new Unsupported()
  const names = ast.propertySignatures.map((ps) => {
    if (typeof ps.name !== "string") throw new Unsupported()
    return ps.name
  })
  const optional = ast.propertySignatures.map((ps) => ps.isOptional)
  const types = ast.propertySignatures.map((ps) => compile(ps.type, c))
  if (ast.indexSignatures.length > 1) throw new Unsupported()
  const index = ast.indexSignatures[0]
  let key: Plain | null = null
  let value: Plain | null = null
  if (index !== undefined) {
    let parameter: AST.AST = index.parameter
    while (parameter._tag === "Refinement") parameter = parameter.from
    if (parameter._tag !== "StringKeyword" || names.length > 0) throw new Unsupported()
    key = compile(index.parameter, c)
    value = compile(index.type, c)
  }
  if (key === null) {
    const generated = generatedTypeLiteral(ast, names, optional, types, c.check)
    if (generated !== null) return generated
  }
  const count = names.length
  return (u) => {
    if (typeof u !== "object" || u === null || Array.isArray(u)) return UNDECIDED
    const input = u as Record<string, unknown>
    const out: Record<string, unknown> = {}
    for (let i = 0; i < count; i++) {
      const name = names[i]!
      // As the Schema decoder does: an optional key must be the input's own; a required one is read as it is
      // (checking, as `Schema.is` does: it too must be the input's own).
      if ((optional[i] || c.check) && !Object.hasOwn(input, name)) {
        if (optional[i]) continue
        return UNDECIDED
      }
      const a = types[i]!(input[name])
      if (a === UNDECIDED) return UNDECIDED
      out[name] = a
    }
    if (key !== null && value !== null) {
      for (const k of Object.keys(input)) {
        if (key(k) === UNDECIDED) continue
        const a = value(input[k])
        if (a === UNDECIDED) return UNDECIDED
        out[k] = a
      }
    }
    return c.check ? input : out
  }
}

/** How a field's value is checked in generated code: inline for a keyword or a literal, else by its compiled decoder. */
const inlineCheck = (ast: AST.AST, value: string): string | null => {
  if (changesParsing(ast)) return null
  switch (ast._tag) {
    case "StringKeyword":
      return `typeof ${value} !== "string"`
    case "NumberKeyword":
      return `typeof ${value} !== "number"`
    case "BooleanKeyword":
      return `typeof ${value} !== "boolean"`
    case "Literal":
      return typeof ast.literal === "bigint" ? null : `${value} !== ${JSON.stringify(ast.literal)}`
    case "Union": {
      // Of keywords and literals (null or a string, mostly): it fails where each of them fails.
      const checks = ast.types.map((member) => inlineCheck(member, value))
      return checks.length === 0 || checks.includes(null) ? null : `(${checks.join(" && ")})`
    }
    default:
      return null
  }
}

/**
 * A struct's decoder as one generated function: each field read once, checked
 * inline or by its decoder, and the output built as one object literal for its
 * leading required fields, then the rest in order (an optional one only when
 * the input has it as its own). What it gives equals what the loop below gives;
 * null when code cannot be generated here (a `__proto__` field, no `Function`).
 * Checking, it builds nothing: every field, required or optional, is read only
 * when the input has it as its own, and the input is given back.
 */
const generatedTypeLiteral = (
  ast: AST.TypeLiteral,
  names: ReadonlyArray<string>,
  optional: ReadonlyArray<boolean>,
  types: ReadonlyArray<Plain>,
  checking: boolean,
): Plain | null => {
  if (names.includes("__proto__")) return null
  const lines: Array<string> = ['if (typeof u !== "object" || u === null || Array.isArray(u)) return U;']
  names.forEach((name, i) => {
    const key = JSON.stringify(name)
    const check = (value: string) => {
      const inline = inlineCheck(ast.propertySignatures[i]!.type, value)
      if (inline !== null) return `if (${inline}) return U;`
      return checking ? `if (t[${i}](${value}) === U) return U;` : `${value} = t[${i}](${value}); if (${value} === U) return U;`
    }
    if (checking)
      lines.push(
        optional[i]
          ? `if (hasOwn(u, ${key})) { const a${i} = u[${key}]; ${check(`a${i}`)} }`
          : `if (!hasOwn(u, ${key})) return U; const a${i} = u[${key}]; ${check(`a${i}`)}`,
      )
    else if (optional[i]) lines.push(`let h${i} = hasOwn(u, ${key}); let a${i}; if (h${i}) { a${i} = u[${key}]; ${check(`a${i}`)} }`)
    else lines.push(`const r${i} = u[${key}]; let a${i} = r${i}; ${check(`a${i}`)}`)
  })
  const leading = optional.indexOf(true) === -1 ? names.length : optional.indexOf(true)
  if (checking) lines.push("return u;")
  else {
    if (leading === names.length) {
      // An object with exactly these fields, in this order, each decoding to itself, is given back as it is: a copy would be equal.
      const same = names.map((_, i) => `a${i} === r${i}`).join(" && ")
      lines.push(
        `if (${same || "true"}) { let k = 0; for (const key in u) { if (key !== N[k]) { k = -1; break } k++ } if (k === N.length) return u; }`,
      )
    }
    lines.push(
      `const out = {${names
        .slice(0, leading)
        .map((name, i) => `${JSON.stringify(name)}: a${i}`)
        .join(", ")}};`,
    )
    for (let i = leading; i < names.length; i++) {
      const set = `out[${JSON.stringify(names[i]!)}] = a${i};`
      lines.push(optional[i] ? `if (h${i}) ${set}` : set)
    }
    lines.push("return out;")
  }
  try {
    // Made from the schema's own field names, each written as a JSON string.
    const make = new Function("U", "t", "hasOwn", "N", `return function (u) {\n${lines.join("\n")}\n}`) as (
      u: symbol,
      t: ReadonlyArray<Plain>,
      hasOwn: (o: object, k: string) => boolean,
      names: ReadonlyArray<string>,
    ) => Plain
    return make(UNDECIDED, types, Object.hasOwn, names)
  } catch {
    return null
  }
}

/** The plain decoder of `schema`, or null when its AST holds a node this does not follow. */
export const plainDecoder = <A, I>(schema: Schema.Schema<A, I>): ((input: unknown) => A | typeof UNDECIDED) | null => {
  try {
    return compile(schema.ast, DECODING) as (input: unknown) => A | typeof UNDECIDED
  } catch (e) {
    if (e instanceof Unsupported) return null
    throw e
  }
}

/**
 * The plain validator of `schema`: true only where `Schema.is(schema)` is true. Null when the type side
 * of the schema holds a node this does not follow. It may throw on a value nested too deep.
 */
export const plainValidator = <A, I>(schema: Schema.Schema<A, I>): ((value: unknown) => value is A) | null => {
  try {
    const check = compile(AST.typeAST(schema.ast), CHECKING)
    return (value): value is A => check(value) !== UNDECIDED
  } catch (e) {
    if (e instanceof Unsupported) return null
    throw e
  }
}
