/**
 * The `claude_code` backend: one call is one session of the Claude Code CLI, run through its agent SDK.
 *
 * `makeClaudeCodeBackend(opts)` makes a backend whose `call` starts the CLI
 * (`@anthropic-ai/claude-agent-sdk`'s `query`) as a child process in the agent's
 * workspace, with the request's system prompt after Claude Code's own (or after
 * `system_prompt`), the request's conversation as its prompt
 * (`claude-code-tools.ts`), massgen's workflow tools as the in-process MCP
 * server `massgen`, the agent's own `mcp_servers` beside it (started by the
 * CLI, `claude-code-mcp.ts`), and the config's CLI keys as its options. The CLI works
 * with its own tools until it ends its turn; the call's reply is its last text,
 * the workflow call it made (at most one, `accepted`), its usage summed over
 * the session, and each of its own tool calls (Read, Write, Bash, its MCP servers' tools, ...) as a
 * hosted tool use with its outcome: the orchestrator records them as
 * `hosted_tool_used` events once the call's `call_end` is in. Text and thinking
 * stream to `onChunk` as the CLI reports them. The CLI's session id is the
 * reply's one part (`{type: "claude_code_session", session_id}`), recorded in
 * the call's `call_end`.
 *
 * Every call is a fresh session that is not kept on disk (`persistSession:
 * false`): a call cut off (a crash, kill -9) is made again on resume from its
 * request, in a new session, as every backend's call is; the CLI's edits of the
 * workspace before the cut stay, as a cut-off tool's do. Nothing it did is
 * recorded twice: its tool uses are recorded only with a finished call.
 * Interrupting the call aborts the CLI. `inRun(logDir)` places the backend in
 * its run: the CLI's working directory is the agent's workspace there.
 */
import { spawn } from "node:child_process"
import { join } from "node:path"
import type { Options, SDKMessage } from "@anthropic-ai/claude-agent-sdk"
import { Effect } from "effect"
import type { BackendConfig } from "../../domain/config/index.ts"
import type { HostedToolUse, LlmReply, LlmRequest } from "../../domain/llm.ts"
import { workspaceDir } from "../../domain/workspaces/facts.ts"
import { deathBoundCommand } from "../tools/child-process.ts"
import { type Backend, BackendError, type OnChunk } from "./backend.ts"
import { claudeNotFound, cliEnv } from "./claude-code-env.ts"
import { type CliMcpServers, cliMcpServers } from "./claude-code-mcp.ts"
import { MCP_PREFIX, promptOf, workflowServer } from "./claude-code-tools.ts"
import { scrubSecrets } from "./errors.ts"
import type { Env } from "./keys.ts"
import { DEFAULT_CALL_TIMEOUT_SECONDS, DEFAULT_MAX_RETRIES, firstLine, replyMeter } from "./sdk-stream.ts"

export interface ClaudeCodeOptions {
  readonly agentId: string
  readonly anonId: string
  readonly model: string
  readonly config: BackendConfig
  readonly env: Env
  readonly apiKey: string | null
  /** The CLI's program (`findClaudeExecutable`); null when it was not found. */
  readonly executable: string | null
  /** The CLI's working directory: the agent's workspace, once the backend is in its run. */
  readonly cwd: string | null
  /** Where the SDK module is loaded from (tests load it once). */
  readonly sdk: () => Promise<typeof import("@anthropic-ai/claude-agent-sdk")>
}

/** The CLI's tools massgen lets it use without asking, unless `allowed_tools` says otherwise (MassGen's list). */
const DEFAULT_ALLOWED = ["Read", "Write", "Edit", "MultiEdit", "Bash", "Grep", "Glob", "LS", "TodoWrite", "NotebookEdit"]
const WEB_TOOLS = ["WebSearch", "WebFetch"]

const cliError = (detail: string, retryable: boolean, secrets: ReadonlyArray<string>) =>
  new BackendError({
    reason: retryable ? "server_error" : "bad_request",
    detail: scrubSecrets(detail, secrets).slice(0, 2_000),
    retryable,
    retryAfterSeconds: null,
  })

/** The SDK's options of one call. */
const optionsOf = (
  opts: ClaudeCodeOptions,
  request: LlmRequest,
  cwd: string,
  executable: string,
  abort: AbortController,
  own: CliMcpServers,
  stderr: (text: string) => void,
) => {
  const b = opts.config
  const server = workflowServer(request)
  const massgenPrompt = [request.system, b.append_system_prompt].filter((t) => t !== undefined && t !== "").join("\n\n")
  const web = b.enable_web_search === true
  const options: Options = {
    cwd,
    env: cliEnv(opts.env, opts.apiKey),
    pathToClaudeCodeExecutable: executable,
    abortController: abort,
    model: opts.model,
    // massgen's own server last: an entry of the config named `massgen` does not replace it.
    mcpServers: { ...own.servers, [server.config.name]: server.config },
    allowedTools: [...(b.allowed_tools ?? [...DEFAULT_ALLOWED, ...(web ? WEB_TOOLS : [])]), ...own.allowed, ...server.toolNames],
    disallowedTools: [...(b.disallowed_tools ?? []), ...(web ? [] : WEB_TOOLS), ...own.disallowed],
    permissionMode: b.permission_mode ?? "acceptEdits",
    ...(b.permission_mode === "bypassPermissions" ? { allowDangerouslySkipPermissions: true } : {}),
    systemPrompt:
      b.system_prompt !== undefined
        ? [b.system_prompt, massgenPrompt].filter((t) => t !== "").join("\n\n")
        : { type: "preset", preset: "claude_code", append: massgenPrompt },
    ...(b.max_thinking_tokens !== undefined ? { maxThinkingTokens: b.max_thinking_tokens } : {}),
    ...(b.max_turns !== undefined ? { maxTurns: b.max_turns } : {}),
    // No user or project settings, no session files: a call is its request alone.
    settingSources: [],
    persistSession: false,
    // The CLI dies with massgen, even by SIGKILL (`deathBoundCommand`): a killed run leaves no CLI behind.
    spawnClaudeCodeProcess: (o) => {
      const [command, ...args] = deathBoundCommand(o.command, o.args)
      const child = spawn(command as string, args, { cwd: o.cwd, env: o.env, stdio: ["pipe", "pipe", "pipe"], signal: o.signal })
      child.stderr.on("data", (d: Buffer) => stderr(d.toString("utf8")))
      return child
    },
  }
  return { options, server }
}

/** What a tool call's input shows in its record: its path, command or pattern, else its JSON. */
const inputDetail = (input: unknown): string => {
  if (input !== null && typeof input === "object") {
    const o = input as Record<string, unknown>
    for (const key of ["file_path", "path", "command", "pattern", "url", "query", "notebook_path"]) {
      if (typeof o[key] === "string") return o[key] as string
    }
  }
  return JSON.stringify(input ?? {})
}

const resultText = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((c) => (c !== null && typeof c === "object" && typeof c.text === "string" ? c.text : "")).join("")
      : ""

/** Reads one session's messages into a reply. */
const assemble = (maxReplyBytes: number) => {
  const meter = replyMeter(maxReplyBytes)
  const pending = new Map<string, { readonly name: string; readonly input: unknown }>()
  const uses: Array<HostedToolUse> = []
  let sessionId: string | null = null
  let result: Extract<SDKMessage, { type: "result" }> | null = null
  const push = (m: SDKMessage): ReadonlyArray<{ readonly _tag: "text" | "reasoning"; readonly text: string }> => {
    if ("session_id" in m && typeof m.session_id === "string") sessionId = m.session_id
    if (m.type === "result") result = m
    if (m.type === "assistant" && m.parent_tool_use_id === null) {
      const chunks: Array<{ readonly _tag: "text" | "reasoning"; readonly text: string }> = []
      for (const block of m.message.content) {
        if (block.type === "text") {
          meter.add(block.text)
          chunks.push({ _tag: "text", text: block.text })
        } else if (block.type === "thinking") {
          meter.add(block.thinking)
          chunks.push({ _tag: "reasoning", text: block.thinking })
        } else if (block.type === "tool_use" && !block.name.startsWith(MCP_PREFIX)) {
          meter.entry()
          pending.set(block.id, { name: block.name, input: block.input })
        }
      }
      return chunks
    }
    if (m.type === "user" && Array.isArray(m.message.content)) {
      for (const block of m.message.content) {
        if (typeof block !== "object" || block.type !== "tool_result") continue
        const use = pending.get(block.tool_use_id)
        if (use === undefined) continue
        pending.delete(block.tool_use_id)
        const outcome = block.is_error === true ? `error: ${firstLine(resultText(block.content))}` : "ok"
        uses.push({ tool: use.name, detail: `${firstLine(inputDetail(use.input))} → ${outcome}` })
      }
    }
    return []
  }
  return { push, uses, sessionId: () => sessionId, result: () => result as Extract<SDKMessage, { type: "result" }> | null }
}

export const makeClaudeCodeBackend = (opts: ClaudeCodeOptions): Backend => {
  const b = opts.config
  const secrets = opts.apiKey === null ? [] : [opts.apiKey]
  const call = (request: LlmRequest, onChunk: OnChunk): Effect.Effect<LlmReply, BackendError> => {
    const abort = new AbortController()
    // The CLI ends with the call, however it ends: an interrupt kills it.
    return Effect.gen(function* () {
      const executable = opts.executable
      if (executable === null) return yield* cliError(claudeNotFound(opts.agentId, b.path_to_claude_code_executable), false, secrets)
      if (opts.cwd === null) return yield* cliError(`agent ${opts.agentId}: a claude_code agent runs only in a run's workspace`, false, [])
      const cwd = opts.cwd
      const sdk = yield* Effect.promise(opts.sdk)
      // The end of what the CLI printed on stderr, for the message of a failed call.
      let stderr = ""
      const own = cliMcpServers(b, opts.env, cwd)
      if (typeof own === "string") return yield* cliError(`agent ${opts.agentId}: ${own}`, false, [])
      const { options, server } = optionsOf(opts, request, cwd, executable, abort, own, (d) => {
        stderr = (stderr + d).slice(-500)
      })
      const session = sdk.query({ prompt: promptOf(request), options })
      const reading = assemble(b.max_reply_bytes ?? 4 * 1024 * 1024)
      const failed = (e: unknown) =>
        e instanceof BackendError
          ? e
          : cliError(`the Claude Code CLI failed: ${e instanceof Error ? e.message : String(e)} ${stderr}`, true, secrets)
      const it = session[Symbol.asyncIterator]()
      for (;;) {
        const next = yield* Effect.tryPromise({ try: () => it.next(), catch: failed })
        if (next.done === true) break
        const chunks = yield* Effect.try({ try: () => reading.push(next.value), catch: failed })
        for (const chunk of chunks) yield* onChunk(chunk)
        if (next.value.type === "result") break
      }
      const result = reading.result()
      if (result === null) return yield* cliError("the Claude Code CLI ended without a result", true, secrets)
      if (result.subtype !== "success" || result.is_error) {
        const why = result.subtype === "success" ? result.result : `${result.subtype}: ${result.errors.join("; ")}`
        return yield* cliError(`the Claude Code CLI's session failed: ${why}`, result.subtype === "success", secrets)
      }
      const u = result.usage
      const accepted = server.accepted()
      const sessionId = reading.sessionId()
      return {
        text: result.result,
        reasoning: "",
        toolCalls: accepted === null ? [] : [accepted],
        usage: {
          inputTokens: u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens,
          cachedInputTokens: u.cache_read_input_tokens,
          outputTokens: u.output_tokens,
          reasoningTokens: null,
        },
        truncated: null,
        raw: { session_id: sessionId, total_cost_usd: result.total_cost_usd, num_turns: result.num_turns, usage: u },
        parts: sessionId === null ? [] : [{ type: "claude_code_session", session_id: sessionId }],
        hostedToolUses: reading.uses,
      } satisfies LlmReply
    }).pipe(Effect.ensuring(Effect.sync(() => abort.abort())))
  }
  return {
    type: "claude_code",
    model: opts.model,
    maxRetries: b.max_retries ?? DEFAULT_MAX_RETRIES,
    callTimeoutSeconds: b.call_timeout_seconds ?? DEFAULT_CALL_TIMEOUT_SECONDS,
    call,
    inRun: (logDir) => makeClaudeCodeBackend({ ...opts, cwd: join(logDir, workspaceDir(opts.anonId)) }),
  }
}
