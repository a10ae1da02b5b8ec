/**
 * MassGen's media understanding tools, written anew: their schemas, their arguments read into asks, and their results.
 *
 * `understand_image`, `understand_audio`, `understand_video`, `understand_file`
 * and `read_media` take MassGen's arguments (`image_path` or `images`,
 * `audio_paths`, `video_path`, `file_path` with `max_chars`, `read_media`'s
 * `inputs` of `{files, prompt}`), each with a `prompt` (MassGen's default when
 * none). `mediaAsks(tool, args)` reads a call's arguments into the asks it
 * makes (the files, by the names the prompt may use, and the prompt), or the
 * one line that says what is wrong with them; the service
 * (`services/tools/media-tools.ts`) reads each file in the agent's workspace
 * and sends it with the prompt to the agent's model. `mediaResult` is the
 * tool's result text, MassGen's JSON (`success`, `operation`, the paths, the
 * prompt, the model, `response`). Arguments MassGen injects itself
 * (`agent_cwd`, `allowed_paths`, `task_context`) or that pick another backend
 * (`backend_type`, `model`) are taken and not acted on: the agent's own
 * backend and model answer. Pure.
 *
 * Words: an *ask* is one model call of a tool call: its files and its prompt.
 */
import type { ToolSpec } from "../llm.ts"

export const MEDIA_TOOLS = ["understand_image", "understand_audio", "understand_video", "understand_file", "read_media"] as const
export type MediaTool = (typeof MEDIA_TOOLS)[number]

export const isMediaTool = (name: string): name is MediaTool => (MEDIA_TOOLS as ReadonlyArray<string>).includes(name)

/** One file of an ask: `label` is how the prompt may name it, `path` as the model wrote it. */
export interface AskedFile {
  readonly label: string
  readonly path: string
}

export interface MediaAsk {
  readonly files: ReadonlyArray<AskedFile>
  readonly prompt: string
  /** `understand_file`: the most characters of a text file sent. */
  readonly maxChars?: number
}

const DEFAULT_PROMPTS: Readonly<Record<MediaTool, string>> = {
  understand_image: "What's in this image? Please describe it in detail.",
  understand_audio: "Please transcribe this audio and describe what you hear.",
  understand_video: "Please describe what happens in this video.",
  understand_file: "Please analyze this file and provide a comprehensive understanding of its content, purpose, and structure.",
  read_media: "Describe this media critically: what is in it, and what is wrong with it.",
}

const text = (description: string) => ({ type: "string", description })
const ignored = { model: text("Accepted for MassGen's configs: the agent's own model answers") }

type Parameters = ToolSpec["parameters"]

const SCHEMAS: Readonly<Record<MediaTool, { readonly description: string; readonly parameters: Parameters }>> = {
  understand_image: {
    description: "Understand and analyze one or more images (PNG, JPEG, GIF, WebP) of your workspace with a vision model.",
    parameters: {
      type: "object",
      properties: {
        image_path: text("Path to one image file, relative to your workspace"),
        prompt: text("Question or instruction about the image(s)"),
        images: {
          type: "object",
          description: "Names mapped to image paths, to analyze several images together; name them in the prompt",
          additionalProperties: { type: "string" },
        },
        ...ignored,
      },
      required: [],
    },
  },
  understand_audio: {
    description: "Transcribe and analyze audio files (WAV, MP3) of your workspace with an audio model.",
    parameters: {
      type: "object",
      properties: {
        audio_paths: { type: "array", items: { type: "string" }, description: "Paths to the audio files, relative to your workspace" },
        prompt: text("What to listen for"),
        analysis_mode: text("rich (default) or transcription"),
        ...ignored,
      },
      required: ["audio_paths"],
    },
  },
  understand_video: {
    description: "Understand and analyze a video file of your workspace with a model that takes video.",
    parameters: {
      type: "object",
      properties: {
        video_path: text("Path to the video file, relative to your workspace"),
        prompt: text("Question or instruction about the video"),
        num_frames: { type: "integer", description: "Accepted for MassGen's configs" },
        ...ignored,
      },
      required: ["video_path"],
    },
  },
  understand_file: {
    description: "Understand and analyze a file of your workspace (a text file or a PDF) with a model.",
    parameters: {
      type: "object",
      properties: {
        file_path: text("Path to the file, relative to your workspace"),
        prompt: text("Question or instruction about the file"),
        max_chars: { type: "integer", description: "The most characters of a text file to read (default 50000)" },
        ...ignored,
      },
      required: ["file_path"],
    },
  },
  read_media: {
    description:
      "Read and analyze media files of your workspace (images, audio, video) with a model that takes them; the files of one input are sent together.",
    parameters: {
      type: "object",
      properties: {
        prompt: text("Question about the media, for every input without its own prompt"),
        inputs: {
          type: "array",
          description: 'Inputs, each {"files": {name: path}, "prompt": optional}, e.g. [{"files": {"shot": "screenshot.png"}}]',
          items: {
            type: "object",
            properties: { files: { type: "object", additionalProperties: { type: "string" } }, prompt: { type: "string" } },
            required: ["files"],
          },
        },
        max_concurrent: { type: "integer", description: "Accepted for MassGen's configs: inputs are read one after another" },
      },
      required: ["inputs"],
    },
  },
}

/** A tool's own description and parameters. */
export const mediaToolSchema = (tool: MediaTool): { readonly description: string; readonly parameters: Parameters } => SCHEMAS[tool]

/** Arguments MassGen passes itself or that pick another backend: taken, not acted on. */
const TAKEN = new Set(["agent_cwd", "allowed_paths", "task_context", "backend_type", "model", "system_prompt", "reasoning_effort"])

const isText = (v: unknown): v is string => typeof v === "string" && v.trim() !== ""
const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** The files of a `{name: path}` mapping, or why not. */
const filesOf = (value: unknown, where: string): ReadonlyArray<AskedFile> | string => {
  if (!isMapping(value) || Object.keys(value).length === 0) return `${where} must be a non-empty mapping of names to paths`
  const files: Array<AskedFile> = []
  for (const [label, path] of Object.entries(value)) {
    if (!isText(path)) return `${where}.${label} must be a path`
    files.push({ label, path })
  }
  return files
}

/** The asks of one call of `tool`, or the one line that says what is wrong with its arguments. */
export const mediaAsks = (tool: MediaTool, args: Readonly<Record<string, unknown>>): ReadonlyArray<MediaAsk> | string => {
  if (tool === "read_media" && args.continue_from !== undefined) return "continue_from is not supported: ask again with the files in inputs"
  const takes = Object.keys(SCHEMAS[tool].parameters.properties)
  const extra = Object.keys(args).filter((k) => !takes.includes(k) && !TAKEN.has(k))
  if (extra.length > 0) return `${tool} takes no argument ${extra.join(", ")} (it takes ${takes.join(", ")})`
  if (args.prompt !== undefined && args.prompt !== null && typeof args.prompt !== "string") return "prompt must be a string"
  const prompt = isText(args.prompt) ? args.prompt : DEFAULT_PROMPTS[tool]
  const single = (key: string): ReadonlyArray<MediaAsk> | string =>
    isText(args[key]) ? [{ files: [{ label: key, path: args[key] }], prompt }] : `${key} must be a path`
  switch (tool) {
    case "understand_image": {
      if (args.images !== undefined && args.images !== null) {
        if (args.image_path !== undefined && args.image_path !== null) return "give image_path or images, not both"
        const files = filesOf(args.images, "images")
        return typeof files === "string" ? files : [{ files, prompt }]
      }
      return args.image_path === undefined ? "give image_path (one image) or images (names mapped to paths)" : single("image_path")
    }
    case "understand_audio": {
      const paths = args.audio_paths
      if (!Array.isArray(paths) || paths.length === 0 || !paths.every(isText)) return "audio_paths must be a non-empty list of paths"
      return [{ files: paths.map((path, i) => ({ label: `audio_${i}`, path })), prompt }]
    }
    case "understand_video":
      return single("video_path")
    case "understand_file": {
      const max = args.max_chars ?? 50_000
      if (typeof max !== "number" || !Number.isInteger(max) || max <= 0) return "max_chars must be a positive whole number"
      const asks = single("file_path")
      return typeof asks === "string" ? asks : asks.map((a) => ({ ...a, maxChars: max }))
    }
    case "read_media": {
      const inputs = args.inputs
      if (!Array.isArray(inputs) || inputs.length === 0) return "inputs must be a non-empty list of {files, prompt}"
      const asks: Array<MediaAsk> = []
      for (const [i, input] of inputs.entries()) {
        if (!isMapping(input)) return `inputs[${i}] must be a mapping {files, prompt}`
        const files = filesOf(input.files, `inputs[${i}].files`)
        if (typeof files === "string") return files
        asks.push({ files, prompt: isText(input.prompt) ? input.prompt : prompt })
      }
      return asks
    }
  }
}

/** An answered ask: the model's text. */
export interface MediaAnswer {
  readonly ask: MediaAsk
  readonly response: string
}

/** The tool's result text: MassGen's JSON, one answer per ask (`read_media` with several inputs lists them under `results`). */
export const mediaResult = (tool: MediaTool, model: string | null, answers: ReadonlyArray<MediaAnswer>): string => {
  const one = (a: MediaAnswer) => ({
    ...(a.ask.files.length === 1
      ? { path: a.ask.files[0]!.path }
      : { files: Object.fromEntries(a.ask.files.map((f) => [f.label, f.path])) }),
    prompt: a.ask.prompt,
    response: a.response,
  })
  const body =
    answers.length === 1 ? one(answers[0]!) : { results: answers.map((a) => ({ success: true, ...one(a) })), total: answers.length }
  return JSON.stringify({ success: true, operation: tool, model, ...body }, null, 2)
}
