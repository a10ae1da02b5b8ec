/**
 * Sessions on disk: `.massgen/sessions/<session id>/turns.jsonl`, the list of a session's turns.
 *
 * Contract: a session is a folder beside the log base (`sessionsDir`: the
 * parent of `.massgen/massgen_logs`, or of `$MASSGEN_LOG_BASE_DIR`, then
 * `sessions/`), named by its id, a safe name. `turns.jsonl` holds one line per
 * turn, appended when the turn's run starts: `{"turn": N, "log_dir": ABS,
 * "started": ISO}`. Each turn is an ordinary run directory, and everything else
 * of a turn (its question, its final answer, its cost) is read from that run's
 * events, never copied here. `conversationOf` is what the next turn continues:
 * the question and final answer of every earlier turn that has a final answer,
 * in order (`answerOf`: a turn that failed, or was stopped and not resumed, adds nothing).
 * `latestSession` is the session whose last turn started last. A line that
 * does not read, or names a run that is gone, is passed over.
 *
 * Words: a *session* is a named conversation of turns; a *turn* is one of its
 * runs.
 */
import * as fs from "node:fs"
import { dirname, join } from "node:path"
import type { ConversationMessage } from "../../domain/events/index.ts"
import { readEventsText } from "../../domain/log/index.ts"
import { blobPath } from "../../domain/run-paths.ts"
import { foldEvents, type State } from "../../domain/state/index.ts"
import { logBaseDir } from "../../services/log-dir/create.ts"

export const TURNS_FILE = "turns.jsonl"

export interface TurnRecord {
  readonly turn: number
  readonly log_dir: string
  readonly started: string
}

/** A turn with its run's state, folded from its events; null when the run is gone. */
export interface Turn extends TurnRecord {
  readonly state: State | null
}

export const sessionsDir = (env: Readonly<Record<string, string | undefined>>, cwd: string): string =>
  join(dirname(logBaseDir(env, cwd)), "sessions")

/** A new session id: `session_YYYYMMDD_HHMMSS_fff`, UTC. */
export const newSessionId = (now = new Date()): string =>
  `session_${now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace("T", "_")
    .replace(/\.(\d+)Z$/, "_$1")}`

export const turnRecords = (dir: string, id: string): ReadonlyArray<TurnRecord> => {
  let text: string
  try {
    text = fs.readFileSync(join(dir, id, TURNS_FILE), "utf8")
  } catch {
    return []
  }
  return text.split("\n").flatMap((line) => {
    try {
      const r = JSON.parse(line) as TurnRecord
      return typeof r.turn === "number" && typeof r.log_dir === "string" ? [r] : []
    } catch {
      return []
    }
  })
}

const stateOf = (logDir: string): State | null => {
  try {
    // A long question or answer is in the run's blob store (`domain/log/long-texts.ts`).
    const texts = (hash: string) => {
      try {
        return fs.readFileSync(join(logDir, blobPath(hash)), "utf8")
      } catch {
        return undefined
      }
    }
    return foldEvents(readEventsText(fs.readFileSync(join(logDir, "events.jsonl"), "utf8"), texts).events)
  } catch {
    return null
  }
}

export const turnsOf = (dir: string, id: string): ReadonlyArray<Turn> =>
  turnRecords(dir, id).map((r) => ({ ...r, state: stateOf(r.log_dir) }))

/**
 * A turn's final answer as the conversation keeps it: null while it runs, when
 * it has none, and when it was stopped (interrupted, so resumable: the answer
 * salvaged at the stop is not the council's; once resumed, its final answer is).
 */
export const answerOf = (turn: Turn): string | null =>
  turn.state?.final && turn.state.finished && turn.state.finished.reason !== "interrupted" ? turn.state.final.content : null

/** What the session's next turn continues: every earlier turn's question and final answer. */
export const conversationOf = (turns: ReadonlyArray<Turn>): ReadonlyArray<ConversationMessage> =>
  turns.flatMap((t) => {
    const answer = answerOf(t)
    return t.state?.run && answer !== null
      ? [
          { role: "user" as const, content: t.state.run.question },
          { role: "assistant" as const, content: answer },
        ]
      : []
  })

/** The log directory of the latest turn with a final answer (`answerOf`): where the next turn's memory comes from; undefined: none. */
export const previousTurnDir = (turns: ReadonlyArray<Turn>): string | undefined => turns.findLast((t) => answerOf(t) !== null)?.log_dir

/** Appends a turn to the session (made if new); its number. */
export const addTurn = (dir: string, id: string, logDir: string): number => {
  const folder = join(dir, id)
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 })
  const turn = turnRecords(dir, id).reduce((n, r) => Math.max(n, r.turn), 0) + 1
  fs.appendFileSync(
    join(folder, TURNS_FILE),
    `${JSON.stringify({ turn, log_dir: logDir, started: new Date().toISOString() } satisfies TurnRecord)}\n`,
    { mode: 0o600 },
  )
  return turn
}

/** Every session id, the newest last turn first. */
export const sessionIds = (dir: string): ReadonlyArray<string> => {
  let names: Array<string>
  try {
    names = fs.readdirSync(dir)
  } catch {
    return []
  }
  const last = (id: string) => turnRecords(dir, id).at(-1)?.started ?? ""
  return names
    .filter((n) => fs.existsSync(join(dir, n, TURNS_FILE)))
    .map((id) => ({ id, last: last(id) }))
    .sort((a, b) => (a.last < b.last ? 1 : a.last > b.last ? -1 : 0))
    .map((s) => s.id)
}

export const latestSession = (dir: string): string | null => sessionIds(dir)[0] ?? null
