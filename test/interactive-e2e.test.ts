/**
 * Issue 15: interactive mode end to end, the compiled binary in tmux (its own
 * tmux server, 120x40), read back with `capture-pane`. With a config and no
 * question on a terminal, massgen opens a prompt: a turn runs with the live
 * view and ends with its final answer shown; the next turn sees the first
 * (its `run_started` records the conversation); Ctrl+C during a turn stops
 * that turn (recorded interrupted, with the command that resumes it) and comes
 * back to the prompt; /history, /cost, /status, /reset, /help answer; Ctrl+D
 * quits with exit 0, and so does a second Ctrl+C at the prompt; a question
 * over `--max-question-bytes` is refused at the prompt.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { readEventsText } from "../src/domain/log/index.ts"
import { BINARY, cleanupSandboxes, ensureBinary, sandbox, writeConfig } from "./support/cli.ts"
import { tmuxServer } from "./support/tmux.ts"

const { tmux, start, screen: capture, waitFor: poll, kill } = tmuxServer("massgen-interactive")
const screen = (name: string) => capture(name, 200)
const waitFor = (name: string, check: (s: string) => boolean, what: string, timeoutMs = 30_000) => poll(name, check, what, timeoutMs, 200)
/** How many prompts the screen shows: one more each time the prompt comes back. */
const prompts = (s: string) => s.split("\n").filter((l) => l.startsWith("massgen>")).length
const type = (name: string, text: string) => tmux("send-keys", "-t", name, "-l", text)
const enter = (name: string) => tmux("send-keys", "-t", name, "Enter")

beforeAll(async () => {
  await ensureBinary()
})
afterAll(() => {
  kill()
  cleanupSandboxes()
})

const TEAM = {
  agents: [
    { id: "agent_a", backend: { type: "scripted", answer: "Four.", vote: "agent1", final: "The answer is 4.", delay_seconds: 1.5 } },
    { id: "agent_b", backend: { type: "scripted", answer: "4", vote: "agent1" } },
  ],
}

describe("interactive mode in tmux (compiled binary)", () => {
  test("turns with the live view, history between them, Ctrl+C stops a turn and returns to the prompt, slash commands, Ctrl+D quits", async () => {
    const dir = sandbox()
    writeConfig(dir, TEAM)
    const name = start(dir, [BINARY, "--config", "config.yaml"])
    await waitFor(name, (s) => prompts(s) === 1, "the prompt")
    type(name, "What is 2+2?")
    enter(name)
    const first = await waitFor(name, (s) => prompts(s) === 2, "the prompt after the first turn")
    expect(first).toContain("Final answer · agent_a")
    expect(first).toContain("The answer is 4.")

    type(name, "And doubled?")
    enter(name)
    await waitFor(name, (s) => s.includes("Q: And doubled?"), "the second turn's live view")
    tmux("send-keys", "-t", name, "C-c")
    const stopped = await waitFor(name, (s) => prompts(s) === 3, "the prompt after the stopped turn")
    expect(stopped).toContain("resume with: massgen resume")

    const logs = nodePath.join(dir, ".massgen", "massgen_logs")
    const [firstDir, secondDir] = fs
      .readdirSync(logs)
      .sort()
      .map((d) => nodePath.join(logs, d))
    const events = readEventsText(fs.readFileSync(nodePath.join(secondDir!, "events.jsonl"), "utf8")).events
    expect(events[0]).toMatchObject({
      question: "And doubled?",
      conversation: [
        { role: "user", content: "What is 2+2?" },
        { role: "assistant", content: "The answer is 4." },
      ],
    })
    expect(events.at(-1)).toMatchObject({ _tag: "run_finished", reason: "interrupted" })
    expect(firstDir).toBeDefined()

    type(name, "/history")
    enter(name)
    await waitFor(name, (s) => prompts(s) === 4, "the prompt after /history")
    type(name, "/cost")
    enter(name)
    const cost = await waitFor(name, (s) => prompts(s) === 5, "the prompt after /cost")
    expect(cost).toContain("1. What is 2+2?")
    expect(cost).toContain("   → The answer is 4.")
    expect(cost).toContain("2. And doubled?")
    expect(cost).toContain("(no answer: interrupted)")
    expect(cost).toMatch(/Session session_\S+: 2 turns, [\d,]+ tokens, cost \$—/)
    for (const [command, seen] of [
      ["/status", "Config: config.yaml"],
      ["/reset", "New session session_"],
      ["/help", "/history   the questions and answers so far"],
      ["/nope", "unknown command /nope"],
    ] as const) {
      const before = prompts(screen(name))
      type(name, command)
      enter(name)
      expect(await waitFor(name, (s) => prompts(s) === before + 1, `the prompt after ${command}`)).toContain(seen)
    }
    tmux("send-keys", "-t", name, "C-d")
    const end = await waitFor(name, (s) => s.includes("EXIT="), "the end")
    expect(end).toContain("EXIT=0")
    expect(end).toContain("Bye. Session session_")
  }, 120_000)

  test("a question over --max-question-bytes is refused at the prompt: nothing runs, the prompt comes back", async () => {
    const dir = sandbox()
    writeConfig(dir, TEAM)
    const name = start(dir, [BINARY, "--config", "config.yaml", "--max-question-bytes", "10"])
    await waitFor(name, (s) => prompts(s) === 1, "the prompt")
    type(name, "What is two plus two?")
    enter(name)
    const refused = await waitFor(name, (s) => prompts(s) === 2, "the prompt after the refused question")
    expect(refused).toContain("That question is over the question limit of 10 bytes (--max-question-bytes 10); nothing was run.")
    expect(fs.existsSync(nodePath.join(dir, ".massgen", "massgen_logs"))).toBe(false)
    tmux("send-keys", "-t", name, "C-d")
    expect(await waitFor(name, (s) => s.includes("EXIT="), "the end")).toContain("EXIT=0")
  }, 60_000)

  test("a second Ctrl+C at the prompt quits, exit 0", async () => {
    const dir = sandbox()
    writeConfig(dir, TEAM)
    const name = start(dir, [BINARY, "--config", "config.yaml"])
    await waitFor(name, (s) => prompts(s) === 1, "the prompt")
    tmux("send-keys", "-t", name, "C-c")
    await waitFor(name, (s) => s.includes("(Ctrl+C again or Ctrl+D to quit)"), "the hint")
    tmux("send-keys", "-t", name, "C-c")
    expect(await waitFor(name, (s) => s.includes("EXIT="), "the end")).toContain("EXIT=0")
  }, 60_000)
})
