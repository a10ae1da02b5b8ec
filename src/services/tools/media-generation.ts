/**
 * MassGen's `generate_media` run: one image from the agent's own provider, written into its workspace.
 *
 * `runGenerateMedia(input, args, context)` reads the call's ask
 * (`domain/tools/media-generation.ts`), asks the agent's backend for the image
 * (`Backend.generateImage`: the OpenAI images API of `type: openai`; a backend
 * without one is an error result naming what does), and writes the PNG into
 * the agent's workspace by descriptor (`file-paths.ts`, `confined-fs.ts`: a
 * new file made exclusively and renamed in place, never through a symlink;
 * only the workspace, never a snapshot or a context path). The result is
 * MassGen's JSON, naming the file. The call is a tool call like any: the
 * tool runner records it, and a resume takes a finished call's result and
 * does not make the image again (the file stays in the workspace); a call a
 * stop cut off runs again and writes the same file.
 */
import { Effect } from "effect"
import { GENERATE_MEDIA, generatedPath, generationAsk, generationResult } from "../../domain/tools/media-generation.ts"
import { writeFileAt } from "./confined-fs.ts"
import { close, fail, folderOf, locate, toolError } from "./file-paths.ts"
import { rootsOf } from "./file-tools.ts"
import type { MediaToolsInput } from "./media-tools.ts"
import type { ToolContext } from "./tool-provider.ts"

/** One call of `generate_media`: MassGen's JSON result, or the one line that says why not. */
export const runGenerateMedia = (input: MediaToolsInput, args: Record<string, unknown>, context: ToolContext | undefined) =>
  Effect.gen(function* () {
    if (context === undefined) return yield* fail("refused", `${GENERATE_MEDIA} runs only in a run`)
    const ask = generationAsk(args)
    if (typeof ask === "string") return yield* fail("bad_arguments", ask)
    if (input.files.workspace === null)
      return yield* fail("refused", `${GENERATE_MEDIA} writes into your workspace, and you have none (the agent's backend sets no cwd)`)
    const backend = yield* Effect.mapError(input.backend, (why) => fail("failed", why))
    if (backend.generateImage === undefined)
      return yield* fail(
        "failed",
        `type ${backend.type} has no image generation in massgen: only type openai (the OpenAI images API) makes images`,
      )
    const path = generatedPath(ask, context.toolCall)
    const roots = rootsOf(input.files, yield* context.state, context)
    // The path is checked before the image is paid for.
    yield* Effect.try({ try: () => close(locateWorkspace(roots, path)), catch: (e) => toolError(e, path, path, "write") })
    const image = yield* backend
      .generateImage(ask.prompt, ask.size)
      .pipe(Effect.mapError((e) => fail("failed", `the images API could not make it: ${e.message}`)))
    const bytes = Buffer.from(image.data, "base64")
    yield* Effect.try({
      try: () => {
        const opened = locateWorkspace(roots, path)
        try {
          folderOf(opened, true, "write", (dir, name) => writeFileAt(dir, name, bytes, opened.rel, { refuseHardLinks: true }))
        } finally {
          close(opened)
        }
      },
      catch: (e) => toolError(e, path, path, "write"),
    })
    return generationResult(path, image.model, bytes.length)
  })

const locateWorkspace = (roots: Parameters<typeof locate>[0], path: string) => {
  const opened = locate(roots, path, "write")
  if (opened === null) throw fail("refused", `${path}: not a file of your workspace`)
  if (opened.kind !== "workspace") {
    close(opened)
    throw fail("refused", `${path}: ${GENERATE_MEDIA} writes only into your workspace`)
  }
  return opened
}
