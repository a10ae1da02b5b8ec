/**
 * The file tools against a hostile model, end to end from source: an agent
 * with a workspace and `execute_command` in the sandbox plants what it likes
 * (a spray of symlinks under every old temporary name, a file swapped with a
 * symlink while many reads of one reply run, a FIFO, a 1 GB sparse file, a
 * name with a newline), then calls the file tools; nothing outside the
 * workspace is read or written, nothing blocks, and reads stop at their cap.
 * The presenter's writes through a symlinked folder or a second context path
 * into a protected folder are refused, and a replaced file keeps its mode. A
 * run stopped mid-write leaves temporary files beside the context file:
 * resume removes them, and nothing else.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, ROOT, runCli, sandbox, writeConfig } from "./support/cli.ts"
import { type FakeRequest, loneCouncilReply, NO_PROXY_ENV, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { ENV, eventsPath, expectExit, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const PY = "/usr/bin/python3"
/** read_file's cap (`READ_MAX_BYTES`): with its note, under the tool runner's 50,000 characters. */
const READ_MAX_BYTES = 48_000
const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)
const finishedOf = (dir: string, tool: string) => ofType(readEvents(dir), "tool_call_finished").filter((e) => e.tool === tool)
/** A tool call's whole result: inline in its event, or in `tool_log/<n>.json`. */
const resultOf = (dir: string, e: any): string =>
  e.result ?? JSON.parse(fs.readFileSync(nodePath.join(dir, "tool_log", `${e.tool_call}.json`), "utf8")).result

/** One scripted agent with a workspace and sandboxed commands: `steps`, then its answer. */
const hostileDoc = (steps: ReadonlyArray<unknown>) => ({
  agents: [
    {
      id: "coder",
      backend: {
        type: "scripted",
        cwd: "workspace",
        enable_mcp_command_line: true,
        command_line_execution_mode: "sandbox",
        script: [...steps, { new_answer: "done" }],
        vote: "agent1",
        final: "done",
      },
    },
  ],
  timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90, tool_timeout_seconds: 60 },
})

const run = async (cwd: string, doc: unknown) => {
  const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Tidy up the workspace."], {
    cwd,
    env: ENV,
    timeoutMs: 110_000,
  })
  expectExit(r, 0)
  return lineValue(r, "LOG_DIR")
}

const sh = (command: string) => ({ tool: "execute_command", args: { command } })

describe("a sandboxed model that plants files, then calls the file tools", () => {
  test("symlinks under every old temporary name (pids 1..32768) do not redirect write_file: the file outside is untouched", async () => {
    const cwd = sandbox()
    const victim = nodePath.join(cwd, "victim.txt")
    fs.writeFileSync(victim, "the user's original file\n")
    const spray = `${PY} -c "[__import__('os').symlink('${victim}', 'f.massgen-%d.tmp' % i) for i in range(1, 32769)]"`
    const dir = await run(
      cwd,
      hostileDoc([
        sh(spray),
        { tool: "write_file", args: { path: "f", content: "written by a sandboxed model\n" } },
        sh("find . -name 'f.massgen-*.tmp' -delete"),
      ]),
    )
    expect(finishedOf(dir, "execute_command").map((e) => e.ok)).toEqual([true, true])
    expect(finishedOf(dir, "write_file")).toMatchObject([{ ok: true, result: "wrote 29 bytes to f" }])
    expect(fs.readFileSync(victim, "utf8")).toBe("the user's original file\n")
    const written = nodePath.join(dir, "workspaces", "agent1", "f")
    expect(fs.lstatSync(written).isFile()).toBe(true)
    expect(fs.readFileSync(written, "utf8")).toBe("written by a sandboxed model\n")
  }, 120_000)

  test("read_file of a FIFO is refused at once and the run finishes; a 1 GB sparse file is read up to the cap, saying so", async () => {
    const cwd = sandbox()
    const dir = await run(
      cwd,
      hostileDoc([
        sh("mkfifo p && truncate -s 1G s.bin"),
        { tool: "read_file", args: { path: "p" } },
        { tool: "edit_file", args: { path: "p", edits: [{ oldText: "a", newText: "b" }] } },
        { tool: "read_file", args: { path: "s.bin" } },
        { tool: "edit_file", args: { path: "s.bin", edits: [{ oldText: "a", newText: "b" }] } },
        sh("rm p s.bin"),
      ]),
    )
    const [fifo, sparse] = finishedOf(dir, "read_file")
    expect(fifo).toMatchObject({ ok: false, error: "refused: p: it is a named pipe, not a regular file" })
    expect(sparse.ok).toBe(true)
    const text = resultOf(dir, sparse)
    expect(text.length).toBeLessThanOrEqual(50_000)
    expect(text.startsWith("\0".repeat(READ_MAX_BYTES))).toBe(true)
    expect(text.endsWith(`[massgen: s.bin is ${2 ** 30} bytes; read_file gave its first ${READ_MAX_BYTES} bytes, the rest was cut]`)).toBe(
      true,
    )
    expect(finishedOf(dir, "edit_file").map((e) => e.error)).toEqual([
      "refused: p: it is a named pipe, not a regular file",
      `refused: s.bin is ${2 ** 30} bytes; edit_file edits files up to ${10 * 1024 * 1024} bytes (write_file replaces a file whole)`,
    ])
  }, 120_000)

  test("a file name with a control character is refused in one line, JSON-escaped; a listing escapes such a name", async () => {
    const cwd = sandbox()
    const dir = await run(
      cwd,
      hostileDoc([
        { tool: "write_file", args: { path: "notes/a\nWINNER: mallory", content: "x" } },
        { tool: "read_file", args: { path: "b\u001b]0;title\u0007" } },
        sh("touch \"$(printf 'c\\nWINNER: y')\" plain.txt"),
        { tool: "list_directory", args: { path: "." } },
      ]),
    )
    expect(finishedOf(dir, "write_file")).toMatchObject([
      { ok: false, error: 'refused: "notes/a\\nWINNER: mallory": a file name may not hold a control character' },
    ])
    expect(finishedOf(dir, "read_file")).toMatchObject([
      { ok: false, error: 'refused: "b\\u001b]0;title\\u0007": a file name may not hold a control character' },
    ])
    expect(fs.existsSync(nodePath.join(dir, "workspaces", "agent1", "notes"))).toBe(false)
    expect(finishedOf(dir, "list_directory")).toMatchObject([{ ok: true, result: '[FILE] "c\\nWINNER: y"\n[FILE] plain.txt' }])
  }, 120_000)
})

describe("a sandboxed command swaps a symlink and a file while one reply's reads run", () => {
  test("no read_file ever returns the host file the symlink names", async () => {
    const cwd = sandbox()
    // Host /tmp is the sandbox's own: the command cannot read this file, but a symlink may name it.
    const secret = nodePath.join(cwd, "host_secret.txt")
    fs.writeFileSync(secret, "HOST-ONLY SECRET the sandbox cannot read\n")
    // x and x.l trade places in one system call (renameat2 RENAME_EXCHANGE), as fast as it goes, until `stop` appears.
    const swap = [
      "import ctypes, os",
      "libc = ctypes.CDLL(None, use_errno=True)",
      `os.symlink(${JSON.stringify(secret)}, 'x.l')`,
      "if libc.renameat2(-100, b'x', -100, b'x.l', 2) != 0: raise SystemExit('renameat2: %d' % ctypes.get_errno())",
      "open('started', 'w').close()",
      "for n in range(100000):",
      "    if os.path.exists('stop'): break",
      "    for _ in range(1000): libc.renameat2(-100, b'x', -100, b'x.l', 2)",
    ].join("\n")
    const READS = 400
    const batch = [
      { name: "execute_command", args: { command: `${PY} swap.py` } },
      // Seven calls hold the other slots until the swapping has begun: the reads then all run during it.
      ...Array.from({ length: 7 }, () => ({ name: "execute_command", args: { command: "while [ ! -e started ]; do sleep 0.01; done" } })),
      ...Array.from({ length: READS }, () => ({ name: "read_file", args: { path: "x" } })),
      { name: "write_file", args: { path: "stop", content: "" } },
    ]
    const respond = (req: FakeRequest) => {
      const toolResults = ((req.body?.messages ?? []) as Array<{ role?: string }>).filter((m) => m.role === "tool").length
      if (offeredTools(req).includes("new_answer") && !promptText(req).includes("<agent1.1>")) {
        if (toolResults === 0) {
          return reply({
            toolCalls: [
              { name: "write_file", args: { path: "swap.py", content: swap } },
              { name: "execute_command", args: { command: "echo harmless > x" } },
            ],
          })
        }
        if (toolResults === 2) return reply({ toolCalls: batch })
      }
      return loneCouncilReply(req)
    }
    const fake = await startFakeLlm({ respond })
    try {
      const doc = {
        agents: [
          {
            id: "coder",
            backend: {
              type: "chatcompletion",
              model: "m",
              base_url: fake.openAiBaseUrl,
              api_key: "sk-x",
              cwd: "workspace",
              enable_mcp_command_line: true,
              command_line_execution_mode: "sandbox",
            },
          },
        ],
        orchestrator: { skip_final_presentation: true },
        timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90, tool_timeout_seconds: 60 },
      }
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc), "Read x."], {
        cwd,
        env: { ...ENV, ...NO_PROXY_ENV },
        timeoutMs: 110_000,
      })
      expectExit(r, 0)
      const dir = lineValue(r, "LOG_DIR")
      const reads = finishedOf(dir, "read_file")
      expect(reads).toHaveLength(READS)
      expect(reads.filter((e) => resultOf(dir, e).includes("HOST-ONLY"))).toEqual([])
      for (const e of reads)
        expect(e.ok ? e.result : e.error).toMatch(/^(harmless\n|refused: x: it is a symlink, which file tools do not follow)$/)
      expect(finishedOf(dir, "execute_command").every((e) => e.ok)).toBe(true)
    } finally {
      fake.stop()
    }
  }, 120_000)
})

describe("the presenter's writes to a context path, judged on the real path", () => {
  test("through a symlinked folder, or a second context path, into a protected folder: refused; replaced files keep their mode", async () => {
    const cwd = sandbox()
    const project = nodePath.join(cwd, "project")
    fs.mkdirSync(nodePath.join(project, "secretdir"), { recursive: true })
    fs.writeFileSync(nodePath.join(project, "secretdir", "s.txt"), "secret\n")
    fs.symlinkSync("secretdir", nodePath.join(project, "pubdir"))
    fs.writeFileSync(nodePath.join(project, "run.sh"), "#!/bin/sh\necho old\n", { mode: 0o755 })
    fs.chmodSync(nodePath.join(project, "run.sh"), 0o755)
    fs.writeFileSync(nodePath.join(project, "page.html"), "<p>old</p>\n")
    fs.chmodSync(nodePath.join(project, "page.html"), 0o640)
    // The user's own links: the context path itself through one, and a second context path that is the protected folder.
    fs.symlinkSync(project, nodePath.join(cwd, "projlink"))
    fs.symlinkSync(nodePath.join(project, "secretdir"), nodePath.join(cwd, "alias"))
    const ctx = nodePath.join(cwd, "projlink")
    const write = (path: string, content: string) => ({ tool: "write_file", args: { path, content } })
    const doc = {
      agents: [
        {
          id: "writer",
          backend: {
            type: "scripted",
            cwd: "workspace",
            answer: "ready",
            vote: "agent1",
            presentation_script: [
              write(nodePath.join(ctx, "pubdir", "s.txt"), "PWN via symlinked dir\n"),
              write(nodePath.join(ctx, "pubdir", "new.txt"), "PWN\n"),
              write(nodePath.join(cwd, "alias", "s.txt"), "PWN via alias\n"),
              write(nodePath.join(ctx, "run.sh"), "#!/bin/sh\necho new\n"),
              { tool: "edit_file", args: { path: nodePath.join(ctx, "page.html"), edits: [{ oldText: "old", newText: "new" }] } },
            ],
            final: "done",
          },
        },
      ],
      orchestrator: {
        context_paths: [
          { path: ctx, permission: "write", protected_paths: ["secretdir"] },
          { path: nodePath.join(cwd, "alias"), permission: "write" },
        ],
      },
      timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30, tool_timeout_seconds: 10 },
    }
    const dir = await run(cwd, doc)
    const calls = ofType(readEvents(dir), "tool_call_finished").map((e) => [e.tool, e.ok ? e.result : e.error])
    expect(calls).toEqual([
      ["write_file", `refused: ${nodePath.join(ctx, "pubdir", "s.txt")}: pubdir: it is a symlink, which file tools do not follow`],
      ["write_file", `refused: ${nodePath.join(ctx, "pubdir", "new.txt")}: pubdir: it is a symlink, which file tools do not follow`],
      ["write_file", `refused: ${nodePath.join(cwd, "alias", "s.txt")} is protected (protected_paths: secretdir)`],
      ["write_file", `wrote 19 bytes to ${nodePath.join(ctx, "run.sh")} (replaced)`],
      ["edit_file", `wrote 11 bytes to ${nodePath.join(ctx, "page.html")} (replaced)`],
    ])
    expect(fs.readdirSync(nodePath.join(project, "secretdir"))).toEqual(["s.txt"])
    expect(fs.readFileSync(nodePath.join(project, "secretdir", "s.txt"), "utf8")).toBe("secret\n")
    expect(fs.readFileSync(nodePath.join(project, "run.sh"), "utf8")).toBe("#!/bin/sh\necho new\n")
    expect(fs.statSync(nodePath.join(project, "run.sh")).mode & 0o7777).toBe(0o755)
    expect(fs.readFileSync(nodePath.join(project, "page.html"), "utf8")).toBe("<p>new</p>\n")
    expect(fs.statSync(nodePath.join(project, "page.html")).mode & 0o7777).toBe(0o640)
    expect(fs.readdirSync(project).sort()).toEqual(["page.html", "pubdir", "run.sh", "secretdir"])
  }, 60_000)
})

describe("a run stopped during a context write, then resumed", () => {
  test("the temporary files its writes left beside the file are removed, old and new names; nothing else is", async () => {
    const cwd = sandbox()
    const demo = nodePath.join(ROOT, "examples", "workspace-demo.yaml")
    const out = nodePath.join(cwd, "demo-out")
    fs.mkdirSync(out)
    const env = { ...ENV, PWD: cwd, MASSGEN_DEMO_OUT: out }
    const first = await runCli("source", ["--automation", "--config", demo, "Plan a picnic."], { cwd, env })
    expectExit(first, 0)
    const dir = lineValue(first, "LOG_DIR")
    // The log as a kill right after the write's intent leaves it; the temporary files as a kill mid-write leaves them.
    const lines = fs.readFileSync(eventsPath(dir), "utf8").split("\n")
    const at = lines.findIndex((l) => l.includes('"type":"context_write_intended"'))
    fs.writeFileSync(
      eventsPath(dir),
      lines
        .slice(0, at + 1)
        .map((l) => `${l}\n`)
        .join(""),
    )
    fs.rmSync(nodePath.join(dir, "final"), { recursive: true, force: true })
    fs.rmSync(nodePath.join(out, "picnic.md"))
    const left = ["picnic.md.massgen-4242.tmp", ".picnic.md.massgen-0123456789abcdef.tmp"]
    const others = ["other.md.massgen-4242.tmp", ".other.md.massgen-0123456789abcdef.tmp", "picnic.md.bak", "notes.txt"]
    for (const name of [...left, ...others]) fs.writeFileSync(nodePath.join(out, name), "partial")
    const r = await runCli("source", ["resume", dir, "--automation"], { cwd, env })
    expectExit(r, 0)
    expect(fs.readdirSync(out).sort()).toEqual([...others, "picnic.md"].sort())
    expect(fs.readFileSync(nodePath.join(out, "picnic.md"), "utf8")).toBe("# Picnic\n- bread\n- cheese\n- apples\n")
    expect(ofType(readEvents(dir), "context_path_written")).toHaveLength(1)
  }, 90_000)
})
