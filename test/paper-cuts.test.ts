/**
 * Small things a newcomer tripped on (issue 25), each pinned: an unknown
 * backend `type` gets a did-you-mean; a model name keeps its commas when
 * given with a repeated `--model`.
 */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { parseInvocation } from "../src/cli/args/index.ts"
import { decodeConfig } from "../src/domain/config/index.ts"

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
})
