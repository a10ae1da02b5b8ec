/**
 * The terminal view as a pure function: `renderFrame(view, columns, rows)` gives the lines of one screen.
 *
 * Contract: at most `rows` lines, none wider than `columns` columns (ANSI
 * codes, added only with `color`, take no columns). Layout, top to bottom: a
 * two-line header (phase, completion, elapsed, tokens, cost; the question),
 * one boxed panel per agent (side by side, as many per row as fit at
 * `MIN_PANEL_WIDTH` columns each, so stacked on a narrow terminal), then the
 * timeline while the run goes on, or the votes table and the final answer
 * once a winner is chosen. When the panels do not fit they shrink to one line
 * per agent. `renderSummary(view, columns)` is what stays on screen after a
 * live view ends: the same header, one line per agent, the votes table and the
 * whole final answer. With `logDir`, both show where the run's files are, and
 * the summary of a run stopped before it finished (or by a signal) ends with
 * `resume with: massgen resume DIR`. Text from the run (answers, vote
 * reasons, errors, the question) is folded and cleaned (`foldedText`, and
 * `cell` cleans whatever else a cell holds), so the only escapes a frame
 * holds are its own styles.
 */
import type { AgentStatus } from "../../domain/projections/status.ts"
import type { AgentView, View } from "../../domain/projections/view-model.ts"
import { resumeHint } from "../../domain/run-paths.ts"
import { isResumable } from "../../domain/state/index.ts"
import { foldedText } from "../../lib/plain-text.ts"
import { formatCost } from "../../lib/text.ts"
import { cell, ellipsis, formatSeconds, formatTokens, reflow, type Segment, style, width, wrap } from "./text.ts"

export const MIN_PANEL_WIDTH = 36
const PANEL_CHROME = 4 // two borders and two fixed lines
const MAX_PANEL_HEIGHT = 16

export interface FrameOptions {
  /** The run's log directory: shown under the header, and in the resume hint of a stopped run. */
  readonly logDir?: string
  readonly color?: boolean
}

const STATUS: Record<AgentStatus, readonly [symbol: string, sgr: string]> = {
  waiting: ["○", "2"],
  streaming: ["●", "1;36"],
  answered: ["◆", "1;34"],
  voted: ["✓", "1;32"],
  restarting: ["↻", "1;33"],
  error: ["✗", "1;31"],
  timeout: ["✗", "1;31"],
  completed: ["★", "1;35"],
  stopped: ["■", "2"],
}

const line = (segments: ReadonlyArray<Segment>, columns: number, color: boolean): string => cell(segments, columns, color).trimEnd()

/** Where the run's files are, when the view knows. */
const logsLine = (logDir: string | undefined, columns: number, color: boolean): Array<string> =>
  logDir === undefined
    ? []
    : [
        line(
          [
            ["Logs: ", "2"],
            [logDir, "2"],
          ],
          columns,
          color,
        ),
      ]

/** A run stopped before it finished, or by a signal, is taken up again by `massgen resume`. */
export const resumeLine = (view: View, logDir: string): string | null =>
  isResumable(view.finished) ? `resume with: ${resumeHint(logDir)}` : null

export const headerLines = (view: View, columns: number, color: boolean): Array<string> => {
  const phase = view.finished === null ? view.phase.replace("_", " ") : view.finished.reason
  const state = view.attempt === null ? phase : `${phase} · attempt ${view.attempt.current}/${view.attempt.max}`
  const barWidth = 10
  const filled = Math.round((view.completion / 100) * barWidth)
  const tokens = view.inputTokens + view.outputTokens
  return [
    line(
      [
        [" MassGen ", "1;7;36"],
        [" "],
        [state, view.finished === null ? "1;33" : view.finished.reason === "completed" ? "1;32" : "1;31"],
        [`  ${"█".repeat(filled)}`, "32"],
        ["░".repeat(barWidth - filled), "2"],
        [` ${view.completion}%  ${formatSeconds(view.elapsedSeconds)}  ${formatTokens(tokens)} tokens  ${formatCost(view.cost)}`],
      ],
      columns,
      color,
    ),
    line([["Q: ", "1"], [ellipsis(foldedText(view.question), Math.max(0, columns - 3))]], columns, color),
  ]
}

const voteText = (agent: AgentView): Segment =>
  agent.error !== null
    ? [`out: ${foldedText(agent.error)}`, "31"]
    : agent.vote === null
      ? ["no vote yet", "2"]
      : [`vote → ${agent.vote.target} (${agent.vote.label}): ${foldedText(agent.vote.reason)}`, "32"]

/** The newest two answer labels, and how many older ones there are. */
const answerList = (labels: ReadonlyArray<string>): string =>
  labels.length > 2 ? `+${labels.length - 2} ${labels.slice(-2).join(" ")}` : labels.join(" ")

const statusSegments = (agent: AgentView): Array<Segment> => {
  const [symbol, sgr] = STATUS[agent.status]
  return [
    [`${symbol} ${agent.status}`, sgr],
    [agent.round > 0 ? `  r${agent.round}` : ""],
    [agent.answers.length > 0 ? `  ${answerList(agent.answers)}` : "  no answer yet", agent.answers.length > 0 ? "34" : "2"],
    [
      agent.toolCalls > 0 ? `  tools ${agent.toolCalls}${agent.toolErrors > 0 ? ` (${agent.toolErrors} failed)` : ""}` : "",
      agent.toolErrors > 0 ? "33" : "2",
    ],
  ]
}

/** One agent's box: exactly `height` lines of exactly `columns` columns. */
export const panel = (agent: AgentView, columns: number, height: number, color: boolean): Array<string> => {
  const inner = columns - 4
  const title = ellipsis(` ${foldedText(`${agent.id}${agent.model ? ` · ${agent.model}` : ""}`)} `, Math.max(0, columns - 4))
  const [, sgr] = STATUS[agent.status]
  const top =
    style("┌─", sgr, color) + style(title, "1", color) + style(`${"─".repeat(Math.max(0, columns - 3 - width(title)))}┐`, sgr, color)
  const side = (segments: ReadonlyArray<Segment>) => `${style("│", sgr, color)} ${cell(segments, inner, color)} ${style("│", sgr, color)}`
  const body = [side(statusSegments(agent)), side([voteText(agent)])]
  const tailLines = height - PANEL_CHROME
  if (tailLines > 0) {
    const text = wrap(agent.tail.trim(), inner).slice(-tailLines)
    for (let i = 0; i < tailLines; i++) body.push(side([agent.tailIsAnswer ? [text[i] ?? "", "2"] : [text[i] ?? ""]]))
  }
  const bottom = style(`└${"─".repeat(Math.max(0, columns - 2))}┘`, sgr, color)
  return [top, ...body, bottom]
}

const compactLine = (agent: AgentView, columns: number, color: boolean, withVote = true): string => {
  const [symbol, sgr] = STATUS[agent.status]
  return line(
    [
      [`${symbol} `, sgr],
      [agent.id.padEnd(12), "1"],
      [` ${agent.status.padEnd(10)}`, sgr],
      [` ${(agent.answers[agent.answers.length - 1] ?? "-").padEnd(9)} `, "34"],
      withVote ? voteText(agent) : [agent.model ?? agent.backend, "2"],
    ],
    columns,
    color,
  )
}

/** The tally after `Votes`, wrapped at whole entries so that no answer's count is cut (the first line after `Votes`, the rest under it). */
const tallyLines = (view: View, columns: number): Array<string> => {
  const entries = Object.entries(view.tally).map(([label, n]) => `${label}: ${n}`)
  const lines: Array<string> = []
  for (const entry of entries) {
    const last = lines[lines.length - 1]
    const room = columns - "Votes   ".length
    if (last !== undefined && width(`${last}  ${entry}`) <= room) lines[lines.length - 1] = `${last}  ${entry}`
    else lines.push(entry)
  }
  return lines
}

export const votesTable = (view: View, columns: number, color: boolean): Array<string> => {
  const [tally = "", ...moreTally] = tallyLines(view, columns)
  const voterWidth = Math.min(16, Math.max(5, ...view.votes.map((v) => v.voter.length)))
  const rows = view.votes.map((v) =>
    line(
      [
        [`  ${v.voter.padEnd(voterWidth)} `, v.voter === view.winner ? "1;35" : "1"],
        v.target === null ? ["(no vote)", "2"] : [`→ ${v.target} (${v.label})`, "32"],
        [v.target === null ? "" : `  ${foldedText(v.reason)}`, "2"],
      ],
      columns,
      color,
    ),
  )
  return [
    line([["Votes", "1;4"], [tally === "" ? "" : `   ${tally}`]], columns, color),
    ...moreTally.map((more) => line([[`        ${more}`]], columns, color)),
    ...rows,
  ]
}

const finalTitle = (view: View, columns: number, color: boolean): string =>
  view.final !== null
    ? line(
        [["Final answer", "1;4;35"], [` · ${view.final.agent} (${view.final.label}, ${view.final.source.replace("_", " ")})`]],
        columns,
        color,
      )
    : view.winner !== null
      ? line(
          [
            ["Final answer", "1;4;35"],
            [` · ${view.winner} is presenting…`, "2"],
          ],
          columns,
          color,
        )
      : view.finished !== null
        ? line([["No final answer", "1;31"], [`: ${view.finished.message}`]], columns, color)
        : line(
            [
              ["Final answer", "1;4;35"],
              [" · not chosen yet", "2"],
            ],
            columns,
            color,
          )

const finalBody = (view: View, columns: number): Array<string> => {
  if (view.final !== null) return wrap(reflow(view.final.content.trim()), columns - 2).map((l) => `  ${l}`)
  const presenter = view.agents.find((a) => a.id === view.winner)
  return presenter && !presenter.tailIsAnswer ? wrap(presenter.tail.trim(), columns - 2).map((l) => `  ${l}`) : []
}

const timelineLines = (view: View, count: number, columns: number, color: boolean): Array<string> => {
  if (count <= 0) return []
  const entries = view.timeline.slice(-(count - 1))
  return [
    line([["Timeline", "1;4"]], columns, color),
    ...entries.map((e) =>
      line([[`${`+${e.at.toFixed(1)}`.padStart(6)}s `, "2"], [e.agent === null ? "" : `${e.agent} `, "1"], [e.text]], columns, color),
    ),
  ]
}

const isEnding = (view: View): boolean => view.winner !== null || view.final !== null || view.finished !== null

export const renderFrame = (view: View, columns: number, rows: number, options: FrameOptions = {}): Array<string> => {
  const color = options.color === true
  const cols = Math.max(20, columns)
  if (!view.started)
    return [
      line(
        [
          [" MassGen ", "1;7;36"],
          ["  waiting for the run to start…", "2"],
        ],
        cols,
        color,
      ),
    ].slice(0, rows)
  const out = [...headerLines(view, cols, color), ...logsLine(options.logDir, cols, color)]
  const agents = view.agents
  const perRow = Math.max(1, Math.min(agents.length, Math.floor(cols / MIN_PANEL_WIDTH)))
  const gridRows = Math.ceil(agents.length / perRow)
  const avail = rows - out.length
  const ending = isEnding(view)
  const bottomMin = ending ? Math.min(agents.length + 1, 6) + 3 : Math.min(view.timeline.length + 1, 4)
  if (gridRows * PANEL_CHROME + bottomMin <= avail) {
    const cap = ending ? PANEL_CHROME + 2 : MAX_PANEL_HEIGHT
    const height = Math.min(cap, Math.floor((avail - bottomMin) / gridRows))
    for (let r = 0; r < gridRows; r++) {
      const rowAgents = agents.slice(r * perRow, (r + 1) * perRow)
      const widths = rowAgents.map((_, i) => Math.floor(cols / perRow) + (i < cols % perRow ? 1 : 0))
      const boxes = rowAgents.map((a, i) => panel(a, widths[i]!, height, color))
      for (let l = 0; l < height; l++) out.push(boxes.map((b) => b[l]!).join(""))
    }
  } else {
    for (const agent of agents) out.push(compactLine(agent, cols, color))
  }
  const left = rows - out.length
  if (!ending) return [...out, ...timelineLines(view, Math.min(left, view.timeline.length + 1), cols, color)].slice(0, rows)
  const votes = votesTable(view, cols, color)
  const shownVotes = votes.slice(0, Math.max(1, Math.min(votes.length, left - 3)))
  out.push(...shownVotes)
  const room = rows - out.length - 1
  if (room >= 0) {
    out.push(finalTitle(view, cols, color))
    const body = finalBody(view, cols)
    if (body.length <= room) out.push(...body)
    else if (room > 0) out.push(...body.slice(0, room - 1), style(`  … ${body.length - room + 1} more lines after the run`, "2", color))
  }
  return out.slice(0, rows)
}

/** What stays on screen when a live view ends: no height limit, the whole final answer. */
export const renderSummary = (view: View, columns: number, options: FrameOptions = {}): Array<string> => {
  const color = options.color === true
  const cols = Math.max(20, columns)
  if (!view.started) return []
  return [
    ...headerLines(view, cols, color),
    ...view.agents.map((a) => compactLine(a, cols, color, false)),
    "",
    ...votesTable(view, cols, color),
    "",
    finalTitle(view, cols, color),
    ...finalBody(view, cols),
    ...(options.logDir === undefined ? [] : ["", ...logsLine(options.logDir, cols, color)]),
    ...(options.logDir === undefined
      ? []
      : [resumeLine(view, options.logDir)].flatMap((hint) => (hint === null ? [] : [style(hint, "1;33", color)]))),
  ]
}
