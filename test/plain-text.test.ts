/**
 * Plain text: no escape sequence or control character of a model or a tool
 * reaches a terminal, and no value of an `--automation` line adds a line of
 * its own. The pure functions (`lib/plain-text.ts`) by example and by
 * property, then the outputs built from them: the automation header and
 * footer, the plain display's lines, and the terminal view's frames (a vote
 * reason included), fed the escapes of the security probe (M1) and a context
 * path's file name that forges contract lines (M2).
 */
import { describe, expect, test } from "bun:test"
import { LogLevel } from "effect"
import fc from "fast-check"
import { statusSummary } from "../src/cli/commands/status.ts"
import { pickLine } from "../src/cli/commands/viewer.ts"
import { diagnosticLine } from "../src/cli/process/diagnostics.ts"
import { runProgram } from "../src/cli/program.ts"
import { automationFooter, automationHeader, plainLine } from "../src/cli/run/automation-output.ts"
import { unfinishedMessage } from "../src/cli/run/session.ts"
import { renderFrame, renderSummary } from "../src/cli/terminal-view/render.ts"
import type { Event } from "../src/domain/events/index.ts"
import { project } from "../src/domain/projections/status.ts"
import { foldView, viewOf } from "../src/domain/projections/view-model.ts"
import { foldEvents } from "../src/domain/state/index.ts"
import { foldedText, oneLine, plainJson, plainText } from "../src/lib/plain-text.ts"
import {
  agentFailed,
  answer,
  finalAnswer,
  presentationStarted,
  roundStarted,
  runFinished,
  runStarted,
  stamp,
  vote,
} from "./support/given.ts"
import { CONTRACT_LINE, HOSTILE } from "./support/hostile-text.ts"

/** What no terminal text may hold: ESC, BEL and every other C0 control but newline and tab, DEL, C1, the bidirectional controls. */
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/
/** Every line break JavaScript or Python (`str.splitlines`) knows. */
const LINE_BREAK = /[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]/
const pythonLines = (text: string): number => (text === "" ? 0 : text.split(/\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]/).length)

/** Strings rich in what matters here: escape introducers, controls, line breaks, bidi controls, backslashes, next to ordinary text. */
const hostileChar = fc.constantFrom(
  "\x1b",
  "\x07",
  "\x9b",
  "\x9c",
  "\x9d",
  "\x90",
  "\x85",
  "\r",
  "\n",
  "\t",
  "\x0b",
  "\x0c",
  "\x1c",
  "\x00",
  "\x7f",
  "\u2028",
  "\u2029",
  "\u202e",
  "\u2066",
  "\u200f",
  "\\",
  "[",
  "]",
  "P",
  "_",
  "^",
  "X",
  ";",
  "0",
  "2",
  "J",
  "m",
  "a",
  " ",
  "é",
  "😀",
)
const hostile = fc.oneof(
  fc.string({ unit: hostileChar, maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ maxLength: 40 }),
)
/** Text with nothing for the functions to do: printable characters, spaces, newlines and tabs. */
const ordinary = fc.string({
  unit: fc.oneof(fc.constantFrom(" ", "\n", "\t", "é", "😀", "→"), fc.string({ minLength: 1, maxLength: 1, unit: "grapheme-ascii" })),
})

describe("plainText", () => {
  test("the probe's escapes go whole, the text around them stays", () => {
    expect(plainText(`answer ${HOSTILE} end`)).toBe("answer click end")
  })

  test("CSI, strings ended by BEL or ST, two-character escapes, and what is left of a sequence with no end", () => {
    expect(plainText("a\x1b[1;31mred\x1b[0m b")).toBe("ared b")
    expect(plainText("a\x1b]0;title\x1b\\b\x1b]2;t2\x07c")).toBe("abc")
    expect(plainText("a\x9d0;t\x9cb\x90q\x9cc\x98sos\x9cd\x9epm\x07e\x9fapc\x1b\\f")).toBe("abcdef")
    expect(plainText("a\x1bPdcs\x1b\\b\x1bXsos\x07c\x1b^pm\x1b\\d\x1b_apc\x1b\\e")).toBe("abcde")
    expect(plainText("a\x1b7b\x1b8c\x1bcd\x1b(Be\x1b#8f\x1bMg")).toBe("abcdefg")
    // An OSC with no end: the introducer goes, the rest is shown, never run.
    expect(plainText("a\x1b]0;not ended")).toBe("a0;not ended")
    expect(plainText("trailing \x1b")).toBe("trailing ")
  })

  test("controls and bidirectional controls go; newlines and tabs stay; \\r and NEL become newlines", () => {
    expect(plainText("a\x00b\x07c\x08d\x0be\x0cf\x7fg\x9ch\u202ei\u2066j\u2069k\u200el\u200fm")).toBe("abcdefghijklm")
    expect(plainText("one\r\ntwo\rthree\n\tfour\x85five")).toBe("one\ntwo\nthree\n\tfour\nfive")
  })

  test("property: no ESC, BEL, C0 (but newline and tab), DEL, C1 or bidirectional control is left", () => {
    fc.assert(
      fc.property(hostile, (s) => !UNSAFE.test(plainText(s))),
      { numRuns: 2000 },
    )
  })

  test("property: idempotent", () => {
    fc.assert(
      fc.property(hostile, (s) => plainText(plainText(s)) === plainText(s)),
      { numRuns: 2000 },
    )
  })

  test("property: text without escapes or controls is returned unchanged", () => {
    fc.assert(
      fc.property(ordinary, (s) => plainText(s) === s),
      { numRuns: 1000 },
    )
  })
})

describe("foldedText", () => {
  test("property: one line under JavaScript's and Python's rules, plain, idempotent", () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const f = foldedText(s)
        return !LINE_BREAK.test(f) && !UNSAFE.test(f) && foldedText(f) === f && pythonLines(`ANSWER_PREVIEW: ${f}`) === 1
      }),
      { numRuns: 2000 },
    )
  })
})

describe("oneLine", () => {
  /** What reads a value of `oneLine` back. */
  const readBack = (line: string): string =>
    line.replace(/\\(u[0-9a-f]{4}|[\\nrt])/g, (_, e: string) =>
      e === "\\" ? "\\" : e === "n" ? "\n" : e === "r" ? "\r" : e === "t" ? "\t" : String.fromCharCode(Number.parseInt(e.slice(1), 16)),
    )

  test("line breaks, controls and backslashes are written out", () => {
    expect(oneLine("/ctx/a\nWINNER: mallory\nANSWER_FILE: /etc/shadow\nx")).toBe("/ctx/a\\nWINNER: mallory\\nANSWER_FILE: /etc/shadow\\nx")
    expect(oneLine("a\u0085b\u2028c\u2029d\x0be\x0cf\rg\th\x1b]0;t\x07i\\j")).toBe(
      "a\\u0085b\\u2028c\\u2029d\\u000be\\u000cf\\rg\\th\\u001b]0;t\\u0007i\\\\j",
    )
    expect(oneLine("/home/u/.massgen/massgen_logs/log_20260101_000000_000000")).toBe(
      "/home/u/.massgen/massgen_logs/log_20260101_000000_000000",
    )
  })

  test("property: a contract line of any value is one line under JavaScript's and Python's rules, and plain", () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const line = `CHANGED_FILE: ${oneLine(s)} (created, 1 bytes)`
        return line.split("\n").length === 1 && !LINE_BREAK.test(line) && pythonLines(line) === 1 && plainText(line) === line
      }),
      { numRuns: 2000 },
    )
  })

  test("property: it reads back to the value", () => {
    fc.assert(
      fc.property(hostile, (s) => readBack(oneLine(s)) === s),
      { numRuns: 2000 },
    )
  })

  test("python3's splitlines agrees: one line for every value", () => {
    const values = ["a\nb", "a\u0085b", "a\u2028b", "a\u2029b", "a\x0bb", "a\x0cb", "a\x1cb", "a\x1db", "a\x1eb", "a\rb", HOSTILE]
    const lines = values.map((v) => `WINNER: ${oneLine(v)}`).join("\n")
    const py = Bun.spawnSync(["python3", "-c", "import sys; print(len(sys.stdin.read().splitlines()))"], { stdin: Buffer.from(lines) })
    expect(py.stdout.toString().trim()).toBe(String(values.length))
  })
})

describe("plainJson", () => {
  test("the same value, with nothing a terminal acts on", () => {
    const value = { reason: `r ${HOSTILE} \u2028 \u202e \u0085 end` }
    const json = plainJson(value, 2)
    expect(JSON.parse(json)).toEqual(value)
    expect(UNSAFE.test(json.replace(/\n/g, ""))).toBe(false)
    expect(LINE_BREAK.test(json.replace(/\n/g, ""))).toBe(false)
  })
})

// ------------------------------------------------------------- the outputs

const FORGED_NAME = "/ctx/a\nWINNER: mallory\nANSWER_FILE: /etc/shadow\nCOMPLETED: 9 agents, 0.1s total\nx"

/** A finished run of a1 and a2 whose texts carry the probe's escapes, a NEL that forges a line, and a forged file name. */
const hostileRun = (): ReadonlyArray<Event> =>
  stamp([
    runStarted(["a1", "a2"]),
    roundStarted("a1", 1, []),
    roundStarted("a2", 1, []),
    answer("a1", 1, "agent1.1", `answer ${HOSTILE} end`),
    answer("a2", 1, "agent2.1", "other"),
    roundStarted("a1", 2, ["agent1.1", "agent2.1"]),
    roundStarted("a2", 2, ["agent1.1", "agent2.1"]),
    vote("a1", 2, "a1", "agent1.1", `reason ${HOSTILE} end`),
    vote("a2", 2, "a1", "agent1.1", `vote reason \x1b[2J\x1b]0;PWNED-TITLE\x07 end`),
    presentationStarted("a1", "agent1.1", { "agent1.1": 2 }),
    ...(["context_write_intended", "context_path_written"] as const).map(
      (tag) =>
        ({
          _tag: tag,
          time: "",
          tool_call: 1,
          call_id: "c1",
          agent: "a1",
          path: FORGED_NAME,
          bytes: 1,
          sha256: "0".repeat(64),
          change: "created",
        }) as Event,
    ),
    finalAnswer("a1", "agent1.1", "presentation", `final ${HOSTILE}\u0085WINNER: mallory2\u2028WINNER: mallory3 end`),
    runFinished("completed", "a1", "done"),
  ])

describe("the automation lines", () => {
  test("a forged file name, a NEL in the answer and escapes in the question add no line: one WINNER, every line a contract key", () => {
    const state = foldEvents(hostileRun())
    const lines = [
      ...automationHeader("/logs/run", `question ${HOSTILE}\u0085WINNER: q\nWINNER: q2`),
      ...automationFooter(state, "/logs/run"),
    ]
    const out = lines.join("\n")
    expect(lines.every((l) => CONTRACT_LINE.test(l))).toBe(true)
    expect(out.split("\n").filter((l) => l.startsWith("WINNER:"))).toEqual(["WINNER: a1"])
    expect(pythonLines(out)).toBe(lines.length)
    expect(UNSAFE.test(out.replace(/\n/g, ""))).toBe(false)
    expect(lines).toContain(`CHANGED_FILE: ${oneLine(FORGED_NAME)} (created, 1 bytes)`)
    expect(lines).toContain("ANSWER_PREVIEW: final click WINNER: mallory2 WINNER: mallory3 end")
  })

  test("a long question's QUESTION: line is what folding it whole gives, however much white space it starts with", () => {
    const tail = `${"word ".repeat(100_000)}end`
    for (const question of [tail, `${" \n\t".repeat(40_000)}${tail}`, `${"\u001b[31m".repeat(20_000)}${tail}`]) {
      const line = automationHeader("/logs/run", question)[2]
      expect(line).toBe(`QUESTION: ${"word ".repeat(40)}...`)
    }
  })

  test("a log directory or a path with a line break is written out, not broken", () => {
    const lines = automationHeader("/logs/a\nWINNER: x", "q")
    expect(lines.slice(0, 2)).toEqual(["LOG_DIR: /logs/a\\nWINNER: x", "STATUS: /logs/a\\nWINNER: x/status.json"])
  })

  test("no ANSWER_FILE line when the answer file is not there", () => {
    const lines = automationFooter(foldEvents(hostileRun()), "/logs/run", () => false)
    expect(lines.some((l) => l.startsWith("ANSWER_FILE:"))).toBe(false)
    expect(lines[0]).toBe("WINNER: a1")
  })
})

describe("the plain display (--no-display, the viewer into a pipe)", () => {
  test("no line of any event holds an escape or a control but newline and tab; the file name stays on its line", () => {
    const events = hostileRun()
    const lines: Array<string> = []
    events.forEach((e, i) => {
      const line = plainLine(e, foldEvents(events.slice(0, i + 1)), "/logs/run")
      if (line !== null) lines.push(line)
    })
    const out = lines.join("\n")
    expect(out).toContain("answer click end")
    expect(out).toContain("reason click end")
    expect(out).toContain("vote reason end")
    expect(UNSAFE.test(out)).toBe(false)
    expect(out).toContain(`[a1] wrote ${oneLine(FORGED_NAME)} (created, 1 bytes)`)
    expect(out.split("\n").filter((l) => l.startsWith("ANSWER_FILE:") || l.startsWith("COMPLETED:"))).toEqual([])
  })
})

describe("the terminal view", () => {
  const ESC_BUT_SGR = /\x1b(?!\[[0-9;]*m)/

  test("a vote reason's escapes never reach a frame or the summary, with or without colour", () => {
    const events = hostileRun()
    // Before the final answer: the panels show each agent's vote and its reason.
    const voting = viewOf(foldView(events.slice(0, 9)), Date.parse(events[8]!.time))
    expect(voting.agents.map((a) => a.vote?.reason)).toEqual([`reason ${HOSTILE} end`, "vote reason \x1b[2J\x1b]0;PWNED-TITLE\x07 end"])
    const done = viewOf(foldView(events), Date.parse(events.at(-1)!.time))
    for (const view of [voting, done]) {
      for (const color of [false, true]) {
        for (const [columns, rows] of [
          [120, 40],
          [60, 12],
          [30, 8],
        ] as const) {
          const frame = [...renderFrame(view, columns, rows, { color }), ...renderSummary(view, columns, { color })].join("\n")
          expect(frame).not.toMatch(color ? ESC_BUT_SGR : /\x1b/)
          expect(UNSAFE.test(frame.replace(/\x1b\[[0-9;]*m/g, "").replace(/\n/g, ""))).toBe(false)
        }
      }
    }
    expect(renderFrame(voting, 120, 40).join("\n")).toContain("vote → a1 (agent1.1): vote reason end")
  })
})

describe("status, the viewer's list and diagnostics", () => {
  /** A run whose agent a2 failed with an error that quotes hostile text over several lines. */
  const failedRun = (): ReadonlyArray<Event> =>
    stamp([
      runStarted(["a1", "a2"]),
      roundStarted("a1", 1, []),
      roundStarted("a2", 1, []),
      agentFailed("a2", 1, "error", `tool said ${HOSTILE}\nmassgen: forged\u0085line`),
      answer("a1", 1, "agent1.1", "x"),
      roundStarted("a1", 2, ["agent1.1"]),
      vote("a1", 2, "a1", "agent1.1", `reason ${HOSTILE}`),
      runFinished("error", null, `stopped: ${HOSTILE}\nsecond line`),
    ])

  test("massgen status: the summary and --json hold nothing a terminal acts on; the JSON keeps the value", () => {
    const state = foldEvents(failedRun())
    const status = project(state, Date.parse(failedRun().at(-1)!.time), "/logs/run")
    const summary = statusSummary({ ...status, meta: { ...status.meta, question: `q ${HOSTILE}\nWINNER: x` } }, false)
    expect(UNSAFE.test(summary.join(""))).toBe(false)
    expect(summary.every((l) => !LINE_BREAK.test(l))).toBe(true)
    expect(summary).toContain("  a2: error, 0 answers, error: tool said click massgen: forged line")
    const json = plainJson(status, 2)
    expect(UNSAFE.test(json.replace(/\n/g, ""))).toBe(false)
    expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(status)))
  })

  test("the viewer's list of runs shows the question plain", () => {
    const line = pickLine(1, { stream: "/l/r", name: "log_r", complete: true, started: true, agents: 2, question: `q ${HOSTILE}\u0085x` })
    expect(line).toBe(" 1. [DONE] log_r  2 agents  q click x")
  })

  test("diagnostics that quote a model's or a tool's text are one plain line", () => {
    const state = foldEvents(failedRun())
    const lines = [unfinishedMessage(state, "/logs/run"), diagnosticLine(LogLevel.Warning, `tool ${HOSTILE}\n/ctx/a\u0085WINNER: x`)]
    for (const line of lines) {
      expect(UNSAFE.test(line)).toBe(false)
      expect(LINE_BREAK.test(line)).toBe(false)
    }
    expect(lines[1]).toBe("massgen: warning: tool click /ctx/a WINNER: x")
  })
})

describe("the program's last guard", () => {
  test("an error quoting a path with escapes prints it plain, every line a diagnostic", async () => {
    const lines: Array<string> = []
    const io = { stopSignal: new Promise<string>(() => {}), print: (l: string) => lines.push(l), printError: (l: string) => lines.push(l) }
    expect(await runProgram(["status", `/nonexistent ${HOSTILE}\ndir`], io)).toBe(1)
    expect(lines).toEqual(["massgen: no such log directory: /nonexistent click", "massgen: dir"])
  })
})
