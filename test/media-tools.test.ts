/**
 * MassGen's media tools, unit by unit: their arguments read into asks (`mediaAsks`), a call run against a recording
 * backend in a real workspace (`runMediaTool`: what the model is sent, what the tool gives, what it refuses),
 * `enable_multimodal_tools` offering `read_media` as MassGen does, and `generate_media` making an image through the
 * real OpenAI SDK against a loopback images API and writing it into the workspace.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Effect, Either } from "effect"
import { mediaReferences, questionMedia, uploadProblems } from "../src/cli/run/question-media.ts"
import { analyzeConfig, decodeConfig } from "../src/domain/config/index.ts"
import type { LlmRequest } from "../src/domain/llm.ts"
import { initialState } from "../src/domain/state/index.ts"
import { mediaAsks } from "../src/domain/tools/media-tools.ts"
import type { Backend } from "../src/services/backends/index.ts"
import { makeOpenAiResponsesBackend } from "../src/services/backends/openai-responses.ts"
import { runGenerateMedia } from "../src/services/tools/media-generation.ts"
import { type MediaToolsInput, runMediaTool } from "../src/services/tools/media-tools.ts"
import type { ToolContext } from "../src/services/tools/tool-provider.ts"

const workspace = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-media-")))
afterAll(() => fs.rmSync(workspace, { recursive: true, force: true }))
fs.writeFileSync(nodePath.join(workspace, "a.png"), "png-a")
fs.writeFileSync(nodePath.join(workspace, "b.jpg"), "jpg-b")
fs.writeFileSync(nodePath.join(workspace, "notes.md"), "# Notes\nline two\n")
fs.writeFileSync(nodePath.join(workspace, "talk.wav"), "RIFF")
fs.writeFileSync(nodePath.join(workspace, "paper.pdf"), "%PDF-1")
fs.symlinkSync("/etc/hostname", nodePath.join(workspace, "link.png"))

const context: ToolContext = {
  agent: "a",
  round: 1,
  role: "round",
  toolCall: 1,
  callId: "c1",
  state: Effect.succeed(initialState),
  emit: () => Effect.void,
  now: Effect.succeed("2026-01-01T00:00:00.000Z"),
}

/** A backend of `type` that answers every call with a fixed text and keeps the requests. */
const recording = (type: string) => {
  const requests: Array<LlmRequest> = []
  const backend: Backend = {
    type,
    model: "vision-1",
    maxRetries: 0,
    callTimeoutSeconds: null,
    call: (request) =>
      Effect.sync(() => {
        requests.push(request)
        return {
          text: `answer ${requests.length}`,
          reasoning: "",
          toolCalls: [],
          usage: { inputTokens: null, cachedInputTokens: null, outputTokens: null, reasoningTokens: null },
          truncated: null,
          raw: null,
        }
      }),
  }
  const input: MediaToolsInput = {
    agent: { id: "a", anonId: "agent1", systemMessage: null, backend: { type: "openai" } },
    files: { workspace, snapshotPath: (l) => nodePath.join(workspace, "..", l) },
    backend: Effect.succeed(backend),
  }
  return { requests, input }
}

const run = (input: MediaToolsInput, tool: Parameters<typeof runMediaTool>[1], args: Record<string, unknown>) =>
  Effect.runPromise(Effect.either(runMediaTool(input, tool, args, context)))

describe("mediaAsks", () => {
  test("MassGen's arguments: one image or named images, audio paths, read_media's inputs; a wrong one is one line", () => {
    expect(mediaAsks("understand_image", { image_path: "a.png" })).toEqual([
      { files: [{ label: "image_path", path: "a.png" }], prompt: "What's in this image? Please describe it in detail." },
    ])
    expect(mediaAsks("understand_image", { images: { before: "a.png", after: "b.jpg" }, prompt: "Compare", agent_cwd: "/x" })).toEqual([
      {
        files: [
          { label: "before", path: "a.png" },
          { label: "after", path: "b.jpg" },
        ],
        prompt: "Compare",
      },
    ])
    expect(
      mediaAsks("read_media", { inputs: [{ files: { s: "a.png" } }, { files: { t: "talk.wav" }, prompt: "Who?" }], prompt: "What?" }),
    ).toEqual([
      { files: [{ label: "s", path: "a.png" }], prompt: "What?" },
      { files: [{ label: "t", path: "talk.wav" }], prompt: "Who?" },
    ])
    expect(mediaAsks("understand_image", { image_path: "a.png", images: { x: "b.jpg" } })).toBe("give image_path or images, not both")
    expect(mediaAsks("understand_audio", { audio_paths: [] })).toBe("audio_paths must be a non-empty list of paths")
    expect(mediaAsks("understand_video", { video_path: "v.mp4", colour: true })).toBe(
      "understand_video takes no argument colour (it takes video_path, prompt, num_frames, model)",
    )
    expect(mediaAsks("read_media", { continue_from: "conv_1" })).toBe("continue_from is not supported: ask again with the files in inputs")
  })
})

describe("runMediaTool", () => {
  test("an image is sent as a media part with the prompt to the agent's own backend; the result is MassGen's JSON", async () => {
    const { requests, input } = recording("openai")
    const result = await run(input, "understand_image", { image_path: "a.png", prompt: "What colour?" })
    expect(Either.getOrThrow(result)).toBe(
      JSON.stringify(
        { success: true, operation: "understand_image", model: "vision-1", path: "a.png", prompt: "What colour?", response: "answer 1" },
        null,
        2,
      ),
    )
    expect(requests.map((r) => [r.tools, r.messages])).toEqual([
      [
        [],
        [
          {
            role: "user",
            content: "What colour?",
            media: [{ kind: "image", mediaType: "image/png", name: "a.png", data: Buffer.from("png-a").toString("base64") }],
          },
        ],
      ],
    ])
  })

  test("named images go together in one call, named in order; read_media makes one call per input", async () => {
    const { requests, input } = recording("claude")
    await run(input, "understand_image", { images: { before: "a.png", after: "b.jpg" }, prompt: "Compare" })
    expect(requests[0]?.messages[0]).toMatchObject({ content: "The files, in order: before (a.png), after (b.jpg).\n\nCompare" })
    const batch = JSON.parse(
      Either.getOrThrow(await run(input, "read_media", { inputs: [{ files: { x: "a.png" } }, { files: { y: "b.jpg" } }] })),
    )
    expect(batch).toMatchObject({ success: true, operation: "read_media", total: 2, results: [{ path: "a.png" }, { path: "b.jpg" }] })
    expect(requests).toHaveLength(3)
  })

  test("understand_file sends a text file as text, cut at max_chars, and a PDF as a document", async () => {
    const { requests, input } = recording("openai")
    await run(input, "understand_file", { file_path: "notes.md", max_chars: 7 })
    expect(requests[0]?.messages[0]).toEqual({
      role: "user",
      content:
        "<FILE notes.md>\n# Notes\n[cut at max_chars]\n<END OF FILE>\n\nPlease analyze this file and provide a comprehensive understanding of its content, purpose, and structure.",
    })
    await run(input, "understand_file", { file_path: "paper.pdf" })
    expect(requests[1]?.messages[0]).toMatchObject({ media: [{ kind: "file", mediaType: "application/pdf", name: "paper.pdf" }] })
  })

  test("a kind the tool does not read, one the provider does not take, a symlink, a path outside: an error naming why, no call", async () => {
    const { requests, input } = recording("openai")
    const reasons = async (tool: Parameters<typeof runMediaTool>[1], args: Record<string, unknown>) => {
      const r = await run(input, tool, args)
      return Either.isLeft(r) ? r.left.message : "ok"
    }
    expect(await reasons("understand_image", { image_path: "notes.md" })).toBe(
      "failed: notes.md: understand_image reads png, jpg, jpeg, gif, webp, bmp files",
    )
    expect(await reasons("understand_audio", { audio_paths: ["talk.wav"] })).toBe(
      "failed: type openai (the Responses API) takes no audio: talk.wav cannot be sent",
    )
    expect(await reasons("understand_image", { image_path: "link.png" })).toContain("symlink")
    expect(await reasons("understand_image", { image_path: "../../etc/x.png" })).toContain("refused")
    expect(await reasons("understand_image", { image_path: "missing.png" })).toBe("failed: cannot read missing.png: no such file")
    expect(requests).toEqual([])
  })
})

describe("enable_multimodal_tools", () => {
  const doc = (backend: Record<string, unknown>, orchestrator?: Record<string, unknown>) => ({
    agents: [
      { id: "a", backend: { type: "scripted", ...backend } },
      { id: "b", backend: { type: "scripted" } },
    ],
    ...(orchestrator ? { orchestrator } : {}),
  })
  const toolsOf = (d: unknown) =>
    Either.getOrThrow(decodeConfig(d, {})).agents.map((a) => (a.pythonTools ?? []).map((t) => [t.name, t.builtin]))

  test("offers read_media on the backend that turns it on; generate_media is a warning", () => {
    expect(toolsOf(doc({ enable_multimodal_tools: true }))).toEqual([[["custom_tool__read_media", "read_media"]], []])
    expect(analyzeConfig(doc({ enable_multimodal_tools: true }), {}).problems).toEqual([
      {
        path: "agents[0].backend.enable_multimodal_tools",
        message:
          "read_media is offered; MassGen's generate_media only to agents of type openai (massgen makes images with the OpenAI images API)",
        kind: "warning",
      },
    ])
  })

  test("on the orchestrator, every backend that does not say otherwise inherits it", () => {
    expect(toolsOf(doc({ enable_multimodal_tools: false }, { enable_multimodal_tools: true }))).toEqual([
      [],
      [["custom_tool__read_media", "read_media"]],
    ])
  })
})

describe("generate_media", () => {
  /** A loopback stand-in for the OpenAI images API: each request recorded, one PNG given back. */
  const imagesApi = () => {
    const bodies: Array<Record<string, unknown>> = []
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        if (new URL(req.url).pathname !== "/v1/images/generations") return new Response("no", { status: 404 })
        bodies.push((await req.json()) as Record<string, unknown>)
        return Response.json({ created: 0, data: [{ b64_json: Buffer.from("png-made").toString("base64") }] })
      },
    })
    return { bodies, baseURL: `http://127.0.0.1:${server.port}/v1`, stop: () => server.stop(true) }
  }

  test("type openai: the images API is asked through the SDK, the PNG written into the workspace, MassGen's JSON the result", async () => {
    const api = imagesApi()
    try {
      const backend = makeOpenAiResponsesBackend({ type: "openai", model: "gpt-x", baseURL: api.baseURL, apiKey: "sk-test" })
      const { input } = recording("openai")
      const made = await Effect.runPromise(
        Effect.either(
          runGenerateMedia(
            { ...input, backend: Effect.succeed(backend) },
            { prompt: "a red square", size: "1024x1024", storage_path: "art" },
            context,
          ),
        ),
      )
      expect(JSON.parse(Either.getOrThrow(made))).toEqual({
        success: true,
        operation: "generate_media",
        mode: "image",
        file_path: "art/generated_image_1.png",
        model: "gpt-image-1",
        file_size_bytes: 8,
      })
      expect(fs.readFileSync(nodePath.join(workspace, "art", "generated_image_1.png"), "utf8")).toBe("png-made")
      expect(api.bodies).toEqual([{ model: "gpt-image-1", prompt: "a red square", n: 1, size: "1024x1024" }])
    } finally {
      api.stop()
    }
  })

  test("another type, another mode, an editing argument, a path out of the workspace: an error naming why, nothing asked", async () => {
    const { input } = recording("claude")
    const reason = async (args: Record<string, unknown>, over: Partial<MediaToolsInput> = {}) => {
      const r = await Effect.runPromise(Effect.either(runGenerateMedia({ ...input, ...over }, args, context)))
      return Either.isLeft(r) ? r.left.message : "ok"
    }
    expect(await reason({ prompt: "x" })).toBe(
      "failed: type claude has no image generation in massgen: only type openai (the OpenAI images API) makes images",
    )
    expect(await reason({ prompt: "x", mode: "video" })).toBe(
      'bad arguments: mode "video" is not supported: massgen generates images only (mode image)',
    )
    expect(await reason({ prompt: "x", input_images: ["a.png"] })).toBe("bad arguments: image editing (input_images) is not supported")
    let asked = 0
    const maker: Backend = {
      type: "openai",
      model: "gpt-x",
      maxRetries: 0,
      callTimeoutSeconds: null,
      call: () => Effect.die("no call"),
      generateImage: () => Effect.sync(() => ((asked += 1), { data: "", model: "m" })),
    }
    expect(await reason({ prompt: "x", storage_path: "../../etc" }, { backend: Effect.succeed(maker) })).toContain("refused")
    expect(await reason({ prompt: "x" }, { backend: Effect.succeed(maker), files: { ...input.files, workspace: null } })).toBe(
      "refused: generate_media writes into your workspace, and you have none (the agent's backend sets no cwd)",
    )
    expect(asked).toBe(0)
  })

  test("enable_image_generation offers generate_media on type openai, and is an error on another type", () => {
    const d = (type: string) => ({ agents: [{ id: "a", backend: { type, api_key: "k", enable_image_generation: true } }] })
    expect(Either.getOrThrow(decodeConfig(d("openai"), {})).agents[0]!.pythonTools?.map((t) => t.name)).toEqual([
      "custom_tool__generate_media",
    ])
    expect(analyzeConfig(d("claude"), {}).problems).toEqual([
      {
        path: "agents[0].backend.enable_image_generation",
        message: "massgen makes images only with type openai (the OpenAI images API); type claude has none here",
        suggestion: "remove enable_image_generation, or give the agent type openai",
      },
    ])
  })
})

describe("files with the question", () => {
  test("@path words: media files only, quoted with spaces, not an e-mail address or an escaped @, without a sentence's full stop or :w", () => {
    expect(
      mediaReferences('See @shot.png and @"my plot.jpg", mail me@x.png, \\@not.png, @notes.txt, @a.wav:w and @b.pdf. Done @shot.png'),
    ).toEqual(["shot.png", "my plot.jpg", "a.wav", "b.pdf"])
  })

  test("a served or batch question's @path words are not read; its config's upload_files are, each to its agent", async () => {
    const config = Either.getOrThrow(
      decodeConfig(
        {
          agents: [
            { id: "a", backend: { type: "scripted", upload_files: [{ image_path: "a.png" }] } },
            { id: "b", backend: { type: "scripted" } },
          ],
        },
        {},
      ),
    )
    const media = await Effect.runPromise(questionMedia("Look at @b.jpg", [], config, workspace, "c.yaml", false))
    expect(media.map((m) => [m.name, m.agent, m.bytes])).toEqual([["a.png", "a", 5]])
    expect(uploadProblems(config, workspace)).toEqual([])
    const video = Either.getOrThrow(
      decodeConfig(
        {
          agent: {
            id: "v",
            backend: { type: "claude", api_key: "k", upload_files: [{ video_path: "path-here" }, { image_path: "gone.png" }] },
          },
        },
        {},
      ),
    )
    expect(uploadProblems(video, workspace)).toEqual([
      {
        path: "agents[0].backend.upload_files[0]",
        message: "agent v: type claude (the Messages API) takes no video: path-here cannot be sent",
      },
      { path: "agents[0].backend.upload_files[1]", message: "agent v: file not found: gone.png (a run stops here)", kind: "warning" },
    ])
    const all = await Effect.runPromise(questionMedia("Look at @b.jpg", [], config, workspace, "c.yaml"))
    expect(all.map((m) => [m.name, m.agent ?? null])).toEqual([
      ["b.jpg", null],
      ["a.png", "a"],
    ])
  })
})
