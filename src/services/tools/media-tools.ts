/**
 * MassGen's media understanding tools run: each file read in the agent's reach, sent with the prompt to the agent's model.
 *
 * `runMediaTool(input, tool, args, context)` reads the call's asks
 * (`domain/tools/media-tools.ts`), opens each file as the file tools open a
 * path to read (`file-paths.ts`: the workspace, the shown snapshots, the
 * context paths; by descriptor, never through a symlink, `confined-fs.ts`),
 * up to `MEDIA_MAX_BYTES`, and checks it is a kind the tool takes
 * (`understand_file` sends a text file as text, cut at `max_chars`, and a PDF
 * as a document) and one the agent's backend takes (`mediaRefusal`: a file
 * it cannot take is an error result naming why). Each ask is one call of the
 * agent's own backend (made once, on first use, from its config: the same
 * provider, model and key as its rounds), its text the answer; the scripted
 * backend answers without a call, naming each file's type and size. The
 * result is MassGen's JSON (`mediaResult`). The call is a tool call like
 * any: the tool runner records it, and a resumed run takes its recorded
 * result and does not ask again. The model's call inside it is not a round's
 * call: it has no `call_start` of its own.
 */
import * as nodePath from "node:path"
import { Effect } from "effect"
import { type Agent, presetFor } from "../../domain/config/index.ts"
import type { LlmRequest, MediaKind, MediaPart } from "../../domain/llm.ts"
import { extensionsOf, mediaOf, mediaRefusal } from "../../domain/tools/media.ts"
import { type MediaAnswer, type MediaAsk, type MediaTool, mediaAsks, mediaResult } from "../../domain/tools/media-tools.ts"
import type { Backend } from "../backends/index.ts"
import { readFileAt } from "./confined-fs.ts"
import { close, fail, folderOf, locate, toolError } from "./file-paths.ts"
import { type FileToolsInput, rootsOf } from "./file-tools.ts"
import type { ToolContext } from "./tool-provider.ts"

/** The largest file a media tool sends (the providers take about 20 MB inline). */
export const MEDIA_MAX_BYTES = 20 * 1024 * 1024

export interface MediaToolsInput {
  readonly agent: Agent
  readonly files: FileToolsInput
  /** The agent's backend, made on first use. */
  readonly backend: Effect.Effect<Backend, string>
}

/** The kinds each tool reads (`understand_file` reads text files too). */
const KINDS: Readonly<Record<MediaTool, ReadonlyArray<MediaKind>>> = {
  understand_image: ["image"],
  understand_audio: ["audio"],
  understand_video: ["video"],
  understand_file: ["file"],
  read_media: ["image", "audio", "video"],
}

/** What one file of an ask is sent as: a media part, or (a text file of `understand_file`) its text. */
type Read = { readonly _tag: "media"; readonly part: MediaPart } | { readonly _tag: "text"; readonly text: string; readonly cut: boolean }

const readOne = (input: MediaToolsInput, tool: MediaTool, path: string, ask: MediaAsk, context: ToolContext) =>
  Effect.gen(function* () {
    const media = mediaOf(nodePath.basename(path))
    const asText = tool === "understand_file" && media === null
    if (!asText && (media === null || !KINDS[tool].includes(media.kind))) {
      const taken = KINDS[tool].flatMap(extensionsOf).join(", ")
      return yield* fail("failed", `${path}: ${tool} reads ${taken} files${tool === "understand_file" ? " and text files" : ""}`)
    }
    const roots = rootsOf(input.files, yield* context.state, context)
    return yield* Effect.try({
      try: (): Read => {
        const opened = locate(roots, path, "read")
        if (opened === null) throw fail("failed", `cannot read ${path}: it is a folder`)
        try {
          const read = folderOf(opened, false, "read", (dir, name) =>
            readFileAt(dir, name, MEDIA_MAX_BYTES, opened.rel, opened.kind === "snapshot"),
          )
          if (read.cut) throw fail("refused", `${opened.given} is ${read.size} bytes, over the media limit of ${MEDIA_MAX_BYTES}`)
          if (media === null) {
            if (read.bytes.includes(0)) throw fail("failed", `${opened.given} is not a text file or a PDF`)
            const text = read.bytes.toString("utf8")
            const max = ask.maxChars ?? text.length
            return { _tag: "text", text: text.slice(0, max), cut: text.length > max }
          }
          return { _tag: "media", part: { ...media, name: opened.name ?? path, data: read.bytes.toString("base64") } }
        } finally {
          close(opened)
        }
      },
      catch: (e) => toolError(e, path, path, "read"),
    })
  })

/** The user message of an ask: the files named in order (when more than one), the texts read, then the prompt. */
const messageOf = (ask: MediaAsk, reads: ReadonlyArray<Read>): { readonly content: string; readonly media: ReadonlyArray<MediaPart> } => {
  const named = ask.files.length > 1 ? [`The files, in order: ${ask.files.map((f) => `${f.label} (${f.path})`).join(", ")}.`] : []
  const texts = reads.flatMap((r, i) =>
    r._tag === "text" ? [`<FILE ${ask.files[i]!.path}>\n${r.text}${r.cut ? "\n[cut at max_chars]" : ""}\n<END OF FILE>`] : [],
  )
  return {
    content: [...named, ...texts, ask.prompt].join("\n\n"),
    media: reads.flatMap((r) => (r._tag === "media" ? [r.part] : [])),
  }
}

const answerOf = (input: MediaToolsInput, backend: Backend, content: string, media: ReadonlyArray<MediaPart>) => {
  if (backend.type === "scripted")
    return Effect.succeed(
      media.map((m) => `${m.name}: ${m.mediaType}, ${Math.floor(((m.data ?? "").length * 3) / 4)} bytes (scripted)`).join("\n") || content,
    )
  const request: LlmRequest = {
    agentId: input.agent.id,
    system: "",
    messages: [{ role: "user", content, ...(media.length > 0 ? { media } : {}) }],
    tools: [],
    context: { kind: "presentation", selfAnonId: input.agent.anonId, shown: [] },
  }
  const call = backend
    .call(request, () => Effect.void)
    .pipe(
      Effect.map((reply) => reply.text),
      Effect.mapError((e) => fail("failed", `the model could not answer: ${e.message}`)),
    )
  const seconds = backend.callTimeoutSeconds
  return seconds === null
    ? call
    : call.pipe(
        Effect.timeoutFail({
          duration: `${seconds} seconds`,
          onTimeout: () => fail("failed", `the model did not answer in ${seconds} s`),
        }),
      )
}

/** One call of media tool `tool` with its arguments: MassGen's JSON result, or the one line that says why not. */
export const runMediaTool = (input: MediaToolsInput, tool: MediaTool, args: Record<string, unknown>, context: ToolContext | undefined) =>
  Effect.gen(function* () {
    if (context === undefined) return yield* fail("refused", `${tool} runs only in a run`)
    const asks = mediaAsks(tool, args)
    if (typeof asks === "string") return yield* fail("bad_arguments", asks)
    const backend = yield* Effect.mapError(input.backend, (why) => fail("failed", why))
    const family = backend.type === "scripted" ? "scripted" : presetFor(backend.type as Parameters<typeof presetFor>[0]).family
    const answers: Array<MediaAnswer> = []
    for (const ask of asks) {
      const reads: Array<Read> = []
      for (const file of ask.files) reads.push(yield* readOne(input, tool, file.path, ask, context))
      const message = messageOf(ask, reads)
      for (const part of message.media) {
        const refusal = mediaRefusal(backend.type, family, part)
        if (refusal !== null) return yield* fail("failed", refusal)
      }
      answers.push({ ask, response: yield* answerOf(input, backend, message.content, message.media) })
    }
    return mediaResult(tool, backend.model, answers)
  })
