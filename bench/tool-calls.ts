/**
 * 7. Tool calls: massgen's own overhead per tool call, the tool itself excluded.
 *
 * The tool runner (`services/tools/tool-runner.ts`) with the live layers a run
 * uses: each call appends `tool_call_started` and `tool_call_finished` to a
 * real `events.jsonl` (through the file event store, one append each, as the
 * orchestrator does) and digests the result; a result too long for its event
 * is also written to `tool_log/<n>.json` (the "long" lines). The
 * tool is an in-process one that answers at once, so what is measured is
 * massgen's bookkeeping. The floor is the same calls made to the tool
 * directly. Replies of 1 call and of 8 calls (run concurrently) are measured;
 * the overhead per call is (runner − floor) / calls, median of the batches.
 */
import { join } from "node:path"
import { Effect, Layer } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import type { ToolCall } from "../src/domain/llm.ts"
import { hashText } from "../src/lib/sha256.ts"
import { EventStore } from "../src/services/event-store/index.ts"
import { liveRunFiles, RunFiles } from "../src/services/run-files/index.ts"
import type { ToolProvider } from "../src/services/tools/tool-provider.ts"
import { makeToolRunner } from "../src/services/tools/tool-runner.ts"
import { freshDir, targetLine } from "./support.ts"

const BATCHES = Number(process.env.BENCH_RUNS ?? 10)
const CALLS = 200
const SHORT = "x".repeat(300)
const LONG = "x".repeat(20_000)

const toolOf = (result: string): ToolProvider => ({
  tools: [{ spec: { name: "lookup", description: "lookup", parameters: { type: "object", properties: {}, required: [] } }, server: null }],
  run: () => Effect.succeed(result),
})

/** ms per call of `CALLS` calls through the runner, `perReply` calls per reply, in a fresh log directory. */
const runnerBatch = (tool: ToolProvider, perReply: number) => {
  const dir = freshDir()
  return Effect.gen(function* () {
    const store = yield* EventStore
    const files = yield* RunFiles
    let version = 0
    let n = 0
    const run = makeToolRunner({
      providerOf: () => tool,
      emit: (event: Event) => Effect.map(store.append(dir, [event], version), (v) => void (version = v)).pipe(Effect.orDie),
      now: Effect.sync(() => new Date().toISOString()),
      nextToolCall: Effect.sync(() => ++n),
      writeLog: (k, record) => files.write(`tool_log/${k}.json`, `${JSON.stringify(record, null, 2)}\n`).pipe(Effect.orDie),
      digest: hashText,
    })
    const calls: ReadonlyArray<ToolCall> = Array.from({ length: perReply }, (_, i) => ({
      id: `c${i}`,
      name: "lookup",
      arguments: `{"q":"question ${i}"}`,
    }))
    // One reply first: the directory and the files exist before the clock starts.
    yield* run("agent_a", 1, "round", calls)
    const started = performance.now()
    for (let i = 0; i < CALLS / perReply; i++) yield* run("agent_a", 1, "round", calls)
    yield* files.flush
    return (performance.now() - started) / CALLS
  }).pipe(Effect.provide(Layer.mergeAll(EventStore.file(), liveRunFiles(join(dir)))))
}

/** ms per call of the same calls made to the tool directly. */
const floorBatch = (tool: ToolProvider, perReply: number) =>
  Effect.gen(function* () {
    const started = performance.now()
    for (let i = 0; i < CALLS / perReply; i++) {
      yield* Effect.forEach(Array.from({ length: perReply }), () => tool.run("lookup", { q: "question" }), { concurrency: 8 })
    }
    return (performance.now() - started) / CALLS
  })

export const toolCallBench = async (): Promise<void> => {
  console.log("# 8. Tool calls: massgen's overhead per call, the tool excluded (live events.jsonl and tool_log/)")
  for (const [size, result] of [
    ["short", SHORT],
    ["long", LONG],
  ] as const) {
    const tool = toolOf(result)
    for (const perReply of [1, 8]) {
      const overheads: Array<number> = []
      // Interleaved: each batch of the runner next to a batch of the floor.
      for (let b = 0; b < BATCHES; b++) {
        const runner = await Effect.runPromise(runnerBatch(tool, perReply))
        const floor = await Effect.runPromise(floorBatch(tool, perReply))
        overheads.push(runner - floor)
      }
      targetLine(`tool call overhead, ${size} result (${result.length} chars), ${perReply} per reply: ms per call`, overheads, "ms", {
        ratio: (ms) => ms,
        op: "<",
        limit: 1,
        text: "< 1 ms",
        digits: 3,
        name: "ms",
      })
    }
  }
  console.log(
    `(${CALLS} calls x ${BATCHES} batches each; a short result is held by its event, a long one is also written to tool_log/; the tool takes no time)`,
  )
}

if (import.meta.main) await toolCallBench()
