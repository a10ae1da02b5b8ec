/**
 * The file tools and workspaces, as an agent meets them: its workspace works
 * as a folder; every way out (`..`, an absolute path, a symlink to /etc, a
 * hard link, a snapshot it was not shown, a symlink into another agent's
 * snapshot, a write to a snapshot, to a context path before the vote, to a
 * protected path) is refused with reason `refused`, and the tool runner
 * records each refusal in `tool_call_finished`. Snapshots never change after
 * a later write, and share unchanged files only with earlier snapshots.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either, Exit, Scope } from "effect"
import { makeAgentTools } from "../src/cli/run/setup.ts"
import type { Agent } from "../src/domain/config/index.ts"
import type { Event } from "../src/domain/events/index.ts"
import { foldEvents, type State } from "../src/domain/state/index.ts"
import { snapshotDir } from "../src/domain/workspaces/facts.ts"
import { makeFileTools } from "../src/services/tools/file-tools.ts"
import { startMcpServers } from "../src/services/tools/mcp-servers.ts"
import type { ToolContext, ToolProvider, ToolRunError } from "../src/services/tools/tool-provider.ts"
import { makeToolRunner } from "../src/services/tools/tool-runner.ts"
import { agentWorkspace, makeWorkspaces } from "../src/services/tools/workspace.ts"
import { faultServer } from "./support/mcp.ts"

const dirs: Array<string> = []
const tempDir = () => {
  const d = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-ws-")))
  dirs.push(d)
  return d
}
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

const agent = (id: string, n: number): Agent => ({
  id,
  anonId: `agent${n}`,
  systemMessage: null,
  backend: { type: "scripted", cwd: "workspace" },
})
const AGENTS = [agent("alice", 1), agent("bob", 2), agent("carol", 3)]
const T = "2026-01-01T00:00:00.000Z"

/** A run where bob and carol answered (their workspaces snapshotted) and alice's round 2 shows bob's answer only. */
const setup = async () => {
  const logDir = tempDir()
  const user = tempDir()
  const ctx = nodePath.join(user, "project")
  const docs = nodePath.join(user, "docs")
  fs.mkdirSync(ctx)
  fs.mkdirSync(docs)
  fs.writeFileSync(nodePath.join(ctx, "keep.md"), "do not touch\n")
  fs.writeFileSync(nodePath.join(docs, "guide.md"), "a guide\n")
  const ws = makeWorkspaces(logDir, AGENTS)
  fs.writeFileSync(nodePath.join(ws.root("bob")!, "bob.txt"), "from bob\n")
  fs.writeFileSync(nodePath.join(ws.root("carol")!, "carol.txt"), "from carol\n")
  const events: Array<Event> = [
    {
      _tag: "run_started",
      time: T,
      run_id: "r",
      question: "q",
      agents: AGENTS.map((a) => ({ id: a.id, anon_id: a.anonId, backend: "scripted", model: null })),
      settings: {
        max_new_answers_per_agent: null,
        skip_final_presentation: false,
        final_answer_strategy: "winner_present",
        orchestrator_timeout_seconds: 60,
        agent_timeout_seconds: 60,
        budget_usd: null,
        disable_injection: false,
        context_paths: [
          { path: ctx, permission: "write", protected_paths: ["keep.md"] },
          { path: docs, permission: "read", protected_paths: [] },
        ],
      },
    },
    ...AGENTS.map((a): Event => ({ _tag: "round_started", time: T, agent: a.id, round: 1, shown: [], vote_only: false, restart: false })),
  ]
  for (const [id, label] of [
    ["bob", "agent2.1"],
    ["carol", "agent3.1"],
    ["alice", "agent1.1"],
  ] as const) {
    events.push({ _tag: "answer_submitted", time: T, agent: id, round: 1, label, content: `answer of ${id}` })
    const made = (await Effect.runPromise(ws.snapshot(id, label)))!
    events.push({ _tag: "workspace_snapshotted", time: T, agent: id, label, ...made })
  }
  events.push({ _tag: "round_started", time: T, agent: "alice", round: 2, shown: ["agent2.1"], vote_only: false, restart: false })
  let state = foldEvents(events)
  expect(state.agents[0]!.inFlight?.shown).toEqual(["agent2.1"])
  const emitted: Array<Event> = []
  let toolCall = 0
  const context = (agentId: string, role: "round" | "presentation" = "round", callId?: string): ToolContext => ({
    agent: agentId,
    round: 2,
    role,
    toolCall: ++toolCall,
    callId: callId ?? `call_${toolCall}`,
    state: Effect.sync(() => state),
    emit: (e) =>
      Effect.sync(() => {
        emitted.push(e)
        state = foldEvents([e], state)
      }),
    now: Effect.succeed(T),
  })
  const toolsOf = (id: string) => makeFileTools({ workspace: ws.root(id), snapshotPath: (l) => nodePath.join(logDir, snapshotDir(l)) })
  const present = () => {
    for (const e of [
      { _tag: "vote_cast", time: T, agent: "alice", round: 2, target: "bob", target_label: "agent2.1", reason: "r" },
      {
        _tag: "presentation_started",
        time: T,
        agent: "bob",
        label: "agent2.1",
        votes: { "agent2.1": 1 },
        is_tie: false,
        strategy: "winner_present",
        calls_model: true,
      },
    ] as const)
      state = foldEvents([e], state)
  }
  return { logDir, ctx, docs, ws, toolsOf, context, emitted, present, state: () => state as State }
}

const call = (tools: ToolProvider, name: string, args: Record<string, unknown>, context?: ToolContext) =>
  Effect.runPromise(Effect.either(tools.run(name, args, context)))

const ok = async (p: Promise<Either.Either<string, ToolRunError>>) => {
  const r = await p
  if (Either.isLeft(r)) throw new Error(`expected success, got ${r.left.message}`)
  return r.right
}
const refusal = async (p: Promise<Either.Either<string, ToolRunError>>) => {
  const r = await p
  if (Either.isRight(r)) throw new Error(`expected a refusal, got ${r.right}`)
  expect(r.left.reason).toBe("refused")
  return r.left.message
}

describe("file tools in the agent's workspace", () => {
  test("write, read, edit, list, create, move and delete work on relative paths", async () => {
    const s = await setup()
    const t = s.toolsOf("alice")
    const c = () => s.context("alice")
    expect(await ok(call(t, "write_file", { path: "notes/a.md", content: "one two three" }, c()))).toBe("wrote 13 bytes to notes/a.md")
    expect(await ok(call(t, "edit_file", { path: "notes/a.md", edits: [{ oldText: "two", newText: "2" }] }, c()))).toContain("wrote")
    expect(await ok(call(t, "read_file", { path: "notes/a.md" }, c()))).toBe("one 2 three")
    expect(
      (await call(t, "edit_file", { path: "notes/a.md", edits: [{ oldText: "missing", newText: "x" }] }, c())).pipe(Either.isLeft),
    ).toBe(true)
    await ok(call(t, "create_directory", { path: "out/deep" }, c()))
    await ok(call(t, "move_file", { source: "notes/a.md", destination: "out/deep/a.md" }, c()))
    expect(await ok(call(t, "list_directory", { path: "out/deep" }, c()))).toBe("[FILE] a.md")
    expect(await ok(call(t, "list_directory", { path: "." }, c()))).toBe("[DIR] notes\n[DIR] out")
    await ok(call(t, "delete_file", { path: "out" }, c()))
    expect(fs.readdirSync(s.ws.root("alice")!)).toEqual(["notes"])
  })

  test("the workspace is named by the anonymous id, and tool messages never show a real path", async () => {
    const s = await setup()
    expect(s.ws.root("alice")).toBe(nodePath.join(s.logDir, "workspaces", "agent1"))
    const t = s.toolsOf("alice")
    const messages = [
      await refusal(call(t, "read_file", { path: "temp_workspaces/agent3.1/carol.txt" }, s.context("alice"))),
      await refusal(call(t, "read_file", { path: "../agent2/notes.txt" }, s.context("alice"))),
      (await call(t, "read_file", { path: "nothing.txt" }, s.context("alice")))
        .pipe(Either.getLeft)
        .pipe((o) => (o._tag === "Some" ? o.value.message : "")),
    ]
    for (const m of messages) {
      expect(m).not.toContain(s.logDir)
      expect(m).not.toContain("carol")
      expect(m).not.toContain("bob")
    }
  })
})

describe("escape attempts are refused", () => {
  test("../ and absolute paths outside every root", async () => {
    const s = await setup()
    const t = s.toolsOf("alice")
    expect(await refusal(call(t, "read_file", { path: "../agent2/bob.txt" }, s.context("alice")))).toContain('may not contain ".."')
    expect(await refusal(call(t, "write_file", { path: "a/../../x", content: "x" }, s.context("alice")))).toContain('".."')
    expect(await refusal(call(t, "read_file", { path: "/etc/passwd" }, s.context("alice")))).toContain(
      "outside your workspace and every context path",
    )
    expect(await refusal(call(t, "write_file", { path: "/tmp/escape.txt", content: "x" }, s.context("alice")))).toContain("outside")
    expect(fs.existsSync("/tmp/escape.txt")).toBe(false)
  })

  test("a symlink to /etc, planted in the workspace (as a command would), leads nowhere", async () => {
    const s = await setup()
    fs.symlinkSync("/etc", nodePath.join(s.ws.root("alice")!, "etc"))
    fs.symlinkSync("/etc/hostname", nodePath.join(s.ws.root("alice")!, "host"))
    const t = s.toolsOf("alice")
    expect(await refusal(call(t, "read_file", { path: "etc/passwd" }, s.context("alice")))).toContain("a symlink")
    expect(await refusal(call(t, "read_file", { path: "host" }, s.context("alice")))).toContain("a symlink")
    expect(await refusal(call(t, "write_file", { path: "etc/evil", content: "x" }, s.context("alice")))).toContain("a symlink")
    expect(await refusal(call(t, "list_directory", { path: "etc" }, s.context("alice")))).toContain("a symlink")
    // The link itself may go: deleting it does not follow it.
    await ok(call(t, "delete_file", { path: "etc" }, s.context("alice")))
    expect(fs.existsSync("/etc/passwd")).toBe(true)
  })

  test("a hard link to a file outside is neither read nor written", async () => {
    const s = await setup()
    const outside = nodePath.join(tempDir(), "secret.txt")
    fs.writeFileSync(outside, "secret\n")
    fs.linkSync(outside, nodePath.join(s.ws.root("alice")!, "linked.txt"))
    const t = s.toolsOf("alice")
    expect(await refusal(call(t, "read_file", { path: "linked.txt" }, s.context("alice")))).toContain("hard link")
    expect(await refusal(call(t, "write_file", { path: "linked.txt", content: "changed" }, s.context("alice")))).toContain("hard link")
    expect(fs.readFileSync(outside, "utf8")).toBe("secret\n")
  })

  test("another agent's snapshot: only those of the answers shown, read-only, and not through a symlink", async () => {
    const s = await setup()
    const t = s.toolsOf("alice")
    expect(await ok(call(t, "read_file", { path: "temp_workspaces/agent2.1/bob.txt" }, s.context("alice")))).toBe("from bob\n")
    expect(await ok(call(t, "list_directory", { path: "temp_workspaces" }, s.context("alice")))).toBe("[DIR] agent2.1")
    expect(await refusal(call(t, "read_file", { path: "temp_workspaces/agent3.1/carol.txt" }, s.context("alice")))).toContain(
      "not the snapshot of an answer you were shown",
    )
    expect(await refusal(call(t, "write_file", { path: "temp_workspaces/agent2.1/bob.txt", content: "x" }, s.context("alice")))).toContain(
      "read-only",
    )
    expect(await refusal(call(t, "delete_file", { path: "temp_workspaces/agent2.1/bob.txt" }, s.context("alice")))).toContain("read-only")
    // A symlink to carol's snapshot (not shown) or bob's (read-only) gives no way in.
    fs.symlinkSync(nodePath.join(s.logDir, snapshotDir("agent3.1")), nodePath.join(s.ws.root("alice")!, "carol"))
    fs.symlinkSync(nodePath.join(s.logDir, snapshotDir("agent2.1")), nodePath.join(s.ws.root("alice")!, "bob"))
    expect(await refusal(call(t, "read_file", { path: "carol/carol.txt" }, s.context("alice")))).toContain("a symlink")
    expect(await refusal(call(t, "write_file", { path: "bob/bob.txt", content: "x" }, s.context("alice")))).toContain("a symlink")
    expect(fs.readFileSync(nodePath.join(s.logDir, snapshotDir("agent2.1"), "bob.txt"), "utf8")).toBe("from bob\n")
  })

  test("context paths: read by all, written by none before the vote, and never where protected", async () => {
    const s = await setup()
    const t = s.toolsOf("alice")
    expect(await ok(call(t, "read_file", { path: nodePath.join(s.docs, "guide.md") }, s.context("alice")))).toBe("a guide\n")
    expect(await refusal(call(t, "write_file", { path: nodePath.join(s.ctx, "new.md"), content: "x" }, s.context("alice")))).toContain(
      "only the presenter",
    )
    s.present()
    const bob = s.toolsOf("bob")
    // Not the presenter, or not in its presentation: still refused.
    expect(
      await refusal(call(t, "write_file", { path: nodePath.join(s.ctx, "new.md"), content: "x" }, s.context("alice", "presentation"))),
    ).toContain("only the presenter")
    expect(
      await refusal(call(bob, "write_file", { path: nodePath.join(s.ctx, "new.md"), content: "x" }, s.context("bob", "round"))),
    ).toContain("only the presenter")
    expect(
      await refusal(call(bob, "write_file", { path: nodePath.join(s.ctx, "keep.md"), content: "x" }, s.context("bob", "presentation"))),
    ).toContain("protected")
    expect(
      await refusal(call(bob, "write_file", { path: nodePath.join(s.docs, "guide.md"), content: "x" }, s.context("bob", "presentation"))),
    ).toContain("read-only context path")
    fs.writeFileSync(nodePath.join(s.ctx, "other.md"), "x")
    expect(await refusal(call(bob, "delete_file", { path: nodePath.join(s.ctx, "other.md") }, s.context("bob", "presentation")))).toContain(
      "does not change context paths",
    )
    expect(fs.readdirSync(s.ctx).sort()).toEqual(["keep.md", "other.md"])
    expect(fs.readFileSync(nodePath.join(s.ctx, "keep.md"), "utf8")).toBe("do not touch\n")
    expect(s.emitted).toEqual([])
  })
})

describe("the presenter's writes to a context path", () => {
  test("land, each recorded before (intent) and after, with bytes, sha256 and created|replaced", async () => {
    const s = await setup()
    s.present()
    const bob = s.toolsOf("bob")
    // The presenter reads every answer's files.
    expect(await ok(call(bob, "list_directory", { path: "temp_workspaces" }, s.context("bob", "presentation")))).toBe(
      "[DIR] agent1.1\n[DIR] agent2.1\n[DIR] agent3.1",
    )
    const file = nodePath.join(s.ctx, "out", "result.md")
    expect(await ok(call(bob, "write_file", { path: file, content: "v1\n" }, s.context("bob", "presentation")))).toContain("(created)")
    expect(
      await ok(call(bob, "edit_file", { path: file, edits: [{ oldText: "v1", newText: "v2" }] }, s.context("bob", "presentation"))),
    ).toContain("(replaced)")
    expect(fs.readFileSync(file, "utf8")).toBe("v2\n")
    expect(s.emitted.map((e) => [e._tag, "change" in e ? e.change : null, "bytes" in e ? e.bytes : null])).toEqual([
      ["context_write_intended", "created", 3],
      ["context_path_written", "created", 3],
      ["context_write_intended", "replaced", 3],
      ["context_path_written", "replaced", 3],
    ])
    const written = s.emitted[3] as Extract<Event, { _tag: "context_path_written" }>
    expect(written.sha256).toBe(new Bun.CryptoHasher("sha256").update("v2\n").digest("hex"))
    expect(written.path).toBe(file)
  })

  test("a call a stop cut off, run again: its write is made once and recorded once, whatever the moment of the stop", async () => {
    const s = await setup()
    s.present()
    const file = nodePath.join(s.ctx, "result.md")
    const sha = (t: string) => new Bun.CryptoHasher("sha256").update(t).digest("hex")
    const bob = s.toolsOf("bob")
    const again = (callId: string) => s.context("bob", "presentation", callId)
    const intent = (n: number, text: string, change: "created" | "replaced"): Event => ({
      _tag: "context_write_intended",
      time: T,
      tool_call: n,
      call_id: `c${n}`,
      agent: "bob",
      path: file,
      bytes: text.length,
      sha256: sha(text),
      change,
    })
    // Stopped after the intent and the write, before the record: the rerun records it and does not write again.
    await Effect.runPromise(again("c7").emit(intent(7, "v1\n", "created")))
    fs.writeFileSync(file, "v1\n")
    const inode = fs.statSync(file).ino
    expect(await ok(call(bob, "write_file", { path: file, content: "v1\n" }, again("c7")))).toContain("(created)")
    expect(fs.statSync(file).ino).toBe(inode)
    // An edit stopped the same way: the rerun would not find its oldText any more; it is recorded, not redone.
    await Effect.runPromise(again("c8").emit(intent(8, "v2\n", "replaced")))
    fs.writeFileSync(file, "v2\n")
    await ok(call(bob, "edit_file", { path: file, edits: [{ oldText: "v1", newText: "v2" }] }, again("c8")))
    // Stopped after the intent, before the write: the rerun writes it, once, under that intent.
    await Effect.runPromise(again("c9").emit(intent(9, "v3\n", "replaced")))
    await ok(call(bob, "write_file", { path: file, content: "v3\n" }, again("c9")))
    expect(fs.readFileSync(file, "utf8")).toBe("v3\n")
    // Stopped after the record, before the tool call finished: the rerun neither writes nor records again.
    const recorded = fs.statSync(file).ino
    expect(await ok(call(bob, "write_file", { path: file, content: "v3\n" }, again("c9")))).toContain("wrote")
    expect(await ok(call(bob, "edit_file", { path: file, edits: [{ oldText: "v1", newText: "v2" }] }, again("c8")))).toContain("wrote")
    expect(fs.statSync(file).ino).toBe(recorded)
    const tags = s.emitted.map((e) => `${e._tag}:${"tool_call" in e ? e.tool_call : ""}`)
    expect(tags).toEqual([
      "context_write_intended:7",
      "context_path_written:7",
      "context_write_intended:8",
      "context_path_written:8",
      "context_write_intended:9",
      "context_path_written:9",
    ])
    expect(s.state().workspaces.contextWrites.every((w) => w.done)).toBe(true)
    // A new call writing the same file is a new write.
    await ok(call(bob, "write_file", { path: file, content: "v4\n" }, s.context("bob", "presentation")))
    expect(s.emitted.slice(-2).map((e) => e._tag)).toEqual(["context_write_intended", "context_path_written"])
  })
})

describe("refusals are recorded", () => {
  test("each refused call is a tool_call_finished with ok false and the reason, given to the model as an error result", async () => {
    const s = await setup()
    const events: Array<Event> = []
    let n = 0
    const runner = makeToolRunner({
      providerOf: () => s.toolsOf("alice"),
      emit: (e) => Effect.sync(() => void events.push(e)),
      now: Effect.succeed(T),
      nextToolCall: Effect.sync(() => ++n),
      writeLog: () => Effect.void,
      digest: () => "d",
      state: Effect.sync(() => s.state()),
    })
    const attempts = ["../x", "/etc/passwd", "temp_workspaces/agent3.1/carol.txt"]
    const results = await Effect.runPromise(
      runner(
        "alice",
        2,
        "round",
        attempts.map((path, i) => ({ id: `c${i}`, name: "read_file", arguments: JSON.stringify({ path }) })),
      ),
    )
    expect(results.every((r) => r.content.startsWith("error: refused: "))).toBe(true)
    const finished = events.filter((e): e is Extract<Event, { _tag: "tool_call_finished" }> => e._tag === "tool_call_finished")
    expect(finished.map((e) => [e.ok, e.error?.startsWith("refused: ")])).toEqual(attempts.map(() => [false, true]))
  })
})

describe("snapshots", () => {
  test("never change after a later write, and share unchanged files only with earlier snapshots", async () => {
    const logDir = tempDir()
    const ws = makeWorkspaces(logDir, AGENTS)
    const root = ws.root("alice")!
    fs.mkdirSync(nodePath.join(root, "src"))
    fs.writeFileSync(nodePath.join(root, "src", "same.txt"), "unchanged")
    fs.writeFileSync(nodePath.join(root, "src", "edit.txt"), "first")
    const one = (await Effect.runPromise(ws.snapshot("alice", "agent1.1")))!
    expect(one).toEqual({ path: "snapshot_storage/agent1.1", files: 2, bytes: 14 })
    fs.writeFileSync(nodePath.join(root, "src", "edit.txt"), "second")
    fs.appendFileSync(nodePath.join(root, "src", "same.txt"), "")
    const first = nodePath.join(logDir, "snapshot_storage/agent1.1/src")
    expect(fs.readFileSync(nodePath.join(first, "edit.txt"), "utf8")).toBe("first")
    await Effect.runPromise(ws.snapshot("alice", "agent1.2"))
    const second = nodePath.join(logDir, "snapshot_storage/agent1.2/src")
    expect(fs.readFileSync(nodePath.join(second, "edit.txt"), "utf8")).toBe("second")
    // The unchanged file is shared between the two snapshots, never with the workspace.
    expect(fs.statSync(nodePath.join(second, "same.txt")).ino).toBe(fs.statSync(nodePath.join(first, "same.txt")).ino)
    expect(fs.statSync(nodePath.join(root, "src", "same.txt")).nlink).toBe(1)
    fs.writeFileSync(nodePath.join(root, "src", "same.txt"), "changed later")
    expect(fs.readFileSync(nodePath.join(first, "same.txt"), "utf8")).toBe("unchanged")
    expect(fs.readFileSync(nodePath.join(second, "same.txt"), "utf8")).toBe("unchanged")
  })

  test("an orphan copy (a crash before its event) is replaced, and a hard-linked file of the workspace is left out", async () => {
    const logDir = tempDir()
    const ws = makeWorkspaces(logDir, AGENTS)
    const root = ws.root("bob")!
    fs.writeFileSync(nodePath.join(root, "a.txt"), "a")
    const outside = nodePath.join(tempDir(), "secret")
    fs.writeFileSync(outside, "secret")
    fs.linkSync(outside, nodePath.join(root, "linked"))
    fs.mkdirSync(nodePath.join(logDir, "snapshot_storage", "agent2.1"), { recursive: true })
    fs.writeFileSync(nodePath.join(logDir, "snapshot_storage", "agent2.1", "stale.txt"), "old")
    const made = await Effect.runPromise(ws.snapshot("bob", "agent2.1"))
    expect(made).toEqual({ path: "snapshot_storage/agent2.1", files: 1, bytes: 1 })
    expect(fs.readdirSync(nodePath.join(logDir, "snapshot_storage", "agent2.1"))).toEqual(["a.txt"])
  })
})

describe("MCP servers of an agent with a workspace", () => {
  test("${cwd} is the agent's own workspace, where its stdio server runs: one server per workspace", async () => {
    const logDir = tempDir()
    const entry = { name: "files", ...faultServer("serve", { args: ["--out=${cwd}/out"] }) }
    const agents = AGENTS.slice(0, 2).map((a) => ({ ...a, backend: { ...a.backend, mcp_servers: [entry] } })) as ReadonlyArray<Agent>
    makeWorkspaces(logDir, agents)
    const scope = Effect.runSync(Scope.make())
    try {
      const providers = await Effect.runPromise(
        startMcpServers(agents, { cwd: logDir, cwdOf: (a) => agentWorkspace(logDir, a), env: {} }).pipe(Scope.extend(scope)),
      )
      for (const a of agents) {
        const reply = JSON.parse(await Effect.runPromise(providers.get(a.id)!.run("mcp__files__whoami", {})))
        const root = nodePath.join(logDir, "workspaces", a.anonId)
        expect(reply).toMatchObject({ cwd: root, argv: [`--out=${root}/out`] })
      }
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 30_000)
})

describe("an agent's tools with a workspace", () => {
  test("it gets the file tools beside its command tools, which run in its workspace; an agent without cwd gets neither workspace nor file tools", async () => {
    const logDir = tempDir()
    const pwd = { name: "where", command: ["pwd"] as const }
    const agents: ReadonlyArray<Agent> = [
      { ...AGENTS[0]!, backend: { type: "scripted", cwd: "workspace", custom_tools: [pwd] } },
      { ...AGENTS[1]!, backend: { type: "scripted", custom_tools: [pwd] } },
    ]
    makeWorkspaces(logDir, agents)
    const config = { agents, settings: {} as never, pricing: {} }
    const tools = await Effect.runPromise(makeAgentTools(config, { PATH: process.env.PATH }, logDir, "config.yaml"))
    expect(tools.get("alice")!.tools.map((t) => t.spec.name)).toEqual([
      "read_file",
      "write_file",
      "edit_file",
      "list_directory",
      "create_directory",
      "delete_file",
      "move_file",
      "where",
    ])
    expect((await Effect.runPromise(tools.get("alice")!.run("where", {}))).trim()).toBe(nodePath.join(logDir, "workspaces", "agent1"))
    expect(tools.get("bob")!.tools.map((t) => t.spec.name)).toEqual(["where"])
    expect((await Effect.runPromise(tools.get("bob")!.run("where", {}))).trim()).toBe(logDir)
  })
})
