/**
 * `massgen batch status --engine URL NAME` and `massgen batch export --engine URL NAME [--out DIR]`:
 * a shared batch as every worker left it, read from Postgres.
 *
 * `status` prints one line: items with a result (by finish reason), running,
 * waiting, and the cost of the results. `export` writes the batch's local
 * layout (`docs/batch.md`) from the shared log: `items/<id>/events.jsonl` for
 * every item with events, its shared files (`services/run-files/shared.ts`:
 * call logs, blobs, long tool results, its config), and `results.jsonl`;
 * `massgen status`, `viewer`, `replay` and `resume` work on an exported item.
 * A server that cannot be reached is one line at once (`DatabaseError`, exit
 * 2); a database without massgen's batch tables (no worker or `batch
 * --engine` ever used it) is one line too (`BatchError`, exit 1); a signal
 * stops either at once (exit 4).
 */
import * as fs from "node:fs"
import { join, resolve } from "node:path"
import { Effect } from "effect"
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../domain/run-paths.ts"
import { maskUrlCredentials } from "../../lib/safe-url.ts"
import { formatCost } from "../../lib/text.ts"
import { BatchError, itemDir, RESULTS_FILE } from "../../services/batch/batch-folder.ts"
import { EVENTS_FILE } from "../../services/event-store/index.ts"
import type { DatabaseError } from "../../services/event-store/postgres.ts"
import type { CliContext } from "../context.ts"

export interface SharedBatchArgs {
  readonly _tag: "batch_status" | "batch_export"
  readonly engine: string
  readonly batch: string
  readonly outDir: string | null
}

/**
 * `work` on the server at `url` once it answered (`reachServer`): a server that cannot be reached, or fails
 * otherwise as a `DatabaseError`, is that error; a signal stops it wherever it is (`<what> stopped by SIGTERM`, 4).
 */
export const onEngine = (
  url: string,
  what: string,
  ctx: CliContext,
  work: () => Promise<number>,
): Effect.Effect<number, DatabaseError | BatchError> =>
  Effect.raceFirst(
    Effect.tryPromise({
      try: async () => {
        const { reachServer } = await import("../../services/event-store/postgres.ts")
        await reachServer(url)
        return await work()
      },
      catch: (e) => e,
    }).pipe(Effect.catchAll((e) => (isDatabaseError(e) || e instanceof BatchError ? Effect.fail(e) : Effect.die(e)))),
    Effect.map(ctx.interrupt, (why) => (ctx.printError(`massgen: ${what} ${why}`), 4)),
  )

const isDatabaseError = (e: unknown): e is DatabaseError => (e as { _tag?: unknown } | null)?._tag === "DatabaseError"

export const sharedBatchCommand = (args: SharedBatchArgs, ctx: CliContext): Effect.Effect<number, DatabaseError | BatchError> =>
  onEngine(args.engine, `batch ${args._tag.slice("batch_".length)}`, ctx, () => readShared(args, ctx).catch(noBatchTables(args.engine)))

/** Postgres's `undefined_table` and `invalid_schema_name`: the results table, or pg-boss's schema, is not there. */
const NO_TABLE = new Set(["42P01", "3F000"])

/** A read that found no batch tables: the database holds no batch, in one line; any other failure as it was. */
const noBatchTables =
  (url: string) =>
  async (e: unknown): Promise<never> => {
    const { codeOf } = await import("../../services/event-store/postgres.ts")
    if (!NO_TABLE.has(codeOf(e) ?? "")) throw e
    throw new BatchError({
      reason: "no_batches",
      path: maskUrlCredentials(url),
      detail: "its batch tables do not exist (massgen batch ITEMS.jsonl --engine URL queues one, a worker runs it)",
    })
  }

const readShared = async (args: SharedBatchArgs, ctx: CliContext): Promise<number> => {
  const { jobStates, resultsOf, streamsOf } = await import("../../services/batch/batch-queue.ts")
  const results = await resultsOf(args.engine, args.batch)
  if (args._tag === "batch_status") {
    const states = await jobStates(args.engine, args.batch)
    const byReason = new Map<string, number>()
    for (const r of results) byReason.set(r.finish_reason, (byReason.get(r.finish_reason) ?? 0) + 1)
    const costs = results.map((r) => r.cost_usd).filter((c): c is number => c !== null)
    const reasons = [...byReason].map(([k, n]) => `${n} ${k}`).join(", ")
    ctx.print(
      `batch ${args.batch}: ${results.length} with a result${reasons === "" ? "" : ` (${reasons})`}, ${states.active ?? 0} running, ${(states.created ?? 0) + (states.retry ?? 0) + (states.later ?? 0)} waiting, ${formatCost(costs.length === 0 ? null : costs.reduce((a, b) => a + b, 0))}`,
    )
    return 0
  }
  const dir = resolve(ctx.cwd, args.outDir ?? join(".massgen", "batches", args.batch))
  const streams = await streamsOf(args.engine, args.batch)
  for (const [id, text] of streams) {
    fs.mkdirSync(itemDir(dir, id), { recursive: true, mode: PRIVATE_DIR_MODE })
    fs.writeFileSync(join(itemDir(dir, id), EVENTS_FILE), text, { mode: PRIVATE_FILE_MODE })
  }
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
  // The runs' whole files (call logs, blobs, long tool results, config): `replay` works on an exported item.
  const { exportRunFiles } = await import("../../services/run-files/shared-postgres.ts")
  await exportRunFiles(args.engine, `${args.batch}/`, dir)
  const local = results.map((r) => ({
    ...r,
    log_dir: itemDir(dir, r.id),
    answer_file: r.answer_file === null ? null : join(itemDir(dir, r.id), r.answer_file.slice(r.log_dir.length + 1)),
  }))
  fs.writeFileSync(join(dir, RESULTS_FILE), local.map((r) => `${JSON.stringify(r)}\n`).join(""), { mode: PRIVATE_FILE_MODE })
  ctx.print(`BATCH_DIR: ${dir}`)
  ctx.print(`EXPORTED: ${streams.size} runs, ${results.length} results`)
  return 0
}
