/**
 * The files a run sends with its question: `--image FILE` (repeatable), the question's `@path` references, each agent's `upload_files`.
 *
 * Contract: `questionMedia(question, images, config, cwd)` reads every such
 * file once, at run start, before anything is written, and gives them as
 * `run_started.media` records them (`QuestionMedia`: kind, MIME type, name,
 * SHA-256 and size of the bytes, the bytes in base64; the log keeps the
 * bytes in its blob store). An `@path` is a word of the question that begins
 * with `@` (not after a letter or digit, so an e-mail address is none; `\@`
 * is a plain `@`; a path with spaces is quoted, `@"my shot.png"`) and names
 * a file of a media type (`domain/tools/media.ts`): other `@` words stay
 * text. The question keeps its text as written. `--image` and `@path` files
 * go to every agent; an agent's `upload_files` to it alone, a path read from
 * the working directory as MassGen reads it, an http(s) URL sent as a link.
 * A file that is not there or cannot be read, over `MEDIA_MAX_BYTES`, of no
 * media type, or of a kind an agent's provider does not take
 * (`mediaRefusal`), stops the run with one line naming it and the agent
 * (exit 1). A served request and a batch item's question have their
 * `upload_files` read, not their `@path` words: a file of this machine is sent
 * only when its user names it on the command line. `uploadProblems(config, cwd)` are the local `upload_files` that
 * are not there, which `--validate` says as warnings.
 */
import { createHash } from "node:crypto"
import { existsSync } from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import { type Config, type ConfigProblem, presetFor, uploadsOf } from "../../domain/config/index.ts"
import type { QuestionMedia } from "../../domain/events/index.ts"
import { mediaOf, mediaRefusal } from "../../domain/tools/media.ts"
import { formatBytes, readInputBytes } from "../../services/input-file.ts"
import { MEDIA_MAX_BYTES } from "../../services/tools/media-tools.ts"
import { UsageError } from "../args/index.ts"
import { ConfigError } from "./load-config.ts"

const REFERENCE = /(?<![\p{L}\p{N}\\])@(?:"([^"]+)"|([^\s"@,;!?)}\]>]+))/gu

/** The `@path` references of `question` that name a media file, in order, each once. */
export const mediaReferences = (question: string): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const match of question.matchAll(REFERENCE)) {
    const path = match[1] ?? match[2]!.replace(/(:w)?\.*$/, "")
    if (mediaOf(path) !== null && !out.includes(path)) out.push(path)
  }
  return out
}

type Failure = { readonly where: string; readonly message: string }

/** One local file as recorded, or why not. */
const readLocal = (path: string, cwd: string, agent?: string): QuestionMedia | string => {
  const media = mediaOf(path)
  if (media === null) return "not a media file massgen sends (an image, audio, video or a PDF, by its extension)"
  const read = readInputBytes(nodePath.resolve(cwd, path), MEDIA_MAX_BYTES, "file", `for a media file (${formatBytes(MEDIA_MAX_BYTES)})`)
  if (read._tag === "refused") return read.problem
  return {
    kind: media.kind,
    media_type: media.mediaType,
    name: nodePath.basename(path),
    ...(agent !== undefined ? { agent } : {}),
    sha256: createHash("sha256").update(read.bytes).digest("hex"),
    bytes: read.bytes.length,
    data: read.bytes.toString("base64"),
  }
}

/** A URL of `upload_files` as recorded: its type from its path's extension, or by the kind its key names. */
const linked = (url: string, kind: QuestionMedia["kind"], agent: string): QuestionMedia | string => {
  let pathname = url
  try {
    pathname = new URL(url).pathname
  } catch {
    return "not a URL"
  }
  const media = mediaOf(pathname)
  if (media === null) return "cannot tell the file's type from its URL (it needs an extension such as .png, .wav or .pdf)"
  return { kind: media.kind === kind ? kind : media.kind, media_type: media.mediaType, name: nodePath.basename(url), agent, url }
}

/** Why `agent`'s provider cannot take `m`, or null. */
const refusalFor = (config: Config, agentId: string, m: QuestionMedia): string | null => {
  const agent = config.agents.find((a) => a.id === agentId)!
  const type = agent.backend.type
  const family = type === "scripted" ? "scripted" : presetFor(type).family
  const why = mediaRefusal(type, family, { kind: m.kind, mediaType: m.media_type, name: m.name, ...(m.url ? { url: m.url } : {}) })
  return why === null ? null : `agent ${agentId}: ${why}`
}

/** Every file sent with the question, read now; the first problem stops the run. */
export const questionMedia = (
  question: string,
  images: ReadonlyArray<string>,
  config: Config,
  cwd: string,
  where: string,
  /** Whether the question's `@path` words are read: not for a question that comes over the network (`serve`), or a batch's. */
  references = true,
): Effect.Effect<ReadonlyArray<QuestionMedia>, UsageError | ConfigError> =>
  Effect.suspend((): Effect.Effect<ReadonlyArray<QuestionMedia>, UsageError | ConfigError> => {
    const out: Array<QuestionMedia> = []
    const failures: Array<Failure> = []
    const given = [
      ...images.map((p) => ({ flag: `--image ${p}`, path: p })),
      ...(references ? mediaReferences(question) : []).map((p) => ({ flag: `@${p}`, path: p })),
    ]
    const seen = new Set<string>()
    for (const { flag, path } of given) {
      const at = nodePath.resolve(cwd, path)
      if (seen.has(at)) continue
      seen.add(at)
      const read = readLocal(path, cwd)
      if (typeof read === "string") return Effect.fail(new UsageError({ reason: "bad_value", detail: `${flag}: ${read}` }))
      const refused = config.agents.map((a) => refusalFor(config, a.id, read)).find((r) => r !== null)
      if (refused !== undefined && refused !== null)
        return Effect.fail(new UsageError({ reason: "bad_value", detail: `${flag}: ${refused}` }))
      out.push(read)
    }
    config.agents.forEach((agent, i) => {
      uploadsOf(agent.backend).forEach((u, j) => {
        const at = `agents[${i}].backend.upload_files[${j}]`
        const read = u.isUrl ? linked(u.where, u.kind, agent.id) : readLocal(u.where, cwd, agent.id)
        if (typeof read === "string") return failures.push({ where: at, message: `${u.where}: ${read}` })
        const refused = refusalFor(config, agent.id, read)
        if (refused !== null) return failures.push({ where: at, message: refused })
        out.push(read)
      })
    })
    if (failures.length > 0)
      return Effect.fail(
        new ConfigError({ reason: "invalid", path: where, problems: failures.map((f) => ({ path: f.where, message: f.message })) }),
      )
    return Effect.succeed(out)
  })

/**
 * For `--validate`: each `upload_files` entry the agent's protocol cannot take (by its key's kind and its
 * extension: an error, as a run stops on it), and each local file that is not there (a warning).
 */
export const uploadProblems = (config: Config, cwd: string): ReadonlyArray<ConfigProblem> =>
  config.agents.flatMap((agent, i) =>
    uploadsOf(agent.backend).flatMap((u, j): ReadonlyArray<ConfigProblem> => {
      const path = `agents[${i}].backend.upload_files[${j}]`
      const media = mediaOf(u.isUrl ? u.where.replace(/[?#].*$/, "") : u.where)
      const shape: QuestionMedia = {
        kind: media?.kind ?? u.kind,
        media_type: media?.mediaType ?? "",
        name: nodePath.basename(u.where),
        ...(u.isUrl ? { url: u.where } : {}),
      }
      const refused = refusalFor(config, agent.id, shape)
      if (refused !== null) return [{ path, message: refused }]
      return u.isUrl || existsSync(nodePath.resolve(cwd, u.where))
        ? []
        : [{ path, message: `agent ${agent.id}: file not found: ${u.where} (a run stops here)`, kind: "warning" }]
    }),
  )
