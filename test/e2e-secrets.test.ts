/**
 * Issue 9 end to end, at the edges a user meets: what a config error shows of
 * a `${VAR}`, credentials in a `base_url`, and what a network failure says.
 *
 * Each test runs the `massgen` command line from source against loopback
 * servers only (the fake provider of `support/fake-llm.ts`, a closed port) or
 * a host that cannot resolve (`.invalid`, which fails at once without a
 * network). Every secret used holds the word "hush"; after each run no file
 * under the working directory but the config the test wrote, and no line
 * printed, holds it.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as net from "node:net"
import * as nodePath from "node:path"
import { parse as parseYaml } from "yaml"
import { type CliResult, cleanupSandboxes, runCli, sandbox, writeConfig } from "./support/cli.ts"
import {
  type Behaviour,
  type FakeLlm,
  type FakeRequest,
  hang,
  NO_PROXY_ENV,
  offeredTools,
  promptText,
  reply,
  startFakeLlm,
  status,
  toolCall,
} from "./support/fake-llm.ts"
import { eventsOf, logDirOf, shown, statusOf, textsHolding } from "./support/run-output.ts"

afterAll(() => cleanupSandboxes())

const TIMEOUT_MS = 60_000
const QUESTION = "What is 2+2?"
const MARK = "hush"

/** Keys and proxies only from what a test sets: the fakes are on 127.0.0.1. */
const CLEAN_ENV: Record<string, string | undefined> = {
  OPENAI_API_KEY: "sk-test-hush-0000",
  ANTHROPIC_API_KEY: "opaque-hush-1111",
  ...NO_PROXY_ENV,
}

const run = (args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) =>
  runCli("source", args, { cwd, env: { ...CLEAN_ENV, ...env } })

/** Nothing printed and no file under `cwd` but the config holds the mark. */
const expectNoSecret = (result: CliResult, cwd: string) => {
  expect(result.stdout).not.toContain(MARK)
  expect(result.stderr).not.toContain(MARK)
  expect(textsHolding(cwd, MARK).filter((f) => f !== "config.yaml")).toEqual([])
}

/** Answer once, vote for agent1 once an own answer is shown, present when offered no tools. */
const council = (req: FakeRequest): Behaviour => {
  if (offeredTools(req).length === 0) return reply({ text: "Four." })
  const self = /You are (agent\d+)\./.exec(promptText(req))?.[1] ?? "agent1"
  return promptText(req).includes(`<${self}.`)
    ? toolCall("vote", { agent_id: "agent1", reason: "right" })
    : toolCall("new_answer", { content: `4, says ${self}` })
}

const withFake = async (respond: (req: FakeRequest) => Behaviour, body: (fake: FakeLlm) => Promise<void>) => {
  const fake = await startFakeLlm({ respond })
  try {
    await body(fake)
  } finally {
    fake.stop()
  }
}

/** A loopback port nothing listens on (taken from the system, then let go). */
const closedPort = async (): Promise<number> => {
  const server = net.createServer().listen(0, "127.0.0.1")
  await new Promise((resolve) => server.once("listening", resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

const TIMEOUTS = { timeout_settings: { orchestrator_timeout_seconds: 40, agent_timeout_seconds: 30 } }

describe("a config error shows a ${VAR} by its reference, never its value", () => {
  test(
    "a run, --validate and --validate --json: the path, the reference, no secret; nothing written",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [
          { id: "a", backend: { type: "openai", temperature: "${MY_SECRET}" } },
          { id: "b", backend: { type: "chatcompletion", model: "m", base_url: "${SECRET_URL}" } },
        ],
      })
      const env = { MY_SECRET: "sk-live-hush-abcdef0123456789", SECRET_URL: "ftp://hush-host.example/v1?key=hush-k" }
      const runResult = await run(["--config", config, QUESTION], cwd, env)
      expect(runResult.exitCode).toBe(1)
      expect(runResult.stderr.trim().split("\n")).toEqual([
        `massgen: config ${config}: agents[0].backend.temperature: Expected number, found \${MY_SECRET}`,
        `massgen: config ${config}: agents[1].backend.base_url: Expected an http or https URL, found \${SECRET_URL}`,
      ])
      expect(fs.existsSync(nodePath.join(cwd, ".massgen"))).toBe(false)
      expectNoSecret(runResult, cwd)

      const text = await run(["--validate", config], cwd, env)
      expect(text.exitCode).toBe(1)
      expect(text.stdout).toContain("agents[0].backend.temperature: Expected number, found ${MY_SECRET}")
      expectNoSecret(text, cwd)

      const json = await run(["--validate", config, "--json"], cwd, env)
      expect(json.exitCode).toBe(1)
      expect(JSON.parse(json.stdout).errors).toEqual([
        { location: "agents[0].backend.temperature", message: "Expected number, found ${MY_SECRET}", suggestion: null },
        { location: "agents[1].backend.base_url", message: "Expected an http or https URL, found ${SECRET_URL}", suggestion: null },
      ])
      expectNoSecret(json, cwd)
    },
    TIMEOUT_MS,
  )
})

describe("a credential in base_url is masked wherever the URL is written; the request uses the real URL", () => {
  test(
    "userinfo and ?key=/token=: the run completes, every query reaches the server, and no file or line holds them",
    async () => {
      await withFake(council, async (fake) => {
        const cwd = sandbox()
        const withCredentials = (base: string, query: string) => base.replace("http://", "http://user:hush-pass@") + query
        const config = writeConfig(cwd, {
          agents: [
            {
              id: "chat",
              system_message: "You are agent1.",
              backend: { type: "chatcompletion", model: "m", base_url: withCredentials(fake.openAiBaseUrl, "?key=hush-key&api-version=7") },
            },
            {
              id: "claude",
              system_message: "You are agent2.",
              backend: { type: "claude", model: "m", base_url: withCredentials(fake.url, "?token=hush-tok") },
            },
          ],
          ...TIMEOUTS,
        })
        const result = await run(["--automation", "--config", config, QUESTION], cwd)
        expect({ exit: result.exitCode, out: shown(result) }).toMatchObject({ exit: 0 })
        expect(new Set(fake.requests.map((r) => `${r.path}${r.query}`))).toEqual(
          new Set(["/v1/chat/completions?key=hush-key&api-version=7", "/v1/messages?token=hush-tok"]),
        )
        const metadata = parseYaml(fs.readFileSync(nodePath.join(logDirOf(result), "execution_metadata.yaml"), "utf8"))
        expect(metadata.config.agents.map((a: any) => a.backend.base_url)).toEqual([
          `http://***@${fake.openAiBaseUrl.slice(7)}?key=***&api-version=7`,
          `http://***@${fake.url.slice(7)}?token=***`,
        ])
        expectNoSecret(result, cwd)
      })
    },
    TIMEOUT_MS,
  )

  test(
    "--base-url with credentials: masked in the recorded arguments and config",
    async () => {
      await withFake(council, async (fake) => {
        const cwd = sandbox()
        const url = `${fake.openAiBaseUrl.replace("http://", "http://hush-user@")}?access_token=hush-t`
        const result = await run(["--automation", "--model", "m", "--backend", "chatcompletion", "--base-url", url, QUESTION], cwd)
        expect({ exit: result.exitCode, out: shown(result) }).toMatchObject({ exit: 0 })
        expect(fake.requests.every((r) => r.query === "?access_token=hush-t")).toBe(true)
        const metadata = parseYaml(fs.readFileSync(nodePath.join(logDirOf(result), "execution_metadata.yaml"), "utf8"))
        expect(metadata.cli_args.argv).toContain(`http://***@${fake.openAiBaseUrl.slice(7)}?access_token=***`)
        expectNoSecret(result, cwd)
      })
    },
    TIMEOUT_MS,
  )

  test(
    "--validate --json on a base_url that is not http(s): the problem shows it with its credentials masked",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [
          { id: "a", backend: { type: "chatcompletion", model: "m", base_url: "htp://me:hush-pw@llm.example/v1?token=hush-t&v=2" } },
        ],
      })
      const json = await run(["--validate", config, "--json"], cwd)
      expect(json.exitCode).toBe(1)
      expect(JSON.parse(json.stdout).errors).toEqual([
        {
          location: "agents[0].backend.base_url",
          message: 'Expected an http or https URL, found "htp://***@llm.example/v1?token=***&v=2"',
          suggestion: null,
        },
      ])
      expectNoSecret(json, cwd)
    },
    TIMEOUT_MS,
  )

  test(
    "a provider that echoes the URL in an error: masked in events, status.json, llm_log and on stderr",
    async () => {
      let origin = ""
      const respond = (req: FakeRequest): Behaviour =>
        status(400, { body: { error: { message: `bad request to ${origin}${req.path}${req.query}` } } })
      await withFake(respond, async (fake) => {
        const cwd = sandbox()
        origin = fake.url.replace("http://", "http://user:hush-pass@")
        const config = writeConfig(cwd, {
          agents: [{ id: "chat", backend: { type: "chatcompletion", model: "m", base_url: `${origin}/v1?api_key=hush-key` } }],
          ...TIMEOUTS,
        })
        const result = await run(["--automation", "--config", config, QUESTION], cwd)
        expect(result.exitCode).toBe(2)
        const masked = `http://***@${fake.url.slice(7)}/v1/chat/completions?api_key=***`
        expect(result.stderr).toContain(`bad request to ${masked}`)
        expect(statusOf(logDirOf(result)).agents.chat.error.message).toContain(masked)
        expectNoSecret(result, cwd)
      })
    },
    TIMEOUT_MS,
  )
})

describe("a network failure names the endpoint (scheme, host, port) and the cause", () => {
  test(
    "connection refused, DNS failure, no reply before call_timeout_seconds: in agent_failed, status.json and on stderr",
    async () => {
      await withFake(
        () => hang(),
        async (fake) => {
          const cwd = sandbox()
          const port = await closedPort()
          const once = { max_retries: 0 }
          const config = writeConfig(cwd, {
            agents: [
              {
                id: "refused",
                backend: { type: "chatcompletion", model: "m", base_url: `http://me:hush-pw@127.0.0.1:${port}/v1?key=hush-k`, ...once },
              },
              { id: "unresolved", backend: { type: "openai", base_url: "http://massgen-no-such-host.invalid:1/v1", ...once } },
              { id: "silent", backend: { type: "claude", base_url: fake.url, call_timeout_seconds: 0.5, ...once } },
            ],
            ...TIMEOUTS,
          })
          const result = await run(["--automation", "--config", config, QUESTION], cwd)
          expect(result.exitCode).toBe(2)
          const expected = {
            refused: `network: cannot connect to http://127.0.0.1:${port}: connection refused (ECONNREFUSED)`,
            unresolved: "network: cannot connect to http://massgen-no-such-host.invalid:1: DNS lookup failed (ENOTFOUND)",
            silent: `timeout: no reply from ${fake.url} after 0.5s`,
          }
          const logDir = logDirOf(result)
          const failed = Object.fromEntries(
            eventsOf(logDir)
              .filter((e) => e.type === "agent_failed")
              .map((e) => [e.agent, e.message]),
          )
          expect(failed).toEqual(expected)
          const agents = statusOf(logDir).agents
          for (const [id, message] of Object.entries(expected)) {
            expect(agents[id].error.message).toBe(message)
            expect(result.stderr).toContain(`${id}: ${message}`)
          }
          expectNoSecret(result, cwd)
        },
      )
    },
    TIMEOUT_MS,
  )
})
