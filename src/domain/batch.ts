/**
 * A batch, purely: its items file read into items, an item's result line, the
 * progress line and the batch's exit code.
 *
 * An **item** is one line of the items file (JSON Lines): `{id, question}`,
 * optionally `config` (a config file for this item, relative to the items
 * file's directory), `session_id` (a safe name: the session the item is a
 * turn of) and `metadata` (any JSON, copied to the result). Blank lines are skipped. `parseItems`
 * reads every line and gives either the items or every problem, each naming
 * its line (`line 3: ...`): a line that is not a JSON object, a missing or
 * empty `id` or `question`, a question over the limit (`maxQuestionBytes`,
 * in UTF-8 bytes after trimming, counted as a run counts its question), an id
 * that is not a safe name (it names the item's run directory), an unknown
 * key, an id given twice (with the line of the first).
 * `chainsOf` groups the items a batch runs: each item alone, but the items of
 * one session together, in file order, one after another (each turn continues
 * the conversation of the ones before it).
 *
 * A **result** is one line of `results.jsonl`: what a finished item's run came
 * to (`resultOf`, from the fold of its events). `batchExitCode` folds the
 * outcome: 4 when interrupted, else 3 when the budget stopped it or an item
 * ended on a timeout or the budget, else 2 when an item failed, else 0.
 */

import { formatCost } from "../lib/text.ts"
import { utf8Bytes } from "../lib/utf8-bytes.ts"
import type { FinishReason } from "./events/index.ts"
import { agentFile, nameProblem } from "./run-paths.ts"
import { activeMs, type State } from "./state/index.ts"

export interface BatchItem {
  readonly id: string
  readonly question: string
  /** The item's own config file, as written (relative to the items file's directory); null: the batch's `--config`. */
  readonly config: string | null
  /** The session the item is a turn of; null: none. */
  readonly sessionId: string | null
  readonly metadata: unknown
  /** Its line in the items file, from 1. */
  readonly line: number
}

const ITEM_KEYS = ["id", "question", "config", "session_id", "metadata"]

const optionalString = (o: Record<string, unknown>, key: string): string | null | { readonly problem: string } => {
  const v = o[key]
  if (v === undefined || v === null) return null
  return typeof v === "string" && v !== "" ? v : { problem: `"${key}" must be a non-empty string, found ${JSON.stringify(v)}` }
}

/** The items in runs of work: one item alone, or a session's items in file order, at the place of its first. */
export const chainsOf = (items: ReadonlyArray<BatchItem>): ReadonlyArray<ReadonlyArray<BatchItem>> => {
  const chains: Array<Array<BatchItem>> = []
  const bySession = new Map<string, Array<BatchItem>>()
  for (const item of items) {
    if (item.sessionId === null) {
      chains.push([item])
      continue
    }
    const chain = bySession.get(item.sessionId)
    if (chain !== undefined) chain.push(item)
    else {
      const started = [item]
      bySession.set(item.sessionId, started)
      chains.push(started)
    }
  }
  return chains
}

/** The items of an items file, or every problem with it, each naming its line. */
export const parseItems = (
  text: string,
  maxQuestionBytes = Number.POSITIVE_INFINITY,
):
  | { readonly _tag: "items"; readonly items: ReadonlyArray<BatchItem> }
  | { readonly _tag: "problems"; readonly problems: ReadonlyArray<string> } => {
  const items: Array<BatchItem> = []
  const problems: Array<string> = []
  const firstLine = new Map<string, number>()
  text.split("\n").forEach((raw, i) => {
    const line = i + 1
    const src = raw.trim()
    if (src === "") return
    const bad = (what: string) => void problems.push(`line ${line}: ${what}`)
    let value: unknown
    try {
      value = JSON.parse(src)
    } catch {
      return bad(`not JSON: ${src.length > 60 ? `${src.slice(0, 60)}...` : src}`)
    }
    if (value === null || typeof value !== "object" || Array.isArray(value))
      return bad(`expected a JSON object {"id", "question"}, found ${Array.isArray(value) ? "a list" : JSON.stringify(value)}`)
    const o = value as Record<string, unknown>
    const unknown = Object.keys(o).filter((k) => !ITEM_KEYS.includes(k))
    if (unknown.length > 0) return bad(`unknown key ${unknown.map((k) => JSON.stringify(k)).join(", ")} (known: ${ITEM_KEYS.join(", ")})`)
    if (typeof o.id !== "string" || o.id === "") return bad(`"id" must be a non-empty string, found ${JSON.stringify(o.id ?? null)}`)
    const idProblem = nameProblem(o.id)
    if (idProblem !== null) return bad(`"id": ${idProblem}`)
    if (typeof o.question !== "string" || o.question.trim() === "")
      return bad(`"question" must be a non-empty string, found ${JSON.stringify(o.question ?? null)}`)
    if (utf8Bytes(o.question.trim()) > maxQuestionBytes) return bad(`"question" is over the question limit of ${maxQuestionBytes} bytes`)
    const config = optionalString(o, "config")
    if (config !== null && typeof config === "object") return bad(config.problem)
    const sessionId = optionalString(o, "session_id")
    if (sessionId !== null && typeof sessionId === "object") return bad(sessionId.problem)
    const sessionProblem = typeof sessionId === "string" ? nameProblem(sessionId) : null
    if (sessionProblem !== null) return bad(`"session_id": ${sessionProblem}`)
    const first = firstLine.get(o.id)
    if (first !== undefined) return bad(`duplicate id ${JSON.stringify(o.id)} (first on line ${first})`)
    firstLine.set(o.id, line)
    items.push({ id: o.id, question: o.question, config, sessionId, metadata: o.metadata ?? null, line })
  })
  if (problems.length === 0 && items.length === 0) problems.push("no items: every line is blank")
  return problems.length > 0 ? { _tag: "problems", problems } : { _tag: "items", items }
}

/** One line of `results.jsonl`. */
export interface BatchResult {
  readonly id: string
  readonly finish_reason: FinishReason
  readonly winner: string | null
  /** The final answer's file, absolute; null when the run has no final answer. */
  readonly answer_file: string | null
  readonly answer: string | null
  readonly input_tokens: number
  readonly output_tokens: number
  /** Null when no call was priced. */
  readonly cost_usd: number | null
  readonly duration_seconds: number
  readonly exit_code: number
  readonly log_dir: string
  readonly session_id: string | null
  readonly metadata: unknown
}

/** The result of an item whose run finished (`state.finished` set), its run in `logDir`. */
export const resultOf = (item: BatchItem, state: State, logDir: string, exitCode: number): BatchResult => ({
  id: item.id,
  finish_reason: state.finished?.reason ?? "error",
  winner: state.finished?.winner ?? null,
  answer_file: state.final === null ? null : `${logDir}/${agentFile(state.final.agent, "final_answer")}`,
  answer: state.final?.content ?? null,
  input_tokens: state.usage.inputTokens,
  output_tokens: state.usage.outputTokens,
  cost_usd: state.usage.cost,
  duration_seconds: Math.round(activeMs(state, state.lastTime)) / 1000,
  exit_code: exitCode,
  log_dir: logDir,
  session_id: item.sessionId,
  metadata: item.metadata,
})

/** How a batch stands: its items by outcome, and what they spent. */
export interface BatchCounts {
  readonly total: number
  readonly done: number
  readonly running: number
  /** Items whose run ended other than `completed`, or could not start. */
  readonly failed: number
  readonly costUsd: number | null
}

/** `batch: 12/50 done, 8 running, 1 failed, $0.0123, ETA 42s`; the ETA once an item finished in this process. */
export const progressLine = (c: BatchCounts, etaSeconds: number | null): string =>
  `massgen: batch: ${c.done}/${c.total} done, ${c.running} running, ${c.failed} failed, ${formatCost(c.costUsd)}${etaSeconds === null ? "" : `, ETA ${formatEta(etaSeconds)}`}`

const formatEta = (s: number): string => {
  const r = Math.max(0, Math.round(s))
  return r < 60
    ? `${r}s`
    : r < 3600
      ? `${Math.floor(r / 60)}m${String(r % 60).padStart(2, "0")}s`
      : `${Math.floor(r / 3600)}h${String(Math.floor((r % 3600) / 60)).padStart(2, "0")}m`
}

/** Seconds left at the pace of this process: `elapsedMs` for `finishedHere` items, `left` to go, `concurrency` at once. */
export const etaSeconds = (elapsedMs: number, finishedHere: number, left: number): number | null =>
  finishedHere === 0 ? null : ((elapsedMs / finishedHere) * left) / 1000

/** How a batch ended, for its exit code and its `BATCH:` line. */
export type BatchOutcome = "completed" | "failed" | "budget" | "timeout" | "interrupted"

export const batchOutcome = (
  results: ReadonlyArray<Pick<BatchResult, "finish_reason">>,
  stop: { readonly interrupted: boolean; readonly budget: boolean; readonly failedToStart: number },
): BatchOutcome => {
  if (stop.interrupted || results.some((r) => r.finish_reason === "interrupted")) return "interrupted"
  if (stop.budget || results.some((r) => r.finish_reason === "budget")) return "budget"
  if (results.some((r) => r.finish_reason === "timeout")) return "timeout"
  if (stop.failedToStart > 0 || results.some((r) => r.finish_reason === "error")) return "failed"
  return "completed"
}

export const BATCH_EXIT_CODES: Record<BatchOutcome, number> = { completed: 0, failed: 2, budget: 3, timeout: 3, interrupted: 4 }
