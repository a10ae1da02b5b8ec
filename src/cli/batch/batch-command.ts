/**
 * `massgen batch ITEMS.jsonl --config FILE [--concurrency N] [--out DIR] [--automation]`.
 *
 * Before anything runs: the items file (a regular file of at most
 * `INPUT_LIMITS.items` bytes, checked before it is opened) is read whole and
 * refused with every bad line named (a question over
 * `DEFAULT_MAX_QUESTION_BYTES`, a run's default limit, is one) (`domain/batch.ts`), every config an item uses is read and
 * its API keys checked, the batch folder is made or recognised
 * (`services/batch/batch-folder.ts`) and its lock taken. Then the items
 * without a result run in this process, at most N at once, each an ordinary
 * run in `items/<id>/` (`run-item.ts`): one process, many runs, so an item
 * costs no process start. The same command again resumes the batch: items
 * with a result are skipped, a run that did not finish is resumed, the others
 * start. The items of one session run one after another, in file order, each
 * a turn of the session (`chainsOf`); a turn that gets no result leaves the
 * session's later items to the next run of the command.
 *
 * `batch.budget_usd` (the `--config` file's) is checked before each item
 * starts: once the batch's items have spent it (finished items, and what the
 * running ones spent so far), no item starts. A signal stops the running
 * items cleanly (each `interrupted`, resumed by the next run of the command)
 * and starts no more. A progress line goes to stderr after each item; with
 * `--automation` stdout has only the lines of `batch-output.ts`. The exit
 * code is `BATCH_EXIT_CODES` of the outcome.
 */
import { readFileSync } from "node:fs"
import { basename, dirname, extname, join, resolve } from "node:path"
import { Effect, Ref } from "effect"
import {
  BATCH_EXIT_CODES,
  type BatchItem,
  type BatchResult,
  batchOutcome,
  chainsOf,
  etaSeconds,
  parseItems,
  progressLine,
  resultOf,
} from "../../domain/batch.ts"
import type { Event } from "../../domain/events/index.ts"
import { isResumable, type State } from "../../domain/state/index.ts"
import { hashText } from "../../lib/sha256.ts"
import { loadDotEnv } from "../../services/backends/index.ts"
import { appendResult, BatchError, openBatchFolder, RESULTS_FILE, readResults } from "../../services/batch/batch-folder.ts"
import { EventStore } from "../../services/event-store/index.ts"
import { INPUT_LIMITS, readInputFile } from "../../services/input-file.ts"
import { acquireRunLock } from "../../services/log-dir/run-lock.ts"
import type { BatchArgs } from "../args/index.ts"
import type { CliContext } from "../context.ts"
import { DEFAULT_MAX_QUESTION_BYTES } from "../help.ts"
import { ConfigError, loadConfigFile } from "../run/load-config.ts"
import { missingKeys, type RunConfig } from "../run/setup.ts"
import { batchFooter, batchHeader, itemLine } from "./batch-output.ts"
import { runItem } from "./run-item.ts"
import { onEngine } from "./shared-batch-command.ts"

/** Where a batch's folder is when `--out` is not given: named for the items file, under the working directory. */
export const defaultBatchDir = (cwd: string, itemsPath: string): string =>
  join(cwd, ".massgen", "batches", basename(itemsPath, extname(itemsPath)))

const readItems = (path: string) =>
  Effect.gen(function* () {
    const read = readInputFile(path, INPUT_LIMITS.items, "file", "for a batch items file")
    if (read._tag === "refused") return yield* new BatchError({ reason: "unreadable", path, detail: read.problem })
    const text = read.text
    const parsed = parseItems(text, DEFAULT_MAX_QUESTION_BYTES)
    if (parsed._tag === "problems") return yield* new BatchError({ reason: "bad_items", path, detail: parsed.problems.join(`\n${path}: `) })
    return { text, items: parsed.items }
  })

/** Every config the items use, by absolute path, read once each; a missing API key in any is refused here. */
const loadConfigs = (paths: ReadonlyArray<string>, env: RunConfig["env"]) =>
  Effect.gen(function* () {
    const out = new Map<string, RunConfig>()
    for (const path of paths) {
      if (out.has(path)) continue
      const loaded = yield* loadConfigFile(path, env)
      const missing = missingKeys(loaded.config, env)
      if (missing.length > 0) return yield* new ConfigError({ reason: "invalid", path, problems: missing })
      out.set(path, { ...loaded, env, where: path })
    }
    return out as ReadonlyMap<string, RunConfig>
  })

/** `--engine`: the items go to the shared queue, each with its config's text; workers run them (`onEngine`: a server not reached is one line). */
const queueBatch = (
  engine: string,
  itemsPath: string,
  items: ReadonlyArray<BatchItem>,
  configOf: (item: BatchItem) => string,
  ctx: CliContext,
) =>
  onEngine(engine, "batch", ctx, async () => {
    const { enqueue, openQueue } = await import("../../services/batch/batch-queue.ts")
    const batch = basename(itemsPath, extname(itemsPath))
    const boss = await openQueue(engine)
    const texts = new Map<string, string>()
    const configText = (path: string): string => texts.get(path) ?? texts.set(path, readFileSync(path, "utf8")).get(path)!
    await enqueue(
      boss,
      chainsOf(items).map((chain) =>
        chain.map((item) => ({
          batch,
          id: item.id,
          question: item.question,
          configYaml: configText(configOf(item)),
          configPath: configOf(item),
          sessionId: item.sessionId,
          metadata: item.metadata,
        })),
      ),
    )
    await boss.stop({ graceful: false } as Parameters<typeof boss.stop>[0]).catch(() => undefined)
    ctx.print(`BATCH: ${batch}`)
    ctx.print(`QUEUED: ${items.length}`)
    return 0
  })

export const batchCommand = (args: BatchArgs, ctx: CliContext) =>
  Effect.gen(function* () {
    const itemsPath = resolve(ctx.cwd, args.itemsPath)
    const { text, items } = yield* readItems(itemsPath)
    const env = yield* loadDotEnv(ctx.cwd, ctx.env).pipe(
      Effect.mapError((e) => new ConfigError({ reason: "unreadable", path: e.path, problems: [{ path: "", message: e.detail }] })),
    )
    const batchConfig = resolve(ctx.cwd, args.configPath)
    const configOf = (item: BatchItem) => (item.config === null ? batchConfig : resolve(dirname(itemsPath), item.config))
    const configs = yield* loadConfigs([batchConfig, ...items.map(configOf)], env)
    const budget = configs.get(batchConfig)!.config.batchBudgetUsd ?? null

    if (args.engine !== null) return yield* queueBatch(args.engine, itemsPath, items, configOf, ctx)

    const dir = resolve(ctx.cwd, args.outDir ?? defaultBatchDir(ctx.cwd, itemsPath))
    yield* openBatchFolder(dir, {
      format: 1,
      items_file: itemsPath,
      items_sha256: hashText(text),
      config_path: batchConfig,
      items: items.length,
      massgen_version: ctx.version,
    })
    yield* acquireRunLock(dir)

    const results = new Map(readResults(dir))
    const before = items.filter((i) => results.has(i.id)).length
    if (args.automation) for (const line of batchHeader(dir, items.length, before)) ctx.print(line)

    const live = new Map<string, number | null>()
    const spent = (): number | null => {
      const costs = [...[...results.values()].map((r) => r.cost_usd), ...live.values()].filter((c): c is number => c !== null)
      return costs.length === 0 ? null : costs.reduce((a, b) => a + b, 0)
    }
    const stop = { interrupted: false, budget: false, failedToStart: 0 }
    yield* Effect.forkScoped(Effect.map(ctx.interrupt, () => void (stop.interrupted = true)))
    const started = Date.now()
    const finishedHere = yield* Ref.make(0)
    const failed = () => [...results.values()].filter((r) => r.finish_reason !== "completed").length + stop.failedToStart
    const progress = Effect.gen(function* () {
      const n = yield* Ref.get(finishedHere)
      const done = items.filter((i) => results.has(i.id)).length
      const left = items.length - done - live.size
      ctx.printError(
        progressLine(
          { total: items.length, done, running: live.size, failed: failed(), costUsd: spent() },
          etaSeconds(Date.now() - started, n, left + live.size / 2),
        ),
      )
    })

    /** Runs `item`; whether it has its result now. */
    const runOne = (item: BatchItem) =>
      Effect.gen(function* () {
        if (stop.interrupted) return false
        const cost = spent()
        if (budget !== null && cost !== null && cost >= budget) {
          stop.budget = true
          return false
        }
        live.set(item.id, null)
        const observer = {
          onEvent: (_: Event, state: State) => Effect.sync(() => void live.set(item.id, state.usage.cost)),
          onText: () => Effect.void,
        }
        const prefixed = (line: string) => ctx.printError(`massgen: item ${item.id}: ${line.replace(/^massgen: /, "")}`)
        const outcome = yield* runItem(item, configs.get(configOf(item))!, observer, { ...ctx, dir, printError: prefixed }).pipe(
          Effect.catchAll((error) =>
            Effect.sync(() => {
              for (const line of error.message.split("\n")) prefixed(line)
              stop.failedToStart += 1
              return null
            }),
          ),
          Effect.ensuring(Effect.sync(() => live.delete(item.id))),
        )
        if (outcome === null) return false
        // A run a signal stopped has no result yet: the next run of the command resumes it.
        if (outcome.state.finished !== null && !isResumable(outcome.state.finished)) {
          const result: BatchResult = resultOf(item, outcome.state, outcome.logDir, outcome.exitCode)
          yield* appendResult(dir, result)
          results.set(item.id, result)
          if (args.automation) ctx.print(itemLine(result))
        }
        if (!outcome.found) yield* Ref.update(finishedHere, (n) => n + 1)
        yield* progress
        return results.has(item.id)
      })
    const runChain = (chain: ReadonlyArray<BatchItem>) => Effect.asVoid(Effect.takeWhile(chain, runOne))

    const pending = items.filter((i) => !results.has(i.id))
    yield* progress
    yield* Effect.forEach(chainsOf(pending), runChain, { concurrency: args.concurrency, discard: true })
    const all = items.flatMap((i) => (results.has(i.id) ? [results.get(i.id)!] : []))
    const outcome = batchOutcome(all, stop)
    if (args.automation) for (const line of batchFooter(outcome, items.length, all)) ctx.print(line)
    if (all.length < items.length) {
      ctx.printError(
        `massgen: batch ${outcome}: ${all.length}/${items.length} items have a result; run the same command again to go on (results in ${join(dir, RESULTS_FILE)})`,
      )
    } else if (outcome !== "completed") {
      ctx.printError(
        `massgen: batch ${outcome}: ${failed()} of ${items.length} items did not complete (results in ${join(dir, RESULTS_FILE)})`,
      )
    }
    return BATCH_EXIT_CODES[outcome]
  }).pipe(Effect.scoped, Effect.provide(EventStore.file()))
