/**
 * Synthetic run directories of a given size, for the scale bench (issue 10):
 * `events.jsonl` in the schema-2 envelope (`encodeEnvelopeLine`) and the
 * `execution_metadata.yaml` that `massgen status` and `resume` read, with a
 * zero-delay scripted config of the log's agents.
 * - dense: 3 agents answering in turn, as a real run of agents that keep
 *   answering logs it (`keep_answering`): per answer a round, a call with its
 *   reply and the answer, so one answer per 4 events;
 * - sparse: 20 agents, each answer followed by a vote round of the 19 others
 *   (one answer per 77 events), as bench/fold.ts's "one long run".
 * An "unfinished" dense log ends with every agent but the last having voted
 * for agent1's latest answer and no round in flight, so that `resume` has one
 * vote and the presentation left to do; a finished one ends as a completed
 * run does (the last agent's vote, the presentation, final answer, run_finished).
 * Lines are written in chunks, so a log of 1,000,000 events never sits whole in memory.
 * An unfinished log comes with the derived files (`coordination_events.json`,
 * `snapshot_mappings.json`, `snapshots/`) up to its last event, as a run
 * leaves them when it is killed (it writes them as it goes).
 */
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { DEFAULT_SETTINGS } from "../src/domain/config/index.ts"
import type { Event } from "../src/domain/events/index.ts"
import { encodeEnvelopeLine } from "../src/domain/log/index.ts"
import { openDerivedFiles } from "../src/services/run-files/derived-files.ts"

export type Shape = "dense" | "sparse"

const QUESTION = "What is 2+2?"

/** Writes events.jsonl and execution_metadata.yaml of a run of about `events` events into `dir`; the exact count. */
export const writeRunDir = async (dir: string, shape: Shape, events: number, finished: boolean): Promise<number> => {
  mkdirSync(dir, { recursive: true })
  const agentCount = shape === "dense" ? 3 : 20
  const agents = Array.from({ length: agentCount }, (_, i) => ({
    id: `agent_${i + 1}`,
    anon_id: `agent${i + 1}`,
    backend: "scripted",
    model: null,
  }))
  writeMetadata(
    dir,
    agents.map((a) => a.id),
  )
  const fd = openSync(join(dir, "events.jsonl"), "w")
  let chunk: Array<string> = []
  let written = 0
  let clock = Date.parse("2026-01-01T00:00:00.000Z")
  // One ms per event keeps a 1,000,000-event run well inside the default orchestrator timeout.
  const time = () => new Date(clock++).toISOString()
  // An unfinished run's derived files are as its process left them (services/derived-files.ts): up to its events.
  const derived = finished ? null : openDerivedFiles(dir)
  const emit = (event: Event, meta: Parameters<typeof encodeEnvelopeLine>[1] = null) => {
    chunk.push(encodeEnvelopeLine(event, meta))
    derived?.add([event])
    written += 1
    if (chunk.length >= 10_000) flush()
  }
  const flush = () => {
    if (chunk.length > 0) writeSync(fd, `${chunk.join("\n")}\n`)
    chunk = []
  }
  emit(
    { _tag: "run_started", time: time(), run_id: "log_bench", question: QUESTION, agents, settings: DEFAULT_SETTINGS },
    { log_dir: dir, pid: 1, host: "bench", version: "bench" },
  )
  const rounds = agents.map(() => 0)
  const answers = agents.map(() => 0)
  const latest: Array<string | undefined> = agents.map(() => undefined)
  let call = 0
  const shown = () => latest.filter((l): l is string => l !== undefined)
  /** One round of agent i: started, one call whose reply calls `tool`, then `finish`. */
  const round = (i: number, tool: string, args: Record<string, unknown>, finish: (round: number) => Event) => {
    const agent = agents[i]!.id
    rounds[i]! += 1
    const r = rounds[i]!
    call += 1
    emit({ _tag: "round_started", time: time(), agent, round: r, shown: shown(), vote_only: false, restart: false })
    emit({ _tag: "call_start", time: time(), call, agent, round: r, role: "round", model: null, attempt: 1 })
    emit(
      callEnded(time(), call, agent, r, "round", {
        reply: {
          text: tool === "vote" ? "Reviewing answers." : "Writing an answer.",
          tool_calls: [{ id: "call_1", name: tool, arguments: JSON.stringify(args) }],
          parts: [],
        },
      }),
    )
    emit(finish(r))
  }
  const answer = (i: number) => {
    answers[i]! += 1
    const label = `${agents[i]!.anon_id}.${answers[i]}`
    const content = `Answer ${i + 1}: four. (revision ${answers[i]})`
    round(i, "new_answer", { content }, (r) => ({ _tag: "answer_submitted", time: time(), agent: agents[i]!.id, round: r, label, content }))
    latest[i] = label
  }
  const vote = (j: number, i: number) =>
    round(j, "vote", { agent_id: agents[i]!.anon_id, reason: "best" }, (r) => ({
      _tag: "vote_cast",
      time: time(),
      agent: agents[j]!.id,
      round: r,
      target: agents[i]!.id,
      target_label: latest[i]!,
      reason: "best",
    }))
  // Room for the ending: the votes of every agent (4 events each) and the presentation (5 events).
  const ending = agentCount * 4 + 5
  for (let cycle = 0; written + ending < events; cycle++) {
    const i = cycle % agentCount
    answer(i)
    if (shape === "sparse") for (let j = 0; j < agentCount && written + ending < events; j++) if (j !== i) vote(j, i)
  }
  // Every agent answered at least once, so that every agent's vote is a valid one.
  for (let i = 0; i < agentCount; i++) if (latest[i] === undefined) answer(i)
  for (let j = 0; j < agentCount - 1; j++) vote(j, 0)
  if (finished) {
    vote(agentCount - 1, 0)
    const votes = Object.fromEntries(shown().map((l) => [l, l === latest[0] ? agentCount : 0]))
    emit({
      _tag: "presentation_started",
      time: time(),
      agent: "agent_1",
      label: latest[0]!,
      votes,
      is_tie: false,
      strategy: "winner_present",
      calls_model: true,
    })
    call += 1
    const r = rounds[0]! + 1
    emit({ _tag: "call_start", time: time(), call, agent: "agent_1", round: r, role: "presentation", model: null, attempt: 1 })
    emit(
      callEnded(time(), call, "agent_1", r, "presentation", {
        output_tokens: 8,
        reply: { text: "The answer is 4.", tool_calls: [], parts: [] },
      }),
    )
    emit({ _tag: "final_answer", time: time(), agent: "agent_1", label: latest[0]!, source: "presentation", content: "The answer is 4." })
    emit({ _tag: "run_finished", time: time(), reason: "completed", winner: "agent_1", message: "every live agent voted" })
  }
  flush()
  closeSync(fd)
  if (derived !== null) await Effect.runPromise(derived.write)
  return written
}

type CallEnd = Extract<Event, { readonly _tag: "call_end" }>

/** A call that came back, with small token counts unless `more` says otherwise. */
export const callEnded = (
  time: string,
  call: number,
  agent: string,
  round: number,
  role: CallEnd["role"],
  more: Partial<CallEnd> = {},
): CallEnd => ({
  _tag: "call_end",
  time,
  call,
  agent,
  round,
  role,
  model: null,
  seconds: 0.001,
  input_tokens: 160,
  cached_input_tokens: 0,
  output_tokens: 15,
  reasoning_tokens: 0,
  truncated: false,
  cost: null,
  error: null,
  ...more,
})

/** The scripted config of the run's agents, as a run records it: zero-delay agents that answer once, then vote for agent1. */
const writeMetadata = (dir: string, ids: ReadonlyArray<string>): void => {
  const agents = ids
    .map(
      (id, i) =>
        `    - id: ${id}\n      backend:\n        type: scripted\n        answer: "Answer ${i + 1}: four."\n        vote: agent1\n        final: "The answer is 4."\n`,
    )
    .join("")
  const yaml = [
    `question: ${JSON.stringify(QUESTION)}`,
    "timestamp: 2026-01-01T00:00:00.000Z",
    `config_path: ${join(dir, "team.yaml")}`,
    "config:",
    "  agents:",
    agents.trimEnd(),
    "cli_args:",
    "  argv: []",
    "massgen_version: bench",
    "runtime: bench",
    `working_directory: ${dir}`,
    `log_dir: ${dir}`,
    "",
  ].join("\n")
  writeFileSync(join(dir, "execution_metadata.yaml"), yaml)
}
