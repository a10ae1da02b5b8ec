/**
 * Media end to end, through the CLI and the real OpenAI SDK against the loopback fake: a model calls MassGen's
 * `understand_image` on a PNG of its workspace, the image reaches the fake as an `image_url` part, and the fake's
 * description reaches the answer; massgen is killed (SIGKILL) after the tool call is recorded, `resume` finishes
 * the run without asking about the image again, and `replay --check` is SAME. `--image` and `@path` send a file
 * with the question to every round (also after a resume), recorded by hash with its bytes in the blob store; a
 * provider that does not take a file refuses at start in one line (exit 1).
 */
import { afterAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox, startCli, writeConfig } from "./support/cli.ts"
import { type Behaviour, type FakeRequest, hang, loneCouncilReply, NO_PROXY_ENV, reply, startFakeLlm } from "./support/fake-llm.ts"
import { ENV, expectExit, lineValue, readEvents } from "./support/run-dirs.ts"

afterAll(() => cleanupSandboxes())

/** A 4x4 red PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==", "base64")
const DATA_URL = `data:image/png;base64,${PNG.toString("base64")}`
const env = { ...ENV, ...NO_PROXY_ENV }

type Message = { role?: string; content?: unknown }
const messagesOf = (req: FakeRequest): Array<Message> => (req.body?.messages ?? []) as Array<Message>
/** The image parts of a Chat Completions request. */
const imagesOf = (req: FakeRequest): Array<string> =>
  messagesOf(req).flatMap((m) =>
    Array.isArray(m.content)
      ? (m.content as Array<{ type: string; image_url?: { url: string } }>)
          .filter((p) => p.type === "image_url")
          .map((p) => p.image_url!.url)
      : [],
  )
const toolResultOf = (req: FakeRequest): string | undefined => messagesOf(req).find((m) => m.role === "tool")?.content as string | undefined

const expectReplaySame = async (dir: string, cwd: string) => {
  const check = await runCli("source", ["replay", dir, "--check"], { cwd, env })
  expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: expect.stringContaining("SAME") })
}

const UNDERSTAND_IMAGE = {
  name: ["understand_image"],
  category: "multimodal",
  path: "massgen/tool/_multimodal_tools/understand_image.py",
  function: ["understand_image"],
}

const agentDoc = (baseUrl: string, extra: Record<string, unknown> = {}) => ({
  agents: [{ id: "viewer", backend: { type: "chatcompletion", model: "m", base_url: baseUrl, api_key: "sk-x", ...extra } }],
  orchestrator: { skip_final_presentation: true },
  timeout_settings: { orchestrator_timeout_seconds: 100, agent_timeout_seconds: 90, tool_timeout_seconds: 60 },
})

describe("understand_image on a workspace PNG", () => {
  test("the image reaches the model, its text the answer; killed after the call, resume does not ask again; replay is SAME", async () => {
    const cwd = sandbox()
    let placed: () => void = () => undefined
    const imagePlaced = new Promise<void>((resolve) => (placed = resolve))
    let killPoint: () => void = () => undefined
    const atKillPoint = new Promise<void>((resolve) => (killPoint = resolve))
    let resumed = false
    const respond = async (req: FakeRequest): Promise<Behaviour> => {
      if (imagesOf(req).length > 0) return reply({ text: "A small red square." })
      const result = toolResultOf(req)
      if (result !== undefined) {
        if (!resumed) {
          killPoint()
          return hang()
        }
        return reply({ toolCalls: [{ name: "new_answer", args: { content: `Seen: ${JSON.parse(result).response}` } }] })
      }
      if (!JSON.stringify(req.body).includes("<agent1.1>") && req.body?.tools !== undefined) {
        await imagePlaced
        return reply({ toolCalls: [{ name: "custom_tool__understand_image", args: { image_path: "red.png", prompt: "What is it?" } }] })
      }
      return loneCouncilReply(req)
    }
    const fake = await startFakeLlm({ respond })
    try {
      const config = writeConfig(cwd, agentDoc(fake.openAiBaseUrl, { cwd: "workspace1", custom_tools: [UNDERSTAND_IMAGE] }))
      const first = await startCli("source", ["--automation", "--config", config, "What is in red.png?"], { cwd, env })
      const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      const workspace = nodePath.join(dir, "workspaces", "agent1")
      fs.mkdirSync(workspace, { recursive: true })
      fs.writeFileSync(nodePath.join(workspace, "red.png"), PNG)
      placed()
      await atKillPoint
      first.proc.kill("SIGKILL")
      expect((await first.done).signal).toBe("SIGKILL")
      const before = readEvents(dir)
      expect(before.filter((e) => e.type === "tool_call_finished").map((e) => [e.tool, e.ok])).toEqual([
        ["custom_tool__understand_image", true],
      ])
      const asked = fake.requests.filter((r) => imagesOf(r).length > 0)
      expect(asked.map(imagesOf)).toEqual([[DATA_URL]])
      expect(JSON.stringify(asked[0]!.body.messages)).toContain("What is it?")

      resumed = true
      const r = await runCli("source", ["resume", "--automation", dir], { cwd, env, timeoutMs: 90_000 })
      expectExit(r, 0)
      expect(fs.readFileSync(lineValue(r, "ANSWER_FILE"), "utf8").trim()).toBe("Seen: A small red square.")
      // The image was asked about once, before the kill: the resumed round took the recorded result.
      expect(fake.requests.filter((req) => imagesOf(req).length > 0)).toHaveLength(1)
      const events = readEvents(dir)
      const finished = events.filter((e) => e.type === "tool_call_finished")
      expect(finished).toHaveLength(1)
      expect(JSON.parse(finished[0].result)).toMatchObject({
        success: true,
        operation: "understand_image",
        path: "red.png",
        model: "m",
        response: "A small red square.",
      })
      await expectReplaySame(dir, cwd)
    } finally {
      fake.stop()
    }
  }, 120_000)

  test("a file the tool does not read, or one the provider cannot take, is an error result naming why", async () => {
    const cwd = sandbox()
    let placed: () => void = () => undefined
    const videoPlaced = new Promise<void>((resolve) => (placed = resolve))
    const respond = async (req: FakeRequest): Promise<Behaviour> => {
      const done = messagesOf(req).filter((m) => m.role === "tool").length
      if (req.body?.tools !== undefined && !JSON.stringify(req.body).includes("<agent1.1>")) {
        await videoPlaced
        if (done === 0) return reply({ toolCalls: [{ name: "custom_tool__understand_image", args: { image_path: "notes.txt" } }] })
        if (done === 1) return reply({ toolCalls: [{ name: "custom_tool__understand_video", args: { video_path: "clip.mp4" } }] })
      }
      return loneCouncilReply(req)
    }
    const fake = await startFakeLlm({ respond })
    try {
      const video = {
        ...UNDERSTAND_IMAGE,
        name: ["understand_video"],
        path: "massgen/tool/_multimodal_tools/understand_video.py",
        function: ["understand_video"],
      }
      const config = writeConfig(cwd, agentDoc(fake.openAiBaseUrl, { cwd: "w", custom_tools: [UNDERSTAND_IMAGE, video] }))
      const first = await startCli("source", ["--automation", "--config", config, "Look."], { cwd, env })
      const dir = (await first.waitForLine("LOG_DIR: ")).slice("LOG_DIR: ".length)
      fs.mkdirSync(nodePath.join(dir, "workspaces", "agent1"), { recursive: true })
      fs.writeFileSync(nodePath.join(dir, "workspaces", "agent1", "clip.mp4"), "not really a video")
      placed()
      expectExit(await first.done, 0)
      const finished = readEvents(dir).filter((e) => e.type === "tool_call_finished")
      expect(finished.map((e) => [e.tool, e.ok, e.error])).toEqual([
        [
          "custom_tool__understand_image",
          false,
          expect.stringContaining("notes.txt: understand_image reads png, jpg, jpeg, gif, webp, bmp files"),
        ],
        ["custom_tool__understand_video", false, "failed: type chatcompletion (Chat Completions) takes no video: clip.mp4 cannot be sent"],
      ])
    } finally {
      fake.stop()
    }
  }, 120_000)
})

describe("files with the question", () => {
  test("--image and @path reach every round as image parts, recorded by hash, the bytes in the blob store; replay is SAME", async () => {
    const cwd = sandbox()
    fs.writeFileSync(nodePath.join(cwd, "red.png"), PNG)
    fs.mkdirSync(nodePath.join(cwd, "shots"))
    fs.writeFileSync(nodePath.join(cwd, "shots", "blue.png"), PNG.subarray(0, PNG.length - 1))
    const fake = await startFakeLlm({ respond: loneCouncilReply })
    try {
      const config = writeConfig(cwd, agentDoc(fake.openAiBaseUrl))
      const r = await runCli(
        "source",
        ["--automation", "--config", config, "--image", "red.png", "Compare with @shots/blue.png, mail a@b.png."],
        {
          cwd,
          env,
        },
      )
      expectExit(r, 0)
      const dir = lineValue(r, "LOG_DIR")
      const rounds = fake.requests.filter((req) => req.body?.tools !== undefined)
      expect(rounds.length).toBeGreaterThanOrEqual(2)
      for (const req of rounds)
        expect(imagesOf(req)).toEqual([DATA_URL, `data:image/png;base64,${PNG.subarray(0, PNG.length - 1).toString("base64")}`])
      const lines = fs.readFileSync(nodePath.join(dir, "events.jsonl"), "utf8")
      expect(lines).not.toContain(PNG.toString("base64"))
      const started = readEvents(dir).find((e) => e.type === "run_started")
      expect(started.media.map((m: { name: string; sha256: string; bytes: number }) => [m.name, m.sha256, m.bytes])).toEqual([
        ["red.png", createHash("sha256").update(PNG).digest("hex"), PNG.length],
        [
          "blue.png",
          createHash("sha256")
            .update(PNG.subarray(0, PNG.length - 1))
            .digest("hex"),
          PNG.length - 1,
        ],
      ])
      await expectReplaySame(dir, cwd)
    } finally {
      fake.stop()
    }
  }, 120_000)

  test("a provider that takes no such file, and a file that is not there, stop the run at start in one line", async () => {
    const cwd = sandbox()
    fs.writeFileSync(nodePath.join(cwd, "talk.wav"), "RIFF")
    const doc = { agents: [{ id: "c", backend: { type: "claude", model: "claude-x", api_key: "sk-x" } }] }
    const config = writeConfig(cwd, doc)
    const audio = await runCli("source", ["--automation", "--config", config, "--image", "talk.wav", "Listen."], { cwd, env })
    expect(audio.exitCode).toBe(1)
    expect(audio.stderr.trim()).toBe(
      "massgen: --image talk.wav: agent c: type claude (the Messages API) takes no audio: talk.wav cannot be sent",
    )
    const missing = await runCli("source", ["--automation", "--config", config, "What is @gone.png?"], { cwd, env })
    expect(missing.exitCode).toBe(1)
    expect(missing.stderr.trim()).toBe("massgen: @gone.png: no such file")
    expect(fs.readdirSync(cwd).sort()).toEqual(["config.yaml", "talk.wav"])
  }, 60_000)
})
