/**
 * Snapshots and the final copy of a workspace a model filled with hostile
 * things, end to end from source (security probe H2, M4, test 1g): a
 * sandboxed command makes a symlink of each shape that once hung massgen or
 * stopped the run for good (`.` twice, `..`, itself, `/`, `/proc/self/root`,
 * a folder's link to itself), and each run completes with the link in its
 * snapshot and final copy as a link, with the same text; a relative link
 * that points elsewhere from the final copy's depth writes nothing there; a
 * 2 GB sparse file is refused by `workspace_limits.max_bytes` and a smaller
 * one copied sparse; a half-made copy a dead process left is removed and the
 * resume completes; a SIGTERM during a snapshot of a hostile workspace stops
 * the run (exit 4) and the resume completes it; `workspace_limits` is checked.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, waitForSignalHandler, writeConfig } from "./support/cli.ts"
import { deadPid, ENV, eventsPath, expectExit, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)

/** One sandboxed agent that runs `command` in its workspace, answers, wins and presents; `other`, given a folder, answers once `<folder>/go` is there. */
const doc = (command: string, options: { limits?: object; holdIn?: string } = {}) => ({
  agents: [
    {
      id: "maker",
      backend: {
        type: "scripted",
        cwd: "workspace",
        enable_mcp_command_line: true,
        command_line_execution_mode: "sandbox",
        script: [{ tool: "execute_command", args: { command } }, { new_answer: "made" }],
        vote: "agent1",
        final: "done",
      },
    },
    ...(options.holdIn === undefined
      ? []
      : [
          {
            id: "other",
            backend: {
              type: "scripted",
              script: [{ tool: "hold", args: {} }, { new_answer: "other" }],
              vote: "agent1",
              custom_tools: [
                {
                  name: "hold",
                  description: "Waits",
                  command: ["sh", "-c", 'while [ ! -e "$0/go" ]; do sleep 0.02; done; echo released', options.holdIn],
                },
              ],
            },
          },
        ]),
  ],
  ...(options.limits ? { orchestrator: { workspace_limits: options.limits } } : {}),
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 50, tool_timeout_seconds: 40 },
})

const run = async (command: string, options: { limits?: object; cwd?: string } = {}) => {
  const cwd = options.cwd ?? sandbox()
  const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc(command, options)), "Make links."], {
    cwd,
    env: ENV,
    timeoutMs: 120_000,
  })
  return { cwd, r, dir: lineValue(r, "LOG_DIR") }
}

/** Every entry under `dir`, never following a link: `link -> text`, `dir/` or `file`. */
const tree = (dir: string): Array<string> =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => {
      const path = nodePath.join(dir, d.name)
      const st = fs.lstatSync(path)
      if (st.isSymbolicLink()) return [`${d.name} -> ${fs.readlinkSync(path)}`]
      if (st.isDirectory()) return [`${d.name}/`, ...tree(path).map((e) => `${d.name}/${e}`)]
      return [d.name]
    })
    .sort()

/** A folder's allocated bytes, never following a link. */
const allocated = (dir: string): number =>
  fs.readdirSync(dir, { withFileTypes: true }).reduce((sum, d) => {
    const st = fs.lstatSync(nodePath.join(dir, d.name))
    return sum + st.blocks * 512 + (st.isDirectory() ? allocated(nodePath.join(dir, d.name)) : 0)
  }, 0)

describe("a workspace's symlinks, at its snapshot and final copy", () => {
  const shapes: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["ln -s . a && ln -s . b", ["a -> .", "b -> ."]],
    ["ln -s .. up", ["up -> .."]],
    ["ln -s x x", ["x -> x"]],
    ["ln -s / root", ["root -> /"]],
    ["ln -s /proc/self/root r", ["r -> /proc/self/root"]],
    ["mkdir d && ln -s ../d d/again", ["d/", "d/again -> ../d"]],
  ]
  for (const [command, links] of shapes) {
    test(`\`${command}\`: the run completes, and the snapshot and final copy hold the link as a link`, async () => {
      const { cwd, r, dir } = await run(`${command} && echo kept > kept.txt`)
      expectExit(r, 0)
      const expected = [...links, "kept.txt"].sort()
      expect(tree(nodePath.join(dir, "workspaces", "agent1"))).toEqual(expected)
      expect(tree(nodePath.join(dir, "snapshot_storage", "agent1.1"))).toEqual(expected)
      expect(tree(nodePath.join(dir, "final", "maker", "workspace"))).toEqual(expected)
      expect(ofType(readEvents(dir), "workspace_snapshotted")).toMatchObject([{ label: "agent1.1", files: 1, bytes: 5 }])
      // Nothing outside the log directory changed: the folder holds the config and the logs only.
      expect(fs.readdirSync(cwd).sort()).toEqual([".massgen", "config.yaml"])
    }, 120_000)
  }

  test("a relative link that leads elsewhere from the final copy's depth writes nothing there (H2 c)", async () => {
    const top = sandbox()
    const project = nodePath.join(top, "proj")
    fs.mkdirSync(nodePath.join(top, "docs"), { recursive: true })
    fs.mkdirSync(nodePath.join(project, "docs"), { recursive: true })
    fs.writeFileSync(nodePath.join(top, "docs", "README.md"), "sibling docs readme (other project)\n")
    fs.writeFileSync(nodePath.join(project, "docs", "README.md"), "THE USER'S PROJECT README - precious\n")
    // From workspaces/agent1 the link names top/docs; from final/maker/workspace, one folder deeper, proj/docs.
    const { r, dir } = await run("ln -s ../../../../../../docs l", { cwd: project })
    expectExit(r, 0)
    expect(fs.readFileSync(nodePath.join(project, "docs", "README.md"), "utf8")).toBe("THE USER'S PROJECT README - precious\n")
    expect(fs.readdirSync(nodePath.join(project, "docs"))).toEqual(["README.md"])
    expect(fs.readFileSync(nodePath.join(top, "docs", "README.md"), "utf8")).toBe("sibling docs readme (other project)\n")
    expect(tree(nodePath.join(dir, "final", "maker", "workspace"))).toEqual(["l -> ../../../../../../docs"])
  }, 120_000)
})

describe("big and sparse files at the snapshot (M4)", () => {
  test("a 2 GB sparse file is over the default max_bytes: no snapshot, nothing written, and the run completes", async () => {
    const { r, dir } = await run("truncate -s 2G sparse.bin")
    expectExit(r, 0)
    const events = readEvents(dir)
    expect(ofType(events, "answer_submitted")).toMatchObject([{ label: "agent1.1" }])
    expect(ofType(events, "workspace_snapshotted")).toEqual([])
    expect(ofType(events, "workspace_finalized")).toEqual([])
    expect(fs.readdirSync(nodePath.join(dir, "snapshot_storage"))).toEqual([])
    expect(allocated(dir)).toBeLessThan(16 * 1024 * 1024)
    expect(r.stderr).toContain(
      "massgen: warning: cannot copy the workspace to snapshot_storage/agent1.1: the workspace's files hold more than 1073741824 bytes (workspace_limits.max_bytes); the answer stands with no snapshot\n",
    )
  }, 120_000)

  test("a sparse file under the bound is copied sparse: the snapshot holds its size, not its bytes", async () => {
    const { r, dir } = await run("truncate -s 300M sparse.bin && printf data >> sparse.bin")
    expectExit(r, 0)
    const copy = nodePath.join(dir, "snapshot_storage", "agent1.1", "sparse.bin")
    const size = 300 * 1024 * 1024
    expect(fs.statSync(copy).size).toBe(size + 4)
    const fd = fs.openSync(copy, "r")
    const part = Buffer.alloc(5)
    fs.readSync(fd, part, 0, 5, size - 1)
    fs.closeSync(fd)
    expect(part.toString("latin1")).toBe("\0data")
    expect(allocated(nodePath.join(dir, "snapshot_storage"))).toBeLessThan(16 * 1024 * 1024)
    expect(allocated(nodePath.join(dir, "final"))).toBeLessThan(16 * 1024 * 1024)
  }, 120_000)

  test("orchestrator.workspace_limits bounds the files: over max_files, the answer stands without a snapshot", async () => {
    const { r, dir } = await run("for i in 1 2 3 4 5 6; do echo $i > f$i; done", { limits: { max_files: 5 } })
    expectExit(r, 0)
    expect(ofType(readEvents(dir), "answer_submitted")).toHaveLength(1)
    expect(ofType(readEvents(dir), "workspace_snapshotted")).toEqual([])
    expect(r.stderr).toContain("more than 5 files, folders and links (workspace_limits.max_files); the answer stands with no snapshot")
    const within = await run("for i in 1 2 3 4 5; do echo $i > f$i; done", { limits: { max_files: 5 } })
    expectExit(within.r, 0)
    expect(ofType(readEvents(within.dir), "workspace_snapshotted")).toMatchObject([{ files: 5 }])
  }, 120_000)
})

test("workspace_limits takes positive integers only", async () => {
  const cwd = sandbox()
  const r = await runCli("source", ["--config", writeConfig(cwd, doc("true", { limits: { max_depth: 0 } })), "--validate"], {
    cwd,
    env: ENV,
  })
  expectExit(r, 1)
  expect(r.stdout + r.stderr).toContain("orchestrator.workspace_limits.max_depth: Expected a number of 1 or more, found 0")
})

describe("half-made copies and stops", () => {
  test("a half-made copy a dead process left is removed before the resume, which completes", async () => {
    const { cwd, r, dir } = await run("echo kept > kept.txt")
    expectExit(r, 0)
    // The log as a kill -9 during the snapshot leaves it: no answer, and the copy half made.
    const lines = fs.readFileSync(eventsPath(dir), "utf8").split("\n")
    const at = lines.findIndex((l) => l.includes('"type":"answer_submitted"'))
    fs.writeFileSync(
      eventsPath(dir),
      lines
        .slice(0, at)
        .map((l) => `${l}\n`)
        .join(""),
    )
    for (const done of ["snapshot_storage/agent1.1", "final"]) fs.rmSync(nodePath.join(dir, done), { recursive: true })
    const orphan = nodePath.join(dir, "snapshot_storage", `agent1.1.tmp-${await deadPid()}`)
    fs.mkdirSync(nodePath.join(orphan, "deep"), { recursive: true })
    fs.writeFileSync(nodePath.join(orphan, "deep", "half.bin"), Buffer.alloc(1 << 20, 1))
    fs.symlinkSync("..", nodePath.join(orphan, "deep", "up"))
    const resumed = await runCli("source", ["resume", dir, "--automation"], { cwd, env: ENV, timeoutMs: 120_000 })
    expectExit(resumed, 0)
    expect(fs.readdirSync(nodePath.join(dir, "snapshot_storage"))).toEqual(["agent1.1"])
    expect(tree(nodePath.join(dir, "snapshot_storage", "agent1.1"))).toEqual(["kept.txt"])
  }, 120_000)

  test("a SIGTERM during the snapshot of a many-file workspace with a link loop stops the run (exit 4), and the resume completes it", async () => {
    const cwd = sandbox()
    const command = "mkdir many && cd many && seq -f 'f%g' 20000 | xargs touch && cd .. && ln -s . a && ln -s . b"
    const config = writeConfig(cwd, doc(command, { holdIn: cwd }))
    const first = await startCli("source", ["--automation", "--config", config, "Make links."], { cwd, env: ENV, timeoutMs: 120_000 })
    const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
    await waitForSignalHandler(first.proc.pid, "SIGTERM")
    // The copy has begun once its temporary folder (or the snapshot) is there: a bounded loop of tiny awaits.
    const storage = nodePath.join(dir, "snapshot_storage")
    const deadline = Date.now() + 100_000
    while (!(fs.existsSync(storage) && fs.readdirSync(storage).length > 0)) {
      if (Date.now() > deadline) throw new Error("the snapshot never began")
      await Bun.sleep(2)
    }
    first.proc.kill("SIGTERM")
    expectExit(await first.done, 4)
    fs.writeFileSync(nodePath.join(cwd, "go"), "")
    const resumed = await runCli("source", ["resume", dir, "--automation"], { cwd, env: ENV, timeoutMs: 120_000 })
    expectExit(resumed, 0)
    const copy = nodePath.join(dir, "snapshot_storage", "agent1.1")
    expect(fs.readdirSync(storage)).toEqual(["agent1.1"])
    expect(fs.readdirSync(nodePath.join(copy, "many"))).toHaveLength(20000)
    expect(fs.readdirSync(copy).sort()).toEqual(["a", "b", "many"])
    expect(tree(copy).filter((e) => !e.startsWith("many/f"))).toEqual(["a -> .", "b -> .", "many/"])
    expectExit(await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV }), 0)
  }, 240_000)
})
