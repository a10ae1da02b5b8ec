/**
 * Workspaces, snapshots and context paths end to end, with the command line
 * from source and scripted agents: the demo example writes files, reads a
 * peer's snapshot and delivers one file into a context path, as the footer,
 * status.json and `replay --check` say; an agent's listing of
 * `temp_workspaces` is exactly the snapshots of the answers it was shown;
 * escapes tried by a model are refused and recorded; a run that times out
 * before its presentation leaves the context path byte-identical; and a run
 * killed (-9) between the intent of a write and its record, resumed, applies
 * the write exactly once.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, ROOT, runCli, sandbox, startCli, waitForSignalHandler, writeConfig } from "./support/cli.ts"
import { ENV, eventsPath, expectExit, lineValue, readEvents, snapshot } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const DEMO = nodePath.join(ROOT, "examples", "workspace-demo.yaml")
const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)

/** Polls the run's events (a bounded loop of tiny awaits, not a timing assumption). */
const waitForEvent = async (dir: string, type: string, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(fs.existsSync(eventsPath(dir)) && readEvents(dir).some((e) => e.type === type))) {
    if (Date.now() > deadline) throw new Error(`no ${type} within ${timeoutMs} ms`)
    await Bun.sleep(5)
  }
}

/** The demo's environment: its context path, `MASSGEN_DEMO_OUT`, is `out`. */
const demoEnv = (out: string) => ({ ...ENV, MASSGEN_DEMO_OUT: out })

/** The demo run in a sandbox of its own, its context path another (`out`). */
const runDemo = async () => {
  const cwd = sandbox()
  const out = sandbox()
  const r = await runCli("source", ["--automation", "--config", DEMO, "Plan a picnic."], { cwd, env: demoEnv(out) })
  expectExit(r, 0)
  return { cwd, out, dir: lineValue(r, "LOG_DIR"), r }
}

describe("the workspace demo", () => {
  test("agents write in their workspaces, read a peer's snapshot, and the presenter delivers one file into the context path", async () => {
    const { cwd, out, dir, r } = await runDemo()
    const delivered = nodePath.join(out, "picnic.md")
    expect(fs.readFileSync(delivered, "utf8")).toBe("# Picnic\n- bread\n- cheese\n- apples\n")
    // Nothing is written where it runs but its log directory (the repository, run from there).
    expect(fs.readdirSync(cwd).filter((name) => !dir.startsWith(nodePath.join(cwd, name)))).toEqual([])
    expect(r.lines).toContain(`WORKSPACE: ${nodePath.join(dir, "final", "writer", "workspace")}`)
    expect(r.lines).toContain(`CHANGED_FILE: ${delivered} (created, 35 bytes)`)
    expect(fs.readFileSync(nodePath.join(dir, "final", "writer", "workspace", "plan.md"), "utf8")).toContain("# Picnic")
    expect(fs.readdirSync(nodePath.join(dir, "workspaces")).sort()).toEqual(["agent1", "agent2"])
    const status = JSON.parse(fs.readFileSync(nodePath.join(dir, "status.json"), "utf8"))
    expect(status.workspaces).toEqual({
      snapshots: { "agent1.1": `${dir}/snapshot_storage/agent1.1`, "agent2.1": `${dir}/snapshot_storage/agent2.1` },
      final_workspace: `${dir}/final/writer/workspace`,
      context_paths: [{ path: out, permission: "write" }],
      changed_files: [{ path: delivered, change: "created", bytes: 35 }],
    })
    const events = readEvents(dir)
    const read = ofType(events, "tool_call_finished").find((e) => e.agent === "reviewer" && e.tool === "read_file")
    expect(read).toMatchObject({ ok: true, result: "# Picnic\n- bread\n- cheese\n- apples\n" })
    // Each snapshot is appended right after its answer; the write's intent before its record.
    const tags = events.map((e) => e.type)
    for (const s of ofType(events, "workspace_snapshotted"))
      expect(events[events.indexOf(s) - 1]).toMatchObject({ type: "answer_submitted", label: s.label })
    expect(tags.indexOf("context_write_intended")).toBeLessThan(tags.indexOf("context_path_written"))
    expect(tags.indexOf("context_path_written")).toBeGreaterThan(tags.indexOf("presentation_started"))
    const check = await runCli("source", ["replay", dir, "--check"], { cwd, env: demoEnv(out) })
    expectExit(check, 0)
  }, 60_000)

  test("the web view lists the final workspace's files and the changed files", async () => {
    const { cwd, out, dir } = await runDemo()
    const viewer = await startCli("source", ["viewer", dir, "--web", "--port", "0", "--no-browser"], { cwd, env: ENV })
    const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await viewer.waitForLine("Serving the replay"))![1]!
    await viewer.waitForLine("The run is complete")
    const view = (await (await fetch(`${url}api/view`)).json()) as { workspace: unknown }
    expect(view.workspace).toEqual({
      final: { path: "final/writer/workspace", files: 1, bytes: 35, listing: ["plan.md"] },
      changedFiles: [{ path: nodePath.join(out, "picnic.md"), change: "created", bytes: 35 }],
    })
    expect(await (await fetch(url)).text()).toContain('<ul id="files">')
    viewer.proc.kill("SIGINT")
    expect((await viewer.done).exitCode).toBe(0)
  }, 60_000)

  test("an agent's temp_workspaces holds exactly the snapshots of the answers its round was shown", async () => {
    const { dir } = await runDemo()
    const events = readEvents(dir)
    const shown = new Map<string, ReadonlyArray<string>>()
    let listings = 0
    for (const e of events) {
      if (e.type === "round_started" || e.type === "update_injected") shown.set(e.agent, e.shown)
      if (e.type === "tool_call_finished" && e.tool === "list_directory" && JSON.parse(e.arguments).path === "temp_workspaces") {
        listings += 1
        expect(e.result).toBe(
          [...shown.get(e.agent)!]
            .sort()
            .map((l) => `[DIR] ${l}`)
            .join("\n"),
        )
      }
    }
    expect(listings).toBe(1)
  }, 60_000)
})

/** Two scripted agents: `probe` tries its steps, then answers; `other` answers, or hangs when `hang` is set. */
const probeDoc = (context: string, steps: ReadonlyArray<unknown>, options: { hang?: boolean; timeout?: number } = {}) => ({
  agents: [
    {
      id: "probe",
      backend: { type: "scripted", cwd: "workspace", script: [...steps, { new_answer: "probed" }], vote: "agent1", final: "done" },
    },
    {
      id: "other",
      backend: { type: "scripted", cwd: "workspace", answer: "other", vote: "agent1", ...(options.hang ? { hang: true } : {}) },
    },
  ],
  orchestrator: { context_paths: [{ path: context, permission: "write", protected_paths: ["keep.md"] }] },
  timeout_settings: { orchestrator_timeout_seconds: options.timeout ?? 60, agent_timeout_seconds: 30, tool_timeout_seconds: 10 },
})

const userFolder = (cwd: string) => {
  const context = nodePath.join(cwd, "project")
  fs.mkdirSync(nodePath.join(context, "src"), { recursive: true })
  fs.writeFileSync(nodePath.join(context, "keep.md"), "keep\n")
  fs.writeFileSync(nodePath.join(context, "src", "main.txt"), "main\n")
  return context
}

describe("confinement, as a model meets it", () => {
  test("escapes tried during coordination are refused and recorded; the context path is untouched", async () => {
    const cwd = sandbox()
    const context = userFolder(cwd)
    const before = snapshot(context)
    const attempts = [
      { tool: "read_file", args: { path: "../../events.jsonl" } },
      { tool: "read_file", args: { path: "/etc/passwd" } },
      { tool: "read_file", args: { path: "temp_workspaces/agent2.9/x" } },
      { tool: "write_file", args: { path: nodePath.join(context, "src", "main.txt"), content: "changed" } },
      { tool: "write_file", args: { path: nodePath.join(context, "keep.md"), content: "changed" } },
    ]
    const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, probeDoc(context, attempts)), "Probe."], {
      cwd,
      env: ENV,
    })
    expectExit(r, 0)
    const finished = ofType(readEvents(lineValue(r, "LOG_DIR")), "tool_call_finished")
    expect(finished.map((e) => [e.tool, e.ok, e.error.split(":")[0]])).toEqual(attempts.map((a) => [a.tool, false, "refused"]))
    expect(snapshot(context)).toEqual(before)
  }, 60_000)

  test("a run that times out before its presentation leaves the context path byte-identical", async () => {
    const cwd = sandbox()
    const context = userFolder(cwd)
    const before = snapshot(context)
    const doc = probeDoc(context, [{ tool: "write_file", args: { path: "draft.md", content: "draft" } }], { hang: true, timeout: 2 })
    const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Probe."], { cwd, env: ENV })
    expectExit(r, 3)
    const dir = lineValue(r, "LOG_DIR")
    expect(ofType(readEvents(dir), "context_write_intended")).toEqual([])
    expect(snapshot(context)).toEqual(before)
    expect(fs.readFileSync(nodePath.join(dir, "workspaces", "agent1", "draft.md"), "utf8")).toBe("draft")
  }, 60_000)
})

describe("a run a signal stops before its presentation", () => {
  test("leaves the context path byte-identical; the final workspace is the salvaged answer's snapshot", async () => {
    const cwd = sandbox()
    const context = userFolder(cwd)
    const before = snapshot(context)
    const doc = probeDoc(context, [{ tool: "write_file", args: { path: nodePath.join(context, "src", "main.txt"), content: "early" } }], {
      hang: true,
    })
    const first = await startCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Probe."], { cwd, env: ENV })
    const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
    await waitForSignalHandler(first.proc.pid, "SIGINT")
    await waitForEvent(dir, "workspace_snapshotted")
    first.proc.kill("SIGINT")
    expectExit(await first.done, 4)
    expect(ofType(readEvents(dir), "workspace_finalized")).toMatchObject([{ agent: "probe", source: "snapshot" }])
    expect(snapshot(context)).toEqual(before)
  }, 60_000)
})

describe("kill -9 around the presenter's write, then resume", () => {
  /** The demo's log as a kill -9 right after the event `type` of the write leaves it: the tool call unfinished, no final answer. */
  const killedAfter = async (type: string) => {
    const run = await runDemo()
    const lines = fs.readFileSync(eventsPath(run.dir), "utf8").split("\n")
    const at = lines.findIndex((l) => l.includes(`"type":"${type}"`))
    fs.writeFileSync(
      eventsPath(run.dir),
      lines
        .slice(0, at + 1)
        .map((l) => `${l}\n`)
        .join(""),
    )
    fs.rmSync(nodePath.join(run.dir, "final"), { recursive: true, force: true })
    return { ...run, file: nodePath.join(run.out, "picnic.md") }
  }

  const resume = async (run: { cwd: string; out: string; dir: string }) => {
    const r = await runCli("source", ["resume", run.dir, "--automation"], { cwd: run.cwd, env: demoEnv(run.out) })
    expectExit(r, 0)
    return readEvents(run.dir)
  }

  test("killed after the file was written: the resumed run records the write and does not make it again", async () => {
    const run = await killedAfter("context_write_intended")
    const inode = fs.statSync(run.file).ino
    const events = await resume(run)
    expect(ofType(events, "context_write_intended")).toHaveLength(1)
    expect(ofType(events, "context_path_written")).toHaveLength(1)
    expect(fs.statSync(run.file).ino).toBe(inode)
    expect(fs.readFileSync(run.file, "utf8")).toBe("# Picnic\n- bread\n- cheese\n- apples\n")
    expect(fs.existsSync(nodePath.join(run.dir, "final", "writer", "workspace", "plan.md"))).toBe(true)
  }, 90_000)

  test("killed after the write was recorded, before its tool call finished: the rerun neither writes nor records it again", async () => {
    const run = await killedAfter("context_path_written")
    const inode = fs.statSync(run.file).ino
    const events = await resume(run)
    expect(ofType(events, "context_write_intended")).toHaveLength(1)
    expect(ofType(events, "context_path_written")).toHaveLength(1)
    expect(fs.statSync(run.file).ino).toBe(inode)
    expect(ofType(events, "tool_call_finished").filter((e) => e.tool === "write_file" && e.role === "presentation")).toMatchObject([
      { ok: true },
    ])
  }, 90_000)

  test("killed before the file was written: the resumed run writes it once", async () => {
    const run = await killedAfter("context_write_intended")
    fs.rmSync(run.file)
    const events = await resume(run)
    expect(ofType(events, "context_write_intended")).toHaveLength(1)
    expect(ofType(events, "context_path_written")).toMatchObject([{ change: "created", bytes: 35 }])
    expect(fs.readFileSync(run.file, "utf8")).toBe("# Picnic\n- bread\n- cheese\n- apples\n")
  }, 90_000)
})

describe("a real kill -9 during the presentation, then resume", () => {
  test("killed once the write is intended (before, during or after it), resumed: the file is written once and recorded once", async () => {
    const cwd = sandbox()
    const context = nodePath.join(cwd, "out")
    // The presenter writes, then holds (a command tool) until the test lets it go: the kill lands in its presentation.
    const hold = ["sh", "-c", 'while [ ! -e "$0/go" ]; do sleep 0.02; done; echo released', cwd]
    const doc = {
      agents: [
        {
          id: "writer",
          backend: {
            type: "scripted",
            cwd: "workspace",
            script: [{ tool: "write_file", args: { path: "report.md", content: "report\n" } }, { new_answer: "report.md" }],
            vote: "agent1",
            presentation_script: [
              { tool: "write_file", args: { path: nodePath.join(context, "report.md"), content: "delivered\n" } },
              { tool: "hold", args: {} },
            ],
            final: "delivered",
            custom_tools: [{ name: "hold", description: "Waits", command: hold }],
          },
        },
        { id: "reviewer", backend: { type: "scripted", answer: "ok", vote: "agent1" } },
      ],
      orchestrator: { context_paths: [{ path: context, permission: "write" }] },
      timeout_settings: { orchestrator_timeout_seconds: 120, agent_timeout_seconds: 60, tool_timeout_seconds: 60 },
    }
    const config = writeConfig(cwd, doc)
    const first = await startCli("source", ["--automation", "--config", config, "Deliver."], { cwd, env: ENV })
    const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
    await waitForEvent(dir, "context_write_intended")
    first.proc.kill("SIGKILL")
    expect((await first.done).signal).toBe("SIGKILL")
    expect(ofType(readEvents(dir), "run_finished")).toEqual([])
    fs.writeFileSync(nodePath.join(cwd, "go"), "")
    const r = await runCli("source", ["resume", dir, "--automation"], { cwd, env: ENV })
    expectExit(r, 0)
    const events = readEvents(dir)
    expect(fs.readFileSync(nodePath.join(context, "report.md"), "utf8")).toBe("delivered\n")
    expect(ofType(events, "context_write_intended")).toHaveLength(1)
    expect(ofType(events, "context_path_written")).toMatchObject([
      { path: nodePath.join(context, "report.md"), change: "created", bytes: 10 },
    ])
    expect(r.lines).toContain(`CHANGED_FILE: ${nodePath.join(context, "report.md")} (created, 10 bytes)`)
    expect(fs.readFileSync(nodePath.join(dir, "final", "writer", "workspace", "report.md"), "utf8")).toBe("report\n")
    expectExit(await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV }), 0)
  }, 120_000)
})
