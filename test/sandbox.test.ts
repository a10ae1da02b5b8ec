/**
 * The sandbox (`command_line_execution_mode: sandbox`), with the real `bwrap`:
 * a command writes only in its workspace (not beside it, not in the host's
 * `/tmp`, not in a read-only path, which it can read), reaches no network,
 * not even a server on the host's loopback, unless `command_line_network:
 * true`; the same commands succeed in `local` mode; a command that hangs is
 * killed with its children at its timeout. Without `bwrap`, or without
 * `docker`, the mode fails at start, naming why.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import type { BackendConfig } from "../src/domain/config/index.ts"
import type { ExecutionMode } from "../src/domain/config/tools.ts"
import { commandLineSettings } from "../src/domain/tools/command-line.ts"
import { makeCommandLine } from "../src/services/tools/command-line.ts"
import { toolEnvironment } from "../src/services/tools/command-tools.ts"
import { startExecutor } from "../src/services/tools/sandbox.ts"
import { markerSeconds, processesWith, waitUntilNoneWith } from "./support/processes.ts"

const dirs: Array<string> = []
/** A fresh directory under `base`: /var/tmp is on the root filesystem (read-only in the sandbox), /tmp is not (private there). */
const tempDir = (base: string): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(nodePath.join(base, "massgen-sandbox-")))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})
const ROOT_FS_TMP = fs.existsSync("/var/tmp") ? "/var/tmp" : os.homedir()

/** A run's layout: `root/run/ws` the workspace, `root/ctx` a read-only path holding `notes.txt`. */
const layout = () => {
  const root = tempDir(ROOT_FS_TMP)
  const workspace = nodePath.join(root, "run", "ws")
  const ctx = nodePath.join(root, "ctx")
  fs.mkdirSync(workspace, { recursive: true })
  fs.mkdirSync(ctx)
  fs.writeFileSync(nodePath.join(ctx, "notes.txt"), "read me\n")
  return { root, workspace, ctx }
}

const toolIn = async (mode: ExecutionMode, backend: Partial<BackendConfig> = {}) => {
  const paths = layout()
  const settings = commandLineSettings({
    type: "scripted",
    enable_mcp_command_line: true,
    command_line_execution_mode: mode,
    ...backend,
  } as BackendConfig)!
  const env = toolEnvironment(process.env)
  const executor = await Effect.runPromise(startExecutor(settings, env, "a"))
  const tool = makeCommandLine(paths.workspace, [paths.ctx], settings, { env, executor })
  const run = async (command: string, timeout?: number) => {
    const r = await Effect.runPromise(Effect.either(tool.run("execute_command", { command, ...(timeout ? { timeout } : {}) })))
    if (Either.isLeft(r)) throw new Error(r.left.message)
    return JSON.parse(r.right) as { success: boolean; exit_code: number; stdout: string; stderr: string }
  }
  return { ...paths, run, tool }
}

/** A TCP server on the host's loopback that counts the connections it gets. */
const loopbackServer = () => {
  let connections = 0
  let opened: () => void = () => undefined
  const firstConnection = new Promise<void>((resolve) => (opened = resolve))
  const server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (socket) => {
        connections += 1
        opened()
        socket.end()
      },
      data: () => undefined,
    },
  })
  return { port: server.port, connections: () => connections, firstConnection, stop: () => server.stop(true) }
}
/** Connects to the host's loopback with bash's /dev/tcp (bash is on the root filesystem the sandbox shows). */
const connect = (port: number) => `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port}' && echo connected`

/** Writes once inside the workspace and to each of `outside`, saying which writes worked. */
const writes = (outside: ReadonlyArray<string>) =>
  ["inside.txt", ...outside].map((path) => `echo x > ${path} && echo "wrote: ${path}"`).join("; ")
const wrote = (stdout: string) => stdout.split("\n").filter((l) => l.startsWith("wrote: "))

describe("the sandbox", () => {
  test("a command writes in its workspace and nowhere else; it reads the read-only paths", async () => {
    const { root, ctx, workspace, run } = await toolIn("sandbox")
    const hostTmp = tempDir(os.tmpdir())
    const outside = [`${root}/run/beside.txt`, `${ctx}/planted.txt`, `${hostTmp}/planted.txt`, "/etc/planted.txt"]
    const r = await run(`${writes(outside)}; cat ${ctx}/notes.txt; echo private > /tmp/mine.txt && cat /tmp/mine.txt`)
    expect(wrote(r.stdout)).toEqual(["wrote: inside.txt"])
    expect(r.stdout).toContain("read me\nprivate\n")
    expect(r.stderr).toContain("Read-only file system")
    expect(fs.readFileSync(nodePath.join(workspace, "inside.txt"), "utf8")).toBe("x\n")
    for (const path of [
      nodePath.join(root, "run", "beside.txt"),
      nodePath.join(ctx, "planted.txt"),
      nodePath.join(hostTmp, "planted.txt"),
      "/etc/planted.txt",
      "/tmp/mine.txt",
    ]) {
      expect({ path, exists: fs.existsSync(path) }).toEqual({ path, exists: false })
    }
  })

  test("the hidden log directory looks empty but for the agent's own workspace: another agent's files are not there", async () => {
    const paths = layout()
    const run = nodePath.join(paths.root, "run")
    fs.mkdirSync(nodePath.join(run, "other"))
    fs.writeFileSync(nodePath.join(run, "other", "secret.txt"), "theirs\n")
    fs.writeFileSync(nodePath.join(run, "events.jsonl"), "{}\n")
    fs.writeFileSync(nodePath.join(paths.workspace, "mine.txt"), "mine\n")
    const settings = commandLineSettings({
      type: "scripted",
      enable_mcp_command_line: true,
      command_line_execution_mode: "sandbox",
    } as BackendConfig)!
    const env = toolEnvironment(process.env)
    const executor = await Effect.runPromise(startExecutor(settings, env, "a"))
    const tool = makeCommandLine(paths.workspace, [paths.ctx], settings, { env, executor })
    const r = JSON.parse(
      await Effect.runPromise(
        tool.run("execute_command", { command: `ls ${run}; cat mine.txt ${paths.ctx}/notes.txt; cat ${run}/other/secret.txt` }),
      ),
    ) as { stdout: string; stderr: string }
    expect(r.stdout).toBe("ws\nmine\nread me\n")
    expect(r.stderr).toContain("No such file")
  })

  test("the same writes succeed in local mode, where nothing confines them", async () => {
    const { root, ctx, run } = await toolIn("local")
    const hostTmp = tempDir(os.tmpdir())
    const outside = [`${root}/run/beside.txt`, `${ctx}/planted.txt`, `${hostTmp}/planted.txt`]
    expect(wrote((await run(writes(outside))).stdout)).toEqual(["wrote: inside.txt", ...outside.map((p) => `wrote: ${p}`)])
    expect(fs.existsSync(nodePath.join(root, "run", "beside.txt"))).toBe(true)
    expect(fs.existsSync(nodePath.join(hostTmp, "planted.txt"))).toBe(true)
  })

  test("no network: a server on the host's loopback is not reached, unless command_line_network is true; local mode reaches it", async () => {
    const server = loopbackServer()
    try {
      const closed = await (await toolIn("sandbox")).run(connect(server.port))
      expect({ success: closed.success, stdout: closed.stdout, connections: server.connections() }).toEqual({
        success: false,
        stdout: "",
        connections: 0,
      })
      const open = await (await toolIn("sandbox", { command_line_network: true })).run(connect(server.port))
      expect(open).toMatchObject({ success: true, stdout: "connected\n" })
      await server.firstConnection
      const local = await (await toolIn("local")).run(connect(server.port))
      expect(local).toMatchObject({ success: true, stdout: "connected\n" })
      expect(server.connections()).toBe(2)
    } finally {
      server.stop()
    }
  })

  test("a command that hangs is killed with its children at its timeout", async () => {
    const { tool } = await toolIn("sandbox")
    const marker = markerSeconds()
    const call = Effect.runPromise(
      Effect.either(tool.run("execute_command", { command: `sleep ${marker} & sh -c 'sleep ${marker}' & sleep ${marker}`, timeout: 2 })),
    )
    // The sandbox's pids are its own: its sleeps are found from the host by their argument.
    while (processesWith(marker).length < 3) await Bun.sleep(20)
    const r = await call
    expect(Either.isLeft(r) && r.left.message).toBe(
      "failed: the command timed out after 2s (its timeout): it and every process it started were killed",
    )
    expect(await waitUntilNoneWith(marker)).toEqual([])
  })
})

describe("docker mode, with a stand-in docker CLI that runs the container's command on the host", () => {
  /** A `docker` that answers the checks, logs each invocation, and runs `run`'s command (its last 3 arguments) itself. */
  const fakeDocker = () => {
    const bin = tempDir(os.tmpdir())
    const log = nodePath.join(bin, "calls.log")
    const script = [
      "#!/bin/sh",
      `echo "$*" >> ${log}`,
      'case "$1" in',
      '  run) shift $(($# - 3)); exec "$@" ;;',
      "  *) exit 0 ;;",
      "esac",
    ].join("\n")
    fs.writeFileSync(nodePath.join(bin, "docker"), `${script}\n`, { mode: 0o755 })
    const calls = () => fs.readFileSync(log, "utf8").trim().split("\n")
    return { env: { PATH: `${bin}:${process.env.PATH}` }, calls }
  }

  test("checks the daemon and the image at start, mounts the workspace read-write and read-only paths read-only, no network by default", async () => {
    const docker = fakeDocker()
    const { workspace, ctx } = layout()
    const settings = commandLineSettings({
      type: "scripted",
      enable_mcp_command_line: true,
      command_line_execution_mode: "docker",
      command_line_docker_memory_limit: "2g",
    } as BackendConfig)!
    const executor = await Effect.runPromise(startExecutor(settings, docker.env, "a"))
    const tool = makeCommandLine(workspace, [ctx], settings, { env: docker.env, executor })
    const r = await Effect.runPromise(tool.run("execute_command", { command: "echo from-container" }))
    expect(JSON.parse(r)).toMatchObject({ success: true, stdout: "from-container\n" })
    const [version, inspect, run] = docker.calls()
    expect([version, inspect]).toEqual(["version --format {{.Server.Version}}", "image inspect massgen/mcp-runtime:latest"])
    expect(run).toMatch(
      new RegExp(
        `^run --rm -i --name massgen-cmd-\\S+ --network none --memory 2g -v ${ctx}:${ctx}:ro -v ${workspace}:${workspace}:rw -w ${workspace} massgen/mcp-runtime:latest /bin/sh -c echo from-container$`,
      ),
    )
  })

  test("a command past its timeout has its container killed by name", async () => {
    const docker = fakeDocker()
    const { workspace } = layout()
    const settings = commandLineSettings({
      type: "scripted",
      enable_mcp_command_line: true,
      command_line_execution_mode: "docker",
      command_line_network: true,
    } as BackendConfig)!
    const executor = await Effect.runPromise(startExecutor(settings, docker.env, "a"))
    const tool = makeCommandLine(workspace, [], settings, { env: docker.env, executor })
    const r = await Effect.runPromise(Effect.flip(tool.run("execute_command", { command: "sleep 1000", timeout: 1 })))
    expect(r.message).toContain("timed out after 1s")
    const name = docker.calls()[2]!.match(/--name (\S+)/)![1]!
    expect(docker.calls()[2]).toContain("--network bridge")
    // `docker kill` runs beside the killed CLI: its line is written when it has started.
    while (!docker.calls().includes(`kill ${name}`)) await Bun.sleep(10)
    expect(docker.calls().slice(3)).toEqual([`kill ${name}`])
  })
})

describe("a mode that cannot run here fails at start", () => {
  const emptyPath = () => ({ PATH: tempDir(os.tmpdir()) })
  const startIn = (mode: ExecutionMode, env: Record<string, string>) =>
    Effect.runPromise(
      Effect.flip(
        startExecutor(
          commandLineSettings({ type: "scripted", enable_mcp_command_line: true, command_line_execution_mode: mode } as BackendConfig)!,
          env,
          "coder",
        ),
      ),
    )

  test("sandbox without bwrap on the PATH", async () => {
    expect((await startIn("sandbox", emptyPath())).message).toBe(
      "agent coder: command_line_execution_mode sandbox: bwrap is not on the PATH: install bubblewrap (apt-get install bubblewrap), or use command_line_execution_mode local",
    )
  })

  test("sandbox with a bwrap that cannot make a sandbox", async () => {
    const bin = tempDir(os.tmpdir())
    fs.writeFileSync(nodePath.join(bin, "bwrap"), "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n", {
      mode: 0o755,
    })
    expect((await startIn("sandbox", { PATH: bin })).message).toBe(
      "agent coder: command_line_execution_mode sandbox: bwrap cannot make a sandbox here (it needs user namespaces, or root): bwrap: No permissions to create new namespace",
    )
  })

  test("docker without the docker CLI, or with a daemon that does not answer", async () => {
    expect((await startIn("docker", emptyPath())).message).toBe(
      "agent coder: command_line_execution_mode docker: the docker CLI is not on the PATH: install Docker, or use command_line_execution_mode sandbox or local",
    )
    const bin = tempDir(os.tmpdir())
    fs.writeFileSync(
      nodePath.join(bin, "docker"),
      "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n",
      { mode: 0o755 },
    )
    expect((await startIn("docker", { PATH: bin })).message).toBe(
      "agent coder: command_line_execution_mode docker: the Docker daemon does not answer: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
    )
  })
})
