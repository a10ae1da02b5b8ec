/**
 * Small things a newcomer tripped on (issue 25), each pinned: an unknown
 * backend `type` gets a did-you-mean; a model name keeps its commas when
 * given with a repeated `--model`; a vote that does not count says why in
 * words (the demo's first run showed `ignored (stale)`).
 */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { parseInvocation } from "../src/cli/args/index.ts"
import { plainLine } from "../src/cli/run/automation-output.ts"
import { decodeConfig } from "../src/domain/config/index.ts"
import type { Event } from "../src/domain/events/index.ts"
import { initialState } from "../src/domain/state/index.ts"

const problemsOf = (raw: unknown) => {
  const decoded = decodeConfig(raw, {})
  return Either.isLeft(decoded) ? decoded.left.map((p) => `${p.path}: ${p.message}`) : []
}

describe("paper cuts", () => {
  test("an unknown backend type names the type it may stand for; one far from every type gets none", () => {
    const [typo] = problemsOf({ agents: [{ id: "a", backend: { type: "opena", model: "m" } }] })
    expect(typo).toStartWith("agents[0].backend.type: Expected one of scripted, openai,")
    expect(typo).toEndWith('found "opena"; did you mean openai?')
    const [far] = problemsOf({ agents: [{ id: "a", backend: { type: "mistralai", model: "m" } }] })
    expect(far).toEndWith('found "mistralai"')
  })

  test("--model repeats, one agent each, its name verbatim (commas kept); --models still splits on every comma", () => {
    const models = (argv: ReadonlyArray<string>) => {
      const parsed = parseInvocation(argv)
      return Either.isRight(parsed) && parsed.right._tag === "run" ? [parsed.right.modelsFlag, parsed.right.models] : parsed
    }
    expect(models(["--model", "id=a;answer=Paris, France", "--model", "id=b;answer=Rome", "q"])).toEqual([
      "--model",
      ["id=a;answer=Paris, France", "id=b;answer=Rome"],
    ])
    expect(models(["--model", "gpt-5", "q"])).toEqual(["--model", ["gpt-5"]])
    expect(models(["--models", "gpt-5, claude-sonnet-4,", "q"])).toEqual(["--models", ["gpt-5", "claude-sonnet-4"]])
  })

  test("a vote that is not counted says why in words, not as a reason code", () => {
    const ignored = (reason: string) =>
      plainLine(
        { _tag: "vote_ignored", time: 0, agent: "planner", round: 1, target: "critic", reason } as unknown as Event,
        initialState,
        "/logs",
      )
    expect(ignored("stale")).toBe("[planner] vote for critic not counted: it saw answers that are no longer the latest")
    expect(ignored("invalid_target")).toBe("[planner] vote for critic not counted: it named an answer its round was not shown")
    expect(ignored("deferred")).toBe("[planner] vote for critic not counted: no vote is taken at this point of the run")
  })
})
