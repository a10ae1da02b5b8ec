/** decodeConfig and the environment: `${VAR}` in strings, and as a whole number or boolean value. */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { decodeConfig, maskSecrets } from "../src/domain/config/index.ts"

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
      doc(
        { max_tokens: "${MAX}", temperature: "${TEMP}", delay_seconds: "${DELAY}", hang: "${HANG}" },
        { skip_final_presentation: "${SKIP}" },
      ),
      { MAX: "512", TEMP: "0.7", DELAY: " 1e-1 ", HANG: "false", SKIP: "true" },
    )
    expect(Either.isRight(decoded)).toBe(true)
    const config = Either.getOrThrow(decoded)
    expect(config.agents[0]!.backend).toMatchObject({ max_tokens: 512, temperature: 0.7, delay_seconds: 0.1, hang: false })
    expect(config.settings.skip_final_presentation).toBe(true)
  })

  test("strings stay strings: a number-like key or model, and a reference inside a longer string", () => {
    const config = Either.getOrThrow(
      decodeConfig(doc({ model: "${MODEL}", api_key: "${KEY}", answer: "v${VERSION}" }), { MODEL: "4", KEY: "123456", VERSION: "2" }),
    )
    expect(config.agents[0]!.backend).toMatchObject({ model: "4", api_key: "123456", answer: "v2" })
  })

  test("a variable whose text is not a number is still an error at that key, naming the reference found", () => {
    expect(problemsOf(doc({ max_tokens: "${MAX}" }), { MAX: "lots" })).toEqual([
      "agents[0].backend.max_tokens: Expected number, found ${MAX}",
    ])
    expect(problemsOf(doc({ max_tokens: "${MAX} tokens" }), { MAX: "512" })).toEqual([
      'agents[0].backend.max_tokens: Expected number, found "${MAX} tokens"',
    ])
    expect(problemsOf(doc({ temperature: "${TEMP}" }), { TEMP: "9" })).toEqual([
      "agents[0].backend.temperature: Expected a number from 0 to 2, found ${TEMP}",
    ])
  })

  test("an unset variable is named", () => {
    expect(problemsOf(doc({ max_tokens: "${NOPE}" }), {})).toContain("agents[0].backend.max_tokens: environment variable NOPE is not set")
  })
})

describe("a config problem never shows what a ${VAR} expanded to", () => {
  const SECRET = "sk-live-SECRET-0123456789"
  const env = { MY_SECRET: SECRET, SECRET_URL: `https://user:${SECRET}@llm.example/v1`, HOST: "secret-host.example" }

  test("the value is shown as written, wherever the problem is", () => {
    const problems = problemsOf(
      {
        agents: [
          { id: "a", backend: { type: "openai", temperature: "${MY_SECRET}", base_url: "ftp://${HOST}/v1" } },
          { id: "b", backend: "${MY_SECRET}" },
          { id: "c", backend: { type: "${MY_SECRET}" } },
        ],
        timeout_settings: "prefix ${MY_SECRET}",
      },
      env,
    )
    expect(problems).toEqual([
      'agents[0].backend.base_url: Expected an http or https URL, found "ftp://${HOST}/v1"',
      "agents[0].backend.temperature: Expected number, found ${MY_SECRET}",
      "agents[1].backend: Expected a backend mapping, found ${MY_SECRET}",
      expect.stringMatching(/^agents\[2\]\.backend\.type: Expected one of scripted, .*, found \$\{MY_SECRET\}$/),
      'timeout_settings: Expected a timeout_settings mapping, found "prefix ${MY_SECRET}"',
    ])
    expect(problems.join("\n")).not.toContain("SECRET-0123")
    expect(problems.join("\n")).not.toContain("secret-host")
  })

  test("a base_url must be an http(s) URL; its credentials are masked in the problem, and a masked copy is refused", () => {
    expect(problemsOf(doc({ base_url: "${SECRET_URL}", max_tokens: 0 }), env)).toEqual([
      "agents[0].backend.max_tokens: Expected a number of 1 or more, found 0",
    ])
    expect(problemsOf(doc({ base_url: "htp://user:pass-SECRET@llm.example/v1?key=SECRET-k&api-version=2" }), env)).toEqual([
      'agents[0].backend.base_url: Expected an http or https URL, found "htp://***@llm.example/v1?key=***&api-version=2"',
    ])
    expect(problemsOf(doc({ base_url: "not a url" }), env)).toEqual([
      'agents[0].backend.base_url: Expected an http or https URL, found "not a url"',
    ])
    expect(problemsOf(doc({ base_url: "https://***@llm.example/v1" }), env)).toEqual([
      expect.stringMatching(
        /^agents\[0\]\.backend\.base_url: Expected a URL with its credentials, found "https:\/\/\*\*\*@llm\.example\/v1", masked/,
      ),
    ])
  })
})

describe("maskSecrets", () => {
  test("secret keys become ***, URL credentials are masked in every string, references stay", () => {
    expect(
      maskSecrets({
        agents: [{ backend: { api_key: "literal", base_url: "https://u:p@h.example/v1?token=t0k&v=1", model: "${MODEL}" } }],
        argv: ["--base-url=http://me:pw@127.0.0.1:8/v1?api_key=k"],
      }),
    ).toEqual({
      agents: [{ backend: { api_key: "***", base_url: "https://***@h.example/v1?token=***&v=1", model: "${MODEL}" } }],
      argv: ["--base-url=http://***@127.0.0.1:8/v1?api_key=***"],
    })
  })
})

describe("custom_tools", () => {
  const command = {
    name: "count",
    description: "counts",
    parameters: { type: "object", properties: {} },
    command: ["wc", "-w"] as [string, ...Array<string>],
  }

  test("a command tool is read with its name, description, parameters and command", () => {
    const config = Either.getOrThrow(
      decodeConfig({ ...doc({ custom_tools: [command] }), timeout_settings: { tool_timeout_seconds: 5 } }, {}),
    )
    expect(config.agents[0]!.backend.custom_tools).toEqual([command])
    expect(config.toolTimeoutSeconds).toBe(5)
  })

  test("a tool named like a workflow tool, a name used twice, and an empty command are refused", () => {
    expect(problemsOf(doc({ custom_tools: [{ ...command, name: "vote" }, command, command, { name: "x", command: [] }] }), {})).toEqual([
      "agents[0].backend.custom_tools[3].command: Expected a command: a list of the program and its arguments",
    ])
    expect(problemsOf(doc({ custom_tools: [{ ...command, name: "vote" }, command, command] }), {})).toEqual([
      "agents[0].backend.custom_tools[0].name: Expected a name other than the workflow tool vote",
      'agents[0].backend.custom_tools[2].name: Expected a unique tool name, found "count" again',
    ])
  })
})
