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
 * `dotted.name` (`ok`), `rejects` (a JSON-RPC error: invalid params),
 * `malformed` (a result whose text part's text is a number, past the SDK
 * server's own check), `waits` (answers only when cancelled: then appends
 * `cancelled <request id>` to `CANCELS_FILE`), `shaped {give}` (an output
 * schema of `{ n: number }`; its structured content `{ n: 1 }` for `right`,
 * `{ n: "one" }` for `wrong`, none for `none`).
 */
import { appendFileSync } from "node:fs"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js"

const mode = process.env.FAULT_MODE ?? "serve"
const MALFORMED = "(made malformed on its way out)"
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
      { name: "rejects", description: "Always invalid params", inputSchema: object() },
      { name: "malformed", description: "A malformed result", inputSchema: object() },
      { name: "waits", description: "Answers once cancelled", inputSchema: object() },
      {
        name: "shaped",
        description: "Structured content, right or wrong",
        inputSchema: object({ give: { type: "string" } }),
        outputSchema: { ...object({ n: { type: "number" } }), required: ["n"] },
      },
    ],
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
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
      case "rejects":
        throw new McpError(ErrorCode.InvalidParams, "bytes must be a number")
      case "malformed":
        return text(MALFORMED)
      case "waits":
        return new Promise((resolve) =>
          extra.signal.addEventListener("abort", () => {
            appendFileSync(process.env.CANCELS_FILE!, `cancelled ${extra.requestId}\n`)
            resolve(text("cancelled"))
          }),
        )
      case "shaped": {
        const give = request.params.arguments?.give
        return give === "none" ? text("no structure") : { ...text("structured"), structuredContent: { n: give === "right" ? 1 : "one" } }
      }
      case "crash":
        console.error("fault server: crashing on purpose")
        process.exit(3)
      default:
        return text("ok")
    }
  })
  // The SDK server checks its results, so the malformed one is made so on its way out.
  const transport = new StdioServerTransport()
  const send = transport.send.bind(transport)
  transport.send = (message) => {
    const result = "result" in message ? (message.result as { content?: Array<{ text?: unknown }> }) : undefined
    if (result?.content?.[0]?.text === MALFORMED) result.content[0]!.text = 42
    return send(message)
  }
  await server.connect(transport)
  if (process.env.KEEP_ALIVE) setInterval(() => {}, 60_000)
}
