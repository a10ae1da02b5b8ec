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
 */
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import type { ResolvedStdio } from "../../domain/mcp-config.ts"
import { type GroupProcess, forgetGroup, killGroup, spawnInGroup } from "./child-process.ts"

/** How long `close()` waits for the server to exit after its stdin ends, and again after SIGTERM. */
const GRACE_MS = 1000
/** How much of a server's stderr is kept, from its end. */
const STDERR_KEPT = 8192

export class StdioServerTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: <T extends JSONRPCMessage>(message: T) => void

  private proc: GroupProcess<"pipe"> | null = null
  private readonly buffer = new ReadBuffer()
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
    const tail = this.stderr.split("\n").map((l) => l.trim()).filter((l) => l !== "").slice(-lines).join(" | ")
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
      this.onclose?.()
    })
  }

  private async readStdout(stream: ReadableStream<Uint8Array>): Promise<void> {
    try {
      // A chunk with no end of line is kept aside: the read buffer copies all it holds on every append,
      // which made a long message (a 1 MB result comes in many chunks) cost O(n²).
      let pending: Array<Buffer> = []
      for await (const chunk of stream) {
        const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        if (bytes.indexOf(0x0a) === -1) {
          pending.push(bytes)
          continue
        }
        this.buffer.append(pending.length === 0 ? bytes : Buffer.concat([...pending, bytes]))
        pending = []
        for (;;) {
          let message: JSONRPCMessage | null
          try {
            message = this.buffer.readMessage()
          } catch (e) {
            this.onerror?.(e instanceof Error ? e : new Error(String(e)))
            continue
          }
          if (message === null) break
          this.onmessage?.(message)
        }
      }
    } catch (e) {
      this.onerror?.(e instanceof Error ? e : new Error(String(e)))
    }
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
