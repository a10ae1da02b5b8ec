/**
 * Whole-run wall time with zero-delay scripted agents (3, 10 and 50 agents):
 * from the observed `run_started` to the observed `run_finished`
 * (performance.now() in the orchestrator's observer), with the live file layers
 * in a temp directory (real appends, status and llm_log writes) and with the
 * in-memory layers. Prints median and p90 in ms, and the events per run.
 * Then where a live 3-agent run's time goes: the time spent in each kind of
 * write (timed by wrapping the service layers), and the span of a zero-delay
 * backend call (call_start -> call_end) in both modes. The compiled binary, one
 * cold process per run, is bench/start-up.ts.
 */
import {
  convergingConfig,
  fmt,
  type IoKind,
  type IoProfile,
  line,
  type Mode,
  median,
  percentile,
  type TimedRun,
  timedRun,
} from "./support.ts"

interface Plan {
  readonly agents: number
  readonly warmups: number
  readonly runs: number
}

const PLANS: ReadonlyArray<Plan> = [
  { agents: 3, warmups: 3, runs: 20 },
  { agents: 10, warmups: 2, runs: 10 },
  // No warm-up: the 3- and 10-agent runs before it warmed the same code.
  { agents: 50, warmups: 0, runs: 3 },
]

const TARGET_3_AGENTS_MS = 20

export const wholeRunBench = async (): Promise<void> => {
  console.log("# 1. Whole-run wall time, zero-delay scripted agents (run_started -> run_finished)")
  for (const mode of ["live", "memory"] as const satisfies ReadonlyArray<Mode>) {
    for (const plan of PLANS) {
      const config = convergingConfig(plan.agents)
      for (let i = 0; i < plan.warmups; i++) {
        const run = await timedRun(config, mode)
        // The bench starts with this run: its code is as cold as a CLI run's, which is a process of its own.
        if (i === 0 && plan === PLANS[0] && mode === "live") {
          line(
            "live 3 agents, first run of the process (cold JIT): wall ms",
            `${fmt(run.wallMs)}   cpu ms ${fmt(run.cpuMs)}   target: < ${TARGET_3_AGENTS_MS} ms`,
          )
        }
      }
      const times: Array<number> = []
      const cpu: Array<number> = []
      const eventCounts: Array<number> = []
      for (let i = 0; i < plan.runs; i++) {
        const run = await timedRun(config, mode)
        if (run.reason !== "completed") throw new Error(`a ${plan.agents}-agent run ended ${run.reason}`)
        times.push(run.wallMs)
        cpu.push(run.cpuMs)
        eventCounts.push(run.events.length)
      }
      const target = plan.agents === 3 ? `   target: < ${TARGET_3_AGENTS_MS} ms` : ""
      line(
        `${mode} ${plan.agents} agents, ${plan.runs} runs after ${plan.warmups} warm-ups: wall ms median / p90`,
        `${fmt(median(times))} / ${fmt(percentile(times, 90))}   cpu ms median ${fmt(median(cpu))}   events/run ${fmt(median(eventCounts), 0)}${target}`,
      )
    }
  }
  // The numbers above include JIT warm-up; this one shows the steady state.
  const config = convergingConfig(3)
  for (let i = 0; i < 50; i++) await timedRun(config, "live")
  const warm: Array<number> = []
  const warmCpu: Array<number> = []
  for (let i = 0; i < 20; i++) {
    const run = await timedRun(config, "live")
    warm.push(run.wallMs)
    warmCpu.push(run.cpuMs)
  }
  line(
    "live 3 agents, 20 runs after 50 more warm-ups: wall ms median / p90",
    `${fmt(median(warm))} / ${fmt(percentile(warm, 90))}   cpu ms median ${fmt(median(warmCpu))}   target: < ${TARGET_3_AGENTS_MS} ms`,
  )
}

/** call_start -> call_end of every call of a run that was not cut off, in ms. */
const callSpans = (run: TimedRun): Array<number> => {
  const starts = new Map<number, number>()
  const spans: Array<number> = []
  for (const { event, at } of run.events) {
    if (event._tag === "call_start") starts.set(event.call, at)
    if (event._tag === "call_end" && event.error !== "cancelled") spans.push(at - (starts.get(event.call) ?? at))
  }
  return spans
}

const IO_KINDS: ReadonlyArray<IoKind> = ["event append", "status.json write", "llm_log write", "final/ files write", "agent output append"]

export const whereTimeGoesBench = async (): Promise<void> => {
  const runs = 20
  console.log(`# 1b. Where a 3-agent zero-delay run's time goes (${runs} runs each, per run; writes summed, concurrent ones overlap)`)
  const config = convergingConfig(3)
  for (const mode of ["live", "memory"] as const satisfies ReadonlyArray<Mode>) {
    const profile: IoProfile = new Map()
    const spans: Array<number> = []
    for (let i = 0; i < runs; i++) spans.push(...callSpans(await timedRun(config, mode, profile)))
    for (const kind of IO_KINDS) {
      const entry = profile.get(kind) ?? { count: 0, ms: 0 }
      line(`${mode}: ${kind}: count, ms per run`, `${fmt(entry.count / runs, 1)} writes, ${fmt(entry.ms / runs, 3)} ms`)
    }
    line(
      `${mode}: one zero-delay backend call, call_start -> call_end: ms median / p90`,
      `${fmt(median(spans), 3)} / ${fmt(percentile(spans, 90), 3)}`,
    )
  }
}
