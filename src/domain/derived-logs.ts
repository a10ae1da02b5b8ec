/**
 * Files derived from the events at the end of a run, in MassGen's formats.
 *
 * `coordinationEvents(events)` gives `coordination_events.json`
 * (`session_metadata` and a list of `{timestamp, event_type, agent_id, details,
 * context}` with MassGen's event type names); `snapshotMappings(events)` gives
 * `snapshot_mappings.json` (every answer label and every vote `agentN.voteK`,
 * with the path of its snapshot under `snapshots/`); `snapshotFiles` gives
 * those snapshot files. All pure: the same events give the same files.
 */
import type { Event } from "./events.ts"
import { agentFile } from "./run-paths.ts"
import { count } from "./text.ts"
import { resumedText } from "./resume-plan.ts"

const unix = (iso: string): number => Date.parse(iso) / 1000

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
    case "run_resumed":
      return e("session_resumed", null, `Resumed; ${resumedText(event)}`)
    case "round_started":
      return e(event.restart ? "restart_completed" : "context_received", event.agent, `Round ${event.round} shows ${event.shown.join(", ") || "no answers"}`, {
        labels: event.shown,
        vote_only: event.vote_only,
      })
    case "round_cancelled":
      return e("restart_triggered", event.agent, `Round ${event.round} stopped by a new answer`)
    case "update_injected":
      return e("update_injected", event.agent, `Round ${event.round} now shows ${event.shown.join(", ")}`, {
        labels: event.shown,
        after_vote: event.after_vote,
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
      return e("final_answer", event.agent, `Final answer from ${event.label} (${event.source})`, { label: event.label, source: event.source })
    case "run_finished":
      return e("session_end", event.winner, `${event.reason}: ${event.message}`)
    case "call_start":
    case "call_end":
    case "call_retried":
    case "tool_call_started":
    case "tool_call_finished":
    case "hosted_tool_used":
      return null
  }
}

export const coordinationEvents = (events: ReadonlyArray<Event>) => {
  const started = events.find((e) => e._tag === "run_started")
  const finished = events.findLast((e) => e._tag === "run_finished")
  return {
    session_metadata: {
      user_prompt: started?._tag === "run_started" ? started.question : null,
      agent_ids: started?._tag === "run_started" ? started.agents.map((a) => a.id) : [],
      start_time: started ? unix(started.time) : null,
      end_time: finished ? unix(finished.time) : null,
      final_winner: finished?._tag === "run_finished" ? finished.winner : null,
    },
    events: events.flatMap((event) => {
      const x = entry(event)
      return x ? [x] : []
    }),
  }
}

export interface Snapshot {
  readonly path: string
  readonly text: string
}

/** Snapshot mappings and the files they point at, from the answers and votes. */
export const snapshots = (events: ReadonlyArray<Event>) => {
  const mappings: Record<string, Record<string, unknown>> = {}
  const files: Array<Snapshot> = []
  const anonOf = new Map<string, string>()
  const votesBy = new Map<string, number>()
  for (const event of events) {
    if (event._tag === "run_started") for (const a of event.agents) anonOf.set(a.id, a.anon_id)
    if (event._tag === "answer_submitted") {
      const path = agentFile(event.agent, "answer_snapshot", event.label)
      mappings[event.label] = { type: "answer", label: event.label, agent_id: event.agent, timestamp: unix(event.time), iteration: event.round, round: event.round, path }
      files.push({ path, text: event.content })
    }
    if (event._tag === "vote_cast") {
      const k = (votesBy.get(event.agent) ?? 0) + 1
      votesBy.set(event.agent, k)
      const label = `${anonOf.get(event.agent) ?? event.agent}.vote${k}`
      const path = agentFile(event.agent, "vote_snapshot", label)
      mappings[label] = {
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
      files.push({
        path,
        text: `${JSON.stringify({ voter_id: event.agent, voted_for: event.target, voted_for_label: event.target_label, reason: event.reason, timestamp: event.time }, null, 2)}\n`,
      })
    }
  }
  return { mappings, files }
}
