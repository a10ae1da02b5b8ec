/**
 * What a sandboxed command can read, with the real `bwrap`: of a project
 * under the user's home, only its own workspace (writable) and the read-only
 * paths; not the working directory's `.env`, not the home's files, not
 * another run's log directory under the log root, not what no ordinary user
 * may read in `/etc`; no variable of massgen's environment but the
 * allow-list's (`DATABASE_URL`, `GH_PAT`, ... none reach it); no Unix socket
 * of the host, in the home, `/run`, `/var/tmp` or another folder, nor under a
 * folder it shows read-only (a context path, `/opt`), nor an abstract one with
 * `command_line_network: true`, while a local command reaches the same socket;
 * `socketpair` still works inside.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import fc from "fast-check"
import type { BackendConfig } from "../src/domain/config/index.ts"
import type { ExecutionMode } from "../src/domain/config/tools.ts"
import { commandLineSettings } from "../src/domain/tools/command-line.ts"
import { makeCommandLine } from "../src/services/tools/command-line.ts"
import { toolEnvironment } from "../src/services/tools/command-tools.ts"
import { startExecutor } from "../src/services/tools/sandbox.ts"

const dirs: Array<string> = []
const tempDir = (base: string): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(nodePath.join(base, "mg-view-")))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/**
 * A user's home holding a project whose log root holds an earlier run and
 * this run, whose workspace is the agent's; a read-only path beside it.
 */
const project = () => {
  const home = tempDir("/var/tmp")
  const proj = nodePath.join(home, "proj")
  const logRoot = nodePath.join(proj, ".massgen", "massgen_logs")
  const workspace = nodePath.join(logRoot, "log_B", "workspaces", "agent1")
  const ctx = nodePath.join(home, "ctx")
  fs.mkdirSync(workspace, { recursive: true })
  fs.mkdirSync(nodePath.join(logRoot, "log_A"), { recursive: true })
  fs.mkdirSync(nodePath.join(home, ".ssh"))
  fs.mkdirSync(ctx)
  fs.writeFileSync(nodePath.join(proj, ".env"), "OPENAI_API_KEY=sk-dotenv-canary-456\n")
  fs.writeFileSync(nodePath.join(home, ".ssh", "id_ed25519"), "ssh-key-canary\n")
  fs.writeFileSync(nodePath.join(home, ".bashrc"), "export BASHRC_CANARY=1\n")
  fs.writeFileSync(nodePath.join(logRoot, "log_A", "events.jsonl"), '{"question":"first run canary"}\n')
  fs.writeFileSync(nodePath.join(logRoot, "log_B", "events.jsonl"), '{"question":"this run canary"}\n')
  fs.writeFileSync(nodePath.join(ctx, "notes.txt"), "context notes\n")
  return { home, proj, logRoot, workspace, ctx }
}

const toolIn = async (
  mode: ExecutionMode,
  workspace: string,
  readOnly: ReadonlyArray<string>,
  env: Record<string, string | undefined> = process.env,
  backend: Partial<BackendConfig> = {},
) => {
  const settings = commandLineSettings({
    type: "scripted",
    enable_mcp_command_line: true,
    command_line_execution_mode: mode,
    ...backend,
  } as BackendConfig)!
  const clean = toolEnvironment(env)
  const executor = await Effect.runPromise(startExecutor(settings, clean, "a"))
  const tool = makeCommandLine(workspace, readOnly, settings, { env: clean, executor })
  return async (command: string) => {
    const r = await Effect.runPromise(Effect.either(tool.run("execute_command", { command })))
    if (Either.isLeft(r)) throw new Error(r.left.message)
    return JSON.parse(r.right) as { success: boolean; stdout: string; stderr: string }
  }
}

/** A listening Unix socket at `path` that counts its connections. */
const unixServer = (path: string) => {
  let connections = 0
  const server = Bun.listen({
    unix: path,
    socket: {
      open: (s) => {
        connections++
        s.end()
      },
      data: () => undefined,
    },
  })
  return { connections: () => connections, stop: () => server.stop(true) }
}
/** A listening abstract Unix socket (no file: its name starts with NUL) that counts its connections. */
const abstractServer = (name: string) => unixServer(`\0${name}`)
const connectAbstract = (name: string) =>
  `python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect('\\0'+sys.argv[1]); print('connected')" ${name}`

/** python3 (in /usr/bin, which the sandbox shows) connecting to a Unix socket. */
const connectUnix = (path: string) =>
  `python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('connected')" ${path}`

describe("what a sandboxed command reads", () => {
  test("its own workspace (writable) and the read-only paths; not the .env, the home, another run or /etc/shadow", async () => {
    const p = project()
    const run = await toolIn("sandbox", p.workspace, [p.ctx], { ...process.env, HOME: p.home })
    const r = await run(
      [
        `echo mine > ${p.workspace}/own.txt && echo wrote-own`,
        `cat ${p.ctx}/notes.txt`,
        `cat ${p.proj}/.env ${p.home}/.ssh/id_ed25519 ${p.home}/.bashrc ${p.logRoot}/log_A/events.jsonl ${p.logRoot}/log_B/events.jsonl`,
        `ls -A ${p.home} ${p.proj} ${p.logRoot}`,
        "cat /etc/shadow /etc/gshadow",
        "ls -d /run /root /home /srv /mnt",
        'echo "HOME=$HOME"',
      ].join("; "),
    )
    expect(r.stdout).toContain("wrote-own\ncontext notes\n")
    expect(fs.readFileSync(nodePath.join(p.workspace, "own.txt"), "utf8")).toBe("mine\n")
    for (const canary of ["sk-dotenv-canary", "ssh-key-canary", "BASHRC_CANARY", "first run canary", "this run canary", "root:"])
      expect(r.stdout).not.toContain(canary)
    // The folders on the way to the workspace and the read-only path are there, empty but for that way.
    expect(r.stdout).toContain(`${p.home}:\nctx\nproj\n\n${p.proj}:\n.massgen\n\n${p.logRoot}:\nlog_B\n`)
    expect(r.stdout).toContain(`HOME=${p.workspace}\n`)
    for (const gone of ["/run", "/root", "/home", "/srv", "/mnt"]) expect(r.stderr).toContain(`ls: cannot access '${gone}'`)
  })

  test("no variable of massgen's environment but the allow-list's: secrets under any name stay out", async () => {
    const p = project()
    const fixed = {
      DATABASE_URL: "postgres://app:dbpass-canary@db/x",
      GH_PAT: "ghp_canary",
      SLACK_WEBHOOK_URL: "https://hooks/hook-canary",
      MYAPP_PASSPHRASE: "pp-canary",
      ANTHROPIC_KEY_2: "sk-ant-canary2",
    }
    const run = await toolIn("sandbox", p.workspace, [], { ...process.env, ...fixed })
    const shown = (await run("env")).stdout
    for (const [name, value] of Object.entries(fixed))
      expect({ name, shown: shown.includes(value) || shown.includes(`${name}=`) }).toEqual({ name, shown: false })
    const allowed = /^(PATH|HOME|LANG|TERM|TZ|LC_[A-Z_]*|PWD|SHLVL|OLDPWD|_)$/
    expect(
      shown
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => l.split("=")[0]!)
        .filter((n) => !allowed.test(n)),
    ).toEqual([])
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.stringMatching(/^[A-Z][A-Z0-9_]{2,20}$/), { minLength: 5, maxLength: 20 }), async (names) => {
        const secrets = Object.fromEntries(names.filter((n) => !allowed.test(n)).map((n, i) => [n, `canary-${i}-${n.toLowerCase()}`]))
        const out = (await (await toolIn("sandbox", p.workspace, [], { PATH: process.env.PATH, ...secrets }))("env")).stdout
        expect(Object.values(secrets).filter((v) => out.includes(v))).toEqual([])
      }),
      { numRuns: 4 },
    )
  })

  test("no Unix socket of the host: in the home, /run, /var/tmp; a local command reaches the same sockets", async () => {
    const p = project()
    const runDir = tempDir("/run")
    const varTmp = tempDir("/var/tmp")
    fs.mkdirSync(nodePath.join(p.home, "t3sock"))
    const paths = [nodePath.join(p.home, "t3sock", "evil.sock"), nodePath.join(runDir, "s.sock"), nodePath.join(varTmp, "s.sock")]
    const servers = paths.map(unixServer)
    try {
      const sandboxed = await toolIn("sandbox", p.workspace, [], { ...process.env, HOME: p.home })
      const local = await toolIn("local", p.workspace, [], { ...process.env, HOME: p.home })
      for (const path of paths) {
        const inside = await sandboxed(connectUnix(path))
        expect({ path, success: inside.success, stdout: inside.stdout }).toEqual({ path, success: false, stdout: "" })
      }
      expect(servers.map((s) => s.connections())).toEqual([0, 0, 0])
      for (const path of paths) expect(await local(connectUnix(path))).toMatchObject({ success: true, stdout: "connected\n" })
      expect(servers.map((s) => s.connections())).toEqual([1, 1, 1])
    } finally {
      for (const s of servers) s.stop()
    }
  })

  test("property: a socket in any folder of the host, shown read-only or not, is out of reach", async () => {
    const p = project()
    const bases = [p.home, p.proj, p.ctx, "/run", "/var/tmp", os.tmpdir(), "/dev/shm", "/mnt", "/srv", "/opt"].filter((b) => {
      try {
        fs.accessSync(b, fs.constants.W_OK)
        return true
      } catch {
        return false
      }
    })
    const sandboxed = await toolIn("sandbox", p.workspace, [p.ctx])
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...bases), fc.stringMatching(/^[a-z]{1,8}$/), async (base, name) => {
        const dir = tempDir(base)
        const path = nodePath.join(dir, `${name}.sock`)
        const server = unixServer(path)
        try {
          const r = await sandboxed(connectUnix(path))
          expect({ path, success: r.success, connections: server.connections() }).toEqual({ path, success: false, connections: 0 })
        } finally {
          server.stop()
          fs.rmSync(dir, { recursive: true, force: true })
        }
      }),
      { numRuns: 12 },
    )
  })

  test("no Unix socket under a folder it shows read-only (a context path, /opt), nor an abstract one with the network shared", async () => {
    const p = project()
    const paths = [nodePath.join(p.ctx, "dev.sock")]
    try {
      fs.accessSync("/opt", fs.constants.W_OK)
      paths.push(nodePath.join(tempDir("/opt"), "app.sock"))
    } catch {
      // No writable /opt here: the context path alone.
    }
    const name = `mg-abstract-${process.pid}-${Date.now()}`
    const servers = [...paths.map(unixServer), abstractServer(name)]
    try {
      const closed = await toolIn("sandbox", p.workspace, [p.ctx])
      const shared = await toolIn("sandbox", p.workspace, [p.ctx], process.env, { command_line_network: true })
      for (const run of [closed, shared]) {
        for (const path of paths) {
          const r = await run(connectUnix(path))
          expect({ path, success: r.success, stdout: r.stdout }).toEqual({ path, success: false, stdout: "" })
        }
        expect((await run(connectAbstract(name))).stdout).toBe("")
      }
      expect(servers.map((s) => s.connections())).toEqual(servers.map(() => 0))
      // What a program inside needs of Unix sockets without reaching out: a pair connected to each other.
      const pair = await closed(`python3 -c "import socket; a,b=socket.socketpair(); a.send(b'pair'); print(b.recv(4).decode())"`)
      expect(pair).toMatchObject({ success: true, stdout: "pair\n" })
      // io_uring makes and connects sockets without socket(2): its setup is refused too (EACCES).
      const ring = `python3 -c "import ctypes; c=ctypes.CDLL(None, use_errno=True); r=c.syscall(425, 1, ctypes.create_string_buffer(120)); print(r, ctypes.get_errno())"`
      expect((await closed(ring)).stdout).toBe("-1 13\n")
      const local = await toolIn("local", p.workspace, [p.ctx])
      for (const path of paths) expect(await local(connectUnix(path))).toMatchObject({ success: true, stdout: "connected\n" })
      expect((await local(connectAbstract(name))).stdout).toBe("connected\n")
    } finally {
      for (const s of servers) s.stop()
    }
  })
})
