/**
 * `massgen serve` under faults: how many runs one client call starts.
 *
 * A served council of scripted agents that fail in one of three ways: the
 * budget is spent on the first calls, every agent's calls fail, the run times
 * out (an agent that never replies, a 1 s orchestrator timeout). Each of the
 * clients people use calls it once with its usual retries: the `openai` SDK
 * (maxRetries 2), the AI SDK's `generateText` through
 * `@ai-sdk/openai-compatible` (its default retries) and LangChain's
 * `ChatOpenAI.invoke` (its default retries). The runs a call started are
 * the log directories it added. Goal: exactly 1 for every call.
 */
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { RETRYING_CLIENTS } from "../test/support/openai-clients.ts"
import { line, startServe, targetLine } from "./support.ts"

const scripted = (id: string, backend: Record<string, unknown>) => ({ id, backend: { type: "scripted", ...backend } })

const FAULTS: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
  [
    "budget spent",
    {
      agents: [
        scripted("a", { model: "m", input_tokens: 1000, answer: "4" }),
        scripted("b", { model: "m", input_tokens: 1000, answer: "5" }),
      ],
      pricing: { m: { input: 1000, output: 0 } },
      orchestrator: { budget_usd: 0.5 },
    },
  ],
  [
    "every agent failed",
    { agents: [scripted("a", { fail_calls: 99, max_retries: 0 }), scripted("b", { fail_calls: 99, max_retries: 0 })] },
  ],
  ["timed out", { agents: [scripted("a", { hang: true })], timeout_settings: { orchestrator_timeout_seconds: 1 } }],
]

const runCount = (dir: string): number => {
  const root = join(dir, ".massgen", "massgen_logs")
  return existsSync(root) ? readdirSync(root).length : 0
}

export const serveFaultsBench = async (): Promise<void> => {
  console.log("# 10c. massgen serve under faults: runs started per client call")
  const counts: Array<number> = []
  for (const [fault, doc] of FAULTS) {
    const { child, dir, url } = await startServe(doc)
    try {
      for (const [i, [client, call]] of RETRYING_CLIENTS.entries()) {
        const before = runCount(dir)
        await call(url, `What is 2+2? (${i})`).catch(() => {})
        const runs = runCount(dir) - before
        counts.push(runs)
        line(`${fault}, ${client}: runs started`, String(runs))
      }
    } finally {
      child.kill("SIGTERM")
      await child.exited
    }
  }
  targetLine("runs started per client call under faults (budget, failures, timeout x 3 clients)", counts, "runs", {
    ratio: (v) => v,
    op: "<=",
    limit: 1,
    text: "exactly 1",
    digits: 0,
    name: "runs",
  })
}

if (import.meta.main) await serveFaultsBench()
