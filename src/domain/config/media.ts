/**
 * MassGen's media keys: `enable_multimodal_tools` (on a backend, or on the orchestrator for every backend) and `upload_files`.
 *
 * `enable_multimodal_tools: true` offers the agent MassGen's `read_media`, as
 * MassGen registers it: `withMultimodalTools(doc, problems)` adds its
 * `custom_tools` entry (MassGen's package path, so `python-tools.ts` makes it
 * the built-in tool) to each backend that turns it on, or that leaves it
 * unset under an orchestrator that does; MassGen's `generate_media`, which it
 * offers beside it, is not offered (massgen generates no media), a warning.
 * `upload_files` lists files sent with the question to that agent, each
 * `{image_path}`, `{audio_path}`, `{video_path}` or `{file_path}`: a path
 * (read at run start, relative to the working directory, as MassGen reads
 * it) or an http(s) URL (sent as a link, for the providers that fetch one).
 * `uploadsOf(backend)` lists them. Pure.
 */
import { Schema } from "effect"
import type { MediaKind } from "../llm.ts"
import { type ConfigProblem, formatPath, opt, setAt, valueAt } from "./schema.ts"

const Path = Schema.String.pipe(Schema.minLength(1, { message: () => "Expected a path or a URL, found an empty text" }))

export const UploadFile = Schema.Union(
  Schema.Struct({ image_path: Path }),
  Schema.Struct({ audio_path: Path }),
  Schema.Struct({ video_path: Path }),
  Schema.Struct({ file_path: Path }),
).annotations({
  message: () => ({ message: "Expected one of {image_path}, {audio_path}, {video_path} or {file_path}", override: true }),
})
export type UploadFile = typeof UploadFile.Type

export const MediaBackendFields = {
  /** MassGen's: offers `read_media` (`withMultimodalTools`). */
  enable_multimodal_tools: opt(Schema.Boolean),
  upload_files: opt(Schema.Array(UploadFile)),
}

export const MediaOrchestratorFields = {
  /** MassGen's: every backend that does not set it inherits it. */
  enable_multimodal_tools: opt(Schema.Boolean),
}

/** One file of `upload_files`: the kind its key names, and where it is (a path or a URL). */
export interface Upload {
  readonly kind: MediaKind
  readonly where: string
  readonly isUrl: boolean
}

/** A backend's `upload_files`, in order. */
export const uploadsOf = (backend: { readonly upload_files?: ReadonlyArray<UploadFile> | undefined }): ReadonlyArray<Upload> =>
  (backend.upload_files ?? []).map((u) => {
    const [key, where] = Object.entries(u)[0] as [string, string]
    const kind: MediaKind = key === "image_path" ? "image" : key === "audio_path" ? "audio" : key === "video_path" ? "video" : "file"
    return { kind, where, isUrl: /^https?:\/\//i.test(where) }
  })

const READ_MEDIA = {
  name: ["read_media"],
  category: "multimodal",
  path: "massgen/tool/_multimodal_tools/read_media.py",
  function: ["read_media"],
}

/** `doc` with `read_media` in the `custom_tools` of each backend that `enable_multimodal_tools` turns on; a warning each for `generate_media`. */
export const withMultimodalTools = (doc: unknown, problems: Array<ConfigProblem>): unknown => {
  const agents = valueAt(doc, ["agents"])
  const backends: ReadonlyArray<ReadonlyArray<PropertyKey>> = Array.isArray(agents)
    ? agents.map((_, i) => ["agents", i, "backend"])
    : [["agent", "backend"]]
  const inherited = valueAt(doc, ["orchestrator", "enable_multimodal_tools"]) === true
  let out = doc
  for (const at of backends) {
    const own = valueAt(out, [...at, "enable_multimodal_tools"])
    if (own !== true && !(own === undefined && inherited)) continue
    const tools = valueAt(out, [...at, "custom_tools"])
    const list = Array.isArray(tools) ? tools : []
    if (tools !== undefined && !Array.isArray(tools)) continue
    const named = list.some((t) => JSON.stringify(t).includes("read_media"))
    if (!named) out = setAt(out, [...at, "custom_tools"], [...list, READ_MEDIA])
    const path = own === true ? formatPath([...at, "enable_multimodal_tools"]) : "orchestrator.enable_multimodal_tools"
    if (!problems.some((p) => p.path === path))
      problems.push({
        path,
        message: "read_media is offered; MassGen's generate_media is not (massgen does not generate images, audio or video)",
        kind: "warning",
      })
  }
  return out
}
