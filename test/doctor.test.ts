/**
 * `massgen doctor`, as a user runs it after installing: the identity, the log
 * root, `.env`, the provider keys (masked: the key itself never appears in
 * the output), with `--config` each agent's key and base URL (a loopback
 * server answers, a closed port does not), its MCP servers (started, their
 * tools listed, stopped; one that does not start named with why), its
 * command tools' programs, and the sandbox tools its
 * `command_line_execution_mode` asks for. Exit 0 when nothing needed is
 * missing, 1 with one stderr line naming what is. Run from source: the
 * command's code is the binary's (start-up.test.ts runs its --help there).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import pkg from "../package.json" with { type: "json" }
import { PRESETS } from "../src/domain/config/presets.ts"
import { cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { everythingStdio, faultServer, isGone, startsOf } from "./support/mcp.ts"

afterAll(cleanupSandboxes)

const TEST_TIMEOUT_MS = 60_000
const KEY = "sk-proj-THE-SECRET-KEY-0123456789abcdefXYZW"

/** Every provider key unset, so the machine's own keys play no part. */
const NO_KEYS = Object.fromEntries(
  Object.values(PRESETS)
    .flatMap((p) => p.keyEnv)
    .map((k) => [k, undefined]),
)

let server: ReturnType<typeof Bun.serve>
/** What each request to `server` carried. */
const probes: Array<{ path: string; query: string; authorization: string | null }> = []
let closedPort = 0
beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => {
      const url = new URL(request.url)
      probes.push({ path: url.pathname, query: url.search, authorization: request.headers.get("authorization") })
      return new Response("no such route", { status: 404 })
    },
  })
  // A port that was just bound and let go: nothing listens on it.
  const gone = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") })
  closedPort = gone.port!
  gone.stop(true)
})
afterAll(() => server.stop(true))

const doctor = (args: ReadonlyArray<string>, cwd: string, env: Record<string, string | undefined> = {}) =>
  runCli("source", ["doctor", ...args], { cwd, env: { ...NO_KEYS, ...env } })

const line = (stdout: string, subject: string): string | undefined => stdout.split("\n").find((l) => l.slice(6).startsWith(`${subject}:`))

describe("massgen doctor", () => {
  test(
    "no key anywhere and no config: the missing keys are information, and the install is fine: exit 0",
    async () => {
      const cwd = sandbox()
      const result = await doctor([], cwd)
      expect(result.exitCode).toBe(0)
      expect(line(result.stdout, "identity")).toMatch(
        new RegExp(
          `^ok    identity: massgen ${pkg.version.replaceAll(".", "\\.")} \\(commit \\S+, not built: run from source, bun ${Bun.version.replaceAll(".", "\\.")}, source\\)$`,
        ),
      )
      expect(line(result.stdout, "log root")).toBe(
        `ok    log root: ${cwd}/.massgen/massgen_logs does not exist yet; the first run creates it (in ${cwd}, writable)`,
      )
      expect(fs.existsSync(nodePath.join(cwd, ".massgen"))).toBe(false)
      expect(line(result.stdout, ".env")).toBe(`info  .env: none in ${cwd} (keys come from the environment)`)
      expect(line(result.stdout, "not set")).toContain("OPENAI_API_KEY, ANTHROPIC_API_KEY")
      expect(line(result.stdout, "API keys")).toStartWith("info  API keys: no provider key is set")
      expect(result.stdout).not.toMatch(/^fail/m)
      expect(result.stdout).toEndWith("everything massgen needs is there\n")
      expect(result.stderr).toBe("")
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a key in the environment: shown masked, never whole; exit 0",
    async () => {
      const cwd = sandbox()
      const result = await doctor([], cwd, { OPENAI_API_KEY: KEY })
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" })
      expect(line(result.stdout, "OPENAI_API_KEY")).toBe(`ok    OPENAI_API_KEY: set: sk-…XYZW (${KEY.length} characters)`)
      expect(result.stdout).toEndWith("everything massgen needs is there\n")
      for (const part of [KEY, KEY.slice(0, 12), KEY.slice(-12)]) expect(result.stdout + result.stderr).not.toContain(part)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a key in .env: found, said to come from .env, masked; a short key shows nothing of itself",
    async () => {
      const cwd = sandbox()
      fs.writeFileSync(nodePath.join(cwd, ".env"), `ANTHROPIC_API_KEY=${KEY}\nGROQ_API_KEY="gsk_short1"\n`)
      const result = await doctor([], cwd)
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" })
      expect(line(result.stdout, ".env")).toBe(`ok    .env: ${cwd}/.env (2 variables)`)
      expect(line(result.stdout, "ANTHROPIC_API_KEY")).toBe(`ok    ANTHROPIC_API_KEY: set in .env: sk-…XYZW (${KEY.length} characters)`)
      expect(line(result.stdout, "GROQ_API_KEY")).toBe("ok    GROQ_API_KEY: set in .env: *** (10 characters)")
      for (const part of [KEY, KEY.slice(0, 12), "gsk_short1", "short1"]) expect(result.stdout + result.stderr).not.toContain(part)
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "a log root that cannot be made: exit 1, naming it",
    async () => {
      const cwd = sandbox()
      fs.writeFileSync(nodePath.join(cwd, "a-file"), "")
      const result = await doctor([], cwd, { OPENAI_API_KEY: KEY, MASSGEN_LOG_BASE_DIR: nodePath.join(cwd, "a-file", "logs") })
      expect(result.exitCode).toBe(1)
      expect(line(result.stdout, "log root")).toBe(`fail  log root: ${cwd}/a-file/logs cannot be created: ${cwd}/a-file is not a directory`)
      expect(result.stderr).toBe("massgen: doctor: 1 problem: log root\n")
    },
    TEST_TIMEOUT_MS,
  )

  test(
    "an existing log root is written to and left as it was",
    async () => {
      const cwd = sandbox()
      const root = nodePath.join(cwd, "logs")
      fs.mkdirSync(root)
      const result = await doctor([], cwd, { OPENAI_API_KEY: KEY, MASSGEN_LOG_BASE_DIR: root })
      expect(result.exitCode).toBe(0)
      expect(line(result.stdout, "log root")).toBe(`ok    log root: ${root} is writable`)
      expect(fs.readdirSync(root)).toEqual([])
    },
    TEST_TIMEOUT_MS,
  )

  describe("--config", () => {
    test(
      "each agent's base URL: a loopback server answers, a closed port does not (exit 1); its key is checked and masked",
      async () => {
        const cwd = sandbox()
        const config = writeConfig(cwd, {
          agents: [
            {
              id: "local",
              backend: { type: "chatcompletion", model: "m", base_url: `http://someone:${KEY}@127.0.0.1:${server.port}/v1?key=${KEY}` },
            },
            { id: "gone", backend: { type: "vllm", model: "m", base_url: `http://user:${KEY}@127.0.0.1:${closedPort}/v1?api_key=${KEY}` } },
            { id: "scripted", backend: { type: "scripted", answer: "4" } },
          ],
        })
        const result = await doctor(["--config", config], cwd)
        expect(result.exitCode).toBe(1)
        expect(line(result.stdout, "config")).toBe(`ok    config: ${config}: 3 agents`)
        expect(line(result.stdout, "local base URL")).toMatch(
          new RegExp(`^ok    local base URL: http://127\\.0\\.0\\.1:${server.port} answers \\(HTTP 404 in \\d+ ms\\)$`),
        )
        expect(line(result.stdout, "gone base URL")).toBe(
          `fail  gone base URL: http://127.0.0.1:${closedPort} does not answer: connection refused`,
        )
        expect(result.stderr).toBe("massgen: doctor: 1 problem: gone base URL\n")
        expect(result.stdout + result.stderr).not.toContain(KEY)
        // The probe went without the URL's credentials and query.
        expect(probes.at(-1)).toEqual({ path: "/v1", query: "", authorization: null })
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "every base URL answers and every key needed is set: exit 0",
      async () => {
        const cwd = sandbox()
        const agents = [
          {
            id: "a",
            backend: { type: "openai", model: "gpt-x", base_url: `http://127.0.0.1:${server.port}/v1`, api_key: "${OPENAI_API_KEY}" },
          },
        ]
        const config = writeConfig(cwd, { agents })
        const ok = await doctor(["--config", config], cwd, { OPENAI_API_KEY: KEY })
        expect({ exitCode: ok.exitCode, stderr: ok.stderr }).toEqual({ exitCode: 0, stderr: "" })
        expect(line(ok.stdout, "OPENAI_API_KEY")).toBe(`ok    OPENAI_API_KEY: set: sk-…XYZW (${KEY.length} characters)`)
        expect(ok.stdout + ok.stderr).not.toContain(KEY)

        // A loopback base URL needs no key, as in a run.
        const claude = writeConfig(
          cwd,
          { agents: [{ id: "c", backend: { type: "claude", model: "claude-x", base_url: `http://127.0.0.1:${server.port}` } }] },
          "claude.yaml",
        )
        const loopback = await doctor(["--config", claude], cwd)
        expect({ exitCode: loopback.exitCode, stderr: loopback.stderr }).toEqual({ exitCode: 0, stderr: "" })
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "a config that does not load: exit 1 with its problem",
      async () => {
        const cwd = sandbox()
        const result = await doctor(["--config", nodePath.join(cwd, "missing.yaml")], cwd, { OPENAI_API_KEY: KEY })
        expect(result.exitCode).toBe(1)
        expect(line(result.stdout, "config")).toBe(`fail  config: config ${cwd}/missing.yaml: no such file`)
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "a config with two problems: each on its own line, each with its fail prefix",
      async () => {
        const cwd = sandbox()
        const config = writeConfig(cwd, { agents: [{ backend: { type: "scripted" } }, { id: "b", backend: { type: "opena" } }] })
        const result = await doctor(["--config", config], cwd, { OPENAI_API_KEY: KEY })
        expect(result.exitCode).toBe(1)
        const lines = result.stdout.split("\n").filter((l) => l.includes(config))
        expect(lines.length).toBe(2)
        for (const l of lines) expect(l).toStartWith(`fail  config: config ${config}: agents[`)
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "command_line_execution_mode: docker needs docker; without it on PATH, exit 1 saying so",
      async () => {
        const cwd = sandbox()
        const emptyBin = nodePath.join(cwd, "bin")
        fs.mkdirSync(emptyBin)
        const config = writeConfig(cwd, {
          agents: [{ id: "a", backend: { type: "scripted", answer: "4", command_line_execution_mode: "docker" } }],
        })
        const result = await doctor(["--config", config], cwd, { PATH: emptyBin })
        expect(result.exitCode).toBe(1)
        expect(line(result.stdout, "docker")).toBe("fail  docker: not found on PATH (the config's command_line_execution_mode needs it)")
        expect(line(result.stdout, "bubblewrap")).toBe(
          "info  bubblewrap: not found on PATH (for the sandbox modes of command_line_execution_mode)",
        )
        expect(result.stderr).toBe("massgen: doctor: 1 problem: docker\n")
      },
      TEST_TIMEOUT_MS,
    )

    test(
      "each MCP server is started and stopped: the reference server's tools are listed, one that exits at once is named with why; each command tool's program is found",
      async () => {
        const cwd = sandbox()
        const starts = nodePath.join(cwd, "starts")
        const script = nodePath.join(cwd, "count.sh")
        fs.writeFileSync(script, "#!/bin/sh\nwc -c\n", { mode: 0o644 })
        const config = writeConfig(cwd, {
          agents: [
            {
              id: "a",
              backend: {
                type: "scripted",
                answer: "4",
                mcp_servers: [
                  { name: "everything", ...everythingStdio() },
                  { name: "db", ...faultServer("fails-to-start") },
                ],
                custom_tools: [
                  { name: "count", command: ["wc", "-c"] },
                  { name: "script", command: [script] },
                ],
              },
            },
            {
              id: "b",
              backend: { type: "scripted", answer: "4", mcp_servers: { fault: faultServer("serve", { env: { STARTS_FILE: starts } }) } },
            },
          ],
        })
        const result = await doctor(["--config", config], cwd)
        expect(result.exitCode).toBe(1)
        expect(line(result.stdout, "MCP server everything")).toMatch(/^ok {4}MCP server everything: \d+ tools \(echo, .*get-sum.*\)$/)
        expect(line(result.stdout, "MCP server fault")).toMatch(/^ok {4}MCP server fault: \d+ tools \(whoami, big, fails/)
        expect(line(result.stdout, "MCP server db")).toBe(
          "fail  MCP server db: did not start: exited with code 1 before its handshake; its stderr ends: fault server: loading settings | fault server: cannot open the database",
        )
        expect(line(result.stdout, "command tool a/count")).toBe(`ok    command tool a/count: ${Bun.which("wc")}`)
        expect(line(result.stdout, "command tool a/script")).toBe(`fail  command tool a/script: cannot start: ${script} is not executable`)
        expect(result.stderr).toBe("massgen: doctor: 2 problems: MCP server db, command tool a/script\n")
        // Stopped again: nothing of doctor's outlives it.
        for (const pid of startsOf(starts)) expect(isGone(pid)).toBe(true)
        expect(startsOf(starts)).toHaveLength(1)
      },
      TEST_TIMEOUT_MS,
    )
  })

  test(
    "doctor takes no words: a usage error, exit 1",
    async () => {
      const result = await doctor(["now"], sandbox())
      expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({
        exitCode: 1,
        stdout: "",
        stderr: 'massgen: doctor takes no arguments, found "now" (the config goes with --config)\n',
      })
    },
    TEST_TIMEOUT_MS,
  )
})
