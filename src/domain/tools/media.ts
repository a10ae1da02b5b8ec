/**
 * Media files: what kind a file is (by its name), which wire protocol takes which kind, and how a file's refusal is said.
 *
 * `mediaOf(name)` gives a file's kind and MIME type from its extension (the
 * extensions MassGen's multimodal tools take), or null for a file that is none
 * of them. `MEDIA_TAKEN` says which kinds each wire protocol (`ApiFamily`, and
 * the scripted backend) carries in a request, with the MIME types it takes of
 * each; `mediaRefusal(type, family, media)` is the one line that says a
 * provider cannot take a file, null when it can. Pure.
 *
 * Words: a *media part* (`MediaPart`, `domain/llm.ts`) is one file sent beside a
 * user message's text, base64 in the request; `file` is a document (a PDF).
 */
import type { ApiFamily } from "../config/index.ts"
import type { MediaKind, MediaPart } from "../llm.ts"

const TYPES: Readonly<Record<string, readonly [MediaKind, string]>> = {
  png: ["image", "image/png"],
  jpg: ["image", "image/jpeg"],
  jpeg: ["image", "image/jpeg"],
  gif: ["image", "image/gif"],
  webp: ["image", "image/webp"],
  bmp: ["image", "image/bmp"],
  mp3: ["audio", "audio/mpeg"],
  wav: ["audio", "audio/wav"],
  m4a: ["audio", "audio/mp4"],
  ogg: ["audio", "audio/ogg"],
  flac: ["audio", "audio/flac"],
  aac: ["audio", "audio/aac"],
  mp4: ["video", "video/mp4"],
  mov: ["video", "video/quicktime"],
  avi: ["video", "video/x-msvideo"],
  mkv: ["video", "video/x-matroska"],
  webm: ["video", "video/webm"],
  pdf: ["file", "application/pdf"],
}

/** A file's kind and MIME type from its name's extension, or null for a name that is no media file massgen knows. */
export const mediaOf = (name: string): { readonly kind: MediaKind; readonly mediaType: string } | null => {
  const dot = name.lastIndexOf(".")
  const found = dot < 0 ? undefined : TYPES[name.slice(dot + 1).toLowerCase()]
  return found === undefined ? null : { kind: found[0], mediaType: found[1] }
}

/** The extensions of one kind, for messages. */
export const extensionsOf = (kind: MediaKind): ReadonlyArray<string> =>
  Object.entries(TYPES)
    .filter(([, [k]]) => k === kind)
    .map(([ext]) => ext)

/** The MIME types each wire protocol sends, by kind; a kind not listed is not taken. */
export const MEDIA_TAKEN: Readonly<Record<ApiFamily | "scripted", Partial<Record<MediaKind, ReadonlyArray<string>>>>> = {
  chat: { image: ["image/png", "image/jpeg", "image/gif", "image/webp"], audio: ["audio/wav", "audio/mpeg"], file: ["application/pdf"] },
  responses: { image: ["image/png", "image/jpeg", "image/gif", "image/webp"], file: ["application/pdf"] },
  anthropic: { image: ["image/png", "image/jpeg", "image/gif", "image/webp"], file: ["application/pdf"] },
  // Gemini's inline data: its documented image, audio, video and document types.
  gemini: {
    image: ["image/png", "image/jpeg", "image/webp"],
    audio: ["audio/wav", "audio/mpeg"],
    video: ["video/mp4", "video/quicktime", "video/x-msvideo", "video/webm"],
    file: ["application/pdf"],
  },
  // The Claude Code CLI is given the question as text: files reach it through its workspace, not the request.
  claude_code: {},
  scripted: {
    image: ["image/png", "image/jpeg", "image/gif", "image/webp"],
    audio: ["audio/wav", "audio/mpeg"],
    file: ["application/pdf"],
  },
}

/** The kinds each protocol takes as a link (the provider fetches it). */
const LINKS_TAKEN: Readonly<Record<ApiFamily | "scripted", ReadonlyArray<MediaKind>>> = {
  chat: ["image"],
  responses: ["image", "file"],
  anthropic: ["image", "file"],
  gemini: [],
  claude_code: [],
  scripted: ["image", "audio", "file"],
}

const PROTOCOL: Readonly<Record<ApiFamily | "scripted", string>> = {
  chat: "Chat Completions",
  responses: "the Responses API",
  anthropic: "the Messages API",
  gemini: "Gemini's generateContent",
  claude_code: "the Claude Code CLI",
  scripted: "the scripted backend",
}

/** Why backend `type` (of wire protocol `family`) cannot take `media`, in one line; null when it can (a `mediaType` of `""`: a file of that kind). */
export const mediaRefusal = (
  type: string,
  family: ApiFamily | "scripted",
  media: Pick<MediaPart, "kind" | "mediaType" | "name" | "url">,
): string | null => {
  const taken = MEDIA_TAKEN[family][media.kind]
  const what = media.kind === "file" ? "documents" : media.kind
  if (media.url !== undefined && !LINKS_TAKEN[family].includes(media.kind))
    return `type ${type} (${PROTOCOL[family]}) takes ${what} only as data, not as a link: ${media.name} cannot be sent`
  // A link, or a file whose type is not known yet (`""`: a config's path without an extension), is judged by its kind.
  if ((media.url !== undefined || media.mediaType === "") && taken !== undefined) return null
  if (taken?.includes(media.mediaType) === true) return null
  return taken === undefined
    ? `type ${type} (${PROTOCOL[family]}) takes no ${what}: ${media.name} cannot be sent`
    : `type ${type} (${PROTOCOL[family]}) takes ${what} as ${taken.join(", ")}, not ${media.mediaType}: ${media.name} cannot be sent`
}

/** Its link, or `data:<type>;base64,<data>`, as the OpenAI protocols take inline files. */
export const dataUrl = (m: MediaPart): string => m.url ?? `data:${m.mediaType};base64,${m.data ?? ""}`
