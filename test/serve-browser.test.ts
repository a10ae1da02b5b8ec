/**
 * Issue 23 (finding H5) in a real browser: a page of another loopback origin
 * cannot make `massgen serve` (without `--api-key-env`) run the council.
 *
 * Headless Chromium (Debian's `chromium`, driven by playwright-core, as in
 * `web-view.test.ts`) opens a page served by this test on
 * `http://localhost:OTHER_PORT`; the page does what the probe did, a `no-cors`
 * `text/plain` POST of a completion to `http://127.0.0.1:SERVE_PORT`, which a
 * browser sends without a preflight. The request reaches the server (the
 * fetch resolves with an opaque response rather than failing), and no run
 * directory is made.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { type BrowserContext, chromium } from "playwright-core"
import { CHROMIUM, CHROMIUM_ARGS } from "./support/chromium.ts"
import { cleanupSandboxes, sandbox, startUntilLine, writeConfig } from "./support/cli.ts"

const TIMEOUT = 90_000

let browser: BrowserContext
let profile: string

beforeAll(async () => {
  profile = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-chromium-"))
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
  })
})

afterAll(async () => {
  await browser?.close()
  fs.rmSync(profile, { recursive: true, force: true })
  cleanupSandboxes()
})

describe("massgen serve in a browser", () => {
  test(
    "a page on another loopback origin sends a no-cors text/plain completion: it reaches the server, and the council does not run",
    async () => {
      const cwd = sandbox()
      const config = writeConfig(
        cwd,
        { agents: [{ id: "agent_a", backend: { type: "scripted", answer: "Four.", vote: "agent1" } }] },
        "team.yaml",
      )
      const cli = await startUntilLine("source", ["serve", "--config", config, "--port", "0"], "Serving ", { cwd, timeoutMs: TIMEOUT })
      const target = `${cli.lines.find((l) => l.startsWith("Serving "))!.split(" ")[1]!}/chat/completions`
      const page = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch: () => new Response("<!doctype html><title>elsewhere</title>", { headers: { "content-type": "text/html" } }),
      })
      try {
        const tab = await browser.newPage()
        await tab.goto(`http://localhost:${page.port}/`)
        const body = JSON.stringify({ model: "team", messages: [{ role: "user", content: "What is 2+2?" }] })
        const sent = await tab.evaluate(
          async ({ target, body }) => {
            try {
              const reply = await fetch(target, { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body })
              return reply.type
            } catch (e) {
              return `failed: ${String(e)}`
            }
          },
          { target, body },
        )
        expect(sent).toBe("opaque")
        expect(fs.existsSync(nodePath.join(cwd, ".massgen", "massgen_logs"))).toBe(false)
      } finally {
        page.stop(true)
        cli.proc.kill("SIGTERM")
        expect((await cli.done).exitCode).toBe(0)
      }
    },
    TIMEOUT,
  )
})
