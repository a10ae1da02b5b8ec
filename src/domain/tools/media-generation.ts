/**
 * MassGen's `generate_media`, written anew for images: its schema, its arguments read, its result.
 *
 * `generate_media(prompt, mode = "image", size, storage_path)` makes one image
 * with the agent's own provider (the OpenAI images API, `type: openai`) and
 * writes it into the agent's workspace as `<storage_path>/generated_image_<n>.png`
 * (`n` the run's tool-call number, so a call run again after a stop writes
 * the same file). `mode` `video` or `audio`, and MassGen's editing and
 * continuation arguments (`input_images`, `continue_from`, `mask_path`, ...),
 * are errors naming why; its other settings (`model`, `quality`,
 * `aspect_ratio`, ...) are taken and not acted on. `generationAsk(args)` reads
 * the arguments, `generationResult` is MassGen's JSON result. Pure.
 */
import type { ToolSpec } from "../llm.ts"

export const GENERATE_MEDIA = "generate_media"

const text = (description: string) => ({ type: "string", description })

export const generateMediaSchema: { readonly description: string; readonly parameters: ToolSpec["parameters"] } = {
  description: "Generate an image from a text prompt and save it as a PNG file in your workspace.",
  parameters: {
    type: "object",
    properties: {
      prompt: text("What the image shows"),
      mode: { type: "string", enum: ["image", "video", "audio"], description: "image (massgen generates images only)" },
      size: text("The image size, e.g. 1024x1024 (the provider's default when absent)"),
      storage_path: text("The folder of your workspace to save it in (default: the workspace itself)"),
      model: text("Accepted for MassGen's configs: the provider's image model is used"),
      quality: text("Accepted for MassGen's configs"),
      aspect_ratio: text("Accepted for MassGen's configs"),
      backend_type: text("Accepted for MassGen's configs: the agent's own provider is used"),
    },
    required: ["prompt"],
  },
}

/** MassGen's arguments that ask for what this image generation does not do. */
const REFUSED: Readonly<Record<string, string>> = {
  prompts: "one prompt per call: call generate_media once per image",
  input_images: "image editing (input_images) is not supported",
  mask_path: "image editing (mask_path) is not supported",
  continue_from: "continue_from is not supported",
  style_image: "style_image is not supported",
  control_image: "control_image is not supported",
  subject_image: "subject_image is not supported",
}

const TAKEN = new Set(["agent_cwd", "allowed_paths", "task_context", "output_format", "background", "negative_prompt", "seed"])

export interface GenerationAsk {
  readonly prompt: string
  readonly size: string | null
  /** The folder below the workspace, as the model wrote it ("" for the workspace). */
  readonly folder: string
}

/** The ask of one `generate_media` call, or the one line that says why not. */
export const generationAsk = (args: Readonly<Record<string, unknown>>): GenerationAsk | string => {
  for (const key of Object.keys(args)) {
    if (key in REFUSED) return REFUSED[key]!
    if (!(key in generateMediaSchema.parameters.properties) && !TAKEN.has(key))
      return `generate_media takes no argument ${key} (it takes ${Object.keys(generateMediaSchema.parameters.properties).join(", ")})`
  }
  const mode = args.mode ?? "image"
  if (mode !== "image") return `mode ${JSON.stringify(mode)} is not supported: massgen generates images only (mode image)`
  if (typeof args.prompt !== "string" || args.prompt.trim() === "") return "prompt must be a text saying what the image shows"
  if (args.size !== undefined && (typeof args.size !== "string" || !/^\d+x\d+$/.test(args.size)))
    return "size must be WIDTHxHEIGHT, e.g. 1024x1024"
  if (args.storage_path !== undefined && typeof args.storage_path !== "string") return "storage_path must be a folder of your workspace"
  return { prompt: args.prompt, size: (args.size as string | undefined) ?? null, folder: (args.storage_path as string | undefined) ?? "" }
}

/** The file a call writes, below the workspace. */
export const generatedPath = (ask: GenerationAsk, toolCall: number): string =>
  `${ask.folder === "" || ask.folder === "." ? "" : `${ask.folder.replace(/\/+$/, "")}/`}generated_image_${toolCall}.png`

/** MassGen's JSON result of a made image. */
export const generationResult = (path: string, model: string, bytes: number): string =>
  JSON.stringify({ success: true, operation: "generate_media", mode: "image", file_path: path, model, file_size_bytes: bytes }, null, 2)
