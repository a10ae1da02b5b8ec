/**
 * Lazy start-up changes nothing a user sees. `massgen --help`, `--version` and
 * `massgen COMMAND --help` print from `cli/help.ts` without the parser
 * (`plainInvocation`); every other command line loads the parser and then its
 * command's module (`cli/program.ts`). On the compiled binary (split into
 * chunks that load on demand): the same text and exit code through either
 * path, and each command's module loads and answers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import pkg from "../package.json" with { type: "json" }
import { HELP, parseInvocation } from "../src/cli/args.ts"
import { plainInvocation } from "../src/cli/help.ts"
import { cleanupSandboxes, ensureBinary, runCli, sandbox, writeConfig } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const TEST_TIMEOUT_MS = 60_000

const PLAIN_HELP = [["--help"], ["-h"], ...["viewer", "resume", "replay", "status"].flatMap((c) => [[c, "--help"], [c, "-h"]])]
const PLAIN_VERSION = [["--version"], ["-v"]]

describe("plainInvocation", () => {
  test("answers exactly as the parser for the command lines it recognises", () => {
    for (const argv of PLAIN_HELP) expect({ argv, plain: plainInvocation(argv), parsed: parseInvocation(argv) }).toMatchObject({ plain: "help", parsed: { right: { _tag: "help" } } })
    for (const argv of PLAIN_VERSION) expect({ argv, plain: plainInvocation(argv), parsed: parseInvocation(argv) }).toMatchObject({ plain: "version", parsed: { right: { _tag: "version" } } })
  })

  test("leaves every other command line to the parser", () => {
    const others = [[], ["--help", "--help"], ["-hv"], ["--", "--help"], ["--config", "x.yaml", "--help"], ["stauts", "--help"], ["status", "--help", "x"], ["--version", "q"], ["help"], ["version"]]
    for (const argv of others) expect({ argv, plain: plainInvocation(argv) }).toEqual({ argv, plain: null })
  })
})

describe("compiled binary: help, version, and each command's module", () => {
  beforeAll(() => ensureBinary().then(() => undefined), 120_000)

  test.each([...PLAIN_HELP, ["--config", "x.yaml", "--help"], ["viewer", "--pick", "--help"], ["-hv"]].map((argv) => argv.join(" ")))(
    "massgen %s prints the help, exit 0",
    async (line) => {
      const result = await runCli("binary", line.split(" "))
      expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({ exitCode: 0, stdout: `${HELP}\n`, stderr: "" })
    },
    TEST_TIMEOUT_MS,
  )

  test.each([...PLAIN_VERSION, ["--version", "--automation"]].map((argv) => argv.join(" ")))(
    "massgen %s prints the version, exit 0",
    async (line) => {
      const result = await runCli("binary", line.split(" "))
      expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({ exitCode: 0, stdout: `massgen ${pkg.version}\n`, stderr: "" })
    },
    TEST_TIMEOUT_MS,
  )

  test.each([
    ["status /nonexistent", "massgen: no such log directory: /nonexistent"],
    ["replay /nonexistent", "massgen: no such log directory: /nonexistent"],
    ["resume /nonexistent", "massgen: no such log directory: /nonexistent"],
    ["viewer /nonexistent", "massgen: no such log directory: /nonexistent"],
    ["--config /nonexistent.yaml q", "massgen: config /nonexistent.yaml: no such file"],
    ["stauts --help", "massgen: unknown command stauts; did you mean massgen status? (a one-word question goes after the options; see massgen --help)"],
  ])(
    "massgen %s: one line on stderr, exit 1",
    async (argv, line) => {
      const result = await runCli("binary", argv.split(" "))
      expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({ exitCode: 1, stdout: "", stderr: `${line}\n` })
    },
    TEST_TIMEOUT_MS,
  )

  test("--validate loads its module and prints the verdict", async () => {
    const cwd = sandbox()
    const config = writeConfig(cwd, { agents: [{ id: "a", backend: { type: "scripted", answer: "4" } }] })
    const result = await runCli("binary", ["--validate", config], { cwd })
    expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({ exitCode: 0, stdout: "valid\n", stderr: "" })
  }, TEST_TIMEOUT_MS)
})
