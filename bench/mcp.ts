/**
 * An MCP stdio round trip through massgen against the bare SDK client (`bun bench/mcp.ts`).
 *
 * The same server (`@modelcontextprotocol/server-everything` over stdio, and
 * the test fault server for a 1 MB result) is started twice: once behind
 * massgen's tool provider (`startMcpServers`: its own stdio transport, and
 * `provider.run` inside a fiber that runs on, as a round calls it, timed
 * until the fiber has the tool's text), once behind the SDK's
 * `StdioClientTransport` and `Client.callTool`, the floor, timed from its
 * call to its promise settling. Massgen's call does not go through the SDK's
 * request machinery (`StdioServerTransport.request`: no timer, no abort
 * signal, no schema parse of the message and of the result, but a
 * hand-written check of the fields it reads), so it can come out under 1.
 * Part of that is the cache: the SDK's call no longer runs code massgen's
 * call has just warmed (its own time before and after the server's answer
 * went up from 19 to 32 µs a call here, massgen's down from 40 to 18).
 * The two take turns call by call (massgen, bare, bare, massgen, ...:
 * each follows itself as often as the other), each call timed alone, so that
 * a burst of load on this shared machine falls on both of a pair of calls;
 * each pair gives a ratio. Two server processes differ by up to a third here
 * from one start to the next, whoever talks to them, so each case starts
 * `PAIRS` fresh pairs of servers (which one starts first alternating) and
 * takes the median of every pair's ratio. The goal: under 1.1.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Effect, Either, Exit, Scope } from "effect"
import { decodeConfig } from "../src/domain/config/index.ts"
import { startMcpServers } from "../src/services/tools/mcp-servers.ts"
import { EVERYTHING, FAULT_SERVER } from "../test/support/mcp.ts"
import { fmt, line, median, percentile, targetLine } from "./support.ts"

const PAIRS = 6
const WARM_UP = 30
interface Case {
  readonly label: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly tool: string
  readonly arguments: Record<string, unknown>
  readonly calls: number
}

const CASES: ReadonlyArray<Case> = [
  { label: "echo", args: [EVERYTHING, "stdio"], env: {}, tool: "echo", arguments: { message: "hello" }, calls: 150 },
  { label: "get-sum", args: [EVERYTHING, "stdio"], env: {}, tool: "get-sum", arguments: { a: 2, b: 40 }, calls: 150 },
  { label: "a 1 MB result", args: [FAULT_SERVER], env: { FAULT_MODE: "serve" }, tool: "big", arguments: { bytes: 1_048_576 }, calls: 10 },
]

/** The median of each server pair's ratios (`ratios` holds the pairs' calls one pair after another). */
const perPair = (ratios: ReadonlyArray<number>, pairs: number): ReadonlyArray<number> => {
  const size = ratios.length / pairs
  return Array.from({ length: pairs }, (_, p) => median(ratios.slice(p * size, (p + 1) * size)))
}

/** One pair of servers: massgen's call times, and each call's ratio to the bare client's call beside it. */
const benchPair = async (c: Case, cwd: string, massgen: Array<number>, ratios: Array<number>, bareFirst: boolean): Promise<void> => {
  const bare = new Client({ name: "bench", version: "0" })
  const connectBare = () =>
    bare.connect(new StdioClientTransport({ command: process.execPath, args: [...c.args], env: c.env, stderr: "ignore" }))
  const config = decodeConfig(
    {
      agents: [
        { id: "a", backend: { type: "scripted", mcp_servers: [{ name: "s", command: process.execPath, args: c.args, env: c.env }] } },
      ],
    },
    {},
  )
  const scope = Effect.runSync(Scope.make())
  // Which server starts first alternates from pair to pair: the order alone moves the ratio by a few per cent here.
  if (bareFirst) await connectBare()
  const providers = await Effect.runPromise(startMcpServers(Either.getOrThrow(config).agents, { cwd, env: {} }).pipe(Scope.extend(scope)))
  if (!bareFirst) await connectBare()
  const provider = providers.get("a")!
  const name = provider.tools.find((t) => t.spec.name.endsWith(`__${c.tool}`))!.spec.name
  // As a round calls it: inside a fiber that runs on. The bare call is timed from its start to its promise settling.
  const viaMassgen = Effect.gen(function* () {
    const t0 = performance.now()
    yield* provider.run(name, c.arguments)
    return performance.now() - t0
  })
  const viaSdk = Effect.async<number>((resume) => {
    const t0 = performance.now()
    bare.callTool({ name: c.tool, arguments: c.arguments }).then(() => resume(Effect.succeed(performance.now() - t0)))
  })
  try {
    await Effect.runPromise(
      Effect.gen(function* () {
        for (let i = 0; i < Math.min(WARM_UP, c.calls); i++) {
          yield* viaMassgen
          yield* viaSdk
        }
        for (let i = 0; i < c.calls; i++) {
          let m: number
          let s: number
          if (i % 2 === 0) {
            m = yield* viaMassgen
            s = yield* viaSdk
          } else {
            s = yield* viaSdk
            m = yield* viaMassgen
          }
          massgen.push(m)
          ratios.push(m / s)
        }
      }),
    )
  } finally {
    await bare.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const benchCase = async (c: Case, cwd: string): Promise<void> => {
  const massgen: Array<number> = []
  const ratios: Array<number> = []
  for (let p = 0; p < PAIRS; p++) await benchPair(c, cwd, massgen, ratios, p % 2 === 0)
  line(
    `MCP stdio call, ${c.label}: ms per call through massgen (median / 90th percentile)`,
    `${fmt(median(massgen), 3)} / ${fmt(percentile(massgen, 90), 3)} ms`,
  )
  targetLine(
    `MCP stdio call, ${c.label}: through massgen over the bare SDK client, call by call (median / max of the servers' medians)`,
    perPair(ratios, PAIRS),
    "x",
    {
      ratio: (v) => v,
      op: "<",
      limit: 1.1,
      text: "< 1.1",
    },
  )
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
