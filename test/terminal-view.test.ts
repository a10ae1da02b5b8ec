/**
 * The terminal view, rendered frame by frame for each phase of a scripted run:
 * the events of an in-memory run (TestClock) are folded into the view model
 * and drawn by `renderFrame` at 80x24 (and wider, and narrower). Checks what a
 * person must see in each phase, and that every frame fits the terminal.
 */
import { beforeAll, describe, expect, test } from "bun:test"
import { renderFrame, renderSummary } from "../src/cli/terminal-view/render.ts"
import { clean, cut, reflow, width, wrap } from "../src/cli/terminal-view/text.ts"
import type { Event } from "../src/domain/events/index.ts"
import { applyText, emptyViewModel, foldView, viewOf } from "../src/domain/projections/view-model.ts"
import type { MemoryRun } from "./support/harness.ts"
import { playCouncil } from "./support/view-fixtures.ts"

let run: MemoryRun
beforeAll(async () => {
  run = await playCouncil()
})

const strip = (line: string) => line.replace(/\x1b\[[0-9;]*m/g, "")

/** The view after the first `n` events (or up to and including the first event matching). */
const upTo = (pred: (e: Event) => boolean) => run.events.slice(0, run.events.findIndex(pred) + 1)
const viewAfter = (events: ReadonlyArray<Event>) => {
  const model = foldView(events)
  return viewOf(model, model.state.lastTime)
}

const frame = (events: ReadonlyArray<Event>, columns = 80, rows = 24, color = false) =>
  renderFrame(viewAfter(events), columns, rows, { color }).map(strip)

const expectFits = (lines: ReadonlyArray<string>, columns: number, rows: number) => {
  expect(lines.length).toBeLessThanOrEqual(rows)
  for (const line of lines) expect(width(line)).toBeLessThanOrEqual(columns)
}

describe("renderFrame, phase by phase (80x24)", () => {
  test("before the run starts: one waiting line", () => {
    expect(renderFrame(viewOf(emptyViewModel, 0), 80, 24)).toEqual([expect.stringContaining("waiting for the run to start")])
  })

  test("first round: a header and a streaming panel per agent with its model", () => {
    const lines = frame(upTo((e) => e._tag === "round_started" && e.agent === "critic"))
    expectFits(lines, 80, 24)
    const screen = lines.join("\n")
    expect(lines[0]).toContain("initial answer")
    expect(lines[0]).toContain("0%")
    expect(lines[1]).toBe("Q: How should I learn a new programming language?")
    for (const [id, model] of [
      ["planner", "gpt-4o-mini"],
      ["researcher", "claude-sonnet-4"],
      ["critic", "gemini-2.5-flash"],
    ]) {
      expect(screen).toContain(`┌─ ${id} · ${model} `)
    }
    expect(screen.match(/● streaming/g)?.length).toBe(3)
    expect(screen).toContain("Timeline")
  })

  test("streamed text shows at the end of the agent's panel", () => {
    const events = upTo((e) => e._tag === "round_started" && e.agent === "critic")
    const model = applyText(foldView(events), "critic", "Thinking about books...\nThe best one is the official guide.")
    const lines = renderFrame(viewOf(model, model.state.lastTime), 80, 24)
    expect(lines.join("\n")).toContain("The best one is the official guide.")
  })

  test("after the first answer: the label, the answer text, the timeline line", () => {
    const lines = frame(upTo((e) => e._tag === "answer_submitted"))
    expectFits(lines, 80, 24)
    const screen = lines.join("\n")
    expect(screen).toContain("agent1.1")
    expect(screen).toContain("Build a small project in the first")
    expect(screen).toMatch(/planner answer agent1\.1: Build a small project/)
  })

  test("votes being cast: enforcement phase, a vote line with its reason", () => {
    const lines = frame(upTo((e) => e._tag === "vote_cast"))
    expectFits(lines, 80, 24)
    const screen = lines.join("\n")
    expect(lines[0]).toContain("enforcement")
    expect(screen).toContain("✓ voted")
    expect(screen).toContain("vote → researcher (agent2.1)")
  })

  test("the winner presenting: the votes table and who presents", () => {
    const lines = frame(upTo((e) => e._tag === "presentation_started"))
    expectFits(lines, 80, 24)
    const screen = lines.join("\n")
    expect(lines[0]).toContain("presentation")
    expect(screen).toContain("Votes")
    expect(screen).toContain("researcher is presenting")
  })

  test("the end: completed, votes table with every voter, the final answer", () => {
    const lines = frame(run.events)
    expectFits(lines, 80, 24)
    const screen = lines.join("\n")
    expect(lines[0]).toContain("completed")
    expect(lines[0]).toContain("100%")
    expect(screen).toContain("★ completed")
    expect(screen).toMatch(/Votes\s+agent1\.1: 0\s+agent2\.1: 3\s+agent3\.1: 0/)
    for (const voter of ["planner", "researcher", "critic"])
      expect(screen).toMatch(new RegExp(`  ${voter}\\s+→ researcher \\(agent2\\.1\\)`))
    expect(screen).toContain("the most complete plan")
    expect(screen).toContain("Final answer · researcher (agent2.1, presentation)")
    expect(screen).toContain("## Learn by building")
  })
})

describe("layout", () => {
  test("wide terminals put the panels side by side; narrow ones stack them", () => {
    const wide = frame(run.events.slice(0, 6), 160, 40)
    expectFits(wide, 160, 40)
    expect(wide.find((l) => l.includes("planner ·"))).toMatch(/planner .*researcher .*critic /)
    const narrow = frame(run.events.slice(0, 6), 60, 40)
    expectFits(narrow, 60, 40)
    for (const id of ["planner", "researcher", "critic"]) expect(narrow.filter((l) => l.includes(`┌─ ${id}`)).length).toBe(1)
    expect(narrow.some((l) => l.includes("planner") && l.includes("researcher"))).toBe(false)
  })

  test("every phase fits 80x24, 100x30, 60x20 and 40x12, with and without colour", () => {
    for (let n = 1; n <= run.events.length; n++) {
      for (const [c, r] of [
        [80, 24],
        [100, 30],
        [60, 20],
        [40, 12],
      ] as const) {
        expectFits(frame(run.events.slice(0, n), c, r, true), c, r)
      }
    }
  })

  test("too many agents for panels: one line per agent", () => {
    const view = viewAfter(run.events)
    const many = { ...view, agents: [...view.agents, ...view.agents, ...view.agents].map((a, i) => ({ ...a, id: `${a.id}${i}` })) }
    const lines = renderFrame(many, 80, 24).map(strip)
    expectFits(lines, 80, 24)
    expect(lines.filter((l) => /^[✓★] (planner|researcher|critic)\d/.test(l)).length).toBe(9)
  })

  test("the summary keeps the whole final answer, reflowed", () => {
    const lines = renderSummary(viewAfter(run.events), 80).map(strip)
    expect(lines.join("\n")).toContain("Start a **small project** at once and read `idiomatic` code.")
    expect(lines.join("\n")).toContain("<script>alert(1)</script>")
    for (const line of lines) expect(width(line)).toBeLessThanOrEqual(80)
  })
})

test("at 80 columns the summary's Votes line wraps its tally at whole entries: no answer's count is cut", () => {
  const view = viewAfter(run.events)
  const tally = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`agent${i + 1}.1`, i === 1 ? 5 : 0]))
  const lines = renderSummary({ ...view, tally }, 80).map(strip)
  for (const line of lines) expect(width(line)).toBeLessThanOrEqual(80)
  const at = lines.findIndex((l) => l.startsWith("Votes"))
  const shown = lines.slice(at, at + 2).join(" ")
  for (const [label, n] of Object.entries(tally)) expect(shown).toContain(`${label}: ${n}`)
  expect(lines[at + 1]).toMatch(/^ {8}agent\d\.1: \d/)
})

test("the summary of a run still going (a viewer stopped with Ctrl+C) says the final answer is not chosen yet", () => {
  const going = renderSummary(viewAfter(upTo((e) => e._tag === "vote_cast")), 80).map(strip)
  expect(going).toContain("Final answer · not chosen yet")
  expect(going.join("\n")).not.toContain("No final answer")
  const stopped = [
    ...run.events.slice(0, 5),
    { _tag: "run_finished", time: run.events[4]!.time, reason: "interrupted", winner: null, message: "stopped by SIGINT" } as Event,
  ]
  expect(renderSummary(viewAfter(stopped), 80).map(strip)).toContain("No final answer: stopped by SIGINT")
})

describe("text cells", () => {
  test("model text cannot move the cursor; wide characters count twice", () => {
    expect(clean("a\x1b[2Jb\x07c\td")).toBe("abc  d")
    expect(width("日本")).toBe(4)
    expect(cut("日本語", 5)).toBe("日本")
    expect(wrap("one two three", 7)).toEqual(["one two", "three"])
    expect(wrap("abcdefghij", 4)).toEqual(["abcd", "efgh", "ij"])
  })

  test("reflow joins soft breaks but keeps lists, headings and code", () => {
    expect(reflow("a\nb\n\n- x\n- y\n# H\n```\nk\nl\n```")).toBe("a b\n\n- x\n- y\n# H\n```\nk\nl\n```")
  })
})

describe("where the run is, and how to take it up again", () => {
  const DIR = "/runs/log_20261201_000000_000001"
  test("every frame of a live run shows its log directory under the header", () => {
    const lines = renderFrame(viewAfter(upTo((e) => e._tag === "answer_submitted")), 80, 24, { logDir: DIR }).map(strip)
    expect(lines[2]).toBe(`Logs: ${DIR}`)
    expectFits(lines, 80, 24)
  })

  test("the last screen of a completed run shows the log directory and no resume hint", () => {
    const lines = renderSummary(viewAfter(run.events), 80, { logDir: DIR }).map(strip)
    expect(lines).toContain(`Logs: ${DIR}`)
    expect(lines.some((l) => l.includes("massgen resume"))).toBe(false)
  })

  test("the last screen of a run stopped by a signal, or stopped before it finished, ends with the resume hint", () => {
    const stopped: Event = {
      _tag: "run_finished",
      time: run.events[5]!.time,
      reason: "interrupted",
      winner: null,
      message: "stopped by SIGINT",
    }
    for (const events of [[...run.events.slice(0, 5), stopped], run.events.slice(0, 5)]) {
      const lines = renderSummary(viewAfter(events), 80, { logDir: DIR }).map(strip)
      expect(lines.at(-1)).toBe(`resume with: massgen resume ${DIR}`)
    }
  })

  test("a run stopped by its timeout cannot be resumed: no hint", () => {
    const stopped: Event = {
      _tag: "run_finished",
      time: run.events[5]!.time,
      reason: "timeout",
      winner: null,
      message: "orchestrator timeout",
    }
    const lines = renderSummary(viewAfter([...run.events.slice(0, 5), stopped]), 80, { logDir: DIR }).map(strip)
    expect(lines.some((l) => l.includes("massgen resume"))).toBe(false)
  })

  test("agents that never finished are not shown as completed; only the winner carries the winner's mark", () => {
    const stopped: Event = { _tag: "run_finished", time: run.events[5]!.time, reason: "interrupted", winner: null, message: "stopped" }
    const view = viewAfter([...run.events.slice(0, 5), stopped])
    expect(view.agents.map((a) => a.status).filter((s) => s === "completed")).toEqual([])
    const done = viewAfter(run.events)
    const marked = renderSummary(done, 100)
      .map(strip)
      .filter((l) => l.includes("★"))
    expect(marked).toHaveLength(1)
    expect(marked[0]).toContain(done.winner!)
  })
})
