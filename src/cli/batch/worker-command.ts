/**
 * `massgen worker --engine postgres://... [--concurrency N] [--takeover-seconds S]`: runs a shared batch's items.
 *
 * It takes items from the queue (`services/batch/batch-queue.ts`), at most N
 * at once, and runs each under its lease (`services/batch/item-lease.ts`):
 * an item whose lease another worker holds is waited for, not run. Every S/4
 * seconds it looks for items whose worker is gone (their lease free on two
 * looks in a row) and puts them back on the queue. It runs each item as
 * `massgen batch` does (`run-item.ts`), in
 * `.massgen/worker/<batch>/items/<id>/` under its working directory, with the
 * Postgres event store: the run's events are the shared stream
 * `<batch>/items/<id>`. An item another worker started (and died running) is
 * resumed from that stream: no recorded answer is asked again (the files it
 * needs, its recorded calls and long tool results, come from the shared
 * copies: `services/run-files/shared.ts`). A finished
 * item's result goes to `massgen_batch_results`, and then the next item of
 * its session, if any, to the queue (a session's items continue the
 * conversation of the ones before them, from their results). It runs until a signal; the
 * runs in flight then stop cleanly and their items go back to the queue (exit 0).
 *
 * Set-up (`setUp`): the server is asked once (`reachServer`: one that cannot
 * be reached is a `DatabaseError` at once, naming its host and the cause;
 * exit 2), then the tables are made (under the schema lock: any number of
 * workers start at once) and pg-boss started. A signal during the set-up,
 * wherever it is (a connection that does not answer, a lock another process
 * holds), stops the worker at once: exit 4, no item taken.
 */
import * as fs from "node:fs"
import { join } from "node:path"
import { Effect, Either, Layer, Runtime } from "effect"
import type { Job, PgBoss } from "pg-boss"
import { resultOf } from "../../domain/batch.ts"
import { PRIVATE_DIR_MODE } from "../../domain/run-paths.ts"
import { isResumable } from "../../domain/state/index.ts"
import { loadDotEnv } from "../../services/backends/index.ts"
import { conversationFrom, openQueue, QUEUE, type QueuedItem, queueNext, recordResult } from "../../services/batch/batch-queue.ts"
import { lookSeconds, openLeases } from "../../services/batch/item-lease.ts"
import type { EventStore } from "../../services/event-store/index.ts"
import { postgresEventStore, reachServer, setupError } from "../../services/event-store/postgres.ts"
import type { SharedRunFiles } from "../../services/run-files/index.ts"
import { postgresRunFiles } from "../../services/run-files/shared-postgres.ts"
import type { CliContext } from "../context.ts"
import { decodeDocument, parseConfigText } from "../run/load-config.ts"
import { runItem } from "./run-item.ts"

export interface WorkerArgs {
  readonly _tag: "worker"
  readonly engine: string
  readonly concurrency: number
  /** Within about this many seconds a dead worker's items are taken over. */
  readonly takeoverSeconds: number
}

/** The worker's connections, tables and queue, made before it takes any item. */
const setUp = (url: string, root: string) =>
  Effect.gen(function* () {
    yield* Effect.tryPromise({ try: () => reachServer(url), catch: (e) => setupError(url, e) })
    const stores = yield* Layer.build(Layer.merge(postgresEventStore(url, { root }), postgresRunFiles(url, { root }))).pipe(
      Effect.catchAllDefect((e) => Effect.fail(setupError(url, e))),
    )
    const boss = yield* Effect.tryPromise({ try: () => openQueue(url), catch: (e) => setupError(url, e) })
    return { stores, boss }
  })

export const workerCommand = (args: WorkerArgs, ctx: CliContext) => {
  const root = join(ctx.cwd, ".massgen", "worker")
  return Effect.scoped(
    Effect.gen(function* () {
      const env = yield* loadDotEnv(ctx.cwd, ctx.env).pipe(Effect.orElseSucceed(() => ctx.env))
      fs.mkdirSync(root, { recursive: true, mode: PRIVATE_DIR_MODE })
      const ready = yield* Effect.raceFirst(Effect.map(setUp(args.engine, root), Either.right), Effect.map(ctx.interrupt, Either.left))
      if (Either.isLeft(ready)) {
        ctx.printError(`massgen: worker ${ready.left} before it took any item`)
        return 4
      }
      return yield* serve(args, ctx, env, root, ready.right.boss).pipe(Effect.provide(ready.right.stores))
    }),
  )
}

/** Takes items until a signal; then the runs in flight stop cleanly and their items go back to the queue. */
const serve = (args: WorkerArgs, ctx: CliContext, env: Readonly<Record<string, string | undefined>>, root: string, boss: PgBoss) =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<EventStore | SharedRunFiles>()
    const leases = openLeases(args.engine, args.takeoverSeconds, args.concurrency)
    const stopped = Runtime.runPromise(runtime)(ctx.interrupt)

    const runJob = (item: QueuedItem, leaseLost: Promise<string>) =>
      Effect.gen(function* () {
        const raw = yield* parseConfigText(item.configYaml, item.configPath)
        const config = yield* decodeDocument(raw, item.configPath, env)
        const loaded = { config, raw, path: item.configPath, env, where: item.configPath }
        const dir = join(root, item.batch)
        const batchItem = {
          id: item.id,
          question: item.question,
          config: null,
          sessionId: item.sessionId,
          metadata: item.metadata,
          line: 0,
        }
        const observer = { onEvent: () => Effect.void, onText: () => Effect.void }
        const printError = (line: string) => ctx.printError(`massgen: item ${item.batch}/${item.id}: ${line.replace(/^massgen: /, "")}`)
        const interrupt = Effect.raceFirst(
          ctx.interrupt,
          Effect.promise(() => leaseLost),
        )
        const turn = item.sessionId === null ? {} : { conversation: yield* Effect.promise(() => conversationFrom(args.engine, item)) }
        const outcome = yield* runItem(batchItem, loaded, observer, { ...ctx, interrupt, dir, printError, ...turn })
        if (outcome.state.finished === null || isResumable(outcome.state.finished))
          return yield* Effect.fail(new Error(`${item.id}: stopped before it finished`))
        yield* Effect.promise(() =>
          recordResult(args.engine, item.batch, resultOf(batchItem, outcome.state, outcome.logDir, outcome.exitCode)),
        )
        yield* Effect.promise(() => queueNext(boss, item))
      })

    // One pg-boss worker per slot, so that a slot whose item finished fetches the next at once
    // (pg-boss waits out its polling interval after every fetch unless its worker is notified).
    const slots: Array<string | undefined> = []
    const handlerOf = (slot: number) => async (jobs: ReadonlyArray<Job<QueuedItem>>) => {
      for (const job of jobs) {
        const name = `${job.data.batch}/${job.data.id}`
        const acquired = await leases.acquire(job, stopped, () =>
          ctx.printError(`massgen: item ${name} is run by another worker: waiting for its lease`),
        )
        // Replaced by a later attempt: pg-boss's settle of this one is fenced to it and changes nothing.
        if (acquired._tag === "stale") continue
        if (acquired._tag === "stopped") throw new Error(`item ${job.data.id} not started: the worker stops`)
        try {
          // A store of its own per job: a stream this worker lost to another stays lost only to that job's store.
          const exit = await Runtime.runPromiseExit(runtime)(
            runJob(job.data, acquired.lease.lost).pipe(Effect.provide(postgresEventStore(args.engine, { root }))),
          )
          // The job goes back to the queue: another worker (or this one) takes it up from the shared log.
          if (exit._tag === "Failure") {
            ctx.printError(`massgen: item ${name} did not finish here: ${String(exit.cause).split("\n")[0]}`)
            throw new Error(`item ${job.data.id} did not finish`)
          }
        } finally {
          await acquired.lease.release()
        }
      }
      const id = slots[slot]
      if (id !== undefined) boss.notifyWorker(id)
    }
    for (let slot = 0; slot < args.concurrency; slot++) {
      slots.push(
        yield* Effect.promise(() =>
          boss.work<QueuedItem>(QUEUE, { localConcurrency: 1, batchSize: 1, pollingIntervalSeconds: 0.5 }, handlerOf(slot)),
        ),
      )
    }
    let sweeping = false
    const sweeper = setInterval(() => {
      if (sweeping) return
      sweeping = true
      leases
        .sweep(boss)
        .then((n) => {
          if (n > 0) for (const id of slots) if (id !== undefined) boss.notifyWorker(id)
        })
        .catch(() => undefined)
        .finally(() => (sweeping = false))
    }, lookSeconds(args.takeoverSeconds) * 1000)
    ctx.printError(
      `massgen: worker ${process.pid} takes items from ${QUEUE} (concurrency ${args.concurrency}, takeover ${args.takeoverSeconds} s)`,
    )
    yield* ctx.interrupt
    clearInterval(sweeper)
    yield* Effect.promise(() => boss.stop({ graceful: true, timeout: 30_000 } as Parameters<typeof boss.stop>[0]).catch(() => undefined))
    yield* Effect.promise(() => leases.close())
    return 0
  })
