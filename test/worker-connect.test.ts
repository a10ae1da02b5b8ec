/**
 * A worker and its database's first word (issue 25, L3): a server that cannot
 * be reached is one line at once, naming the host and the cause (never the
 * URL's password), exit 2 and not an internal error; and a SIGTERM while the
 * worker waits for a server that accepted the connection and never answers
 * stops it at once, exit 4. "At once" is not timed: the bound on the wait is
 * far under the driver's own connect timeout (30 s), past which the worker
 * used to go on.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as net from "node:net"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { stopInSetUp } from "./support/worker-signal.ts"

afterAll(cleanupSandboxes)

/** Nothing listens on port 1 of the loopback. */
const REFUSED = "postgres://nobody:s3cret-pw@127.0.0.1:1/x"

describe("massgen worker --engine: the first word with the server", () => {
  test("a server that refuses the connection: one line naming the host and the cause, exit 2, the password masked", async () => {
    const r = await runCli("source", ["worker", "--engine", REFUSED], { timeoutMs: 20_000 })
    expect({ code: r.exitCode, stderr: r.stderr, stdout: r.stdout }).toEqual({
      code: 2,
      stderr: "massgen: cannot reach the database at 127.0.0.1:1: connection refused (--engine postgres://***@127.0.0.1:1/x)\n",
      stdout: "",
    })
  }, 30_000)

  test("batch --engine, batch status and batch export say the same", async () => {
    const cwd = sandbox()
    writeConfig(cwd, { agents: [{ id: "a", backend: { type: "scripted", answer: "x" } }] }, "team.yaml")
    fs.writeFileSync(nodePath.join(cwd, "items.jsonl"), `${JSON.stringify({ id: "q1", question: "What is 2+2?" })}\n`)
    for (const args of [
      ["items.jsonl", "--config", "team.yaml"],
      ["status", "b"],
      ["export", "b"],
    ]) {
      const r = await runCli("source", ["batch", ...args, "--engine", REFUSED], { cwd, timeoutMs: 20_000 })
      expect({ code: r.exitCode, stderr: r.stderr }).toEqual({
        code: 2,
        stderr: "massgen: cannot reach the database at 127.0.0.1:1: connection refused (--engine postgres://***@127.0.0.1:1/x)\n",
      })
    }
  }, 60_000)

  test("SIGTERM while the server has not answered yet: the worker stops at once, exit 4", async () => {
    const sockets: Array<net.Socket> = []
    let connected: () => void = () => undefined
    const reached = new Promise<void>((resolve) => (connected = resolve))
    const silent = net.createServer((socket) => {
      sockets.push(socket)
      connected()
    })
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    const port = (silent.address() as net.AddressInfo).port
    try {
      const worker = await startCli("source", ["worker", "--engine", `postgres://nobody:s3cret-pw@127.0.0.1:${port}/x`], {
        timeoutMs: 20_000,
      })
      await reached
      await stopInSetUp(worker)
    } finally {
      for (const s of sockets) s.destroy()
      silent.close()
    }
  }, 30_000)
})
