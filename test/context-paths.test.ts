/**
 * The config of workspaces and context paths, as a user writes it: `cwd` and
 * `context_paths` are read with their defaults; a protected path that leaves
 * its context path, a path given twice, an unknown permission and an empty
 * `cwd` are problems naming the key; MassGen's `snapshot_storage` and
 * `agent_temporary_workspace` are accepted without a warning; a run makes
 * relative context paths absolute from where it starts and stops with exit 1
 * on a `read` path that does not exist. The fold keeps each context write
 * once, and the replay check refuses file events that do not fit the run.
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Either } from "effect"
import { decodeConfig, unknownKeys } from "../src/domain/config/index.ts"
import type { Event } from "../src/domain/events/index.ts"
import { foldEvents, initialState } from "../src/domain/state/index.ts"
import { changedFiles, evolveWorkspaces, noWorkspaceFacts, workspaceEventProblem } from "../src/domain/workspaces/facts.ts"
import { resolveToolPath } from "../src/domain/workspaces/paths.ts"
import { runCli, sandbox, writeConfig } from "./support/cli.ts"
import { ENV, expectExit } from "./support/run-dirs.ts"

const agentsDoc = { agents: [{ id: "a", backend: { type: "scripted", cwd: "workspace" } }] }
const decode = (orchestrator: unknown) => decodeConfig({ ...agentsDoc, orchestrator }, {})
const problems = (orchestrator: unknown) => {
  const r = decode(orchestrator)
  return Either.isLeft(r) ? r.left : []
}

describe("config keys", () => {
  test("cwd and context_paths are read, permission read and no protected paths by default", () => {
    const r = decode({ context_paths: [{ path: "site", permission: "write", protected_paths: ["index.html"] }, { path: "/notes" }] })
    if (Either.isLeft(r)) throw new Error(JSON.stringify(r.left))
    expect(r.right.agents[0]!.backend.cwd).toBe("workspace")
    expect(r.right.settings.context_paths).toEqual([
      { path: "site", permission: "write", protected_paths: ["index.html"] },
      { path: "/notes", permission: "read", protected_paths: [] },
    ])
    const none = decodeConfig(agentsDoc, {})
    expect(Either.isRight(none) && none.right.settings.context_paths).toBe(undefined)
  })

  test("bad values are problems naming the key", () => {
    expect(problems({ context_paths: [{ path: "site", protected_paths: ["../etc", "/abs", "ok/file"] }] })).toEqual([
      {
        path: "orchestrator.context_paths[0].protected_paths[0]",
        message: 'Expected a path relative to the context path, without "..", found "../etc"',
      },
      {
        path: "orchestrator.context_paths[0].protected_paths[1]",
        message: 'Expected a path relative to the context path, without "..", found "/abs"',
      },
    ])
    expect(problems({ context_paths: [{ path: "site" }, { path: "site/" }] })).toEqual([
      { path: "orchestrator.context_paths[1].path", message: 'Expected each context path once, found "site/" again' },
    ])
    expect(problems({ context_paths: [{ path: "site", permission: "admin" }] }).map((p) => p.path)).toEqual([
      "orchestrator.context_paths[0].permission",
    ])
    const empty = decodeConfig({ agents: [{ id: "a", backend: { type: "scripted", cwd: "" } }] }, {})
    expect(Either.isLeft(empty) && empty.left).toEqual([
      { path: "agents[0].backend.cwd", message: "Expected a workspace name, found an empty string" },
    ])
  })

  test("MassGen's snapshot_storage and agent_temporary_workspace are accepted without a warning", () => {
    const doc = {
      ...agentsDoc,
      orchestrator: { snapshot_storage: "snapshots", agent_temporary_workspace: "temp_workspaces", context_paths: [{ path: "x" }] },
    }
    expect(Either.isRight(decodeConfig(doc, {}))).toBe(true)
    expect(unknownKeys(doc)).toEqual([])
  })

  test("a run makes relative context paths absolute from where it starts; a missing read path stops it with exit 1", async () => {
    const cwd = sandbox()
    const doc = (permission: string) => ({
      agents: [{ id: "a", backend: { type: "scripted", answer: "x", vote: "agent1" } }],
      orchestrator: { context_paths: [{ path: "missing", permission }] },
    })
    const bad = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc("read")), "Q?"], { cwd, env: ENV })
    expectExit(bad, 1)
    expect(bad.stderr).toContain(`orchestrator.context_paths[0].path: context path ${nodePath.join(cwd, "missing")} does not exist`)
    const ok = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc("write")), "Q?"], { cwd, env: ENV })
    expectExit(ok, 0)
    const dir = ok.lines.find((l) => l.startsWith("LOG_DIR: "))!.slice(9)
    const started = JSON.parse(fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8").split("\n")[0]!)
    expect(started.settings.context_paths).toEqual([{ path: nodePath.join(cwd, "missing"), permission: "write", protected_paths: [] }])
    // A write path is made by the presenter's first write, not by the run.
    expect(fs.existsSync(nodePath.join(cwd, "missing"))).toBe(false)
  }, 60_000)
})

describe("paths, lexically", () => {
  const roots = {
    workspace: "/logs/run/workspaces/agent1",
    snapshots: new Map([["agent2.1", "/logs/run/snapshot_storage/agent2.1"]]),
    contextPaths: [{ path: "/home/me/site", permission: "write" as const, protected_paths: ["index.html", "assets"] }],
    mayWriteContext: true,
  }
  test.each([
    ["notes.md", "write", "/logs/run/workspaces/agent1/notes.md"],
    ["./a/./b.md", "read", "/logs/run/workspaces/agent1/a/b.md"],
    ["temp_workspaces/agent2.1/x.md", "read", "/logs/run/snapshot_storage/agent2.1/x.md"],
    ["/home/me/site/about.html", "write", "/home/me/site/about.html"],
    ["/home/me/site/index.html", "read", "/home/me/site/index.html"],
  ] as const)("%s for %s is %s", (path, access, real) => {
    const r = resolveToolPath(path, roots, access)
    expect(r._tag === "ok" ? r.real : r.reason).toBe(real)
  })
  test.each([
    ["../x", "read"],
    ["a/../../x", "read"],
    ["/home/me/sitemap", "read"],
    ["/etc/passwd", "read"],
    ["temp_workspaces/agent3.1/x", "read"],
    ["temp_workspaces/agent2.1/x", "write"],
    ["/home/me/site/index.html", "write"],
    ["/home/me/site/assets/logo.svg", "write"],
    ["", "read"],
  ] as const)("%s for %s is refused", (path, access) => {
    expect(resolveToolPath(path, roots, access)._tag).toBe("refused")
  })
})

describe("context writes in the fold and the replay check", () => {
  const base = {
    time: "2026-01-01T00:00:00.000Z",
    call_id: "c1",
    agent: "a",
    path: "/p/f",
    bytes: 1,
    sha256: "s1",
    change: "created" as const,
  }
  test("a write is intended, then done once; changed files list each file once", () => {
    let facts = evolveWorkspaces(noWorkspaceFacts, { _tag: "context_write_intended", tool_call: 1, ...base })
    expect(changedFiles(facts)).toEqual([])
    facts = evolveWorkspaces(facts, { _tag: "context_path_written", tool_call: 1, ...base })
    expect(evolveWorkspaces(facts, { _tag: "context_path_written", tool_call: 1, ...base })).toBe(facts)
    facts = evolveWorkspaces(facts, { _tag: "context_write_intended", tool_call: 2, ...base, sha256: "s2", bytes: 2, change: "replaced" })
    facts = evolveWorkspaces(facts, { _tag: "context_path_written", tool_call: 2, ...base, sha256: "s2", bytes: 2, change: "replaced" })
    expect(changedFiles(facts)).toEqual([{ path: "/p/f", change: "created", bytes: 2 }])
  })

  test("file events that do not fit the run are named", () => {
    const state = { ...initialState, answers: { "agent1.1": { label: "agent1.1", agent: "a", round: 1, content: "", time: 0 } } }
    const snap = (label: string): Event => ({
      _tag: "workspace_snapshotted",
      time: base.time,
      agent: "a",
      label,
      path: `snapshot_storage/${label}`,
      files: 0,
      bytes: 0,
    })
    expect(workspaceEventProblem(state, snap("agent1.1") as never, new Map())).toBe(null)
    expect(workspaceEventProblem(state, snap("agent1.2") as never, new Map())).toBe("a has no answer agent1.2 to snapshot here")
    expect(workspaceEventProblem(state, { _tag: "context_write_intended", tool_call: 4, ...base }, new Map([[4, "a"]]))).toBe(null)
    expect(workspaceEventProblem(state, { _tag: "context_write_intended", tool_call: 4, ...base }, new Map())).toBe(
      "a has no tool call 4 in flight to write /p/f",
    )
    expect(workspaceEventProblem(state, { _tag: "context_path_written", tool_call: 4, ...base }, new Map())).toBe(
      "a intended no write of /p/f with this content",
    )
  })
})

describe("the final workspace of a run a signal stopped", () => {
  test("is a stand-in, like its salvaged answer: the resumed run's own copy supersedes it", () => {
    const t = "2026-01-01T00:00:00.000Z"
    const finalized = (source: "snapshot" | "workspace"): Event => ({
      _tag: "workspace_finalized",
      time: t,
      agent: "a",
      label: "agent1.1",
      source,
      path: "final/a/workspace",
      files: 1,
      bytes: 1,
      listing: ["x"],
    })
    const stopped = foldEvents([
      {
        _tag: "run_started",
        time: t,
        run_id: "r",
        question: "q",
        agents: [{ id: "a", anon_id: "agent1", backend: "scripted", model: null }],
        settings: {
          max_new_answers_per_agent: null,
          skip_final_presentation: false,
          final_answer_strategy: "winner_present",
          orchestrator_timeout_seconds: 9,
          agent_timeout_seconds: 9,
          budget_usd: null,
          disable_injection: false,
        },
      },
      { _tag: "round_started", time: t, agent: "a", round: 1, shown: [], vote_only: false, restart: false },
      { _tag: "answer_submitted", time: t, agent: "a", round: 1, label: "agent1.1", content: "x" },
      finalized("snapshot"),
      { _tag: "final_answer", time: t, agent: "a", label: "agent1.1", source: "salvaged", content: "x" },
      { _tag: "run_finished", time: t, reason: "interrupted", winner: "a", message: "signal" },
    ])
    expect(stopped.workspaces.final?.source).toBe("snapshot")
    const resumed = foldEvents(
      [{ _tag: "run_resumed", time: t, dropped_lines: 0, torn_tail: false, restarted_rounds: [], presentation_restarted: false }],
      stopped,
    )
    expect(resumed.workspaces.final).toBe(null)
    expect(workspaceEventProblem(resumed, finalized("workspace") as never, new Map())).toBe(null)
    expect(foldEvents([finalized("workspace")], resumed).workspaces.final?.source).toBe("workspace")
  })
})
