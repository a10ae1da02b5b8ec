/**
 * 11. Workspace snapshots: the cost of snapshotting a 10 MB, 1,000-file workspace (goal: under 200 ms).
 *
 * `Workspaces.snapshot` (`services/tools/workspace.ts`) as a run takes one on
 * each `new_answer`: a copy into a temporary folder renamed into place. The
 * *first* snapshot copies every file (a reflink where the filesystem has
 * them); a *later* one, after 10 of the files changed, copies those and
 * shares the rest with the previous snapshot. The floor is `cp -a
 * --reflink=auto` of the same tree, a process of its own. Runs are
 * interleaved (snapshot, floor, snapshot, ...); medians and the max are shown.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import type { Agent } from "../src/domain/config/index.ts"
import { makeWorkspaces } from "../src/services/tools/workspace.ts"
import { fmt, freshDir, line, median, targetLine } from "./support.ts"

const RUNS = Number(process.env.BENCH_RUNS ?? 7)
const FILES = Number(process.env.BENCH_SNAPSHOT_FILES ?? 1000)
const FILE_BYTES = 10_000
const CHANGED = 10

const agent: Agent = { id: "worker", anonId: "agent1", systemMessage: null, backend: { type: "scripted", cwd: "workspace" } }

/** A workspace of `FILES` files of `FILE_BYTES` bytes in 20 folders. */
const fillWorkspace = (root: string) => {
  for (let i = 0; i < FILES; i++) {
    const dir = join(root, `d${i % 20}`)
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `f${i}.txt`), Buffer.alloc(FILE_BYTES, 97 + (i % 26)))
  }
}

const timed = async (work: () => unknown): Promise<number> => {
  const started = performance.now()
  await work()
  return performance.now() - started
}

export const snapshotBench = async (): Promise<void> => {
  console.log(`# 11. Workspace snapshots: ${FILES} files, ${fmt((FILES * FILE_BYTES) / 1e6, 1)} MB`)
  const first: Array<number> = []
  const later: Array<number> = []
  const floor: Array<number> = []
  for (let run = 0; run < RUNS; run++) {
    const logDir = freshDir()
    const ws = makeWorkspaces(logDir, [agent])
    const root = ws.root(agent.id)!
    fillWorkspace(root)
    first.push(await timed(() => Effect.runPromise(ws.snapshot(agent.id, `agent1.${2 * run + 1}`))))
    for (let i = 0; i < CHANGED; i++) writeFileSync(join(root, `d${i % 20}`, `f${i}.txt`), `changed ${run}`)
    later.push(await timed(() => Effect.runPromise(ws.snapshot(agent.id, `agent1.${2 * run + 2}`))))
    const copy = join(logDir, "cp-floor")
    floor.push(await timed(() => Bun.spawnSync(["cp", "-a", "--reflink=auto", root, copy])))
    rmSync(logDir, { recursive: true, force: true })
  }
  const goal = { ratio: (ms: number) => ms, op: "<" as const, limit: 200, text: "< 200 ms", digits: 0, name: "ms" }
  targetLine("first snapshot (every file copied): ms", first, "ms", goal)
  targetLine(`later snapshot (${CHANGED} files changed, the rest shared): ms`, later, "ms", goal)
  line(
    "floor: cp -a --reflink=auto of the same tree, a process: ms",
    `${fmt(median(floor))} / ${fmt(Math.max(...floor))} ms   first snapshot over floor ${fmt(median(first) / median(floor))}`,
  )
  console.log(`(${RUNS} runs, interleaved; the copies are reflinks on a filesystem that has them, else whole copies)`)
}

if (import.meta.main) await snapshotBench()
