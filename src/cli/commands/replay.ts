/**
 * `massgen replay LOG_DIR [--check]`: make a recorded run's decisions again, offline.
 *
 * It replays the run from the replies recorded in `llm_log/` and the tool
 * results recorded in `tool_call_finished` (and `tool_log/`) on a virtual clock
 * (`domain/replay/index.ts`): no model is called, no tool runs and nothing costs
 * anything; a recorded tool result that does not match its digest is a difference. The
 * replayed events, `status.json` and the final answer are written to a new log
 * directory under `replays/` beside the run's (or under `--out DIR`). `--check` compares with the original: exit 0 when every event is
 * the same (wall-clock fields aside), else exit 2 naming the first event that
 * differs. A missing recorded reply or a request this code builds differently
 * is such a difference, not a crash. What the read skipped of the log is said
 * on stderr in one line (`cli/run/report.ts`).
 */
import { join } from "node:path"
import { Effect } from "effect"
import type { Event } from "../../domain/events/index.ts"
import { project } from "../../domain/projections/status.ts"
import { replayRun } from "../../domain/replay/index.ts"
import { agentFile } from "../../domain/run-paths.ts"
import { foldEvents } from "../../domain/state/index.ts"
import { hashText } from "../../lib/sha256.ts"
import { loadDotEnv } from "../../services/backends/index.ts"
import { EventStore, eventsOf } from "../../services/event-store/index.ts"
import { createLogDir } from "../../services/log-dir/create.ts"
import { writeFileAtomic } from "../../services/run-files/index.ts"
import type { CliContext } from "../context.ts"
import { reportSkips } from "../run/report.ts"
import { openRunDir, recordedBlob, recordedCall, recordedToolResult, runDirConfig } from "../run/run-dir.ts"

const describe = (event: Event | null): string =>
  event === null
    ? "nothing"
    : JSON.stringify(event, (k, v) => (k === "content" && typeof v === "string" && v.length > 120 ? `${v.slice(0, 120)}...` : v))

export const replayCommand = (
  args: { readonly logDir: string; readonly check: boolean; readonly outDir: string | null },
  ctx: CliContext,
) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const dir = yield* openRunDir(args.logDir)
    const env = yield* loadDotEnv(ctx.cwd, ctx.env).pipe(Effect.orElseSucceed(() => ctx.env))
    // Keys are not needed to replay: an unset ${VAR} reads as empty.
    const permissive = new Proxy(env, { get: (target, key) => (typeof key === "string" ? (target[key] ?? "") : undefined) })
    const { config } = yield* runDirConfig(dir.path, permissive)
    const recorded = eventsOf(dir.read)
    reportSkips(ctx.printError, dir.path, dir.read, foldEvents(recorded).skippedEvents)
    const blobOf = recordedBlob(dir.path)
    const result = replayRun(recorded, config.agents, recordedCall(dir.path, blobOf), {
      checkRequests: true,
      toolResultOf: recordedToolResult(dir.path),
      blobOf,
      digestOf: hashText,
    })
    // Beside the runs, not among them: the viewer's "newest run" stays the newest real one.
    const parent = args.outDir ?? join(dir.path, "..", "replays")
    const out = yield* createLogDir(parent)
    yield* store.append(out, result.events, 0)
    const status = project(result.state, result.state.lastTime, out)
    yield* writeFileAtomic(join(out, "status.json"), `${JSON.stringify(status, null, 2)}\n`)
    const final = result.state.final
    if (final !== null) yield* writeFileAtomic(join(out, agentFile(final.agent, "final_answer")), final.content)
    ctx.print(`REPLAY_DIR: ${out}`)
    ctx.print(`EVENTS: ${result.events.length} of ${recorded.length} replayed`)
    if (final !== null) ctx.print(`WINNER: ${final.agent}`)
    const d = result.divergence
    if (d === null) {
      ctx.print("SAME: every event matches the recorded run")
      return 0
    }
    const line = dir.read.events[d.index]?.line
    ctx.print(`DIVERGED at event ${d.index + 1}${line === undefined ? "" : ` (line ${line} of events.jsonl)`}: ${d.reason}`)
    ctx.print(`  recorded: ${describe(d.recorded)}`)
    ctx.print(`  replayed: ${describe(d.replayed)}`)
    return args.check ? 2 : 0
  }).pipe(Effect.provide(EventStore.file()))
