/** The agent output file's layout: headers written by callHeader, cut back by textByCall. */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { callHeader, textByCall } from "../src/domain/agent-output.ts"

describe("agent output files", () => {
  test("textByCall gives back what was written after each callHeader, by call number", () => {
    const part = fc.record({
      round: fc.nat(50),
      presentation: fc.boolean(),
      text: fc.string({ unit: fc.constantFrom("a", "b", " ", "\n", "-", "—", "[", "]", "é") }).filter((t) => !t.includes("\n--- round")),
    })
    fc.assert(
      fc.property(fc.array(part, { maxLength: 12 }), (parts) => {
        const file = parts.map((p, i) => callHeader(p.round, i + 1, p.presentation) + p.text).join("")
        expect([...textByCall(file)]).toEqual(parts.map((p, i) => [i + 1, p.text]))
      }),
    )
  })

  test("text before the first header is not a call's; a file with no header has no calls", () => {
    expect([...textByCall(`stray\n${callHeader(2, 7, true)}final words\n`)]).toEqual([[7, "final words\n"]])
    expect(textByCall("no headers here").size).toBe(0)
  })
})
