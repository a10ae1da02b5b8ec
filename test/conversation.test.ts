/**
 * Issue 15: a run that continues a conversation (earlier questions and the
 * council's final answers).
 *
 * Every agent is shown it in MassGen's form (a `<CONVERSATION_HISTORY>` block
 * before the original message, a note closing the system message) in every
 * round and in the presentation; `run_started` records it, so replay builds
 * the same requests and a resume goes on with it; a log written before the
 * field existed reads as a run with no conversation.
 */
import { describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { CONVERSATION_NOTE, conversationHistory } from "../src/domain/coordination/prompts.ts"
import type { ConversationMessage, Event } from "../src/domain/events/index.ts"
import type { LlmRequest } from "../src/domain/llm.ts"
import { encodeEventLine, readEventsText } from "../src/domain/log/index.ts"
import { replayRun } from "../src/domain/replay/index.ts"
import { foldEvents } from "../src/domain/state/index.ts"
import type { Backend } from "../src/services/backends/index.ts"
import { callsOf } from "./support/call-logs.ts"
import { live } from "./support/effect-test.ts"
import { configOf, runInMemory } from "./support/harness.ts"

const CONVERSATION: ReadonlyArray<ConversationMessage> = [
  { role: "user", content: "What is 2+2?" },
  { role: "assistant", content: "4." },
]

const DOC = {
  agents: [
    { id: "agent_a", backend: { type: "scripted", answer: "8.", vote: "agent1", final: "It is 8." } },
    { id: "agent_b", backend: { type: "scripted", answer: "eight", vote: "agent1" } },
  ],
}

/** Runs DOC on the follow-up, keeping every request an agent was sent. */
const runFollowUp = (conversation: ReadonlyArray<ConversationMessage> = CONVERSATION) =>
  Effect.gen(function* () {
    const requests: Array<LlmRequest> = []
    const wrap = (_: string, backend: Backend): Backend => ({
      ...backend,
      call: (request, onChunk) => (requests.push(request), backend.call(request, onChunk)),
    })
    const run = yield* runInMemory(DOC, { question: "And doubled?", conversation, wrap })
    return { ...run, requests }
  })

describe("a run that continues a conversation", () => {
  test("the history block is MassGen's: User: and Assistant: lines between its tags", () => {
    expect(conversationHistory(CONVERSATION)).toBe(
      "<CONVERSATION_HISTORY>\nUser: What is 2+2?\nAssistant: 4.\n<END OF CONVERSATION_HISTORY>",
    )
    expect(conversationHistory([])).toBe("")
  })

  live("every request, rounds and presentation, shows the conversation before the original message", () =>
    Effect.gen(function* () {
      const run = yield* runFollowUp()
      expect(run.reason).toBe("completed")
      expect(run.state.final?.content).toBe("It is 8.")
      expect(run.requests.map((r) => r.context.kind)).toContain("presentation")
      for (const request of run.requests) {
        const user = request.messages[0]!.content
        expect(user.startsWith(`${conversationHistory(CONVERSATION)}\n\n<ORIGINAL MESSAGE>\nAnd doubled?\n<END OF ORIGINAL MESSAGE>`)).toBe(
          true,
        )
        expect(request.system.endsWith(CONVERSATION_NOTE)).toBe(true)
      }
    }),
  )

  live("run_started records the conversation; a run without one records nothing and shows no history", () =>
    Effect.gen(function* () {
      const run = yield* runFollowUp()
      expect(run.events[0]).toMatchObject({ _tag: "run_started", question: "And doubled?", conversation: CONVERSATION })
      const single = yield* runFollowUp([])
      expect("conversation" in single.events[0]!).toBe(false)
      for (const request of single.requests) {
        expect(request.messages[0]!.content.startsWith("<ORIGINAL MESSAGE>")).toBe(true)
        expect(request.system).not.toContain(CONVERSATION_NOTE)
      }
    }),
  )

  live("replay builds the same requests from the log: no divergence; a conversation edited in the log diverges", () =>
    Effect.gen(function* () {
      const run = yield* runFollowUp()
      const agents = configOf(DOC).agents
      expect(replayRun(run.events, agents, callsOf(run.files)).divergence).toBeNull()
      const edited = run.events.map(
        (e): Event => (e._tag === "run_started" ? { ...e, conversation: [{ role: "user", content: "Other?" }] } : e),
      )
      expect(replayRun(edited, agents, callsOf(run.files)).divergence).not.toBeNull()
    }),
  )

  live("a resumed turn goes on with its conversation", () =>
    Effect.gen(function* () {
      const first = yield* runFollowUp()
      // Cut the log right after the first answer: the rest is asked again of the scripted agents.
      const cut = first.events.findIndex((e) => e._tag === "answer_submitted")
      const text = `${first.events
        .slice(0, cut + 1)
        .map(encodeEventLine)
        .join("\n")}\n`
      const requests: Array<LlmRequest> = []
      const wrap = (_: string, backend: Backend): Backend => ({
        ...backend,
        call: (request, onChunk) => (requests.push(request), backend.call(request, onChunk)),
      })
      const resumed = yield* runInMemory(DOC, { resume: { text, files: first.files }, wrap })
      expect(resumed.reason).toBe("completed")
      expect(requests.length).toBeGreaterThan(0)
      for (const request of requests) expect(request.messages[0]!.content).toContain(conversationHistory(CONVERSATION))
    }),
  )

  test("a run_started written before the field existed reads as a run with no conversation", () => {
    const line = encodeEventLine({
      _tag: "run_started",
      time: "2026-01-01T00:00:00.000Z",
      run_id: "log_x",
      question: "q",
      agents: [{ id: "a", anon_id: "agent1", backend: "scripted", model: null }],
      settings: {
        max_new_answers_per_agent: null,
        skip_final_presentation: false,
        final_answer_strategy: "winner_present",
        orchestrator_timeout_seconds: 60,
        agent_timeout_seconds: 60,
      },
    } as unknown as Event)
    expect(line).not.toContain("conversation")
    const read = readEventsText(line)
    expect(read.skipped).toBe(0)
    expect(foldEvents(read.events).run?.conversation).toEqual([])
  })
})
