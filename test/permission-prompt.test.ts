/**
 * A person at the terminal answers the permission engine's asks: a run that is not `--automation`,
 * on a real terminal (tmux, from source), shows the ask in its live view and takes one key: `y` runs
 * the command, `n` denies it; the ledger says a human decided. A run with no terminal on its standard
 * input (every other test) answers by the automation policy.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, SOURCE_MAIN, sandbox, writeConfig } from "./support/cli.ts"
import { markerIn, scriptedCommandsDoc } from "./support/permissions.ts"
import { readEvents } from "./support/run-dirs.ts"
import { tmuxServer } from "./support/tmux.ts"

const { tmux, start, waitFor, kill } = tmuxServer("massgen-perm-prompt")
afterAll(() => {
  kill()
  cleanupSandboxes()
})

const doc = scriptedCommandsDoc(["touch marker.txt"], { rules: { ask: ["command(touch *)"] } })

/** Runs the config in tmux, answers the ask with `key`; the run's log directory. */
const answeredWith = async (key: string) => {
  const cwd = sandbox()
  writeConfig(cwd, doc)
  const name = start(cwd, ["bun", SOURCE_MAIN, "--config", "config.yaml", "Make it."])
  await waitFor(name, (s) => s.includes("allow? press y or n"), "the ask", 60_000)
  tmux("send-keys", "-t", name, key)
  const end = await waitFor(name, (s) => s.includes("EXIT="), "the end of the run", 60_000)
  expect(end).toContain("EXIT=0")
  const logs = nodePath.join(cwd, ".massgen", "massgen_logs")
  return nodePath.join(logs, fs.readdirSync(logs).filter((n) => n.startsWith("log_"))[0]!)
}

describe("asks answered at the terminal", () => {
  test("y allows: the command runs, decided by a human", async () => {
    const dir = await answeredWith("y")
    expect(fs.existsSync(markerIn(dir, "marker.txt"))).toBe(true)
    const events = readEvents(dir)
    expect(events.filter((e) => e.type === "permission_asked")).toEqual([expect.objectContaining({ via: "human" })])
    expect(events.filter((e) => e.type === "permission_decided")).toEqual([
      expect.objectContaining({ decision: "allow", by: "human", reason: "allowed at the terminal" }),
    ])
  }, 90_000)

  test("n denies: the command does not run, and the model is told", async () => {
    const dir = await answeredWith("n")
    expect(fs.existsSync(markerIn(dir, "marker.txt"))).toBe(false)
    const finished = readEvents(dir).filter((e) => e.type === "tool_call_finished")
    expect(finished.map((e) => e.result)).toEqual(["error: refused: permission denied: denied at the terminal"])
  }, 90_000)
})
