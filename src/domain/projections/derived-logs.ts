/**
 * Files derived from the events, in MassGen's formats.
 *
 * `coordinationEvents(events)` gives `coordination_events.json`
 * (`session_metadata` and a list of `{timestamp, event_type, agent_id, details,
 * context}` with MassGen's event type names); `snapshots(events)` gives
 * `snapshot_mappings.json` (every answer label and every vote `agentN.voteK`,
 * with the path of its snapshot under `snapshots/`) and those snapshot files.
 * A long question or answer (`domain/log/long-texts.ts`) is in them in its
 * shown form: the whole is in the blob store once. All pure: the same events give the same files.
 *
 * They are also made a piece at a time, for a writer that extends them as
 * events come (`services/run-files/derived-files.ts`): a `Derivation` takes the events in
 * order and says what each adds (a coordination entry, a mapping and its
 * snapshot file); `coordinationText` and `mappingsText` lay the files out in
 * *parts*, the same bytes as `JSON.stringify(value, null, 2)` and a newline:
 * a `head`, the entries' texts each after a comma but the first (`entryText`),
 * and an `end` that depends only on whether there is an entry. So a file can
 * be extended by cutting its `end` and writing the new entries and the `end`
 * again. Only `coordination_events.json`'s head changes as events come (its
 * `session_metadata` names the run's start and finish).
 */

import { instantMs } from "../../lib/instant.ts"
import { count } from "../../lib/text.ts"
import { checklistText, type Event, resumedText } from "../events/index.ts"
import { shownLongText } from "../log/index.ts"
import { agentFile } from "../run-paths.ts"

const unix = (iso: string): number => instantMs(iso) / 1000

interface CoordinationEvent {
  readonly timestamp: number
  readonly event_type: string
  readonly agent_id: string | null
  readonly details: string
  readonly context: Record<string, unknown> | null
}

const entry = (event: Event): CoordinationEvent | null => {
  const at = unix(event.time)
  const e = (event_type: string, agent_id: string | null, details: string, context: Record<string, unknown> | null = null) => ({
    timestamp: at,
    event_type,
    agent_id,
    details,
    context,
  })
  switch (event._tag) {
    case "run_started":
      return e("session_start", null, `Started with ${count(event.agents.length, "agent")}`)
    case "tool_start_failed":
      return e("tool_start_failed", null, event.message, { kind: event.kind, name: event.name })
    case "run_resumed":
      return e("session_resumed", null, `Resumed; ${resumedText(event)}`)
    case "round_started":
      return e(
        event.restart ? "restart_completed" : "context_received",
        event.agent,
        `Round ${event.round} shows ${event.shown.join(", ") || "no answers"}`,
        {
          labels: event.shown,
          vote_only: event.vote_only,
        },
      )
    case "evaluation_started":
      return e("post_evaluation_started", event.agent, `Evaluates attempt ${event.attempt}`, { attempt: event.attempt })
    case "answer_confirmed":
      return e("answer_confirmed", event.agent, `Confirmed attempt ${event.attempt}`, { attempt: event.attempt, how: event.how })
    case "orchestration_restarted":
      return e("orchestration_restart", event.agent, event.reason, { attempt: event.attempt, instructions: event.instructions })
    case "round_cancelled":
      return e("restart_triggered", event.agent, `Round ${event.round} stopped by a new answer`)
    case "round_time_warned":
      return e("round_time_warned", event.agent, `Round ${event.round} passed its ${event.stage} time limit`, { stage: event.stage })
    case "update_injected":
      return e("update_injected", event.agent, `Round ${event.round} now shows ${event.shown.join(", ")}`, {
        labels: event.shown,
        after_vote: event.after_vote,
      })
    case "checklist_submitted":
      return e("checklist_submitted", event.agent, checklistText(event), {
        accepted: event.accepted,
        scores: event.scores,
        best_label: event.best_label,
        verdict: event.verdict,
      })
    case "answer_submitted":
      return e("new_answer", event.agent, `Answer ${event.label}`, { label: event.label })
    case "vote_cast":
      return e("vote_cast", event.agent, `Voted for ${event.target}`, {
        voted_for: event.target,
        voted_for_label: event.target_label,
        reason: event.reason,
      })
    case "vote_ignored":
      return e("vote_ignored", event.agent, `Vote for ${event.target} ignored (${event.reason})`)
    case "reply_rejected":
      return e("enforcement_retry", event.agent, event.message, { attempt: event.attempt, reason: event.reason })
    case "agent_failed":
      return e(event.kind === "timeout" ? "agent_timeout" : "agent_error", event.agent, event.message)
    case "presentation_started":
      return e("final_agent_selected", event.agent, `Selected with votes ${JSON.stringify(event.votes)}`, {
        votes: event.votes,
        is_tie: event.is_tie,
      })
    case "final_answer":
      return e("final_answer", event.agent, `Final answer from ${event.label} (${event.source})`, {
        label: event.label,
        source: event.source,
      })
    case "run_finished":
      return e("session_end", event.winner, `${event.reason}: ${event.message}`)
    case "call_start":
    case "call_end":
    case "call_retried":
    case "tool_call_started":
    case "tool_call_finished":
    case "hosted_tool_used":
    case "permission_asked":
    case "permission_decided":
    case "workspace_snapshotted":
    case "workspace_finalized":
    case "context_write_intended":
    case "context_path_written":
    case "task_plan_updated":
    case "skills_offered":
    case "memory_loaded":
    case "memory_restored":
      return null
  }
}

interface SessionMetadata {
  readonly user_prompt: string | null
  readonly agent_ids: ReadonlyArray<string>
  readonly start_time: number | null
  readonly end_time: number | null
  readonly final_winner: string | null
}

type RunStarted = Extract<Event, { _tag: "run_started" }>
type RunFinished = Extract<Event, { _tag: "run_finished" }>

const sessionMetadata = (started: RunStarted | undefined, finished: RunFinished | undefined): SessionMetadata => ({
  user_prompt: started ? shownLongText(started.question) : null,
  agent_ids: started ? started.agents.map((a) => a.id) : [],
  start_time: started ? unix(started.time) : null,
  end_time: finished ? unix(finished.time) : null,
  final_winner: finished ? finished.winner : null,
})

export const coordinationEvents = (events: ReadonlyArray<Event>) => {
  const d = derivation()
  const entries: Array<CoordinationEvent> = []
  for (const event of events) {
    const x = d.add(event).entry
    if (x !== null) entries.push(x)
  }
  return { session_metadata: d.metadata(), events: entries }
}

export interface Snapshot {
  readonly path: string
  readonly text: string
}

/** One answer's or vote's line of `snapshot_mappings.json`, and its snapshot file. */
export interface SnapshotOf {
  readonly label: string
  readonly mapping: Record<string, unknown>
  readonly file: Snapshot
}

/** What one event adds to the derived files. */
export interface Derived {
  readonly entry: CoordinationEvent | null
  readonly snapshot: SnapshotOf | null
}

/** The derived files' pieces, event by event, in order; `metadata()` is the session metadata of the events added so far. */
export interface Derivation {
  readonly add: (event: Event) => Derived
  readonly metadata: () => SessionMetadata
}

export const derivation = (): Derivation => {
  let started: RunStarted | undefined
  let finished: RunFinished | undefined
  const anonOf = new Map<string, string>()
  const votesBy = new Map<string, number>()
  const snapshotOf = (event: Event): SnapshotOf | null => {
    if (event._tag === "answer_submitted") {
      const path = agentFile(event.agent, "answer_snapshot", event.label)
      const mapping = {
        type: "answer",
        label: event.label,
        agent_id: event.agent,
        timestamp: unix(event.time),
        iteration: event.round,
        round: event.round,
        path,
      }
      return { label: event.label, mapping, file: { path, text: shownLongText(event.content) } }
    }
    if (event._tag !== "vote_cast") return null
    const k = (votesBy.get(event.agent) ?? 0) + 1
    votesBy.set(event.agent, k)
    const label = `${anonOf.get(event.agent) ?? event.agent}.vote${k}`
    const path = agentFile(event.agent, "vote_snapshot", label)
    const mapping = {
      type: "vote",
      label,
      agent_id: event.agent,
      voted_for: event.target,
      voted_for_label: event.target_label,
      timestamp: unix(event.time),
      iteration: event.round,
      round: event.round,
      path,
    }
    const text = `${JSON.stringify({ voter_id: event.agent, voted_for: event.target, voted_for_label: event.target_label, reason: event.reason, timestamp: event.time }, null, 2)}\n`
    return { label, mapping, file: { path, text } }
  }
  return {
    add: (event) => {
      if (event._tag === "run_started") {
        started ??= event
        for (const a of event.agents) anonOf.set(a.id, a.anon_id)
      }
      if (event._tag === "run_finished") finished = event
      return { entry: entry(event), snapshot: snapshotOf(event) }
    },
    metadata: () => sessionMetadata(started, finished),
  }
}

/** Snapshot mappings and the files they point at, from the answers and votes. */
export const snapshots = (events: ReadonlyArray<Event>) => {
  const d = derivation()
  const mappings: Record<string, Record<string, unknown>> = {}
  const files: Array<Snapshot> = []
  for (const event of events) {
    const s = d.add(event).snapshot
    if (s === null) continue
    mappings[s.label] = s.mapping
    files.push(s.file)
  }
  return { mappings, files }
}

/** `value` as `JSON.stringify(value, null, 2)` gives it, nested `depth` levels in: every line after the first indented. */
const nested = (value: unknown, depth: number): string => JSON.stringify(value, null, 2).replaceAll("\n", `\n${"  ".repeat(depth)}`)

export const coordinationLayout = {
  head: (metadata: SessionMetadata) => `{\n  "session_metadata": ${nested(metadata, 1)},\n  "events": [`,
  entryText: (entry: CoordinationEvent) => `\n    ${nested(entry, 2)}`,
  end: (empty: boolean) => (empty ? "]\n}\n" : "\n  ]\n}\n"),
}

export const mappingsLayout = {
  head: "{",
  entryText: (s: Pick<SnapshotOf, "label" | "mapping">) => `\n  ${JSON.stringify(s.label)}: ${nested(s.mapping, 1)}`,
  end: (empty: boolean) => (empty ? "}\n" : "\n}\n"),
}
