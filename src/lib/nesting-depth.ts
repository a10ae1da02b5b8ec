/**
 * How deep a parsed document nests, measured without recursion, so that a
 * document nested thousands of levels deep is told apart before code that
 * walks it recursively (a decoder, a printer) runs out of stack.
 *
 * `exceedsDepth(value, max)`: whether some array or object in `value` lies
 * more than `max` levels down (a scalar is depth 0, `[]` and `[1]` are 1).
 */
export const exceedsDepth = (value: unknown, max: number): boolean => {
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [node, depth] = top
    if (node === null || typeof node !== "object") continue
    if (depth + 1 > max) return true
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1])
  }
  return false
}
