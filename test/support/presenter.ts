/**
 * A file-tool context for tests: the presenter of a one-agent run, after its answer, with the given context paths.
 */
import { expect } from "bun:test"
import { Effect } from "effect"
import type { ContextPathSetting, Event } from "../../src/domain/events/index.ts"
import { foldEvents, type State } from "../../src/domain/state/index.ts"
import type { ToolContext } from "../../src/services/tools/tool-provider.ts"

const T = "2026-01-01T00:00:00.000Z"
/** The presenter's tool context (agent `alice`, presenting after its answer) in a run with these context paths. */
export const presenter = (contextPaths: ReadonlyArray<ContextPathSetting>): ToolContext => {
  let state: State = foldEvents([
    {
      _tag: "run_started",
      time: T,
      run_id: "r",
      question: "q",
      agents: [{ id: "alice", anon_id: "agent1", backend: "scripted", model: null }],
      settings: {
        max_new_answers_per_agent: null,
        skip_final_presentation: false,
        final_answer_strategy: "winner_present",
        orchestrator_timeout_seconds: 60,
        agent_timeout_seconds: 60,
        budget_usd: null,
        disable_injection: false,
        context_paths: [...contextPaths],
      },
    },
    { _tag: "round_started", time: T, agent: "alice", round: 1, shown: [], vote_only: false, restart: false },
    { _tag: "answer_submitted", time: T, agent: "alice", round: 1, label: "agent1.1", content: "a" },
    {
      _tag: "presentation_started",
      time: T,
      agent: "alice",
      label: "agent1.1",
      votes: { "agent1.1": 1 },
      is_tie: false,
      strategy: "winner_present",
      calls_model: true,
    },
  ] satisfies ReadonlyArray<Event>)
  expect(state.presentation?.agent).toBe("alice")
  return {
    agent: "alice",
    round: 1,
    role: "presentation",
    toolCall: 1,
    callId: "c1",
    state: Effect.sync(() => state),
    emit: (e) => Effect.sync(() => void (state = foldEvents([e], state))),
    now: Effect.succeed(T),
  }
}
