/**
 * Every error class the program can render has its exit code, and a class
 * without one does not compile: the `@ts-expect-error` lines below fail
 * `tsc --noEmit` (which CI runs) if the compiler stops refusing them.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { UsageError } from "../src/cli/args/index.ts"
import { type AppError, ERROR_EXIT_CODES, exitCodeOf } from "../src/cli/program.ts"
import { ConfigError } from "../src/cli/run/load-config.ts"
import { RunDirError } from "../src/cli/run/run-dir.ts"
import { ServeError } from "../src/cli/serve/serve-command.ts"
import { BackendError } from "../src/services/backends/index.ts"
import { DotEnvError, MissingKeyError } from "../src/services/backends/keys.ts"
import { BatchError, BatchStorageError } from "../src/services/batch/batch-folder.ts"
import { EventStoreConflict, EventStoreError } from "../src/services/event-store/index.ts"
import { DatabaseError } from "../src/services/event-store/postgres.ts"
import { RunStorageError } from "../src/services/io-errors.ts"
import { ViewerError } from "../src/services/log-dir/catalog.ts"
import { LogDirError } from "../src/services/log-dir/create.ts"
import { RunLockError } from "../src/services/log-dir/run-lock.ts"
import { RunFilesError } from "../src/services/run-files/index.ts"
import { StatusWriteError } from "../src/services/run-files/status-writer.ts"
import { McpStartError } from "../src/services/tools/mcp-servers.ts"
import { CommandLineStartError } from "../src/services/tools/sandbox.ts"
import { ToolStartError } from "../src/services/tools/tool-provider.ts"

/** One error of each class with its documented code; the type makes the list complete. */
const EXAMPLES: { readonly [Tag in AppError["_tag"]]: readonly [Extract<AppError, { _tag: Tag }>, 1 | 2] } = {
  UsageError: [new UsageError({ reason: "bad_value", detail: "--port: expected a port number" }), 1],
  ConfigError: [new ConfigError({ reason: "invalid", path: "c.yaml", problems: [] }), 1],
  MissingKeyError: [new MissingKeyError({ agentId: "a", backendType: "openai", envVars: ["OPENAI_API_KEY"] }), 1],
  DotEnvError: [new DotEnvError({ reason: "unreadable", path: ".env", detail: "EACCES" }), 1],
  ViewerError: [new ViewerError({ reason: "no_runs", path: "logs", detail: "" }), 1],
  RunDirError: [new RunDirError({ reason: "missing", path: "d", detail: "" }), 1],
  RunLockError: [new RunLockError({ reason: "held", path: "d", pid: 1, detail: "" }), 1],
  LogDirError: [new LogDirError({ reason: "create_failed", path: "d", detail: "EACCES" }), 2],
  EventStoreError: [new EventStoreError({ reason: "write_failed", stream: "d", detail: "ENOSPC" }), 2],
  EventStoreConflict: [new EventStoreConflict({ reason: "conflict", stream: "d", expected: 3, actual: 4 }), 2],
  RunStorageError: [new RunStorageError({ kind: "event_log", path: "d/events.jsonl", cause: "disk full (ENOSPC)", logDir: "d" }), 2],
  RunFilesError: [new RunFilesError({ reason: "write_failed", path: "d/execution_metadata.yaml", detail: "disk full (ENOSPC)" }), 2],
  StatusWriteError: [new StatusWriteError({ reason: "write_failed", path: "d/status.json", detail: "ENOSPC" }), 2],
  BackendError: [new BackendError({ reason: "server_error", detail: "500", retryable: true, retryAfterSeconds: null }), 2],
  McpStartError: [new McpStartError({ reason: "failed", server: "files", detail: "exited with code 1" }), 1],
  CommandLineStartError: [new CommandLineStartError({ agent: "a", mode: "docker", detail: "the docker CLI is not on the PATH" }), 1],
  ToolStartError: [
    new ToolStartError({ kind: "mcp_server", name: "files", problem: "MCP server files did not start: exited with code 1" }),
    1,
  ],
  ServeError: [new ServeError({ reason: "cannot_listen", detail: "127.0.0.1:4000 (in use)" }), 1],
  BatchError: [new BatchError({ reason: "bad_items", path: "items.jsonl", detail: "line 2: not JSON" }), 1],
  BatchStorageError: [new BatchStorageError({ path: "b/results.jsonl", cause: "disk full (ENOSPC)" }), 2],
  DatabaseError: [
    new DatabaseError({ reason: "unreachable", server: "db:5432", url: "postgres://***@db:5432/x", detail: "connection refused" }),
    2,
  ],
}

describe("error exit codes", () => {
  test.each(Object.entries(EXAMPLES))("%s exits with its documented code", (tag, [error, code]) => {
    expect(error._tag as string).toBe(tag)
    expect(exitCodeOf(error)).toBe(code)
  })

  test("usage and configuration errors are 1, execution errors 2", () => {
    const byCode = (code: 1 | 2) => Object.keys(ERROR_EXIT_CODES).filter((tag) => ERROR_EXIT_CODES[tag as AppError["_tag"]] === code)
    expect(byCode(1).sort()).toEqual([
      "BatchError",
      "CommandLineStartError",
      "ConfigError",
      "DotEnvError",
      "McpStartError",
      "MissingKeyError",
      "RunDirError",
      "RunLockError",
      "ServeError",
      "ToolStartError",
      "UsageError",
      "ViewerError",
    ])
    expect(byCode(2).sort()).toEqual([
      "BackendError",
      "BatchStorageError",
      "DatabaseError",
      "EventStoreConflict",
      "EventStoreError",
      "LogDirError",
      "RunFilesError",
      "RunStorageError",
      "StatusWriteError",
    ])
  })

  test("a code map without a class, or a command failing with an unmapped class, does not compile", () => {
    const { BackendError: _, ...withoutOne } = ERROR_EXIT_CODES
    // @ts-expect-error BackendError has no code
    const incomplete: typeof ERROR_EXIT_CODES = withoutOne
    class NewError extends Schema.TaggedError<NewError>()("NewError", {}) {}
    // @ts-expect-error NewError is not an AppError, so the program cannot give it a code
    const command: Effect.Effect<number, AppError> = Effect.fail(new NewError())
    expect([incomplete, command]).toHaveLength(2)
  })
})
