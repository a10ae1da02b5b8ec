/**
 * An MCP stdio round trip through massgen against the bare SDK client (`bun bench/mcp.ts`).
 *
 * The same server (`@modelcontextprotocol/server-everything` over stdio, and
 * the test fault server for a 1 MB result) is started twice: once behind
 * massgen's tool provider (`startMcpServers`: its own stdio transport and
 * `provider.run` in Effect), once behind the SDK's `StdioClientTransport` and
 * `Client.callTool`, the floor. Calls alternate in batches between the two so
 * that the machine's load falls on both alike; each call is timed alone, and
 * each batch gives its median. Two server processes differ by up to a third
 * here from one start to the next, whoever talks to them, so each case starts
 * `PAIRS` fresh pairs of servers (which one starts first alternating) and
 * takes its batches across them. The goal:
 * through massgen, a batch's median under 1.1 times the bare client's batch
 * beside it (the median of those ratios, over every pair).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Effect, Either, Exit, Scope } from "effect"
import { decodeConfig } from "../src/domain/config.ts"
import { startMcpServers } from "../src/services/tools/mcp-servers.ts"
import { EVERYTHING, FAULT_SERVER } from "../test/support/mcp.ts"
import { fmt, line, targetLine } from "./support.ts"

const BATCHES = 6
const PAIRS = 4
const PER_BATCH = 25

interface Case {
  readonly label: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly tool: string
  readonly arguments: Record<string, unknown>
  readonly batches: number
}

const CASES: ReadonlyArray<Case> = [
  { label: "echo", args: [EVERYTHING, "stdio"], env: {}, tool: "echo", arguments: { message: "hello" }, batches: BATCHES },
  { label: "get-sum", args: [EVERYTHING, "stdio"], env: {}, tool: "get-sum", arguments: { a: 2, b: 40 }, batches: BATCHES },
  { label: "a 1 MB result", args: [FAULT_SERVER], env: { FAULT_MODE: "serve" }, tool: "big", arguments: { bytes: 1_048_576 }, batches: 2 },
]

const median = (xs: ReadonlyArray<number>): number => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** The median time of `n` calls, each timed alone. */
const batch = async (n: number, call: () => Promise<unknown>): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await call()
    times.push(performance.now() - t0)
  }
  return median(times)
}

/** One pair of servers: the massgen batch medians and the ratios to the bare client's, batch by batch. */
const benchPair = async (c: Case, cwd: string, massgen: Array<number>, ratios: Array<number>, bareFirst: boolean): Promise<void> => {
  const bare = new Client({ name: "bench", version: "0" })
  const connectBare = () => bare.connect(new StdioClientTransport({ command: process.execPath, args: [...c.args], env: c.env, stderr: "ignore" }))
  const config = decodeConfig({ agents: [{ id: "a", backend: { type: "scripted", mcp_servers: [{ name: "s", command: process.execPath, args: c.args, env: c.env }] } }] }, {})
  const scope = Effect.runSync(Scope.make())
  // Which server starts first alternates from pair to pair: the order alone moves the ratio by a few per cent here.
  if (bareFirst) await connectBare()
  const providers = await Effect.runPromise(startMcpServers(Either.getOrThrow(config).agents, { cwd, env: {} }).pipe(Scope.extend(scope)))
  if (!bareFirst) await connectBare()
  const provider = providers.get("a")!
  const name = provider.tools.find((t) => t.spec.name.endsWith(`__${c.tool}`))!.spec.name
  // As a round calls it: inside a fiber that runs on, each call an Effect.
  const viaMassgen = (n: number) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const times: Array<number> = []
        for (let i = 0; i < n; i++) {
          const t0 = performance.now()
          yield* provider.run(name, c.arguments)
          times.push(performance.now() - t0)
        }
        return median(times)
      }),
    )
  const viaSdk = (n: number) => batch(n, () => bare.callTool({ name: c.tool, arguments: c.arguments }))
  try {
    await viaMassgen(PER_BATCH)
    await viaSdk(PER_BATCH)
    for (let b = 0; b < c.batches; b++) {
      let m: number
      let s: number
      if (b % 2 === 0) {
        m = await viaMassgen(PER_BATCH)
        s = await viaSdk(PER_BATCH)
      } else {
        s = await viaSdk(PER_BATCH)
        m = await viaMassgen(PER_BATCH)
      }
      massgen.push(m)
      ratios.push(m / s)
    }
  } finally {
    await bare.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const benchCase = async (c: Case, cwd: string): Promise<void> => {
  const massgen: Array<number> = []
  const ratios: Array<number> = []
  for (let p = 0; p < PAIRS; p++) await benchPair(c, cwd, massgen, ratios, p % 2 === 0)
  line(`MCP stdio call, ${c.label}: median ms per call through massgen (batch medians: median / max)`, `${fmt(median(massgen), 3)} / ${fmt(Math.max(...massgen), 3)} ms`)
  targetLine(`MCP stdio call, ${c.label}: through massgen over the bare SDK client, batch by batch`, ratios, "x", {
    ratio: (v) => v,
    op: "<",
    limit: 1.1,
    text: "< 1.1",
  })
}

export const mcpBench = async (): Promise<void> => {
  console.log(`# 7. MCP: a stdio tool call through massgen's provider against the bare SDK client (${PAIRS} fresh pairs of servers a case)`)
  const cwd = mkdtempSync(join(tmpdir(), "massgen-bench-mcp-"))
  try {
    for (const c of CASES) await benchCase(c, cwd)
  } finally {
    rmSync(cwd, { recursive: true, force: true })
  }
}

if (import.meta.main) await mcpBench()
