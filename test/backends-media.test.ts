/**
 * Files sent with a user message reach each provider in its own wire shape, through the real SDKs and the loopback fake:
 * Chat Completions `image_url` / `input_audio` / `file` parts, Responses `input_image` / `input_file`, Messages
 * `image` / `document` blocks (base64, or a link where the provider fetches one), Gemini `inlineData` parts; and `mediaRefusal` says in one
 * line what a protocol does not take.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import type { LlmMessage, MediaPart } from "../src/domain/llm.ts"
import { mediaOf, mediaRefusal } from "../src/domain/tools/media.ts"
import { makeAnthropicMessagesBackend } from "../src/services/backends/anthropic-messages.ts"
import { makeChatCompletionsBackend } from "../src/services/backends/chat-completions.ts"
import { makeGeminiBackend } from "../src/services/backends/gemini.ts"
import { makeOpenAiResponsesBackend } from "../src/services/backends/openai-responses.ts"
import { collect, TEST_KEY } from "./support/backend-suite.ts"
import { type FakeLlm, reply, startFakeLlm } from "./support/fake-llm.ts"
import { roundRequest } from "./support/llm-requests.ts"

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg=="
const image: MediaPart = { kind: "image", mediaType: "image/png", name: "red.png", data: PNG }
const audio: MediaPart = { kind: "audio", mediaType: "audio/wav", name: "hi.wav", data: "UklGRg==" }
const pdf: MediaPart = { kind: "file", mediaType: "application/pdf", name: "paper.pdf", data: "JVBERi0=" }
const linkedImage: MediaPart = { kind: "image", mediaType: "image/jpeg", name: "cat.jpg", url: "https://example.com/cat.jpg" }

const asked = (media: ReadonlyArray<MediaPart>): ReadonlyArray<LlmMessage> => [{ role: "user", content: "What is this?", media }]

describe("media parts on the wire", () => {
  let fake: FakeLlm
  beforeEach(async () => {
    fake = await startFakeLlm()
  })
  afterEach(() => fake.stop())

  test("Chat Completions: text, then an image_url data URL, input_audio and a file part; a link stays a link", async () => {
    fake.enqueue("chat", reply({ text: "ok" }))
    const backend = makeChatCompletionsBackend({ type: "openai", model: "m", baseURL: fake.openAiBaseUrl, apiKey: TEST_KEY })
    await collect(backend, roundRequest(asked([image, audio, pdf, linkedImage])))
    expect(fake.requests[0]?.body.messages[1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
        { type: "file", file: { filename: "paper.pdf", file_data: "data:application/pdf;base64,JVBERi0=" } },
        { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
      ],
    })
  })

  test("Responses: input_text, then input_image and input_file, inline or by link", async () => {
    fake.enqueue("responses", reply({ text: "ok" }))
    const backend = makeOpenAiResponsesBackend({ type: "openai", model: "m", baseURL: fake.openAiBaseUrl, apiKey: TEST_KEY })
    const linkedPdf: MediaPart = { kind: "file", mediaType: "application/pdf", name: "paper.pdf", url: "https://example.com/paper.pdf" }
    await collect(backend, roundRequest(asked([image, pdf, linkedPdf])))
    expect(fake.requests[0]?.body.input[0]).toEqual({
      role: "user",
      content: [
        { type: "input_text", text: "What is this?" },
        { type: "input_image", image_url: `data:image/png;base64,${PNG}`, detail: "auto" },
        { type: "input_file", filename: "paper.pdf", file_data: "data:application/pdf;base64,JVBERi0=" },
        { type: "input_file", file_url: "https://example.com/paper.pdf" },
      ],
    })
  })

  test("Messages: image and document blocks (base64 or url) before the text", async () => {
    fake.enqueue("anthropic", reply({ text: "ok" }))
    const backend = makeAnthropicMessagesBackend({ type: "claude", model: "m", baseURL: fake.url, apiKey: TEST_KEY })
    await collect(backend, roundRequest(asked([image, pdf, linkedImage])))
    expect(fake.requests[0]?.body.messages[0]).toEqual({
      role: "user",
      content: [
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
        { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" }, title: "paper.pdf" },
        { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
        { type: "text", text: "What is this?" },
      ],
    })
  })

  test("Gemini: inlineData parts (image, audio, video, PDF) before the text; a link is refused before any call", async () => {
    fake.enqueue("gemini", reply({ text: "ok" }))
    const backend = makeGeminiBackend({ type: "gemini", model: "gemini-x", baseURL: fake.url, apiKey: TEST_KEY })
    const video: MediaPart = { kind: "video", mediaType: "video/mp4", name: "clip.mp4", data: "AAAAGGZ0eXA=" }
    await collect(backend, roundRequest(asked([image, audio, video, pdf])))
    expect(fake.requests[0]?.body.contents[0]).toEqual({
      role: "user",
      parts: [
        { inlineData: { mimeType: "image/png", data: PNG } },
        { inlineData: { mimeType: "audio/wav", data: "UklGRg==" } },
        { inlineData: { mimeType: "video/mp4", data: "AAAAGGZ0eXA=" } },
        { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
        { text: "What is this?" },
      ],
    })
    expect(mediaRefusal("gemini", "gemini", video)).toBeNull()
    expect(mediaRefusal("gemini", "gemini", linkedImage)).toContain("not as a link")
  })

  test("a message without files is sent as plain text, as before", async () => {
    fake.enqueue("chat", reply({ text: "ok" }))
    const backend = makeChatCompletionsBackend({ type: "openai", model: "m", baseURL: fake.openAiBaseUrl, apiKey: TEST_KEY })
    await collect(backend, roundRequest([{ role: "user", content: "Plain.", media: [] }]))
    expect(fake.requests[0]?.body.messages[1]).toEqual({ role: "user", content: "Plain." })
  })
})

describe("what each protocol takes", () => {
  test("a kind a protocol does not take, a type it does not take, a link it does not fetch: one line each", () => {
    expect(mediaRefusal("openai", "responses", audio)).toBe("type openai (the Responses API) takes no audio: hi.wav cannot be sent")
    expect(mediaRefusal("claude", "anthropic", { kind: "video", mediaType: "video/mp4", name: "clip.mp4" })).toBe(
      "type claude (the Messages API) takes no video: clip.mp4 cannot be sent",
    )
    expect(mediaRefusal("groq", "chat", { kind: "audio", mediaType: "audio/flac", name: "a.flac" })).toBe(
      "type groq (Chat Completions) takes audio as audio/wav, audio/mpeg, not audio/flac: a.flac cannot be sent",
    )
    expect(mediaRefusal("claude", "anthropic", { ...audio, url: "https://example.com/a.wav" })).toBe(
      "type claude (the Messages API) takes audio only as data, not as a link: hi.wav cannot be sent",
    )
    expect(mediaRefusal("openai", "chat", image)).toBeNull()
    expect(mediaRefusal("claude", "anthropic", pdf)).toBeNull()
  })

  test("a file's kind and type come from its extension, in any case", () => {
    expect(mediaOf("shot.PNG")).toEqual({ kind: "image", mediaType: "image/png" })
    expect(mediaOf("talk.mp3")).toEqual({ kind: "audio", mediaType: "audio/mpeg" })
    expect(mediaOf("paper.pdf")).toEqual({ kind: "file", mediaType: "application/pdf" })
    expect(mediaOf("notes.txt")).toBeNull()
    expect(mediaOf("Makefile")).toBeNull()
  })
})
