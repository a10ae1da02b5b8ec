/**
 * The `execute_command` tool in `local` mode, and what it refuses in every mode:
 * MassGen's allowed and blocked patterns (regular expressions matched at the
 * start of the command) and dangerous commands, a `work_dir` outside the
 * workspace; a command runs in the workspace with an environment of the
 * allow-list (no API key, no variable the config does not pass, `HOME` the
 * workspace); its result is MassGen's JSON whatever its exit code; its
 * output is capped; a command that hangs is killed with every process it
 * started at its timeout, and so is what it leaves running when it ends.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import { type BackendConfig, decodeConfig } from "../src/domain/config/index.ts"
import {
  bwrapArgs,
  commandEnvironment,
  commandLineSettings,
  commandRefusal,
  containerEnvNames,
  dockerRunArgs,
  STDOUT_KEPT_BYTES,
} from "../src/domain/tools/command-line.ts"
import { makeCommandLine } from "../src/services/tools/command-line.ts"
import { toolEnvironment } from "../src/services/tools/command-tools.ts"
import { startExecutor } from "../src/services/tools/sandbox.ts"
import type { ToolRunError } from "../src/services/tools/tool-provider.ts"
import { markerSeconds, waitUntilNoneWith } from "./support/processes.ts"

const dirs: Array<string> = []
const tempDir = (): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-command-line-")))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const settingsOf = (backend: Partial<BackendConfig>) =>
  commandLineSettings({ type: "scripted", enable_mcp_command_line: true, ...backend } as BackendConfig)!

/** A `local` provider in a fresh workspace, with `env` cleared as a run clears it. */
const localTool = async (
  backend: Partial<BackendConfig> = {},
  env: Record<string, string | undefined> = process.env,
  secrets: ReadonlyArray<string> = [],
) => {
  const workspace = tempDir()
  const settings = settingsOf(backend)
  const clean = toolEnvironment(env, secrets)
  const executor = await Effect.runPromise(startExecutor(settings, clean, "a"))
  const tool = makeCommandLine(workspace, [], settings, { env: clean, executor, secrets })
  const run = (args: Record<string, unknown>) => Effect.runPromise(Effect.either(tool.run("execute_command", args)))
  return { workspace, run }
}

const ok = (r: Either.Either<string, ToolRunError>) => {
  if (Either.isLeft(r)) throw new Error(`expected a result, got ${r.left.message}`)
  return JSON.parse(r.right) as { success: boolean; exit_code: number; stdout: string; stderr: string; command: string; work_dir: string }
}
const refusedWith = (r: Either.Either<string, ToolRunError>) => {
  if (Either.isRight(r)) throw new Error(`expected a refusal, got ${r.right}`)
  return { reason: r.left.reason, message: r.left.message }
}

describe("what is refused", () => {
  test("the allowed list: a command must match one pattern at its start", () => {
    const s = { allowed: ["python .*", "ls"], blocked: [] }
    expect(commandRefusal("python test.py", s)).toBeNull()
    expect(commandRefusal("ls -la", s)).toBeNull()
    expect(commandRefusal("echo python x", s)).toContain("matches none of command_line_allowed_commands")
    expect(commandRefusal("cat f", s)).toContain("python .*, ls")
  })

  test("the blocked list: a command matching a pattern at its start is refused", () => {
    const s = { allowed: [], blocked: ["rm ", "curl|wget"] }
    expect(commandRefusal("rm x", s)).toBe('the command matches command_line_blocked_commands pattern "rm "')
    expect(commandRefusal("wget http://x", s)).toContain("curl|wget")
    expect(commandRefusal("echo rm x", s)).toBeNull()
  })

  test("MassGen's dangerous commands are refused even when allowed", () => {
    const s = { allowed: [".*"], blocked: [] }
    for (const c of ["sudo ls", "rm -rf /", "dd if=/dev/zero of=x", "chmod +x a.sh", "su root", ":(){ :|:& };:", "echo x > /dev/sda"]) {
      expect(commandRefusal(c, s)).toContain("is never run")
    }
    expect(commandRefusal("ls sudoers.txt", s)).toBeNull()
  })

  test("through the tool: a refusal is a refused error and runs nothing", async () => {
    const { workspace, run } = await localTool({ command_line_blocked_commands: ["touch"] })
    expect(refusedWith(await run({ command: "touch made" }))).toEqual({
      reason: "refused",
      message: 'refused: the command matches command_line_blocked_commands pattern "touch"',
    })
    expect(fs.existsSync(nodePath.join(workspace, "made"))).toBe(false)
    const allowed = await localTool({ command_line_allowed_commands: ["echo "] })
    expect(ok(await allowed.run({ command: "echo fine" })).stdout).toBe("fine\n")
    expect(refusedWith(await allowed.run({ command: "touch made" })).reason).toBe("refused")
  })

  test("a work_dir outside the workspace, by .., by an absolute path or through a symlink, is refused", async () => {
    const { workspace, run } = await localTool()
    fs.mkdirSync(nodePath.join(workspace, "sub"))
    fs.symlinkSync("/etc", nodePath.join(workspace, "etc-link"))
    expect(ok(await run({ command: "pwd", work_dir: "sub" }))).toMatchObject({ stdout: `${workspace}/sub\n`, work_dir: "sub" })
    for (const work_dir of ["..", "/etc", "etc-link", "sub/../.."]) {
      expect(refusedWith(await run({ command: "pwd", work_dir }))).toEqual({
        reason: "refused",
        message: `refused: work_dir ${work_dir} is outside your workspace`,
      })
    }
    expect(refusedWith(await run({ command: "pwd", work_dir: "missing" })).reason).toBe("failed")
  })

  test("bad arguments are named", async () => {
    const { run } = await localTool()
    expect(refusedWith(await run({}))).toEqual({ reason: "bad_arguments", message: "bad arguments: command must be a non-empty string" })
    expect(refusedWith(await run({ command: "ls", timeout: -1 })).reason).toBe("bad_arguments")
    expect(refusedWith(await run({ command: "ls", timeout: "soon" })).message).toBe(
      "bad arguments: timeout must be a number of seconds above 0",
    )
    expect(ok(await run({ command: "echo quick", timeout: "30" })).stdout).toBe("quick\n")
  })

  test("an invalid pattern is a config error, not a refusal at run time", () => {
    const problems = JSON.stringify(
      Either.getLeft(
        decodeConfig(
          { agents: [{ backend: { type: "scripted", enable_mcp_command_line: true, command_line_blocked_commands: ["rm ("] } }] },
          {},
        ),
      ),
    )
    expect(problems).toContain("command_line_blocked_commands")
    expect(problems).toContain("Expected a regular expression")
  })

  test("command_line_env and command_line_pass_env: variable names, never a provider's key variable", () => {
    const problemsOf = (backend: Record<string, unknown>) =>
      JSON.stringify(
        Either.getLeft(
          decodeConfig({ agents: [{ id: "a", backend: { type: "scripted", enable_mcp_command_line: true, ...backend } }] }, {}),
        ),
      )
    expect(problemsOf({ command_line_pass_env: ["OPENAI_API_KEY"] })).toContain(
      "OPENAI_API_KEY is a provider's key variable: no key is passed to a command",
    )
    expect(problemsOf({ command_line_env: { ANTHROPIC_API_KEY: "x" } })).toContain("ANTHROPIC_API_KEY is a provider's key variable")
    expect(problemsOf({ command_line_env: { "BAD-NAME": "x" } })).toContain(
      'Expected a variable name (letters, digits, _), found \\"BAD-NAME\\"',
    )
    const ok = decodeConfig(
      {
        agents: [
          {
            id: "a",
            backend: {
              type: "scripted",
              enable_mcp_command_line: true,
              command_line_env: { N: 2, B: true },
              command_line_pass_env: ["PYTHONPATH"],
            },
          },
        ],
      },
      {},
    )
    expect(Either.isRight(ok)).toBe(true)
    if (Either.isRight(ok))
      expect(commandLineSettings(ok.right.agents[0]!.backend)).toMatchObject({ env: { N: "2", B: "true" }, passEnv: ["PYTHONPATH"] })
  })
})

describe("local mode", () => {
  test("runs in the workspace through a shell, MassGen's result fields whatever the exit code", async () => {
    const { workspace, run } = await localTool()
    const done = ok(await run({ command: "echo made > f.txt && cat f.txt | tr a-z A-Z; pwd" }))
    expect(done).toMatchObject({
      success: true,
      exit_code: 0,
      stdout: `MADE\n${workspace}\n`,
      stderr: "",
      work_dir: ".",
      command: expect.stringContaining("echo made"),
    })
    expect(fs.readFileSync(nodePath.join(workspace, "f.txt"), "utf8")).toBe("made\n")
    expect(ok(await run({ command: "echo oops >&2; exit 3" }))).toMatchObject({ success: false, exit_code: 3, stderr: "oops\n" })
  })

  test("the environment is an allow-list: no key, no other variable of massgen's but those the config passes; HOME is the workspace", async () => {
    const backend = { command_line_pass_env: ["KEEP_ME", "UNSET_ONE"], command_line_env: { SET_ME: "set", FORGED: "sk-secret-in-env" } }
    const { workspace, run } = await localTool(
      backend,
      { ...process.env, OPENAI_API_KEY: "sk-secret-in-env", MY_SERVICE_TOKEN: "t0ken", KEEP_ME: "kept", DROP_ME: "dropped" },
      ["sk-secret-in-env"],
    )
    const env = ok(await run({ command: "env" })).stdout
    expect(env).toContain("KEEP_ME=kept")
    expect(env).toContain("SET_ME=set")
    expect(env).toContain(`HOME=${workspace}\n`)
    expect(env).toContain(`PATH=${process.env.PATH}\n`)
    for (const absent of ["OPENAI_API_KEY", "sk-secret-in-env", "t0ken", "DROP_ME", "UNSET_ONE", "FORGED"])
      expect(env).not.toContain(absent)
  })

  test("output past the cap is counted, not kept", async () => {
    const { run } = await localTool()
    const big = ok(await run({ command: `head -c ${STDOUT_KEPT_BYTES + 5000} /dev/zero | tr '\\0' x` }))
    expect(big.stdout).toBe(`${"x".repeat(STDOUT_KEPT_BYTES)}\n... (truncated: 5000 more bytes)`)
  })

  test("a command that hangs is killed with the processes it started at its timeout", async () => {
    const { run } = await localTool()
    const marker = markerSeconds()
    const call = run({ command: `sleep ${marker} & sh -c 'sleep ${marker}' & sleep ${marker}`, timeout: 1 })
    const r = await call
    expect(refusedWith(r)).toEqual({
      reason: "failed",
      message: "failed: the command timed out after 1s (its timeout): it and every process it started were killed",
    })
    expect(await waitUntilNoneWith(marker)).toEqual([])
  })

  test("what a command leaves running in the background ends with it, and the call does not wait for it", async () => {
    const { run } = await localTool()
    const marker = markerSeconds()
    const r = ok(await run({ command: `sleep ${marker} & while ! pgrep -f "^sleep ${marker}" >/dev/null; do sleep 0.01; done; echo done` }))
    expect(r.stdout).toBe("done\n")
    expect(await waitUntilNoneWith(marker)).toEqual([])
  })
})

describe("the sandbox's command line", () => {
  test("binds a parent before what is under it, so a workspace inside a read-only path stays writable", () => {
    const view = { shown: ["/usr"], links: [], masked: [] }
    const args = bwrapArgs(view, { workspace: "/p/run/ws", readOnly: ["/p", "/p/run/ws/ctx"] }, false, "/p/run/ws", "ls")
    const binds = args.flatMap((a, i) => (a === "--bind" || a === "--ro-bind-try" ? [`${a} ${args[i + 1]}`] : []))
    expect(binds).toEqual(["--ro-bind-try /p", "--bind /p/run/ws", "--ro-bind-try /p/run/ws/ctx"])
    expect(args).not.toContain("--share-net")
    expect(bwrapArgs(view, { workspace: "/w", readOnly: [] }, true, "/w", "ls")).toContain("--share-net")
    expect(args.slice(-3)).toEqual(["/bin/sh", "-c", "ls"])
  })

  test("shows the host's system folders and nothing else of its root; masks what no user may read; the root read-only", () => {
    const view = {
      shown: ["/usr", "/etc"],
      links: [["/bin", "usr/bin"] as const],
      masked: [
        { path: "/etc/shadow", folder: false },
        { path: "/etc/ssl/private", folder: true },
      ],
    }
    const args = bwrapArgs(view, { workspace: "/w", readOnly: [] }, false, "/w", "ls").join(" ")
    expect(args).toStartWith(
      "--symlink usr/bin /bin --ro-bind /usr /usr --ro-bind /etc /etc --ro-bind /dev/null /etc/shadow --tmpfs /etc/ssl/private --remount-ro /etc/ssl/private --dev /dev --proc /proc --tmpfs /tmp --bind /w /w --remount-ro / ",
    )
    expect(args).not.toContain("--ro-bind / /")
  })

  test("docker: the container gets the config's variables by name, their values in the CLI's environment only", () => {
    const settings = { env: { B: "2" }, passEnv: ["A", "UNSET"] }
    const names = containerEnvNames(settings, commandEnvironment({ A: "1", PATH: "/bin", OTHER: "x" }, settings, "/w"))
    expect(names).toEqual(["A", "B"])
    const args = dockerRunArgs(
      { name: "n", image: "img", networkMode: "none", memory: null, cpus: null, envNames: names },
      { workspace: "/w", readOnly: [] },
      "/w",
      "ls",
    )
    expect(args.join(" ")).toBe("run --rm -i --name n --network none -v /w:/w:rw -e A -e B -w /w img /bin/sh -c ls")
  })
})
