/**
 * The terminal view end to end: the compiled binary in a real terminal (tmux,
 * 120x40, on a tmux server of its own), read back with `capture-pane`. A
 * scripted run with small delays shows its agent panels while it goes on and
 * the votes table and final answer at the end; Ctrl+C stops it with exit 4,
 * the cursor shown again and the resume line said once; `massgen viewer` replays the run in the same view,
 * without colour when `NO_COLOR` is set.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as nodePath from "node:path"
import { BINARY, cleanupSandboxes, ensureBinary, sandbox, writeConfig } from "./support/cli.ts"
import { tmuxServer } from "./support/tmux.ts"
import { COUNCIL, playCouncil, QUESTION, writeRunDir } from "./support/view-fixtures.ts"

const { tmux, start: startInTmux, screen, waitFor, kill } = tmuxServer("massgen-test")
/** The screen with its styles, as SGR escape sequences. */
const styledScreen = (name: string) => tmux("capture-pane", "-p", "-e", "-t", name)
const SGR = /\x1b\[[0-9;]*m/

/** Polls the screen until `check` holds (bounded); returns that screen. */
const waitForScreen = (name: string, check: (s: string) => boolean, what: string, timeoutMs = 20_000) =>
  waitFor(name, check, what, timeoutMs)

const withDelays = (delays: ReadonlyArray<number>) => ({
  ...COUNCIL,
  agents: COUNCIL.agents.map((a, i) => ({ ...a, backend: { ...a.backend, delay_seconds: delays[i] } })),
})

beforeAll(async () => {
  await ensureBinary()
})

afterAll(() => {
  kill()
  cleanupSandboxes()
})

describe("the terminal view in tmux (compiled binary)", () => {
  test("panels while the run goes on, then the votes and the final answer", async () => {
    const dir = sandbox()
    writeConfig(dir, withDelays([0.6, 1, 1.3]))
    const name = startInTmux(dir, [BINARY, "--config", "config.yaml", QUESTION])
    const live = await waitForScreen(name, (s) => s.includes("┌─ critic · gemini-2.5-flash"), "the agent panels")
    expect(live).toContain("┌─ planner · gpt-4o-mini")
    expect(live).toContain("┌─ researcher · claude-sonnet-4")
    expect(live).toContain(`Q: ${QUESTION}`)
    // Three panels side by side at 120 columns.
    expect(live.split("\n").some((l) => l.includes("planner") && l.includes("researcher") && l.includes("critic"))).toBe(true)
    expect(tmux("display", "-p", "-t", name, "#{cursor_flag}").trim()).toBe("0")

    const end = await waitForScreen(name, (s) => s.includes("EXIT="), "the end of the run")
    expect(end).toContain("EXIT=0")
    expect(end).toMatch(/MassGen\s+completed\s+█+ 100%/)
    for (const id of ["planner", "researcher", "critic"]) expect(end).toMatch(new RegExp(`  ${id}\\s+→ researcher \\(agent2\\.1\\)`))
    expect(end).toContain("Final answer · researcher (agent2.1, presentation)")
    expect(end).toContain("Start a **small project** at once and read `idiomatic` code.")
    expect(tmux("display", "-p", "-t", name, "#{cursor_flag}").trim()).toBe("1")

    // The viewer replays that run in the same view, from the binary too.
    const viewer = startInTmux(dir, [BINARY, "viewer", "--replay-speed", "20"])
    const replayed = await waitForScreen(viewer, (s) => s.includes("EXIT="), "the end of the replay")
    expect(replayed).toContain("EXIT=0")
    expect(replayed).toContain("Final answer · researcher (agent2.1, presentation)")
  }, 60_000)

  test("Ctrl+C stops the run with exit 4 and gives the cursor back", async () => {
    const dir = sandbox()
    writeConfig(dir, withDelays([30, 30, 30]))
    const name = startInTmux(dir, [BINARY, "--config", nodePath.join(dir, "config.yaml"), QUESTION])
    // Their calls are out and a scripted reply comes whole after its delay: nothing back yet, so waiting in round 1.
    await waitForScreen(name, (s) => /○ waiting\s+r1/.test(s), "agents waiting for their replies")
    tmux("send-keys", "-t", name, "C-c")
    const end = await waitForScreen(name, (s) => s.includes("EXIT="), "the end of the run")
    expect(end).toContain("EXIT=4")
    expect(end).toMatch(/MassGen\s+interrupted/)
    expect(end).toContain("massgen: run interrupted")
    // How to resume is said once: on the view's last screen, not again on stderr.
    expect(end.match(/resume with: massgen resume /g)).toHaveLength(1)
    expect(tmux("display", "-p", "-t", name, "#{cursor_flag}").trim()).toBe("1")
  }, 60_000)

  test("NO_COLOR set to anything: the viewer draws the same view without colour (no-color.org)", async () => {
    const dir = writeRunDir(nodePath.join(sandbox(), "run"), (await playCouncil()).events, { complete: true })
    const screens = await Promise.all(
      [[], ["NO_COLOR=1"], ["NO_COLOR="]].map(async (env) => {
        const name = startInTmux(dir, ["env", ...env, BINARY, "viewer", dir])
        await waitForScreen(name, (s) => s.includes("EXIT="), "the end of the replay")
        return { plain: screen(name), styled: styledScreen(name) }
      }),
    )
    const [coloured, noColor, emptyNoColor] = screens as [(typeof screens)[0], (typeof screens)[0], (typeof screens)[0]]
    expect(noColor.plain).toContain("EXIT=0")
    expect(noColor.plain).toContain("Final answer · researcher (agent2.1, presentation)")
    expect(noColor.styled).not.toMatch(SGR)
    // An empty NO_COLOR does not count as set.
    expect(coloured.styled).toMatch(SGR)
    expect(emptyNoColor.styled).toMatch(SGR)
  }, 60_000)
})
