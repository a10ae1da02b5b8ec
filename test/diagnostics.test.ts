/** Diagnostics: what effects log becomes one `massgen: ...` line on stderr, whatever the level, never stdout. */
import { describe, expect, test } from "bun:test"
import { Cause, Effect } from "effect"
import { diagnosticsLogger } from "../src/cli/process/diagnostics.ts"

const logged = (effect: Effect.Effect<void>) => {
  const lines: Array<string> = []
  Effect.runSync(effect.pipe(Effect.provide(diagnosticsLogger((line) => lines.push(line)))))
  return lines
}

describe("diagnostics logger", () => {
  test("each level gets its prefix; the text is folded to one line; a cause follows after a colon", () => {
    expect(
      logged(
        Effect.all([
          Effect.logWarning("status.json: could not write\n  disk full"),
          Effect.logError("oops", Cause.fail(new Error("the reason"))),
          Effect.logInfo("two", "parts"),
          Effect.logDebug("not shown"),
        ]),
      ),
    ).toEqual(["massgen: warning: status.json: could not write disk full", "massgen: error: oops: the reason", "massgen: two parts"])
  })
})
