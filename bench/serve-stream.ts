/**
 * `massgen serve` streaming the presenter's answer: how long after the
 * presenter's first token the client has it as content.
 *
 * A child `massgen serve` runs a one-agent council on the loopback fake model
 * (`test/support/fake-llm.ts`, in this process). Each request's presentation
 * call is answered with its first text delta, then held (`gated`) until the
 * client, a plain `fetch` of a Chat Completions stream, has read that text as a
 * `content` delta; the time between the fake writing it and the client reading
 * it is one sample (both read this process's clock). `REQUESTS` requests, one
 * at a time. Target: median under 20 ms.
 */
import { type FakeRequest, gated, loneCouncilReply, offeredTools, startFakeLlm } from "../test/support/fake-llm.ts"
import { startServe, targetLine } from "./support.ts"

const TARGET_MS = 20
const REQUESTS = 30
const WARM_UP = 5
const FIRST = "The answer "

export const serveStreamBench = async (): Promise<void> => {
  console.log("# 10b. massgen serve: the answer streamed as the presenter writes it")
  let wrote = 0
  let gate: () => void = () => {}
  const fake = await startFakeLlm({
    respond: (req: FakeRequest) => {
      if (offeredTools(req).length > 0) return loneCouncilReply(req)
      const held = new Promise<void>((resolve) => (gate = resolve))
      wrote = performance.now()
      return gated({ text: [FIRST, "is 4."] }, FIRST, held)
    },
  })
  const { child, url } = await startServe({
    agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: fake.openAiBaseUrl } }],
  })
  try {
    const body = JSON.stringify({ model: "team", messages: [{ role: "user", content: "What is 2+2?" }], stream: true })
    /** One streamed request: ms from the fake's first token to the client's first content. */
    const ask = async (): Promise<number> => {
      const res = await fetch(`${url}/chat/completions`, { method: "POST", body, headers: { "content-type": "application/json" } })
      if (res.status !== 200 || res.body === null) throw new Error(`serve answered ${res.status}: ${await res.text()}`)
      const decoder = new TextDecoder()
      let text = ""
      let seen: number | null = null
      for await (const chunk of res.body) {
        text += decoder.decode(chunk, { stream: true })
        if (seen === null && text.includes(`"content":${JSON.stringify(FIRST)}`)) {
          seen = performance.now()
          gate()
        }
      }
      if (seen === null) throw new Error("no content arrived")
      return seen - wrote
    }
    for (let i = 0; i < WARM_UP; i++) await ask()
    const samples: Array<number> = []
    for (let i = 0; i < REQUESTS; i++) samples.push(await ask())
    targetLine(`presenter's first token to the client's first content byte, ${REQUESTS} requests, ms median / max`, samples, "ms", {
      ratio: (v) => v,
      op: "<",
      limit: TARGET_MS,
      text: `< ${TARGET_MS} ms`,
      name: "latency",
    })
  } finally {
    child.kill("SIGTERM")
    await child.exited
    fake.stop()
  }
}

if (import.meta.main) await serveStreamBench()
