/**
 * Did you mean: the known word closest to a mistyped one, for flags, commands and config keys.
 *
 * `closest(word, known)` is the known word at the smallest edit distance from
 * `word` (insertions, deletions, substitutions and swaps of two neighbouring
 * letters each count one; case is ignored), if that distance is at most 2 and
 * at most half the word's length; otherwise null. Ties go to the earlier word of `known`.
 */

/** Optimal string alignment distance: Levenshtein plus the swap of two adjacent letters. */
export const editDistance = (a: string, b: string): number => {
  const rows: Array<Array<number>> = []
  for (let i = 0; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j)
        continue
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1)
      row.push(d)
    }
    rows.push(row)
  }
  return rows[a.length]![b.length]!
}

export const closest = (word: string, known: ReadonlyArray<string>): string | null => {
  const w = word.toLowerCase()
  let best: string | null = null
  let bestDistance = Infinity
  for (const k of known) {
    const d = editDistance(w, k.toLowerCase())
    if (d < bestDistance) {
      best = k
      bestDistance = d
    }
  }
  return best !== null && bestDistance <= 2 && bestDistance <= w.length / 2 ? best : null
}
