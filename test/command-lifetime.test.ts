/**
 * Nothing a command starts outlives its call, in `local` and `sandbox` mode
 * and for a command tool: not a process in the background (`&`), not one
 * under `nohup`, not the grandchild of a double fork, not one in a session of
 * its own (`setsid`). And a local command does not read massgen's environment
 * through `/proc/<massgen's pid>/environ` (its `/proc` is its own namespace's;
 * massgen is not dumpable; as root, the command runs without the capabilities
 * that would open it anyway).
 * Real processes; the command waits until every one of its sleeps runs, so
 * that the call ends with them all started.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import type { BackendConfig } from "../src/domain/config/index.ts"
import type { ExecutionMode } from "../src/domain/config/tools.ts"
import { commandLineSettings } from "../src/domain/tools/command-line.ts"
import { makeCommandLine } from "../src/services/tools/command-line.ts"
import { makeCommandTools, toolEnvironment } from "../src/services/tools/command-tools.ts"
import { startExecutor } from "../src/services/tools/sandbox.ts"
import { killAllWith, markerSeconds, waitUntilNoneWith } from "./support/processes.ts"

const dirs: Array<string> = []
const tempDir = (): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "mg-lifetime-")))
  dirs.push(dir)
  return dir
}
const used: Array<string> = []
const marker = (): string => {
  const m = markerSeconds()
  used.push(m)
  return m
}
afterEach(() => {
  for (const m of used.splice(0)) killAllWith(m)
})
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** Five sleeps of `m` started every way a command can leave one behind, then the command waits until all five run, and ends. */
const leaveBehind = (m: string): string =>
  [
    `sleep ${m} &`,
    `nohup sleep ${m} >/dev/null 2>&1 &`,
    `(sleep ${m} >/dev/null 2>&1 &)`,
    `setsid sleep ${m} >/dev/null 2>&1 </dev/null &`,
    `setsid sh -c 'sleep ${m}' >/dev/null 2>&1 </dev/null &`,
    `while [ "$(pgrep -c -f '^sleep ${m}')" -lt 5 ]; do sleep 0.01; done`,
    "echo all-started",
  ].join("\n")

const executeCommand = async (mode: ExecutionMode) => {
  const settings = commandLineSettings({
    type: "scripted",
    enable_mcp_command_line: true,
    command_line_execution_mode: mode,
  } as BackendConfig)!
  const env = toolEnvironment(process.env)
  const executor = await Effect.runPromise(startExecutor(settings, env, "a"))
  const tool = makeCommandLine(tempDir(), [], settings, { env, executor })
  return async (command: string) => {
    const r = await Effect.runPromise(Effect.either(tool.run("execute_command", { command })))
    if (Either.isLeft(r)) throw new Error(r.left.message)
    return JSON.parse(r.right) as { success: boolean; stdout: string; stderr: string }
  }
}

const commandTool = (script: string) => {
  const tools = makeCommandTools([{ name: "t", command: ["sh", "-c", script] }], tempDir(), toolEnvironment(process.env))
  return Effect.runPromise(Effect.either(tools.run("t", {})))
}

describe("nothing outlives the call", () => {
  for (const mode of ["local", "sandbox"] as const) {
    test(`${mode} mode: &, nohup, a double fork and setsid all end with the command`, async () => {
      const m = marker()
      const r = await (await executeCommand(mode))(leaveBehind(m))
      expect(r).toMatchObject({ success: true, stdout: "all-started\n" })
      expect(await waitUntilNoneWith(m)).toEqual([])
    })
  }

  test("a command tool: &, nohup, a double fork and setsid all end with it", async () => {
    const m = marker()
    const r = await commandTool(leaveBehind(m))
    expect(Either.isRight(r) && r.right).toBe("all-started\n")
    expect(await waitUntilNoneWith(m)).toEqual([])
  })
})

describe("a local command and massgen's environment", () => {
  const readEnviron = `tr '\\0' '\\n' < /proc/${process.pid}/environ | grep -c '^PATH=' || true`

  test("execute_command in local mode cannot read /proc/<massgen>/environ", async () => {
    const r = await (await executeCommand("local"))(readEnviron)
    expect(r.stdout).toBe("0\n")
    expect(r.stderr).toMatch(/Permission denied|No such file/)
  })

  test("a command tool cannot read it either", async () => {
    const r = await commandTool(`${readEnviron}; echo end`)
    expect(Either.isRight(r) && r.right).toBe("0\nend\n")
  })
})
