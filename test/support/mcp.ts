/**
 * MCP servers for tests: the reference server (`@modelcontextprotocol/server-everything`) and the fault server, as config entries.
 *
 * - `EVERYTHING` / `FAULT_SERVER`: the servers' scripts; `everythingStdio(extra)`
 *   and `faultServer(mode, extra)` are stdio entries (`extra` adds keys).
 * - `startEverythingHttp(transport)` runs the reference server over streamable
 *   HTTP (or SSE) on a free loopback port and resolves once it listens (its
 *   `url` and `stop`).
 * - `startsOf(file)` reads the pids the fault server appended at its starts;
 *   `waitForStarts(file, n)` waits for `n` of them; `waitForRunStart(logDirLine)`
 *   waits for a run's first `round_started` (its servers are up by then).
 * - `waitForText(file, text)` waits until `file` holds `text` (a fault
 *   server's record of a cancelled call).
 * - `isGone(pid)`: the process has exited (a zombie no one reaped counts as gone);
 *   `waitUntilGone(pid)` waits for that, bounded.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { ROOT } from "./cli.ts"

export const EVERYTHING = nodePath.join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
export const FAULT_SERVER = nodePath.join(ROOT, "test", "support", "mcp-fault-server.ts")

export const everythingStdio = (extra: Record<string, unknown> = {}) => ({
  type: "stdio",
  command: process.execPath,
  args: [EVERYTHING, "stdio"],
  ...extra,
})

export const faultServer = (mode: "serve" | "never-starts" | "fails-to-start", extra: Record<string, unknown> = {}) => {
  const { env, args, ...rest } = extra as { env?: Record<string, string>; args?: ReadonlyArray<string> }
  return { command: process.execPath, args: [FAULT_SERVER, ...(args ?? [])], env: { FAULT_MODE: mode, ...env }, ...rest }
}

const freePort = (): number => {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

export const startEverythingHttp = async (
  transport: "streamableHttp" | "sse" = "streamableHttp",
): Promise<{ readonly url: string; readonly stop: () => Promise<void> }> => {
  const port = freePort()
  const proc = Bun.spawn([process.execPath, EVERYTHING, transport], {
    env: { ...process.env, PORT: String(port) },
    stdout: "ignore",
    stderr: "pipe",
  })
  const decoder = new TextDecoder()
  let seen = ""
  // It says where it listens on stderr.
  for await (const chunk of proc.stderr) {
    seen += decoder.decode(chunk, { stream: true })
    if (seen.includes(`on port ${port}`)) break
  }
  if (!seen.includes(`on port ${port}`)) throw new Error(`the reference server did not listen: ${seen}`)
  return {
    url: `http://127.0.0.1:${port}/${transport === "sse" ? "sse" : "mcp"}`,
    stop: async () => {
      proc.kill("SIGKILL")
      await proc.exited
    },
  }
}

export const startsOf = (file: string): ReadonlyArray<number> =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map(Number)
    : []

export const isGone = (pid: number): boolean => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true
  } catch {
    return true
  }
}

/** Polls (there is no event to wait on for another process's start or end), within `ms`. */
const poll = async (done: () => boolean, what: string, ms: number): Promise<void> => {
  const deadline = Date.now() + ms
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${ms} ms`)
    await Bun.sleep(20)
  }
}

export const waitForStarts = async (file: string, n = 1, ms = 20_000): Promise<ReadonlyArray<number>> => {
  await poll(() => startsOf(file).length >= n, `no ${n} server start(s)`, ms)
  return startsOf(file)
}

export const waitForText = (file: string, text: string, ms = 10_000): Promise<void> =>
  poll(() => fs.existsSync(file) && fs.readFileSync(file, "utf8").includes(text), `no ${JSON.stringify(text)} in ${file}`, ms)

/** Waits for a run's first round: its MCP servers have started (and answered their handshake) by then. */
export const waitForRunStart = async (logDirLine: string, ms = 20_000): Promise<void> => {
  const events = nodePath.join(logDirLine.slice("LOG_DIR: ".length), "events.jsonl")
  await poll(() => fs.existsSync(events) && fs.readFileSync(events, "utf8").includes('"type":"round_started"'), "no round_started", ms)
}

export const waitUntilGone = (pid: number, ms = 5_000): Promise<void> => poll(() => isGone(pid), `process ${pid} still running`, ms)
