/** decodeConfig and the environment: `${VAR}` in strings, and as a whole number or boolean value. */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { decodeConfig } from "../src/domain/config.ts"

const doc = (backend: Record<string, unknown>, orchestrator: Record<string, unknown> = {}) => ({
  agents: [{ id: "a", backend: { type: "scripted", ...backend } }],
  orchestrator,
})

const problemsOf = (raw: unknown, env: Record<string, string>) => {
  const decoded = decodeConfig(raw, env)
  return Either.isLeft(decoded) ? decoded.left.map((p) => `${p.path}: ${p.message}`) : []
}

describe("decodeConfig with ${VAR}", () => {
  test("a whole ${VAR} where a number or a boolean is expected is read as one", () => {
    const decoded = decodeConfig(
      doc({ max_tokens: "${MAX}", temperature: "${TEMP}", delay_seconds: "${DELAY}", hang: "${HANG}" }, { skip_final_presentation: "${SKIP}" }),
      { MAX: "512", TEMP: "0.7", DELAY: " 1e-1 ", HANG: "false", SKIP: "true" },
    )
    expect(Either.isRight(decoded)).toBe(true)
    const config = Either.getOrThrow(decoded)
    expect(config.agents[0]!.backend).toMatchObject({ max_tokens: 512, temperature: 0.7, delay_seconds: 0.1, hang: false })
    expect(config.settings.skip_final_presentation).toBe(true)
  })

  test("strings stay strings: a number-like key or model, and a reference inside a longer string", () => {
    const config = Either.getOrThrow(decodeConfig(doc({ model: "${MODEL}", api_key: "${KEY}", answer: "v${VERSION}" }), { MODEL: "4", KEY: "123456", VERSION: "2" }))
    expect(config.agents[0]!.backend).toMatchObject({ model: "4", api_key: "123456", answer: "v2" })
  })

  test("a variable whose text is not a number is still an error at that key, naming what was found", () => {
    expect(problemsOf(doc({ max_tokens: "${MAX}" }), { MAX: "lots" })).toEqual([expect.stringMatching(/^agents\[0\]\.backend\.max_tokens: .*"lots"/)])
    expect(problemsOf(doc({ max_tokens: "${MAX} tokens" }), { MAX: "512" })).toEqual([expect.stringMatching(/^agents\[0\]\.backend\.max_tokens: .*"512 tokens"/)])
    expect(problemsOf(doc({ temperature: "${TEMP}" }), { TEMP: "9" })).toEqual([expect.stringMatching(/^agents\[0\]\.backend\.temperature: Expected a number from 0 to 2, found 9$/)])
  })

  test("an unset variable is named", () => {
    expect(problemsOf(doc({ max_tokens: "${NOPE}" }), {})).toContain("agents[0].backend.max_tokens: environment variable NOPE is not set")
  })
})
