/**
 * `massgen serve` under load: a child process serving a 3-agent scripted
 * council with zero-delay agents, asked by plain `fetch` clients.
 *
 * - Added latency: one request at a time, A/B interleaved with the same run
 *   done in this process through the same code a request uses
 *   (`openServedRun`: backends, log directory, metadata, the run), medians of
 *   each; the difference is what serving adds (HTTP, JSON, the queue).
 *   Target: under 15 ms.
 * - Throughput: requests per second at concurrency 8 (`--max-concurrent-runs 8`).
 * - Memory: the server's RSS (/proc/PID/status VmRSS) after a warm-up of
 *   `WARM_UP` requests at concurrency 8 (eight runs at once take some 60 MB
 *   more heap than one: the one-at-a-time pairs above are no baseline for
 *   them), then after `BENCH_SERVE_REQUESTS` requests more (1,000 unless set),
 *   sampled every 50 (printed every 250): a leak shows as samples that keep
 *   rising, a plateau as samples that go up and down. The growth is each of
 *   the last 5 samples over the RSS at the warm-up's end (median, and the
 *   worst), as one sample swings 20 MB with the collector. Target: growth
 *   under 50 MB.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { resolveRunConfig } from "../src/cli/run/setup.ts"
import { openServedRun } from "../src/cli/serve/served-run.ts"
import { fmt, line, median, startServe, targetLine } from "./support.ts"

const TARGET_ADDED_MS = 15
const TARGET_RSS_GROWTH_MB = 50
const CONCURRENCY = 8
const PAIRS = 30
const WARM_UP = 200
/** RSS is sampled every this many requests; the last `ENDS` samples are the end. */
const SAMPLE_EVERY = 50
const ENDS = 5

const COUNCIL = {
  agents: [1, 2, 3].map((i) => ({
    id: `agent_${i}`,
    backend: { type: "scripted", answer: `Answer of agent ${i}: four.`, vote: "agent1" },
  })),
}

const rssMb = (pid: number): number => {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return kb ? Number(kb[1]) / 1024 : Number.NaN
}

export const serveBench = async (): Promise<void> => {
  console.log(`# 10. massgen serve: 3 zero-delay scripted agents, concurrency ${CONCURRENCY}`)
  const requests = Number(process.env.BENCH_SERVE_REQUESTS ?? 1000)
  const { child, dir, config, url } = await startServe(COUNCIL, ["--max-concurrent-runs", String(CONCURRENCY)])
  try {
    // Each request its own question: the same request again would be the same run (a retry, `run-registry.ts`).
    let asked = 0
    const ask = async (): Promise<number> => {
      asked += 1
      const body = JSON.stringify({ model: "team", messages: [{ role: "user", content: `What is 2+2? (request ${asked})` }] })
      const t0 = performance.now()
      const res = await fetch(`${url}/chat/completions`, { method: "POST", body, headers: { "content-type": "application/json" } })
      if (res.status !== 200) throw new Error(`serve answered ${res.status}: ${await res.text()}`)
      await res.json()
      return performance.now() - t0
    }
    // The same run in this process, through the code a request runs.
    const loaded = await Effect.runPromise(
      resolveRunConfig(
        {
          _tag: "run",
          question: "",
          configPath: config,
          modelsFlag: null,
          models: [],
          backend: null,
          baseUrl: null,
          systemMessage: null,
          automation: false,
          noDisplay: true,
          orchestratorTimeout: null,
          quick: false,
        },
        process.env,
        dir,
      ),
    )
    const ctx = { env: process.env, cwd: dir, argv: [], version: "bench", printError: () => {} }
    const chat = { model: "team", question: "What is 2+2?", conversation: [], stream: false, includeUsage: false }
    const inProcess = async (): Promise<number> => {
      const t0 = performance.now()
      const opened = await openServedRun({ id: "team", loaded }, chat, ctx)
      if ("failed" in opened) throw new Error(opened.failed)
      const outcome = await opened.run(new Promise(() => {}), () => {})
      if ("failed" in outcome || outcome.reason !== "completed") throw new Error("the in-process run did not complete")
      return performance.now() - t0
    }
    for (let i = 0; i < 20; i++) await Promise.all([ask(), inProcess()])
    const served: Array<number> = []
    const local: Array<number> = []
    for (let i = 0; i < PAIRS; i++) {
      if (i % 2 === 0) {
        served.push(await ask())
        local.push(await inProcess())
      } else {
        local.push(await inProcess())
        served.push(await ask())
      }
    }
    line(`one at a time, ${PAIRS} A/B pairs: served / in-process ms median`, `${fmt(median(served))} / ${fmt(median(local))}`)
    const added = served.map((s, i) => s - local[i]!)
    targetLine("added latency per request (served - in-process), ms median / max", added, "ms", {
      ratio: (v) => v,
      op: "<",
      limit: TARGET_ADDED_MS,
      text: `< ${TARGET_ADDED_MS} ms`,
      name: "added",
    })

    /** `n` requests at concurrency 8; each request's latency, and the RSS every `SAMPLE_EVERY` requests. */
    const load = async (n: number, latencies: Array<number>, samples: Array<number>) => {
      let next = 0
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < n) {
            next += 1
            if (next % SAMPLE_EVERY === 0) samples.push(rssMb(child.pid))
            latencies.push(await ask())
          }
        }),
      )
    }
    await load(WARM_UP, [], [])
    const rssBefore = rssMb(child.pid)
    const t0 = performance.now()
    const latencies: Array<number> = []
    const samples: Array<number> = []
    await load(requests, latencies, samples)
    const seconds = (performance.now() - t0) / 1000
    const rssAfter = rssMb(child.pid)
    line(
      `${requests} requests at concurrency ${CONCURRENCY}: requests/s, latency ms median / p90`,
      `${fmt(requests / seconds, 1)}   ${fmt(median(latencies))} / ${fmt(latencies.sort((a, b) => a - b)[Math.floor(latencies.length * 0.9)]!)}`,
    )
    line(
      `server RSS every 250 requests, MB`,
      samples
        .filter((_, i) => ((i + 1) * SAMPLE_EVERY) % 250 === 0)
        .map((v) => fmt(v, 0))
        .join(" "),
    )
    // The collector's sawtooth moves one sample by 20 MB or more either way: the growth is each of the
    // last samples over the RSS at the warm-up's end (median and worst), not the last sample alone.
    const growth = samples.slice(-ENDS).map((v) => v - rssBefore)
    targetLine(
      `server RSS growth over ${requests} requests after ${WARM_UP} of warm-up, its last ${ENDS} samples, MB (${fmt(rssBefore, 0)} -> ${fmt(rssAfter, 0)} MB)`,
      growth,
      "MB",
      {
        ratio: (v) => v,
        op: "<",
        limit: TARGET_RSS_GROWTH_MB,
        text: `< ${TARGET_RSS_GROWTH_MB} MB`,
        name: "growth",
      },
    )
  } finally {
    child.kill("SIGTERM")
    await child.exited
  }
}

if (import.meta.main) await serveBench()
