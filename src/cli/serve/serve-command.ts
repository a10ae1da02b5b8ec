/**
 * `massgen serve`: the council as one OpenAI-compatible model, until a signal drains it.
 *
 * It loads the served configs (`--config FILE`, or every `*.yaml`/`*.yml` of
 * `--config-dir DIR`, each served under its file's name without the
 * extension), checks every agent's API key and the bearer token's variable
 * (`--api-key-env VAR`, which must be set and not empty) before it listens.
 * Without a token it warns on stderr (one line) that any local user and
 * process (beyond loopback: anyone who reaches the port) can run the council
 * and its tools, and the server answers only requests whose `Host` is a
 * loopback name (or the `--host` address) with its port and whose `Origin`,
 * if any, is that same origin (`request-gate.ts`). It
 * prints one line on stdout when it listens: `Serving http://HOST:PORT/v1
 * (models: ...)`. The first SIGINT or SIGTERM drains: the port closes, no
 * waiting request starts (503), the runs going on get `--drain-seconds` to
 * finish and are then stopped (recorded `interrupted`, resumable); then it
 * exits 0. A port that cannot be bound is exit 1.
 */
import { readdirSync } from "node:fs"
import { basename, extname, join } from "node:path"
import { Effect, Schema } from "effect"
import { formatProblem, unknownKeys } from "../../domain/config/index.ts"
import { isLoopbackName, LOOPBACK_NAMES } from "../../lib/loopback.ts"
import { logBaseDir } from "../../services/log-dir/create.ts"
import type { ServeArgs } from "../args/index.ts"
import { UsageError } from "../args/index.ts"
import type { CliContext } from "../context.ts"
import { makeBackends, resolveRunConfig } from "../run/setup.ts"
import { runRegistry } from "./run-registry.ts"
import { runSlots } from "./run-slots.ts"
import type { ServedModel } from "./served-run.ts"
import { startServer } from "./server.ts"

export class ServeError extends Schema.TaggedError<ServeError>()("ServeError", {
  reason: Schema.Literal("cannot_listen", "no_configs"),
  detail: Schema.String,
}) {
  override get message(): string {
    return this.reason === "cannot_listen" ? `cannot serve on ${this.detail}` : `no configs to serve: ${this.detail}`
  }
}

/** Addresses that listen on every interface: no `Host` names them. */
const WILDCARD = new Set(["0.0.0.0", "::", "[::]"])

/** The config files served: `--config`, or the YAML files of `--config-dir`, by name. */
const configFiles = (args: ServeArgs, cwd: string): Effect.Effect<ReadonlyArray<string>, ServeError> =>
  Effect.suspend(() => {
    if (args.configDir === null) return Effect.succeed([args.configPath!])
    const dir = join(cwd, args.configDir)
    try {
      const files = readdirSync(dir)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
        .map((f) => join(dir, f))
      return files.length === 0
        ? Effect.fail(new ServeError({ reason: "no_configs", detail: `${args.configDir} has no .yaml or .yml file` }))
        : Effect.succeed(files)
    } catch (e) {
      return Effect.fail(
        new ServeError({ reason: "no_configs", detail: `${args.configDir}: ${e instanceof Error ? e.message : String(e)}` }),
      )
    }
  })

export const serveCommand = (args: ServeArgs, ctx: CliContext) =>
  Effect.gen(function* () {
    const models: Array<ServedModel> = []
    for (const path of yield* configFiles(args, ctx.cwd)) {
      const loaded = yield* resolveRunConfig(
        {
          _tag: "run",
          question: "",
          configPath: path,
          modelsFlag: null,
          models: [],
          backend: null,
          baseUrl: null,
          systemMessage: null,
          automation: false,
          noDisplay: true,
          orchestratorTimeout: null,
          quick: false,
        },
        ctx.env,
        ctx.cwd,
      )
      for (const w of unknownKeys(loaded.raw)) ctx.printError(`massgen: warning: config ${loaded.where}: ${formatProblem(w)}`)
      // Every key is checked before the port opens; each run makes its own backends.
      yield* makeBackends(loaded.config, loaded.env, loaded.where)
      models.push({ id: basename(path, extname(path)), loaded })
    }
    let apiKey: string | null = null
    if (args.apiKeyEnv !== null) {
      apiKey = ctx.env[args.apiKeyEnv] ?? models[0]!.loaded.env[args.apiKeyEnv] ?? ""
      if (apiKey === "")
        return yield* new UsageError({ reason: "bad_value", detail: `--api-key-env ${args.apiKeyEnv}: the variable is not set or empty` })
    }
    // Without a key, only requests addressed to this server by a loopback name (or its own --host address) are answered.
    const hostNames =
      apiKey !== null ? null : WILDCARD.has(args.host) || isLoopbackName(args.host) ? LOOPBACK_NAMES : [...LOOPBACK_NAMES, args.host]
    if (hostNames !== null && !isLoopbackName(args.host)) {
      ctx.printError(
        `massgen: warning: serving on ${args.host} without --api-key-env: anyone who can reach this port can run the council on your API keys, and its tools run as this user; only requests whose Host is ${hostNames.join(", ")} (with the port) are answered`,
      )
    } else if (hostNames !== null) {
      ctx.printError(
        "massgen: warning: serving without --api-key-env: any local user and any local process can run the council on your API keys, and its tools run as this user",
      )
    }
    const slots = runSlots(args.maxConcurrentRuns, args.maxQueued)
    // The runs of earlier servers in the window are found again: a retry after a restart gets (or resumes) its run.
    const runs = runRegistry(args.retryWindowSeconds * 1000)
    runs.scan(logBaseDir(ctx.env, ctx.cwd))
    const limits = { idleTimeoutSeconds: args.idleTimeoutSeconds, maxBodyBytes: args.maxBodyBytes, maxQuestionBytes: args.maxQuestionBytes }
    const server = yield* Effect.try({
      try: () =>
        startServer({
          host: args.host,
          port: args.port,
          models,
          apiKey,
          hostNames,
          slots,
          ctx,
          runs,
          cancelOnDisconnect: args.cancelOnDisconnect,
          ...limits,
        }),
      catch: (e) =>
        new ServeError({
          reason: "cannot_listen",
          detail: `${args.host}:${args.port} (${e instanceof Error ? e.message.split("\n")[0] : String(e)})`,
        }),
    })
    ctx.print(`Serving ${server.url}/v1 (models: ${models.map((m) => m.id).join(", ")})`)
    const why = yield* ctx.interrupt
    const going = slots.running()
    ctx.print(`Draining (${why}): ${going} run${going === 1 ? "" : "s"} going, up to ${args.drainSeconds}s to finish`)
    server.stopAccepting()
    const finished = yield* Effect.promise(() => slots.idle()).pipe(
      Effect.timeoutTo({ duration: `${args.drainSeconds} seconds`, onSuccess: () => true, onTimeout: () => false }),
    )
    if (!finished) {
      server.stopRuns(`serve drained: stopped after ${args.drainSeconds}s`)
      yield* Effect.promise(() => slots.idle())
    }
    yield* Effect.promise(() => server.close())
    ctx.print("Stopped.")
    return 0
  })
