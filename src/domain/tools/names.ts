/**
 * Tool names as the model sees them: valid for every provider, and one per tool of an agent.
 *
 * OpenAI (Responses, Chat Completions) and Anthropic take a function name of 1
 * to 64 letters, digits, `_` or `-`, and refuse the whole request otherwise.
 * `modelToolNames(names, reserved)` gives, for an agent's tools in the order
 * they are offered, the name each is offered under: a name already valid is
 * kept as it is (so recorded runs replay the same); any other has each
 * character outside the set replaced by `_`, and when that is over 64
 * characters, or is the name of another tool or a `reserved` one, it is cut and
 * ended with `_` and 8 hex digits of a hash of the whole name. Two tools never
 * get one name. Pure and deterministic: the same tools give the same names on
 * every start, resume included.
 *
 * Words: a tool's *real name* is the one its provider runs it by
 * (`mcp__<server>__<tool>`, a command tool's config name); its *model name* is
 * the one the model is offered and calls, and the one events record.
 */

/** The longest tool name the providers take. */
export const MAX_TOOL_NAME = 64

const VALID = /^[A-Za-z0-9_-]{1,64}$/

/** Whether the providers take `name` as a tool name as it is. */
export const validToolName = (name: string): boolean => VALID.test(name)

/** FNV-1a (32 bits) of `text`, seeded, as 8 hex digits. */
const hash8 = (text: string, seed: number): string => {
  let h = (0x811c9dc5 ^ seed) >>> 0
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, "0")
}

/** `name` cut to fit with `_<hash>` at its end. */
const hashed = (clean: string, name: string, seed: number): string => `${clean.slice(0, MAX_TOOL_NAME - 9)}_${hash8(name, seed)}`

/** The model name of each of `names` (real names, distinct), in their order; none is one of `reserved`. */
export const modelToolNames = (names: ReadonlyArray<string>, reserved: ReadonlySet<string> = new Set()): ReadonlyArray<string> => {
  // Names already valid keep their name: the others must not take it.
  const taken = new Set<string>([...reserved, ...names.filter(validToolName)])
  return names.map((name) => {
    if (validToolName(name) && !reserved.has(name)) return name
    const clean = name.replace(/[^A-Za-z0-9_-]/g, "_") || "_"
    let out = clean.length <= MAX_TOOL_NAME && !taken.has(clean) ? clean : hashed(clean, name, 0)
    for (let seed = 1; taken.has(out); seed++) out = hashed(clean, name, seed)
    taken.add(out)
    return out
  })
}
