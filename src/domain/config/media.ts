/**
 * MassGen's media keys: `enable_multimodal_tools` (on a backend, or on the orchestrator for every backend) and `upload_files`.
 *
 * `enable_multimodal_tools: true` offers the agent MassGen's `read_media` and
 * `generate_media`, as MassGen registers them: `withMultimodalTools(doc,
 * problems)` adds their `custom_tools` entries (MassGen's package paths, so
 * `python-tools.ts` makes them built-in tools) to each backend that turns it
 * on, or that leaves it unset under an orchestrator that does;
 * `generate_media` only on `type: openai`, the one provider massgen makes
 * images with (elsewhere a warning). `enable_image_generation: true` offers
 * `generate_media` (on another type, an error).
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
  /** MassGen's: offers `read_media`, and `generate_media` on `type: openai` (`withMultimodalTools`). */
  enable_multimodal_tools: opt(Schema.Boolean),
  /** MassGen's: offers `generate_media` (`type: openai` only). */
  enable_image_generation: opt(Schema.Boolean),
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

const entry = (fn: string, path: string) => ({
  name: [fn],
  category: "multimodal",
  path: `massgen/tool/_multimodal_tools/${path}`,
  function: [fn],
})
const READ_MEDIA = entry("read_media", "read_media.py")
const GENERATE_MEDIA = entry("generate_media", "generation/generate_media.py")

/** The one backend type whose provider massgen makes images with (the OpenAI images API). */
const GENERATES_IMAGES = "openai"

/**
 * `doc` with MassGen's media tools in the `custom_tools` of each backend that asks for them: `read_media` (and
 * `generate_media` on `type: openai`) where `enable_multimodal_tools` is on, `generate_media` where
 * `enable_image_generation` is; a tool the backend names itself is not added again. On another type,
 * `enable_image_generation` is an error and `enable_multimodal_tools`' `generate_media` a warning.
 */
export const withMultimodalTools = (doc: unknown, problems: Array<ConfigProblem>): unknown => {
  const agents = valueAt(doc, ["agents"])
  const backends: ReadonlyArray<ReadonlyArray<PropertyKey>> = Array.isArray(agents)
    ? agents.map((_, i) => ["agents", i, "backend"])
    : [["agent", "backend"]]
  const inherited = valueAt(doc, ["orchestrator", "enable_multimodal_tools"]) === true
  const say = (problem: ConfigProblem) => {
    if (!problems.some((p) => p.path === problem.path)) problems.push(problem)
  }
  let out = doc
  for (const at of backends) {
    const type = valueAt(out, [...at, "type"])
    const own = valueAt(out, [...at, "enable_multimodal_tools"])
    const multimodal = own === true || (own === undefined && inherited)
    const images = valueAt(out, [...at, "enable_image_generation"]) === true
    const tools = valueAt(out, [...at, "custom_tools"])
    if ((!multimodal && !images) || (tools !== undefined && !Array.isArray(tools))) continue
    const list: ReadonlyArray<unknown> = Array.isArray(tools) ? tools : []
    const wanted = [...(multimodal ? [READ_MEDIA] : []), ...((multimodal || images) && type === GENERATES_IMAGES ? [GENERATE_MEDIA] : [])]
    const added = wanted.filter((t) => !list.some((e) => JSON.stringify(e).includes(t.function[0]!)))
    if (added.length > 0) out = setAt(out, [...at, "custom_tools"], [...list, ...added])
    if (images && type !== GENERATES_IMAGES)
      say({
        path: formatPath([...at, "enable_image_generation"]),
        message: `massgen makes images only with type openai (the OpenAI images API); type ${String(type)} has none here`,
        suggestion: "remove enable_image_generation, or give the agent type openai",
      })
    if (multimodal && type !== GENERATES_IMAGES)
      say({
        path: own === true ? formatPath([...at, "enable_multimodal_tools"]) : "orchestrator.enable_multimodal_tools",
        message:
          "read_media is offered; MassGen's generate_media only to agents of type openai (massgen makes images with the OpenAI images API)",
        kind: "warning",
      })
  }
  return out
}
