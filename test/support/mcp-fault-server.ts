/**
 * A small MCP server over stdio for the faults no reference server makes, written with the SDK's server classes.
 *
 * `bun mcp-fault-server.ts [ARGS...]`, with `FAULT_MODE` in its environment:
 * - `never-starts`: says so on stderr and never answers the handshake;
 * - `fails-to-start`: says why on stderr and exits with code 1 before the handshake;
 * - no mode: serves the tools below.
 * When `STARTS_FILE` is set, it first appends its pid to that file. With
 * `KEEP_ALIVE` set it outlives the end of its stdin (as many servers do), so
 * only a signal stops it.
 * Tools: `whoami` (its pid, arguments, directory and the variables `TOKEN` and
 * `OPENAI_API_KEY`, as JSON), `big {bytes}` (that many `x`), `fails` (an error
 * result), `crash` (says so on stderr and exits with code 3 mid-call),
 * `dotted.name` (`ok`).
 */
import { appendFileSync } from "node:fs"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"

const mode = process.env.FAULT_MODE ?? "serve"
if (process.env.STARTS_FILE) appendFileSync(process.env.STARTS_FILE, `${process.pid}\n`)
if (mode === "never-starts") {
  console.error("fault server: starting very slowly")
  setInterval(() => {}, 60_000)
} else if (mode === "fails-to-start") {
  console.error("fault server: loading settings")
  console.error("fault server: cannot open the database")
  process.exit(1)
} else {
  const object = (properties: Record<string, unknown> = {}) => ({ type: "object" as const, properties })
  const server = new Server({ name: "fault", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: "whoami", description: "Who and where the server is", inputSchema: object() },
      { name: "big", description: "A long text", inputSchema: { ...object({ bytes: { type: "number" } }), required: ["bytes"] } },
      { name: "fails", description: "Always an error result", inputSchema: object() },
      { name: "crash", description: "Exits mid-call", inputSchema: object() },
      { name: "dotted.name", description: "A name with a dot", inputSchema: object() },
    ],
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] })
    switch (request.params.name) {
      case "whoami":
        return text(
          JSON.stringify({
            pid: process.pid,
            argv: process.argv.slice(2),
            cwd: process.cwd(),
            TOKEN: process.env.TOKEN ?? null,
            OPENAI_API_KEY: process.env.OPENAI_API_KEY ?? null,
          }),
        )
      case "big":
        return text("x".repeat(Number(request.params.arguments?.bytes)))
      case "fails":
        return { ...text("the database is locked"), isError: true }
      case "crash":
        console.error("fault server: crashing on purpose")
        process.exit(3)
      default:
        return text("ok")
    }
  })
  await server.connect(new StdioServerTransport())
  if (process.env.KEEP_ALIVE) setInterval(() => {}, 60_000)
}
