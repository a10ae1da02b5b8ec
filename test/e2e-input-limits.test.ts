/**
 * Every file the command line reads is checked before it is read, end to
 * end: a named pipe, `/dev/zero` or a directory given as a config
 * (`--validate`, `--config`), a question file or a batch items file is one
 * line and exit 1, never a wait (a `.env` too); a config nested 20,000 deep is a config
 * error, not an internal one; a question over `--max-question-bytes` is
 * refused before any log directory is made (a batch item's too); empty piped standard input is
 * said as such; `--models` keeps ", " inside a model name. Each child has a
 * generous process timeout (a hang fails the test); nothing measures time.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { type CliResult, cleanupSandboxes, runCli, SOURCE_MAIN, sandbox, withSlots, writeConfig } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const TEST_TIMEOUT_MS = 120_000
/** A safety bound on each child: a child still waiting on a pipe after it is killed and the test fails. */
const CHILD_TIMEOUT_MS = 60_000

const oneAgent = () => {
  const cwd = sandbox()
  const config = writeConfig(cwd, {
    agents: [{ id: "a", backend: { type: "scripted", answer: "ok" } }],
    timeout_settings: { orchestrator_timeout_seconds: 60 },
  })
  return { cwd, config }
}

/** A named pipe with no writer in `cwd`. */
const fifo = (cwd: string): string => {
  const path = nodePath.join(cwd, "pipe")
  execFileSync("mkfifo", [path])
  return path
}

/** What the user saw, stdout and stderr together, as lines. */
const said = (r: CliResult): Array<string> => `${r.stdout}${r.stderr}`.trimEnd().split("\n")

const run = (cwd: string, args: ReadonlyArray<string>, stdin?: string) =>
  runCli("source", args, { cwd, timeoutMs: CHILD_TIMEOUT_MS, ...(stdin !== undefined ? { stdin } : {}) })

/** A run whose standard input is a pipe closed at once (the support's `stdin: ""` is `/dev/null`). */
const runWithEmptyPipe = (cwd: string, args: ReadonlyArray<string>) =>
  withSlots(1, async () => {
    const proc = Bun.spawn(["bun", SOURCE_MAIN, ...args], {
      cwd,
      env: { ...process.env, MASSGEN_LOG_BASE_DIR: undefined },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      timeout: CHILD_TIMEOUT_MS,
    })
    proc.stdin.end()
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { stdout, stderr, exitCode }
  })

describe.concurrent("inputs that are not regular files are refused before they are opened", () => {
  test(
    "--validate, --config and --question-file on a FIFO, /dev/zero and a directory: one line each, exit 1",
    async () => {
      const { cwd, config } = oneAgent()
      const pipe = fifo(cwd)
      const dir = nodePath.join(cwd, "folder")
      fs.mkdirSync(dir)
      const cases = [
        { args: ["--validate", pipe], line: `config ${pipe}: is a named pipe (FIFO), not a regular file` },
        { args: ["--validate", "/dev/zero"], line: "config /dev/zero: is a character device, not a regular file" },
        { args: ["--validate", dir], line: `config ${dir}: is a directory, not a config file` },
        { args: ["--config", pipe, "q"], line: `massgen: config ${pipe}: is a named pipe (FIFO), not a regular file` },
        { args: ["--config", "/dev/zero", "q"], line: "massgen: config /dev/zero: is a character device, not a regular file" },
        { args: ["--config", dir, "q"], line: `massgen: config ${dir}: is a directory, not a config file` },
        {
          args: ["--config", config, "--question-file", pipe],
          line: `massgen: --question-file ${pipe}: is a named pipe (FIFO), not a regular file`,
        },
        {
          args: ["--config", config, "--question-file", "/dev/zero"],
          line: "massgen: --question-file /dev/zero: is a character device, not a regular file",
        },
        { args: ["--config", config, "--question-file", dir], line: `massgen: --question-file ${dir}: is a directory, not a file` },
      ]
      const results = await Promise.all(cases.map((c) => run(cwd, ["--automation", ...c.args])))
      for (const [i, r] of results.entries()) {
        expect({ args: cases[i]!.args, exitCode: r.exitCode, said: said(r) }).toEqual({
          args: cases[i]!.args,
          exitCode: 1,
          said: [cases[i]!.line],
        })
      }
      expect(fs.existsSync(nodePath.join(cwd, ".massgen"))).toBe(false)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a batch items file that is a FIFO or /dev/zero: one line, exit 1",
    async () => {
      const { cwd, config } = oneAgent()
      const pipe = fifo(cwd)
      const [fromPipe, fromZero] = await Promise.all([
        run(cwd, ["batch", pipe, "--config", config, "--automation"]),
        run(cwd, ["batch", "/dev/zero", "--config", config, "--automation"]),
      ])
      expect({ exitCode: fromPipe.exitCode, said: said(fromPipe) }).toEqual({
        exitCode: 1,
        said: [`massgen: cannot read ${pipe}: is a named pipe (FIFO), not a regular file`],
      })
      expect({ exitCode: fromZero.exitCode, said: said(fromZero) }).toEqual({
        exitCode: 1,
        said: ["massgen: cannot read /dev/zero: is a character device, not a regular file"],
      })
    },
    TEST_TIMEOUT_MS,
  )
})

test(
  "a .env that is a FIFO: a run and doctor each say so in one line, exit 1, and do not wait on it",
  async () => {
    const { cwd, config } = oneAgent()
    execFileSync("mkfifo", [nodePath.join(cwd, ".env")])
    const env = nodePath.join(cwd, ".env")
    const [runIt, doctor] = await Promise.all([run(cwd, ["--automation", "--config", config, "q"]), run(cwd, ["doctor"])])
    expect({ exitCode: runIt.exitCode, said: said(runIt) }).toEqual({
      exitCode: 1,
      said: [`massgen: config ${env}: is a named pipe (FIFO), not a regular file`],
    })
    expect(doctor.exitCode).toBe(1)
    expect(doctor.stdout).toContain(`fail  .env: ${env} is a named pipe (FIFO), not a regular file\n`)
  },
  TEST_TIMEOUT_MS,
)

describe.concurrent("bounded inputs", () => {
  test(
    "a config nested 20,000 deep: a one-line config error, exit 1, for --validate and for a run",
    async () => {
      const cwd = sandbox()
      const flow = writeConfig(cwd, `agents: ${"[".repeat(20_000)}${"]".repeat(20_000)}\n`)
      const mapped = nodePath.join(cwd, "mapped.yaml")
      fs.writeFileSync(mapped, `agents: ${"{a: ".repeat(20_000)}1${"}".repeat(20_000)}\n`)
      const [validate, validateMapped, runIt] = await Promise.all([
        run(cwd, ["--validate", flow]),
        run(cwd, ["--validate", mapped]),
        run(cwd, ["--automation", "--config", flow, "q"]),
      ])
      const deep = "nested more than 64 levels deep (lists and mappings inside each other)"
      expect({ exitCode: validate.exitCode, said: said(validate) }).toEqual({ exitCode: 1, said: [`config ${flow}: ${deep}`] })
      expect({ exitCode: validateMapped.exitCode, said: said(validateMapped) }).toEqual({
        exitCode: 1,
        said: [`config ${mapped}: ${deep}`],
      })
      expect({ exitCode: runIt.exitCode, said: said(runIt) }).toEqual({ exitCode: 1, said: [`massgen: config ${flow}: ${deep}`] })
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a question over --max-question-bytes (1 MiB by default) from a file, stdin or words: exit 1, no log directory",
    async () => {
      const { cwd, config } = oneAgent()
      const big = "y".repeat(2 * 1024 * 1024)
      fs.writeFileSync(nodePath.join(cwd, "big.txt"), big)
      const [file, stdin, words, fits] = await Promise.all([
        run(cwd, ["--automation", "--config", config, "--question-file", "big.txt"]),
        run(cwd, ["--automation", "--config", config, "-"], big),
        run(cwd, ["--automation", "--config", config, "--max-question-bytes", "10", "What is two plus two?"]),
        run(oneAgent().cwd, ["--automation", "--config", config, "--max-question-bytes", "10", "  2+2?  "]),
      ])
      expect({ exitCode: file.exitCode, said: said(file) }).toEqual({
        exitCode: 1,
        said: ["massgen: --question-file big.txt: is over the question limit of 1 MiB (--max-question-bytes 1048576)"],
      })
      expect({ exitCode: stdin.exitCode, said: said(stdin) }).toEqual({
        exitCode: 1,
        said: ["massgen: the question read from standard input is over the question limit of 1 MiB (--max-question-bytes 1048576)"],
      })
      expect({ exitCode: words.exitCode, said: said(words) }).toEqual({
        exitCode: 1,
        said: ["massgen: the question is over the question limit of 10 bytes (--max-question-bytes 10)"],
      })
      expect(fs.readdirSync(cwd).sort()).toEqual(["big.txt", "config.yaml"])
      // At the limit, after trimming: it runs.
      expect(fits.exitCode).toBe(0)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a batch item whose question is over the default limit: the batch is refused before any item runs",
    async () => {
      const { cwd, config } = oneAgent()
      const items = nodePath.join(cwd, "items.jsonl")
      fs.writeFileSync(
        items,
        `${JSON.stringify({ id: "small", question: "2+2?" })}\n${JSON.stringify({ id: "big", question: "y".repeat(2 * 1024 * 1024) })}\n`,
      )
      const r = await run(cwd, ["batch", items, "--config", config, "--automation"])
      expect({ exitCode: r.exitCode, said: said(r) }).toEqual({
        exitCode: 1,
        said: [`massgen: ${items}: line 2: "question" is over the question limit of 1048576 bytes`],
      })
      expect(fs.existsSync(nodePath.join(cwd, ".massgen"))).toBe(false)
    },
    TEST_TIMEOUT_MS,
  )
})

describe.concurrent("paper cuts", () => {
  test(
    "empty piped standard input is said to be empty; /dev/null is still no question",
    async () => {
      const { cwd, config } = oneAgent()
      const [piped, none] = await Promise.all([
        runWithEmptyPipe(cwd, ["--automation", "--config", config]),
        run(cwd, ["--automation", "--config", config]),
      ])
      expect({ exitCode: piped.exitCode, said: `${piped.stdout}${piped.stderr}`.trimEnd().split("\n") }).toEqual({
        exitCode: 1,
        said: [
          'massgen: the standard input was empty: no question in it (give one as words, e.g. massgen --config team.yaml "What is 2+2?")',
        ],
      })
      expect(none.exitCode).toBe(1)
      expect(none.stderr).toStartWith("massgen: a question is required")
    },
    TEST_TIMEOUT_MS,
  )
})
