/**
 * The length of a string in UTF-8 bytes, as `Buffer.byteLength(s, "utf8")`
 * gives it (a lone surrogate counts 3, the replacement character it is
 * written as), without Node's `Buffer`, so pure code can count it too. This
 * is how a question's size is counted wherever it is limited
 * (`--max-question-bytes` of a run, a batch item, `serve`).
 */
export const utf8Bytes = (s: string): number => {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4
      i++
    } else n += 3
  }
  return n
}
