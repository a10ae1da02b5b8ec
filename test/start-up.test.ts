/**
 * Lazy start-up changes nothing a user sees. `massgen --help`, `--version` and
 * `massgen COMMAND --help` print from `cli/help.ts` without the parser
 * (`plainInvocation`); every other command line loads the parser and then its
 * command's module (`cli/program.ts`). On the compiled binary (split into
 * chunks that load on demand): the same text and exit code through either
 * path, and each command's module loads and answers. Every subcommand's
 * `--help`, through the parser too, prints the one help text, which shows
 * that subcommand's usage line. A stdout reader that goes away does not stop a run.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import pkg from "../package.json" with { type: "json" }
import { parseInvocation } from "../src/cli/args/index.ts"
import { HELP, plainInvocation } from "../src/cli/help.ts"
import { BINARY, cleanupSandboxes, ensureBinary, runCli, sandbox, writeConfig } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const TEST_TIMEOUT_MS = 60_000

const PLAIN_HELP = [
  ["--help"],
  ["-h"],
  ...["viewer", "resume", "replay", "status", "doctor", "serve", "sessions", "batch", "worker"].flatMap((c) => [
    [c, "--help"],
    [c, "-h"],
  ]),
]
const PLAIN_VERSION = [["--version"], ["-v"]]

describe("plainInvocation", () => {
  test("answers exactly as the parser for the command lines it recognises", () => {
    for (const argv of PLAIN_HELP)
      expect({ argv, plain: plainInvocation(argv), parsed: parseInvocation(argv) }).toMatchObject({
        plain: "help",
        parsed: { right: { _tag: "help" } },
      })
    for (const argv of PLAIN_VERSION)
      expect({ argv, plain: plainInvocation(argv), parsed: parseInvocation(argv) }).toMatchObject({
        plain: "version",
        parsed: { right: { _tag: "version" } },
      })
  })

  test("leaves every other command line to the parser", () => {
    const others = [
      [],
      ["--help", "--help"],
      ["-hv"],
      ["--", "--help"],
      ["--config", "x.yaml", "--help"],
      ["stauts", "--help"],
      ["status", "--help", "x"],
      ["--version", "q"],
      ["help"],
      ["version"],
    ]
    for (const argv of others) expect({ argv, plain: plainInvocation(argv) }).toEqual({ argv, plain: null })
  })
})

describe("compiled binary: help, version, and each command's module", () => {
  beforeAll(() => ensureBinary().then(() => undefined), 120_000)

  test.each([...PLAIN_HELP, ["--config", "x.yaml", "--help"], ["viewer", "--pick", "--help"], ["-hv"]].map((argv) => argv.join(" ")))(
    "massgen %s prints the help, exit 0",
    async (line) => {
      const result = await runCli("binary", line.split(" "))
      expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({
        exitCode: 0,
        stdout: `${HELP}\n`,
        stderr: "",
      })
    },
    TEST_TIMEOUT_MS,
  )

  test.each([...PLAIN_VERSION, ["--version", "--automation"]].map((argv) => argv.join(" ")))(
    "massgen %s prints the version and the build stamp, exit 0",
    async (line) => {
      const result = await runCli("binary", line.split(" "))
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" })
      expect(result.stdout).toMatch(
        new RegExp(
          `^massgen ${pkg.version.replaceAll(".", "\\.")}\ncommit: [0-9a-f]{12}(-dirty)?\nbuilt: \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\nbun: ${Bun.version.replaceAll(".", "\\.")}\ntarget: bun-${process.platform}-${process.arch}\n$`,
        ),
      )
    },
    TEST_TIMEOUT_MS,
  )

  test.each([
    ["status /nonexistent", "massgen: no such log directory: /nonexistent"],
    ["replay /nonexistent", "massgen: no such log directory: /nonexistent"],
    ["resume /nonexistent", "massgen: no such log directory: /nonexistent"],
    ["viewer /nonexistent", "massgen: no such log directory: /nonexistent"],
    ["--config /nonexistent.yaml q", "massgen: config /nonexistent.yaml: no such file"],
    [
      "stauts --help",
      "massgen: unknown command stauts; did you mean massgen status? (a one-word question goes after the options; see massgen --help)",
    ],
  ])(
    "massgen %s: one line on stderr, exit 1",
    async (argv, line) => {
      const result = await runCli("binary", argv.split(" "))
      expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({
        exitCode: 1,
        stdout: "",
        stderr: `${line}\n`,
      })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "--validate loads its module and prints the verdict",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, { agents: [{ id: "a", backend: { type: "scripted", answer: "4" } }] })
      const result = await runCli("binary", ["--validate", config], { cwd })
      expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({
        exitCode: 0,
        stdout: "valid\n",
        stderr: "",
      })
    },
    TEST_TIMEOUT_MS,
  )

  // Each subcommand, its help asked after its own arguments (the parser's path) and alone (the plain path).
  const SUBCOMMAND_HELP: ReadonlyArray<{ readonly usage: string; readonly lines: ReadonlyArray<string> }> = [
    { usage: "massgen [options] --config FILE", lines: ["--config x.yaml --automation --help", "--config x.yaml -h"] },
    { usage: "massgen --model MODEL", lines: ["--model gpt-4o --help"] },
    { usage: "massgen --models M1,M2,M3", lines: ["--models gpt-4o,claude-sonnet-4 --no-display --help"] },
    { usage: "massgen --validate FILE", lines: ["--validate x.yaml --help", "--validate x.yaml --json -h"] },
    { usage: "massgen resume LOG_DIR", lines: ["resume --help", "resume /x --automation --help"] },
    { usage: "massgen replay LOG_DIR", lines: ["replay --help", "replay /x --check --out /y --help"] },
    { usage: "massgen status LOG_DIR", lines: ["status --help", "status /x --json -h"] },
    { usage: "massgen doctor [--config FILE]", lines: ["doctor --help", "doctor --config /x -h"] },
    {
      usage: "massgen viewer [LOG_DIR]",
      lines: ["viewer --help", "viewer /x --pick --help", "viewer --web --port 8123 --no-browser --help"],
    },
    { usage: "massgen sessions", lines: ["sessions --help", "sessions --json -h"] },
    { usage: "massgen serve --config FILE", lines: ["serve --help", "serve --config x.yaml --port 4001 --api-key-env K --help"] },
    { usage: "massgen batch ITEMS.jsonl --config FILE", lines: ["batch --help", "batch items.jsonl --config x.yaml --concurrency 2 -h"] },
    { usage: "massgen worker --engine", lines: ["worker --help", "worker --engine postgres://x/y -h"] },
  ]

  test.each(SUBCOMMAND_HELP.flatMap(({ usage, lines }) => lines.map((line) => [line, usage] as const)))(
    "massgen %s prints the help, with its usage line %s",
    async (line, usage) => {
      const result = await runCli("binary", line.split(" "))
      expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({
        exitCode: 0,
        stdout: `${HELP}\n`,
        stderr: "",
      })
      expect(result.lines.some((l) => l.trimStart().startsWith(usage))).toBe(true)
    },
    TEST_TIMEOUT_MS,
  )

  /** A scripted 3-agent team in a fresh sandbox; the sandbox and the config's path. */
  const team = () => {
    const cwd = sandbox()
    const agents = [1, 2, 3].map((i) => ({ id: `agent_${i}`, backend: { type: "scripted", answer: `Answer ${i}: four.`, vote: "agent1" } }))
    return { cwd, config: writeConfig(cwd, { agents }) }
  }

  /** Runs the binary through bash with its stdout piped into `reader`; stdout of the pipe, and the binary's exit code. */
  const piped = (cwd: string, args: ReadonlyArray<string>, reader: string) => {
    const quoted = [BINARY, ...args].map((a) => `'${a}'`).join(" ")
    const proc = Bun.spawnSync(["bash", "-c", `${quoted} | ${reader}; echo "exit=\${PIPESTATUS[0]}" >&2`], {
      cwd,
      env: { ...process.env, MASSGEN_LOG_BASE_DIR: nodePath.join(cwd, "logs") },
    })
    return { stdout: proc.stdout.toString(), stderr: proc.stderr.toString() }
  }

  test(
    "a run whose stdout reader goes away after one line still completes, exit 0, its log whole",
    () => {
      const { cwd, config } = team()
      const { stdout, stderr } = piped(cwd, ["--automation", "--config", config, "What is 2+2?"], "head -1")
      expect(stdout).toStartWith("LOG_DIR: ")
      expect(stderr).toBe("exit=0\n")
      const logDir = stdout.trim().slice("LOG_DIR: ".length)
      const events = fs.readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8").trim().split("\n")
      expect(JSON.parse(events[events.length - 1]!).type).toBe("run_finished")
    },
    TEST_TIMEOUT_MS,
  )
})
