/**
 * The command lines of the long-running commands: `serve`, `batch` and `worker`.
 *
 * `serve` serves configs over HTTP (`cli/serve/`); `batch ITEMS.jsonl --config
 * FILE` runs many items, here or queued to a postgres engine, whose `batch
 * status`/`batch export NAME` read back; `worker --engine URL` runs queued
 * items (`cli/batch/`). Each takes the words after its command and returns its
 * `Invocation`, or a one-line `UsageError`; the defaults of their numbers are
 * here. Pure.
 */
import { Either } from "effect"
import { DEFAULT_MAX_QUESTION_BYTES, DEFAULT_SERVE_PORT } from "../help.ts"
import { joinNegativeValues, parseStrict, usage, wholeNumber } from "./flags.ts"
import type { Invocation, ServeArgs, UsageError } from "./invocation.ts"

const serveOptions = {
  config: { type: "string", short: "c" },
  "config-dir": { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  "max-concurrent-runs": { type: "string" },
  "max-queued": { type: "string" },
  "api-key-env": { type: "string" },
  "drain-seconds": { type: "string" },
  "idle-timeout-seconds": { type: "string" },
  "max-body-bytes": { type: "string" },
  "max-question-bytes": { type: "string" },
  "retry-window-seconds": { type: "string" },
  "cancel-on-disconnect": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const

const MIB = 1024 * 1024

/** How long after its run ended a request's retry still gets that run's answer (`--retry-window-seconds`). */
export const DEFAULT_RETRY_WINDOW_SECONDS = 600

/** `serve --config FILE | --config-dir DIR [--host H] [--port N] [--max-concurrent-runs N] [--max-queued N] [--api-key-env VAR] [--drain-seconds S] [--idle-timeout-seconds S] [--max-body-bytes N] [--max-question-bytes N] [--retry-window-seconds S] [--cancel-on-disconnect]`. */
export const parseServe = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(argv, serveOptions, "serve")
  if (Either.isLeft(result)) return Either.left(result.left)
  const { values: v, positionals } = result.right
  if (v.help) return Either.right({ _tag: "help" })
  if (positionals.length > 0)
    return usage("conflict", `serve takes no question or path, found ${JSON.stringify(positionals[0])} (the config goes with --config)`)
  if ((v.config === undefined) === (v["config-dir"] === undefined))
    return usage("missing_config", "serve needs one of --config FILE or --config-dir DIR")
  return Either.gen(function* () {
    const port = yield* wholeNumber("port", v.port, DEFAULT_SERVE_PORT, 0, 65535)
    const maxConcurrentRuns = yield* wholeNumber("max-concurrent-runs", v["max-concurrent-runs"], 4, 1)
    const maxQueued = yield* wholeNumber("max-queued", v["max-queued"], 64, 0)
    const drainSeconds = yield* wholeNumber("drain-seconds", v["drain-seconds"], 30, 0)
    const idleTimeoutSeconds = yield* wholeNumber("idle-timeout-seconds", v["idle-timeout-seconds"], 30, 1, 255)
    const maxBodyBytes = yield* wholeNumber("max-body-bytes", v["max-body-bytes"], 8 * MIB, 1)
    const maxQuestionBytes = yield* wholeNumber("max-question-bytes", v["max-question-bytes"], DEFAULT_MAX_QUESTION_BYTES, 1)
    const retryWindowSeconds = yield* wholeNumber("retry-window-seconds", v["retry-window-seconds"], DEFAULT_RETRY_WINDOW_SECONDS, 0)
    const apiKeyEnv = v["api-key-env"] ?? null
    if (apiKeyEnv === "") return yield* usage("bad_value", "--api-key-env: expected the name of an environment variable")
    return {
      _tag: "serve",
      configPath: v.config ?? null,
      configDir: v["config-dir"] ?? null,
      host: v.host ?? "127.0.0.1",
      port,
      maxConcurrentRuns,
      maxQueued,
      apiKeyEnv,
      drainSeconds,
      idleTimeoutSeconds,
      maxBodyBytes,
      maxQuestionBytes,
      retryWindowSeconds,
      cancelOnDisconnect: v["cancel-on-disconnect"] === true,
    } satisfies ServeArgs
  })
}

const batchOptions = {
  config: { type: "string", short: "c" },
  concurrency: { type: "string" },
  out: { type: "string" },
  automation: { type: "boolean" },
  engine: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const

/** The default `--concurrency` of a batch. */
export const DEFAULT_BATCH_CONCURRENCY = 4

/** `batch ITEMS.jsonl --config FILE [--concurrency N] [--out DIR] [--automation] [--engine URL]`, or `batch status|export NAME --engine URL`. */
export const parseBatch = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(joinNegativeValues(argv), batchOptions, "batch")
  if (Either.isLeft(result)) return Either.left(result.left)
  const { values: v, positionals } = result.right
  if (v.help) return Either.right({ _tag: "help" })
  const sub = positionals[0]
  if ((sub === "status" || sub === "export") && v.engine !== undefined) {
    if (positionals.length !== 2) return usage("missing_value", `batch ${sub} takes one batch name, found ${positionals.length - 1}`)
    return Either.right({
      _tag: sub === "status" ? "batch_status" : "batch_export",
      engine: v.engine,
      batch: positionals[1]!,
      outDir: v.out ?? null,
    })
  }
  if (positionals.length !== 1) return usage("missing_value", `batch takes one ITEMS.jsonl file, found ${positionals.length}`)
  if (v.config === undefined) return usage("missing_config", "batch needs a config: --config FILE")
  const concurrency = concurrencyOf(v.concurrency)
  if (Either.isLeft(concurrency)) return Either.left(concurrency.left)
  if (v.engine !== undefined && !/^postgres(ql)?:\/\//.test(v.engine)) return usage("bad_value", "--engine: expected a postgres://... URL")
  return Either.right({
    _tag: "batch",
    itemsPath: positionals[0]!,
    configPath: v.config,
    concurrency: concurrency.right,
    outDir: v.out ?? null,
    automation: v.automation === true,
    engine: v.engine ?? null,
  })
}

/** `--concurrency N` of a batch or a worker. */
const concurrencyOf = (value: string | undefined): Either.Either<number, UsageError> =>
  wholeNumber("concurrency", value, DEFAULT_BATCH_CONCURRENCY, 1, Number.POSITIVE_INFINITY, "of 1 or more")

const workerOptions = {
  engine: { type: "string" },
  concurrency: { type: "string" },
  "takeover-seconds": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const

/** The default `--takeover-seconds` of a worker (`services/batch/item-lease.ts`). */
export const DEFAULT_TAKEOVER_SECONDS = 3

/** `massgen worker --engine postgres://... [--concurrency N] [--takeover-seconds S]`. */
export const parseWorker = (argv: ReadonlyArray<string>): Either.Either<Invocation, UsageError> => {
  const result = parseStrict(argv, workerOptions, "worker")
  if (Either.isLeft(result)) return Either.left(result.left)
  const { values: v, positionals } = result.right
  if (v.help) return Either.right({ _tag: "help" })
  if (positionals.length > 0) return usage("conflict", `worker takes no arguments, found ${positionals.join(" ")}`)
  if (v.engine === undefined || !/^postgres(ql)?:\/\//.test(v.engine)) return usage("missing_value", "worker needs --engine postgres://...")
  const concurrency = concurrencyOf(v.concurrency)
  if (Either.isLeft(concurrency)) return Either.left(concurrency.left)
  const takeover = v["takeover-seconds"] === undefined ? DEFAULT_TAKEOVER_SECONDS : Number(v["takeover-seconds"])
  if (!Number.isFinite(takeover) || takeover < 0.5 || takeover > 3600)
    return usage(
      "bad_value",
      `--takeover-seconds: expected a number of seconds from 0.5 to 3600, found ${JSON.stringify(v["takeover-seconds"])}`,
    )
  return Either.right({ _tag: "worker", engine: v.engine, concurrency: concurrency.right, takeoverSeconds: takeover })
}
