/**
 * Long texts end to end (issue 25): a long question and a long answer are
 * written once in the log directory, in the blob store, however many files
 * show them. One agent on the loopback fake (Chat Completions), from source.
 *
 * - A ~900 KB question (under the default `--max-question-bytes`): the log
 *   directory is under 2 × the question + 64 KiB, the question (as it is, or
 *   escaped as in JSON) is in exactly one file, `blobs/<sha256>.txt`; every
 *   request still holds it whole; `status.json` and `execution_metadata.yaml`
 *   show its beginning and name the blob; `replay --check` and `status` work.
 * - A 2 MB answer (and a 100 KB question): the run is killed in its vote
 *   round and resumed; the resumed requests hold the question and the answer
 *   whole, read back from the blob store; each is in exactly one file; the
 *   final answer is the one the model gave; `replay --check` says SAME.
 * - A session's next turn: the long question of the turn before comes back
 *   from that turn's blob store into the conversation, kept once in its own.
 * - A 20 MB question with `--max-question-bytes` raised: the run completes and
 *   its log directory is under 1.5 × 20 MB.
 *
 * Nothing measures time: the tests wait on requests at the fake and exits.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { parse as parseYaml } from "yaml"
import { blobPath } from "../src/domain/run-paths.ts"
import { hashText } from "../src/lib/sha256.ts"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeRequest, hang, NO_PROXY_ENV, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { eventsOf, filesUnder, logDirOf, shown, statusOf } from "./support/run-output.ts"

afterAll(() => {
  if (process.env.KEEP_SANDBOXES === undefined) cleanupSandboxes()
})

const TIMEOUT_MS = 180_000
const ENV = { ...NO_PROXY_ENV, OPENAI_API_KEY: "sk-fake", MASSGEN_LOG_BASE_DIR: undefined }
const SMALL = 64 * 1024

/** A text of about `bytes` bytes, of lines with quotes (JSON escapes them), each line numbered so that no piece repeats; nothing to trim at its ends. */
const textOf = (mark: string, bytes: number): string => {
  const lines: Array<string> = []
  let size = 0
  for (let i = 0; size < bytes; i++) {
    const line = `${mark} ${i}: a "quoted" word, then more words`
    lines.push(line)
    size += line.length + 1
  }
  return lines.join("\n")
}

/** `text` as it is inside a JSON string. */
const escaped = (text: string): string => JSON.stringify(text).slice(1, -1)

/** The files below `dir` holding `text`, as it is or as JSON writes it. */
const filesHolding = (dir: string, text: string): Array<string> =>
  filesUnder(dir).filter((f) => {
    const content = fs.readFileSync(nodePath.join(dir, f), "utf8")
    return content.includes(text) || content.includes(escaped(text))
  })

const sizeOf = (dir: string): number => filesUnder(dir).reduce((n, f) => n + fs.statSync(nodePath.join(dir, f)).size, 0)

const configFor = (cwd: string, baseUrl: string) =>
  writeConfig(cwd, { agents: [{ id: "agent_a", backend: { type: "chatcompletion", model: "m", base_url: baseUrl } }] })

/** A lone agent: `answer` in its first round, a vote for itself after, "Four." as the presentation. */
const lone =
  (answer: string) =>
  (req: FakeRequest): Behaviour => {
    const tools = offeredTools(req)
    if (tools.length === 0) return reply({ text: "Four." })
    if (tools.includes("new_answer") && !promptText(req).includes("<agent1.1>"))
      return reply({ toolCalls: [{ name: "new_answer", args: { content: answer } }] })
    return reply({ toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: "good" } }] })
  }

const writeQuestion = (cwd: string, question: string): string => {
  const path = nodePath.join(cwd, "question.txt")
  fs.writeFileSync(path, question)
  return path
}

describe("long texts are written once, in the blob store", () => {
  test(
    "a ~900 KB question: one file holds it, the log is under 2 × its size + 64 KiB, replay --check and status work",
    async () => {
      const question = textOf("Q", 900_000)
      const fake = await startFakeLlm({ respond: lone("draft") })
      try {
        const cwd = sandbox()
        const config = configFor(cwd, fake.openAiBaseUrl)
        const r = await runCli("source", ["--automation", "--config", config, "--question-file", writeQuestion(cwd, question)], {
          cwd,
          env: ENV,
          timeoutMs: TIMEOUT_MS,
        })
        expect({ code: r.exitCode, out: shown(r) }).toEqual({ code: 0, out: expect.any(String) })
        const dir = logDirOf(r)
        // Every request holds the whole question: only the log keeps it once.
        expect(fake.requests.length).toBe(3)
        for (const req of fake.requests) expect(promptText(req).includes(escaped(question))).toBe(true)
        const blob = blobPath(hashText(question))
        expect(filesHolding(dir, question)).toEqual([blob])
        expect(fs.readFileSync(nodePath.join(dir, blob), "utf8")).toBe(question)
        expect(sizeOf(dir)).toBeLessThan(2 * question.length + SMALL)
        // The files that show the question show its beginning and where it is.
        const note = `… [${question.length} characters in all: ${blob}]`
        expect(statusOf(dir).meta.question).toBe(`${question.slice(0, 1000)}${note}`)
        const metadata = parseYaml(fs.readFileSync(nodePath.join(dir, "execution_metadata.yaml"), "utf8"))
        expect(metadata.question).toBe(`${question.slice(0, 1000)}${note}`)
        expect(eventsOf(dir)[0]).toMatchObject({ type: "run_started", question: { $blob: hashText(question) } })

        const check = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
        const status = await runCli("source", ["status", dir, "--json"], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect(status.exitCode).toBe(0)
        expect(JSON.parse(status.stdout).results.winner).toBe("agent_a")
      } finally {
        fake.stop()
      }
    },
    TIMEOUT_MS,
  )

  test(
    "a 2 MB answer, killed in its vote round and resumed: the texts come back from the blob store, each in one file",
    async () => {
      const question = textOf("Q", 100_000)
      const answer = textOf("A", 2_000_000)
      const phase: { respond: (req: FakeRequest) => Behaviour } = {
        respond: (req) => (promptText(req).includes("<agent1.1>") ? hang() : lone(answer)(req)),
      }
      const fake = await startFakeLlm({ respond: (req) => phase.respond(req) })
      try {
        const cwd = sandbox()
        const config = configFor(cwd, fake.openAiBaseUrl)
        const args = ["--automation", "--config", config, "--question-file", writeQuestion(cwd, question)]
        const first = await startCli("source", args, { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
        // The vote round's request is out (its call_start recorded before it): the answer is in the log.
        await fake.waitForRequest(2)
        first.proc.kill("SIGKILL")
        expect((await first.done).signal).toBe("SIGKILL")
        expect(eventsOf(dir).map((e) => e.type)).toContain("answer_submitted")

        phase.respond = lone(answer)
        const resumed = await runCli("source", ["resume", "--automation", dir], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect({ code: resumed.exitCode, out: shown(resumed) }).toEqual({ code: 0, out: expect.any(String) })
        // The requests after the resume were made from the log: the question and the answer whole.
        const after = fake.requests.slice(2)
        expect(after.length).toBe(2)
        for (const req of after) {
          expect(promptText(req).includes(escaped(question))).toBe(true)
          // The presentation shows each answer as a JSON string, as MassGen does.
          const prompt = promptText(req)
          expect(prompt.includes(escaped(answer)) || prompt.includes(escaped(escaped(answer)))).toBe(true)
        }
        expect(fs.readFileSync(nodePath.join(dir, "final", "agent_a", "answer.txt"), "utf8")).toBe("Four.")
        expect(filesHolding(dir, question)).toEqual([blobPath(hashText(question))])
        expect(filesHolding(dir, answer)).toEqual([blobPath(hashText(answer))])
        expect(sizeOf(dir)).toBeLessThan(2 * (question.length + answer.length) + SMALL)

        const check = await runCli("source", ["replay", dir, "--check"], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
      } finally {
        fake.stop()
      }
    },
    TIMEOUT_MS,
  )

  test(
    "a session's next turn reads the long question of the turn before from its blob store, and keeps it once in its own",
    async () => {
      const question = textOf("Q", 100_000)
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        agents: [{ id: "a", backend: { type: "scripted", answer: "Four.", vote: "agent1", final: "Four." } }],
      })
      const turn = (args: ReadonlyArray<string>) =>
        runCli("source", ["--automation", "--config", config, "--session-id", "s1", ...args], { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
      const first = await turn(["--question-file", writeQuestion(cwd, question)])
      expect({ code: first.exitCode, out: shown(first) }).toEqual({ code: 0, out: expect.any(String) })
      const second = await turn(["And doubled?"])
      expect({ code: second.exitCode, out: shown(second) }).toEqual({ code: 0, out: expect.any(String) })
      const dir = logDirOf(second)
      expect(eventsOf(dir)[0]).toMatchObject({
        type: "run_started",
        question: "And doubled?",
        conversation: [
          { role: "user", content: { $blob: hashText(question) } },
          { role: "assistant", content: "Four." },
        ],
      })
      expect(filesHolding(dir, question)).toEqual([blobPath(hashText(question))])
    },
    TIMEOUT_MS,
  )

  test(
    "a 20 MB question with --max-question-bytes raised runs to completion; its log directory stays under 1.5 × 20 MB",
    async () => {
      const question = textOf("Q", 20_000_000)
      const fake = await startFakeLlm({ respond: lone("draft") })
      try {
        const cwd = sandbox()
        const config = configFor(cwd, fake.openAiBaseUrl)
        const args = [
          "--automation",
          "--config",
          config,
          "--max-question-bytes",
          "25000000",
          "--question-file",
          writeQuestion(cwd, question),
        ]
        const r = await runCli("source", args, { cwd, env: ENV, timeoutMs: TIMEOUT_MS })
        expect({ code: r.exitCode, out: shown(r) }).toEqual({ code: 0, out: expect.any(String) })
        expect(r.lines.at(-1)).toMatch(/^COMPLETED: 1 agent, /)
        expect(sizeOf(logDirOf(r))).toBeLessThan(1.5 * question.length)
      } finally {
        fake.stop()
      }
    },
    TIMEOUT_MS,
  )
})
