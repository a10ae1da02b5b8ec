/**
 * The shared run files (`services/run-files/shared.ts`) on a server of the
 * test's own (`support/postgres.ts`): an item's run with a tool whose result
 * is too long for its event (`tool_log/`) is stopped on worker A after that
 * call, then taken up by worker B from the shared log in a directory of its
 * own: B reuses the recorded result (the tool ran once) and finishes; then
 * `massgen batch export` gives a directory where `replay --check` passes.
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Deferred, Effect, Layer } from "effect"
import { runItem } from "../src/cli/batch/run-item.ts"
import { decodeDocument, parseConfigText } from "../src/cli/run/load-config.ts"
import type { Event } from "../src/domain/events/index.ts"
import { INLINE_RESULT_CHARS } from "../src/domain/tools/calls.ts"
import { itemDir } from "../src/services/batch/batch-folder.ts"
import { postgresEventStore } from "../src/services/event-store/postgres.ts"
import { postgresRunFiles } from "../src/services/run-files/shared-postgres.ts"
import { cleanupSandboxes, runCli, sandbox } from "./support/cli.ts"
import { postgresForFile, type TestPostgres } from "./support/postgres.ts"
import { ENV } from "./support/run-dirs.ts"

let pg: TestPostgres
postgresForFile((server) => (pg = server), cleanupSandboxes)

/** Counts each call in `counter`; call 2 holds until `resumed` exists; every result is longer than an event holds. */
const BUMP = [
  "read -r args",
  'n=$(printf %s "$args" | tr -dc 0-9)',
  'echo "start $n" >> "$0/counter"',
  'if [ "$n" = 2 ] && [ ! -e "$0/resumed" ]; then exec sleep 1000; fi',
  'echo "end $n" >> "$0/counter"',
  `head -c ${INLINE_RESULT_CHARS + 500} /dev/zero | tr '\\0' x`,
  'echo " bumped $n"',
].join("\n")

const team = (cwd: string) => `agents:
  - id: worker
    backend:
      type: scripted
      script: [{ tool: bump, args: { n: 1 } }, { tool: bump, args: { n: 2 } }, { new_answer: "bumped twice" }]
      vote: agent1
      final: bumped twice
      custom_tools:
        - name: bump
          description: Counts a step
          parameters: { type: object, properties: { n: { type: integer } }, required: [n] }
          command: ${JSON.stringify(["sh", "-c", BUMP, cwd])}
timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30, tool_timeout_seconds: 20 }
`

/** Runs the item `q` of batch `batch` as the worker whose root is `root` does, until done or `stopAt` sees its event. */
const runAs = (cwd: string, root: string, batch: string, stopAt: (e: Event) => boolean) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const path = nodePath.join(cwd, "team.yaml")
      const raw = yield* parseConfigText(fs.readFileSync(path, "utf8"), path)
      const env = { ...process.env, ...ENV }
      const config = yield* decodeDocument(raw, path, env)
      const stop = yield* Deferred.make<string>()
      const observer = {
        onEvent: (e: Event) => (stopAt(e) ? Deferred.succeed(stop, "stopped by the test").pipe(Effect.asVoid) : Effect.void),
        onText: () => Effect.void,
      }
      const dir = nodePath.join(root, batch)
      const item = { id: "q", question: "Count twice.", config: null, sessionId: null, metadata: null, line: 1 }
      const ctx = { cwd, env, argv: [], version: "test", interrupt: Deferred.await(stop), dir, printError: () => undefined }
      return yield* runItem(item, { config, raw, path, env, where: path }, observer, ctx)
    }).pipe(Effect.provide(Layer.merge(postgresEventStore(pg.url, { root }), postgresRunFiles(pg.url, { root })))),
  )

const counterOf = (cwd: string) => fs.readFileSync(nodePath.join(cwd, "counter"), "utf8").trim().split("\n")

describe("shared run files: a run taken over on another worker, and exported", () => {
  test("B takes up A's run after a long tool result: the result comes from the shared tool_log, the tool ran once; the export replays", async () => {
    const cwd = sandbox()
    fs.writeFileSync(nodePath.join(cwd, "team.yaml"), team(cwd))
    const [a, b] = [nodePath.join(cwd, "a"), nodePath.join(cwd, "b")]
    const first = await runAs(cwd, a, "shared", (e) => e._tag === "tool_call_started" && e.tool_call === 2)
    expect(first.state.finished?.reason).toBe("interrupted")
    expect(fs.existsSync(nodePath.join(itemDir(nodePath.join(a, "shared"), "q"), "tool_log", "1.json"))).toBe(true)

    fs.writeFileSync(nodePath.join(cwd, "resumed"), "")
    const second = await runAs(cwd, b, "shared", () => false)
    expect(second.state.finished).toMatchObject({ reason: "completed", winner: "worker" })
    // Call 1 finished on A and was not run again; call 2, cut off there (before or after its tool began), ran to its end on B.
    const counted = (line: string) => counterOf(cwd).filter((l) => l === line).length
    expect({ start1: counted("start 1"), end1: counted("end 1"), end2: counted("end 2") }).toEqual({ start1: 1, end1: 1, end2: 1 })
    const bDir = itemDir(nodePath.join(b, "shared"), "q")
    expect(fs.readFileSync(nodePath.join(bDir, "tool_log", "1.json"), "utf8")).toContain(" bumped 1")

    pg.psql(
      "CREATE TABLE IF NOT EXISTS massgen_batch_results (batch text NOT NULL, id text NOT NULL, result jsonb NOT NULL, PRIMARY KEY (batch, id))",
    )
    const out = sandbox()
    const exported = await runCli("source", ["batch", "export", "--engine", pg.url, "shared", "--out", "out"], { cwd: out, env: ENV })
    expect({ code: exported.exitCode, lines: exported.lines }).toEqual({
      code: 0,
      lines: [`BATCH_DIR: ${out}/out`, "EXPORTED: 1 runs, 0 results"],
    })
    const replayed = await runCli("source", ["replay", "--check", "out/items/q"], { cwd: out, env: ENV })
    expect({ code: replayed.exitCode, same: replayed.lines.includes("SAME: every event matches the recorded run") }).toEqual({
      code: 0,
      same: true,
    })
  }, 120_000)
})
