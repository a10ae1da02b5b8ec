/**
 * The stdio transport of an MCP server: its process, which never outlives massgen.
 *
 * `StdioServerTransport` is an MCP SDK `Transport` (newline-delimited JSON-RPC
 * on the process's stdin and stdout, read with the SDK's own buffer) that
 * spawns the server itself, because the SDK's transport cannot promise what a
 * run needs of a server process:
 * - it dies with massgen, even by SIGKILL: it is started under
 *   `setpriv --pdeathsig SIGKILL` (util-linux) where that exists, so the kernel
 *   kills it when massgen dies; and any server still running when the process
 *   exits (`process.exit`, a second Ctrl+C) is killed with its process group;
 * - it runs in a process group of its own (`spawnInGroup`), so that
 *   stopping it stops what it started (`npx` starts a second process) and a
 *   Ctrl+C at the terminal reaches massgen, which stops the servers itself;
 * - how it ended (`exitDescription`: the exit code or the signal) and the tail
 *   of its stderr (`stderrTail`) are known once it has ended, before `onclose`
 *   is called, so a start failure or a later call can say why.
 * Its environment is the few variables the SDK passes by default (`PATH`,
 * `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`) plus the entry's `env`: no API key
 * reaches it unless the entry names it.
 * `close()` ends its stdin, then after a grace period signals its group with
 * SIGTERM, then SIGKILL.
 *
 * Besides the SDK client's messages, `request(method, params, reply)` sends a
 * request of massgen's own (a tool call, outside the client's request
 * machinery: no timer, no signal, no schema parse) with an id the client never
 * uses (`massgen-<n>`); its response goes to `reply` and not to the client,
 * and `reply(null)` says the server ended first. Every other line is checked
 * as the SDK's transport checks it (`JSONRPCMessageSchema`) and handed to the client.
 */
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
import { STDIO_DEFAULT_MAX_BUFFER_SIZE, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import type { ResolvedStdio } from "../../domain/config/index.ts"
import { forgetGroup, type GroupProcess, killGroup, spawnInGroup } from "./child-process.ts"

/** How long `close()` waits for the server to exit after its stdin ends, and again after SIGTERM. */
const GRACE_MS = 1000
/** How much of a server's stderr is kept, from its end. */
const STDERR_KEPT = 8192
/** The prefix of the ids of massgen's own requests (the SDK client's ids are numbers). */
const OWN_ID = "massgen-"

/** The response to one of massgen's own requests: its result, or its error; null when the server ended first. */
export type OwnReply =
  | { readonly result: unknown }
  | { readonly error: { readonly code: number; readonly message: string; readonly data?: unknown } }
  | null

export class StdioServerTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: <T extends JSONRPCMessage>(message: T) => void

  private proc: GroupProcess<"pipe"> | null = null
  private readonly replies = new Map<string, (reply: OwnReply) => void>()
  private lastId = 0
  private stderr = ""
  private ended: string | null = null
  private closing: Promise<void> | null = null
  private endedBeforeClose = false

  constructor(private readonly server: ResolvedStdio) {}

  /** How the process ended (`exited with code 1`, `killed by SIGKILL`), or null while it runs. */
  get exitDescription(): string | null {
    return this.ended
  }

  /** Whether the process ended before `close()` was called: on its own, or by someone else's signal. */
  get exitedOnItsOwn(): boolean {
    return this.endedBeforeClose
  }

  get pid(): number | null {
    return this.proc?.pid ?? null
  }

  /** The last lines of the server's stderr, at most `lines` non-blank lines and `chars` characters, joined by ` | `. */
  stderrTail(lines = 5, chars = 500): string {
    const tail = this.stderr
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "")
      .slice(-lines)
      .join(" | ")
    return tail.length > chars ? `...${tail.slice(-chars)}` : tail
  }

  async start(): Promise<void> {
    if (this.proc !== null) throw new Error("the server was started already")
    const proc = spawnInGroup(this.server.command, this.server.args, {
      cwd: this.server.cwd,
      env: { ...getDefaultEnvironment(), ...this.server.env },
      stdin: "pipe",
    })
    this.proc = proc
    const stdout = this.readStdout(proc.stdout)
    const stderr = this.readStderr(proc.stderr)
    void proc.exited.then(async (code) => {
      forgetGroup(proc.pid)
      this.endedBeforeClose = this.closing === null
      await Promise.all([stdout, stderr])
      this.ended = proc.signalCode !== null ? `killed by ${proc.signalCode}` : `exited with code ${code}`
      const replies = [...this.replies.values()]
      this.replies.clear()
      for (const reply of replies) reply(null)
      this.onclose?.()
    })
  }

  private async readStdout(stream: ReadableStream<Uint8Array>): Promise<void> {
    try {
      // The bytes after the last end of line, in chunks: joined only once a line ends, so that a long
      // message (a 1 MB result comes in many chunks) costs O(n), not O(n²).
      let pending: Array<Buffer> = []
      for await (const chunk of stream) {
        const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        if (bytes.indexOf(0x0a) === -1) {
          pending.push(bytes)
          continue
        }
        const data = pending.length === 0 ? bytes : Buffer.concat([...pending, bytes])
        let from = 0
        for (let end = data.indexOf(0x0a); end !== -1; end = data.indexOf(0x0a, from)) {
          if (end - from > STDIO_DEFAULT_MAX_BUFFER_SIZE)
            this.onerror?.(new Error(`a message of the server exceeded ${STDIO_DEFAULT_MAX_BUFFER_SIZE} bytes`))
          else this.receive(data.toString("utf8", from, data[end - 1] === 0x0d ? end - 1 : end))
          from = end + 1
        }
        pending = from === data.length ? [] : [data.subarray(from)]
      }
    } catch (e) {
      this.onerror?.(e instanceof Error ? e : new Error(String(e)))
    }
  }

  /** One line from the server: the response to a request of massgen's own, or a message for the client. */
  private receive(line: string): void {
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch (e) {
      this.onerror?.(e instanceof Error ? e : new Error(String(e)))
      return
    }
    const id = (message as { id?: unknown } | null)?.id
    if (typeof id === "string" && id.startsWith(OWN_ID) && !("method" in (message as object))) {
      const reply = this.replies.get(id)
      if (reply === undefined) return
      this.replies.delete(id)
      const { result, error } = message as { result?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } | null }
      if (error === undefined) return reply({ result })
      return reply({
        error: {
          code: typeof error?.code === "number" ? error.code : 0,
          message: typeof error?.message === "string" ? error.message : "an error with no message",
          data: error?.data,
        },
      })
    }
    const parsed = JSONRPCMessageSchema.safeParse(message)
    if (parsed.success) this.onmessage?.(parsed.data)
    else this.onerror?.(parsed.error)
  }

  private async readStderr(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder()
    try {
      for await (const chunk of stream) this.stderr = (this.stderr + decoder.decode(chunk, { stream: true })).slice(-STDERR_KEPT)
    } catch {
      // The tail read so far is what there is.
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const proc = this.proc
    if (proc === null || this.ended !== null || this.closing !== null) throw new Error("Not connected")
    proc.stdin.write(serializeMessage(message))
    const flushed = proc.stdin.flush()
    if (flushed instanceof Promise) await flushed
  }

  /**
   * Sends request `method` with `params` as massgen's own; `reply` is called once, with its response,
   * or with null if the server ends first (at once if it has ended). The function returned forgets
   * the request and tells the server it is cancelled (`notifications/cancelled`).
   */
  request(method: string, params: unknown, reply: (reply: OwnReply) => void): () => void {
    const proc = this.proc
    if (proc === null || this.ended !== null || this.closing !== null) {
      reply(null)
      return () => undefined
    }
    const id = `${OWN_ID}${++this.lastId}`
    this.replies.set(id, reply)
    this.write(proc, `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`, id)
    return () => {
      if (!this.replies.delete(id) || this.ended !== null || this.closing !== null) return
      this.write(
        proc,
        serializeMessage({
          jsonrpc: "2.0",
          method: "notifications/cancelled",
          params: { requestId: id, reason: "the call was interrupted" },
        }),
        null,
      )
    }
  }

  /** Writes `text` to the server's stdin at once; when that fails, request `id` (if any) has no reply to wait for. */
  private write(proc: GroupProcess<"pipe">, text: string, id: string | null): void {
    try {
      proc.stdin.write(text)
      const flushed = proc.stdin.flush()
      if (flushed instanceof Promise) flushed.catch(() => this.unsent(id))
    } catch {
      this.unsent(id)
    }
  }

  private unsent(id: string | null): void {
    const reply = id === null ? undefined : this.replies.get(id)
    if (reply === undefined) return
    this.replies.delete(id!)
    reply(null)
  }

  close(): Promise<void> {
    this.closing ??= this.stop()
    return this.closing
  }

  private async stop(): Promise<void> {
    const proc = this.proc
    if (proc === null) return
    const exited = proc.exited.then(() => true)
    const within = (ms: number) => Promise.race([exited, Bun.sleep(ms).then(() => false)])
    if (this.ended === null) {
      try {
        proc.stdin.end()
      } catch {
        // Its stdin is closed already.
      }
      if (!(await within(GRACE_MS))) {
        killGroup(proc.pid, "SIGTERM")
        if (!(await within(GRACE_MS))) killGroup(proc.pid, "SIGKILL")
      }
      // What the server started in its group goes with it.
      killGroup(proc.pid, "SIGKILL")
    }
    await exited
    forgetGroup(proc.pid)
  }
}
