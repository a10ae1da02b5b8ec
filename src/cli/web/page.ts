/**
 * The web view's page as the server sends it: the run's current state already
 * in the HTML, so the page reads without JavaScript and a one-shot render (a
 * screenshot, `--dump-dom`) shows the run.
 *
 * Contract: `pageHtml(template, view)` puts `renderBody(view)` in place of the
 * `<!--body-->` mark of `viewer.html` and the question in its `<title>`.
 * `renderBody` gives the header, the agents' cards, the final answer, every
 * answer (each in a `<details>` element, the losing and replaced ones too), the
 * votes, the files and the timeline, with the ids and classes the page's script
 * renders into afterwards (`viewer.html` `render`, which must give the same
 * markup; `test/web-view.test.ts` compares the two). Every text of the view is
 * escaped (`escapeHtml`); the only markup from outside is `finalHtml`, which
 * `markdownToHtml` made safe.
 *
 * Words: a *page view* is the `View` with the page's `mode` and `finalHtml`,
 * what `/api/view` gives.
 */
import type { AgentView, AnswerView, View } from "../../domain/projections/view-model.ts"
import { escapeHtml as esc } from "./markdown.ts"

export interface PageView extends View {
  readonly mode: "live" | "replay"
  readonly finalHtml: string | null
}

const fmtTokens = (n: number): string => n.toLocaleString("en-US")
const fmtCost = (c: number | null): string => (c === null ? "$—" : c < 0.01 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`)
const fmtSecs = (s: number): string =>
  s < 60 ? `${s.toFixed(1)}s` : `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, "0")}s`
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`

/** The badge's text and class. */
const stateBadge = (v: PageView): [string, string] => {
  if (v.finished) return [`DONE · ${v.finished.reason}`, v.finished.reason === "completed" ? "done" : "bad"]
  if (v.processGone) return ["STOPPED · its process is gone", "bad"]
  return [!v.started ? "waiting for the run" : v.mode === "replay" ? "REPLAY" : "LIVE", "live"]
}

const answerId = (label: string): string => `answer-${label}`

const card = (a: AgentView): string => {
  const chips = a.answers.length
    ? a.answers.map((l) => `<a class="chip" href="#${esc(answerId(l))}">${esc(l)}</a>`).join("")
    : `<span class="muted">no answer yet</span>`
  const vote = a.error
    ? `<div class="err">${esc(`out: ${a.error}`)}</div>`
    : a.vote
      ? `<div class="vote">vote → <b>${esc(a.vote.target)}</b>${esc(` (${a.vote.label}) `)}<span class="why">${esc(a.vote.reason)}</span></div>`
      : `<div class="vote muted">no vote yet</div>`
  const tail = a.tail.trim() ? `<pre class="tail${a.tailIsAnswer ? " answer" : ""}">${esc(a.tail.trim())}</pre>` : ""
  const tools = a.toolCalls > 0 ? ` · ${plural(a.toolCalls, "tool call")}${a.toolErrors > 0 ? ` (${a.toolErrors} failed)` : ""}` : ""
  return [
    `<div class="card s-${esc(a.status)}" data-agent="${esc(a.id)}">`,
    `<h3><span>${esc(`${a.id} `)}<span class="muted">${esc(`(${a.anonId})`)}</span></span><span class="status c-${esc(a.status)}">${esc(a.status)}</span></h3>`,
    `<div class="model">${esc(`${a.model || "no model"} · ${a.backend}${a.round > 0 ? ` · round ${a.round}` : ""}`)}</div>`,
    `<div class="chips">${chips}</div>`,
    vote,
    tail,
    `<div class="usage">${esc(`${fmtTokens(a.tokens)} tokens · ${fmtCost(a.cost)}${tools}`)}</div>`,
    "</div>",
  ].join("")
}

/** What the summary of an answer says after its label and agent. */
const answerNotes = (a: AnswerView, winner: string | null): ReadonlyArray<string> => [
  `round ${a.round}`,
  plural(a.votes, "vote"),
  ...(a.supersededBy === null ? [] : [`replaced by ${a.supersededBy}`]),
  ...(a.supersededBy === null && a.agent === winner ? ["winning answer"] : []),
]

const answer = (a: AnswerView, winner: string | null): string =>
  [
    `<details class="answer" data-label="${esc(a.label)}">`,
    `<summary><span class="chip">${esc(a.label)}</span> <b>${esc(a.agent)}</b> <span class="muted">${esc(answerNotes(a, winner).join(" · "))}</span></summary>`,
    `<pre class="answer-text" id="${esc(answerId(a.label))}">${esc(a.content)}</pre>`,
    "</details>",
  ].join("")

/** Which final answer `#final-answer` holds, so the script does not lay a long one out again: its label, source and HTML's length. */
const finalKey = (v: PageView): string => (v.final ? `${v.final.label} ${v.final.source} ${(v.finalHtml ?? "").length}` : "")

const finalMeta = (v: PageView): string =>
  v.final
    ? `by ${v.final.agent} (${v.final.label}, ${v.final.source.replace("_", " ")})`
    : v.winner
      ? `${v.winner} is presenting…`
      : v.finished
        ? `No final answer: ${v.finished.message}`
        : "Not chosen yet."

const votes = (v: PageView): string => {
  const rows = v.votes.map(
    (r) =>
      `<tr class="${r.voter === v.winner ? "winner" : ""}"><td>${esc(r.voter)}</td><td>${esc(r.target ? `${r.target} (${r.label})` : "—")}</td><td class="muted">${esc(r.reason)}</td></tr>`,
  )
  const tally = Object.entries(v.tally)
    .map(([l, n]) => `${l}: ${n}`)
    .join(" · ")
  return `<table><tbody><tr><th>voter</th><th>voted for</th><th>reason</th></tr>${rows.join("")}</tbody></table><div class="tally">${esc(tally ? `tally: ${tally}` : "no answers yet")}</div>`
}

const files = (v: PageView): string => {
  const ws = v.workspace
  const list = (items: ReadonlyArray<string>) => items.map((f) => `<li>${esc(f)}</li>`).join("")
  return [
    `<section id="files-section"${!ws.final && ws.changedFiles.length === 0 ? " hidden" : ""}><h2>Files</h2>`,
    `<div class="final-meta" id="files-meta">${esc(ws.final ? `final workspace: ${ws.final.path} (${ws.final.files} files, ${ws.final.bytes} bytes)` : "")}</div>`,
    `<ul id="files">${list(ws.final?.listing ?? [])}</ul>`,
    `<div class="final-meta" id="changed-meta">${ws.changedFiles.length ? "written to context paths:" : ""}</div>`,
    `<ul id="changed">${list(ws.changedFiles.map((f) => `${f.path} (${f.change}, ${f.bytes} bytes)`))}</ul></section>`,
  ].join("")
}

const timeline = (v: PageView): string =>
  v.timeline
    .map(
      (e) =>
        `<li data-kind="${esc(e.kind)}"><span class="t">${esc(`+${e.at.toFixed(1)}s`)}</span>${e.agent ? `<span class="who">${esc(e.agent)}</span>` : ""}<span>${esc(e.text)}</span></li>`,
    )
    .join("")

export const renderBody = (v: PageView): string => {
  const [badge, badgeClass] = stateBadge(v)
  return `<header>
  <div class="row">
    <h1>MassGen</h1>
    <span id="state" class="badge ${badgeClass}">${esc(badge)}</span>
    <span class="stats">phase <b id="phase">${esc(v.phase.replace("_", " "))}</b></span>
    <div class="bar"><div id="bar" style="width:${v.completion}%"></div></div>
    <span class="stats"><b id="completion">${v.completion}%</b></span>
    <span class="stats">elapsed <b id="elapsed">${fmtSecs(v.elapsedSeconds)}</b></span>
    <span class="stats">tokens <b id="tokens">${esc(`${fmtTokens(v.inputTokens + v.outputTokens)} (${fmtTokens(v.inputTokens)} in / ${fmtTokens(v.outputTokens)} out)`)}</b></span>
    <span class="stats">cost <b id="cost">${esc(fmtCost(v.cost))}</b></span>
  </div>
  <div class="question" id="question">${esc(v.question)}</div>
</header>
<main>
  <div class="agents" id="agents">${v.agents.map(card).join("")}</div>
  <div class="lower">
    <div style="display:grid; gap:16px; align-content:start">
      <section><h2>Final answer</h2><div class="final-meta" id="final-meta">${esc(finalMeta(v))}</div><div id="final-answer" data-shown="${esc(finalKey(v))}">${v.final ? (v.finalHtml ?? "") : ""}</div></section>
      <section><h2>Answers</h2><div id="answers">${v.answers.length ? v.answers.map((a) => answer(a, v.winner)).join("") : `<div class="muted">no answers yet</div>`}</div></section>
      <section><h2>Votes</h2><div id="votes">${votes(v)}</div></section>
      ${files(v)}
    </div>
    <section><h2>Timeline</h2><ol class="timeline" id="timeline">${timeline(v)}</ol></section>
  </div>
</main>`
}

/** The page: `template` (viewer.html) with the view in its body and its title. Function replacements: no `$` pattern of a text is read. */
export const pageHtml = (template: string, v: PageView): string =>
  template
    .replace(
      "<title>MassGen viewer</title>",
      () => `<title>${esc(`MassGen · ${v.finished ? "done" : "live"} · ${v.question.slice(0, 60)}`)}</title>`,
    )
    .replace("<!--body-->", () => renderBody(v))
