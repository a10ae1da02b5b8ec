/**
 * Skills and memory filesystem mode end to end, from source, with the loopback fake OpenAI server.
 *
 * A config with `use_skills` finds the SKILL.md bundles of its `skills_directory` and of `~/.agent/skills`
 * (a bundle with no frontmatter is skipped, in one line), records them (`skills_offered`, each SKILL.md's
 * digest) before the first round, lists them in the system message, and the agent reads one through
 * `read_file .agent/skills/<skill>/SKILL.md`, which is read-only. With `enable_memory_filesystem_mode`, a
 * memory file the agent writes in round 1 reaches round 2's prompt and the presenter's, recorded
 * (`memory_loaded`). A run
 * killed (SIGKILL) after its skills were offered is resumed with the skills its log names, even when the
 * bundle changed on disk since, and `replay --check` says SAME. A session's next turn starts with the memory
 * files its previous turn's final workspace holds (`memory_restored`). In the sandbox, `execute_command` reads the
 * skills' copies read-only.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeLlm, type FakeRequest, hang, offeredTools, promptText, reply, startFakeLlm } from "./support/fake-llm.ts"
import { ENV, eventsPath, expectExit, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

const MARKER = "SKILL-BODY-7f3a"
const SKILL = `---\nname: pdf-tools\ndescription: Fill and merge PDF forms\n---\n# PDF tools\n${MARKER}: use qpdf for merging.\n`
const MEMORY = "---\nname: findings\ndescription: what round 1 found\n---\nThe answer is four, checked twice.\n"
const sha = (text: string) => createHash("sha256").update(text).digest("hex")
const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((e) => e.type === type)

/** The skills directory, `~/.agent/skills` and a bad bundle, in a fresh working directory. */
const skillTree = () => {
  const cwd = sandbox()
  fs.mkdirSync(nodePath.join(cwd, "my_skills", "pdf"), { recursive: true })
  fs.writeFileSync(nodePath.join(cwd, "my_skills", "pdf", "SKILL.md"), SKILL)
  fs.mkdirSync(nodePath.join(cwd, "my_skills", "broken"), { recursive: true })
  fs.writeFileSync(nodePath.join(cwd, "my_skills", "broken", "SKILL.md"), "no frontmatter here\n")
  const home = nodePath.join(cwd, "home")
  fs.mkdirSync(nodePath.join(home, ".agent", "skills", "notes"), { recursive: true })
  fs.writeFileSync(nodePath.join(home, ".agent", "skills", "notes", "SKILL.md"), "---\nname: notes\ndescription: Take notes\n---\nbody\n")
  return { cwd, home }
}

const doc = (fake: FakeLlm) => ({
  agents: [{ id: "agent_a", backend: { type: "openai", model: "fake-model", base_url: fake.openAiBaseUrl, cwd: "workspace" } }],
  orchestrator: { coordination: { use_skills: true, skills_directory: "my_skills", enable_memory_filesystem_mode: true } },
  timeout_settings: { orchestrator_timeout_seconds: 60, agent_timeout_seconds: 30 },
})

/** Round 1: read the skill, write a memory file, answer; round 2: vote; the presentation: "Four." */
const agent = (req: FakeRequest): Behaviour => {
  const text = promptText(req)
  const tools = offeredTools(req)
  if (!tools.includes("new_answer") && !tools.includes("vote")) return reply({ text: "Four." })
  if (text.includes("<agent1.1>")) return reply({ toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: "checked" } }] })
  if (!text.includes(MARKER)) return reply({ toolCalls: [{ name: "read_file", args: { path: ".agent/skills/pdf-tools/SKILL.md" } }] })
  if (!text.includes("findings.md")) {
    return reply({ toolCalls: [{ name: "write_file", args: { path: "memory/short_term/findings.md", content: MEMORY } }] })
  }
  if (!text.includes("is read-only: it is in the skills")) {
    return reply({ toolCalls: [{ name: "write_file", args: { path: ".agent/skills/pdf-tools/SKILL.md", content: "mine now" } }] })
  }
  return reply({ toolCalls: [{ name: "new_answer", args: { content: "draft: four" } }] })
}

/** `replay --check` of `dir` says SAME. */
const expectReplaySame = async (dir: string, cwd: string, env: Record<string, string | undefined>) => {
  const check = await runCli("source", ["replay", dir, "--check"], { cwd, env })
  expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
}

const systemOf = (req: FakeRequest): string => {
  const b = req.body ?? {}
  return typeof b.instructions === "string" ? b.instructions : JSON.stringify(b.messages?.[0] ?? b.input?.[0] ?? "")
}

describe("use_skills and enable_memory_filesystem_mode", () => {
  test("the skills found reach the system message and read_file; round 1's memory file reaches round 2; replay says SAME", async () => {
    const fake = await startFakeLlm({ respond: agent })
    try {
      const { cwd, home } = skillTree()
      const r = await runCli("source", ["--automation", "--config", writeConfig(cwd, doc(fake)), "What is 2+2?"], {
        cwd,
        env: { ...ENV, HOME: home },
        timeoutMs: 60_000,
      })
      expectExit(r, 0)
      const dir = lineValue(r, "LOG_DIR")
      const events = readEvents(dir)
      const [offered] = ofType(events, "skills_offered")
      expect(offered.skills).toEqual([
        {
          name: "pdf-tools",
          description: "Fill and merge PDF forms",
          location: "project",
          path: "skills/pdf-tools",
          sha256: sha(SKILL),
          files: 1,
        },
        expect.objectContaining({ name: "notes", location: "user", path: "skills/notes" }),
      ])
      expect(offered.skipped).toEqual([
        { source: nodePath.join(cwd, "my_skills", "broken"), reason: expect.stringContaining("does not open with a --- line") },
      ])
      // Offered before the first round.
      expect(events.findIndex((e) => e.type === "skills_offered")).toBeLessThan(events.findIndex((e) => e.type === "round_started"))
      const first = fake.requests[0]!
      expect(systemOf(first)).toContain("pdf-tools (project): Fill and merge PDF forms")
      expect(systemOf(first)).toContain(".agent/skills/pdf-tools/SKILL.md")
      const reads = ofType(events, "tool_call_finished").filter((e) => e.tool === "read_file")
      expect(reads).toMatchObject([{ ok: true, result: SKILL }])
      const writes = ofType(events, "tool_call_finished").filter((e) => e.tool === "write_file")
      expect(writes.map((e) => e.ok)).toEqual([true, false])
      expect(writes[1].error).toContain("read-only")
      expect(fs.readFileSync(nodePath.join(dir, "skills", "pdf-tools", "SKILL.md"), "utf8")).toBe(SKILL)
      // The memory folders, then round 1's memory file in round 2's prompt.
      expect(fs.statSync(nodePath.join(dir, "workspaces", "agent1", "memory", "long_term")).isDirectory()).toBe(true)
      const loaded = ofType(events, "memory_loaded")
      expect(loaded.map((e) => [e.round, e.presentation === true, e.files.length])).toEqual([
        [1, false, 0],
        [2, false, 1],
        [3, true, 1],
      ])
      expect(loaded[1].files[0]).toEqual({
        from: "workspace",
        tier: "short_term",
        name: "findings.md",
        description: "what round 1 found",
        sha256: sha(MEMORY),
        bytes: Buffer.byteLength(MEMORY),
        content: "The answer is four, checked twice.",
      })
      const round2 = fake.requests.find((q) => promptText(q).includes("<agent1.1>"))!
      expect(systemOf(round2)).toContain("The answer is four, checked twice.")
      // The presenter is shown the memories and asked to consolidate them in its workspace.
      const presentation = fake.requests.at(-1)!
      expect(offeredTools(presentation)).not.toContain("vote")
      expect(systemOf(presentation)).toContain("The answer is four, checked twice.")
      expect(systemOf(presentation)).toContain("### Consolidating memory")
      await expectReplaySame(dir, cwd, { ...ENV, HOME: home })
    } finally {
      fake.stop()
    }
  }, 120_000)

  test("resume after SIGKILL offers the recorded skills, not a new scan; replay says SAME", async () => {
    const phase: { respond: (req: FakeRequest) => Behaviour } = { respond: () => hang() }
    const fake = await startFakeLlm({ respond: (req) => phase.respond(req) })
    try {
      const { cwd, home } = skillTree()
      const env = { ...ENV, HOME: home }
      const config = writeConfig(cwd, doc(fake))
      const first = await startCli("source", ["--automation", "--config", config, "What is 2+2?"], { cwd, env })
      const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      await fake.waitForRequest(1)
      first.proc.kill("SIGKILL")
      expect((await first.done).signal).toBe("SIGKILL")
      expect(ofType(readEvents(dir), "skills_offered")).toHaveLength(1)
      // The bundle changes on disk; the resumed run offers what its log names.
      fs.writeFileSync(nodePath.join(cwd, "my_skills", "pdf", "SKILL.md"), "---\nname: pdf-tools\ndescription: CHANGED\n---\nnew\n")
      const before = fake.requests.length
      phase.respond = agent
      const r = await runCli("source", ["resume", "--automation", dir], { cwd, env, timeoutMs: 60_000 })
      expectExit(r, 0)
      const events = readEvents(dir)
      expect(ofType(events, "skills_offered")).toHaveLength(1)
      expect(ofType(events, "skills_offered")[0].skills[0].sha256).toBe(sha(SKILL))
      const resumed = fake.requests.slice(before)
      expect(resumed.length).toBeGreaterThan(0)
      for (const q of resumed.filter((q) => offeredTools(q).includes("new_answer"))) {
        expect(systemOf(q)).toContain("Fill and merge PDF forms")
        expect(systemOf(q)).not.toContain("CHANGED")
      }
      expect(ofType(events, "tool_call_finished").find((e) => e.tool === "read_file")).toMatchObject({ ok: true, result: SKILL })
      expect(fs.existsSync(eventsPath(dir))).toBe(true)
      await expectReplaySame(dir, cwd, env)
    } finally {
      fake.stop()
    }
  }, 120_000)

  test("a session's next turn starts with the memory its previous turn ended with (memory_restored)", async () => {
    /** Round 1 writes a memory file (turn 1 only), then answers; round 2 votes; the presentation: "Four." */
    const respond = (req: FakeRequest): Behaviour => {
      const text = promptText(req)
      const tools = offeredTools(req)
      if (!tools.includes("new_answer") && !tools.includes("vote")) return reply({ text: "Four." })
      if (text.includes("<agent1.1>")) return reply({ toolCalls: [{ name: "vote", args: { agent_id: "agent1", reason: "checked" } }] })
      if (!text.includes("checked twice") && !text.includes("wrote ")) {
        return reply({ toolCalls: [{ name: "write_file", args: { path: "memory/short_term/findings.md", content: MEMORY } }] })
      }
      return reply({ toolCalls: [{ name: "new_answer", args: { content: "draft: four" } }] })
    }
    const fake = await startFakeLlm({ respond })
    try {
      const cwd = sandbox()
      const config = writeConfig(cwd, {
        ...doc(fake),
        orchestrator: { coordination: { enable_memory_filesystem_mode: true } },
      })
      const turn = async (question: string) => {
        const r = await runCli("source", ["--automation", "--session-id", "s1", "--config", config, question], {
          cwd,
          env: ENV,
          timeoutMs: 60_000,
        })
        expectExit(r, 0)
        return lineValue(r, "LOG_DIR")
      }
      const first = await turn("What is 2+2?")
      expect(ofType(readEvents(first), "memory_restored")).toEqual([])
      expect(fs.readFileSync(nodePath.join(first, "final", "agent_a", "workspace", "memory", "short_term", "findings.md"), "utf8")).toBe(
        MEMORY,
      )
      const before = fake.requests.length
      const second = await turn("And doubled?")
      const events = readEvents(second)
      expect(ofType(events, "memory_restored")).toEqual([
        expect.objectContaining({
          from: first,
          agents: ["agent_a"],
          files: [{ tier: "short_term", name: "findings.md", sha256: sha(MEMORY), bytes: Buffer.byteLength(MEMORY) }],
        }),
      ])
      expect(events.findIndex((e) => e.type === "memory_restored")).toBeLessThan(events.findIndex((e) => e.type === "round_started"))
      // The second turn's first round is shown it, and writes nothing new.
      expect(systemOf(fake.requests[before]!)).toContain("The answer is four, checked twice.")
      expect(ofType(events, "tool_call_finished")).toEqual([])
      await expectReplaySame(second, cwd, ENV)
    } finally {
      fake.stop()
    }
  }, 120_000)

  test("in the sandbox, execute_command reads the skills' copies and cannot write them", async () => {
    const { cwd, home } = skillTree()
    const config = writeConfig(cwd, {
      agents: [
        {
          id: "coder",
          backend: {
            type: "scripted",
            cwd: "workspace",
            enable_mcp_command_line: true,
            command_line_execution_mode: "sandbox",
            script: [
              { tool: "execute_command", args: { command: "cat ../../skills/pdf-tools/SKILL.md" } },
              { tool: "execute_command", args: { command: "echo x > ../../skills/pdf-tools/SKILL.md" } },
              { new_answer: "done" },
            ],
            vote: "agent1",
            final: "done",
          },
        },
      ],
      orchestrator: { coordination: { use_skills: true, skills_directory: "my_skills" } },
      timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90, tool_timeout_seconds: 60 },
    })
    const r = await runCli("source", ["--automation", "--config", config, "Use the skill."], {
      cwd,
      env: { ...ENV, HOME: home },
      timeoutMs: 110_000,
    })
    expectExit(r, 0)
    const dir = lineValue(r, "LOG_DIR")
    const [read, write] = ofType(readEvents(dir), "tool_call_finished")
    expect(read).toMatchObject({ ok: true })
    expect(read.result).toContain(MARKER)
    expect(JSON.parse(write.result)).toMatchObject({ success: false, stderr: expect.stringContaining("Read-only file system") })
    expect(fs.readFileSync(nodePath.join(dir, "skills", "pdf-tools", "SKILL.md"), "utf8")).toBe(SKILL)
  }, 120_000)
})
