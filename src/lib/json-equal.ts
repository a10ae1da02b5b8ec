/**
 * Comparing two values as JSON without writing either.
 *
 * Contract: `sameJsonWithout(a, b, omitted)` is
 * `JSON.stringify(a, r) === JSON.stringify(b, r)` where the replacer `r` leaves
 * out every field named in `omitted`, at any depth: fields compare in their
 * order; what JSON cannot write (undefined, a function, a symbol) is left out
 * of an object and null in an array, as is a number that is not finite. A
 * value with a `toJSON` is compared by writing it. Pure; it never throws on
 * what `JSON.stringify` writes.
 */

/** What JSON.stringify writes nothing for as an object's field (in an array it writes null). */
const unwritten = (v: unknown): boolean => v === undefined || typeof v === "function" || typeof v === "symbol"

/** A value as JSON writes it in an array (or alone): null for what it cannot write. */
const asJson = (v: unknown): unknown => (unwritten(v) || (typeof v === "number" && !Number.isFinite(v)) ? null : v)

export const sameJsonWithout = (a: unknown, b: unknown, omitted: ReadonlySet<string>): boolean => {
  a = asJson(a)
  b = asJson(b)
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (typeof (a as { toJSON?: unknown }).toJSON === "function" || typeof (b as { toJSON?: unknown }).toJSON === "function") {
    const leaveOut = (key: string, value: unknown): unknown => (omitted.has(key) ? undefined : value)
    return JSON.stringify(a, leaveOut) === JSON.stringify(b, leaveOut)
  }
  const arrays = Array.isArray(a)
  if (arrays !== Array.isArray(b)) return false
  if (arrays) {
    const x = a as ReadonlyArray<unknown>
    const y = b as ReadonlyArray<unknown>
    if (x.length !== y.length) return false
    for (let i = 0; i < x.length; i++) if (!sameJsonWithout(x[i], y[i], omitted)) return false
    return true
  }
  const x = a as Record<string, unknown>
  const y = b as Record<string, unknown>
  const written = (o: Record<string, unknown>, key: string): boolean => !omitted.has(key) && !unwritten(o[key])
  const xs = Object.keys(x)
  const ys = Object.keys(y)
  let j = 0
  for (const key of xs) {
    if (!written(x, key)) continue
    while (j < ys.length && !written(y, ys[j]!)) j++
    if (j === ys.length || ys[j] !== key || !sameJsonWithout(x[key], y[key], omitted)) return false
    j++
  }
  while (j < ys.length && !written(y, ys[j]!)) j++
  return j === ys.length
}
