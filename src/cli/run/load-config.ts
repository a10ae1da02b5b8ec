/**
 * Reading a config file: path -> YAML -> `Config`, or a `ConfigError` listing every problem.
 *
 * The raw document (before `${VAR}` expansion) is kept next to the decoded
 * config, so `execution_metadata.yaml` can record it with secrets masked.
 * `ConfigError.message` is one line per problem, each naming the key's path,
 * what was expected and what was found (for a config built from `--model`,
 * the flag and the model instead); it maps to exit code 1. A file that cannot
 * be read is said in plain words (`input-file.ts`), not as an errno. The file
 * must be a regular file of at most `INPUT_LIMITS.config` bytes, checked
 * before it is read (`input-file.ts`: a pipe or `/dev/zero` is refused, never
 * waited on), and its document may nest at most `MAX_CONFIG_DEPTH` levels.
 */
import { Effect, Either, Schema } from "effect"
import type { YAMLParseError } from "yaml"
import { type Config, type ConfigProblem, decodeConfig, formatProblem } from "../../domain/config/index.ts"
import { exceedsDepth } from "../../lib/nesting-depth.ts"
import { parseYamlSubset } from "../../lib/yaml-subset.ts"
import { INPUT_LIMITS, readInputFile } from "../../services/input-file.ts"

/** How many levels of lists and mappings a config may nest (MassGen's deepest need fewer than ten). */
export const MAX_CONFIG_DEPTH = 64

/** Whether a config's `path` is the flag it was built from (`--model`, `--models`), not a file. */
export const isFlag = (path: string): boolean => path.startsWith("--")

export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  reason: Schema.Literal("missing_file", "unreadable", "bad_yaml", "invalid"),
  /** The config file, or the flag a config was built from (`--model`, `--models`, `--backend`). */
  path: Schema.String,
  problems: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })),
}) {
  override get message(): string {
    // A flag's problems are said in the words typed: `--model gpt-x: ...`, not a config path.
    if (isFlag(this.path)) return this.problems.map((p) => `${this.path}${p.path === "" ? "" : ` ${p.path}`}: ${p.message}`).join("\n")
    const where = `config ${this.path}`
    if (this.reason !== "invalid") return `${where}: ${this.problems.map(formatProblem).join("; ")}`
    return this.problems.map((p) => `${where}: ${formatProblem(p)}`).join("\n")
  }
}

export interface LoadedConfig {
  readonly config: Config
  readonly raw: unknown
  readonly path: string | null
}

const fail = (reason: ConfigError["reason"], path: string, problems: ReadonlyArray<ConfigProblem>) =>
  Effect.fail(new ConfigError({ reason, path, problems }))

/** The first line of a YAML parser's message, without the position it repeats and the colon that led to its code excerpt. */
const yamlReason = (e: YAMLParseError): string =>
  (e.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?\s*$/, "").replace(/:\s*$/, "")

const TOO_DEEP = `nested more than ${MAX_CONFIG_DEPTH} levels deep (lists and mappings inside each other)`

/** A stack overflow inside a parser: the document nests deeper than any parser here can follow. */
const isTooDeep = (e: unknown): boolean => e instanceof RangeError || /Maximum call stack size exceeded/.test(String(e))

const parseText = (text: string, path: string): Effect.Effect<unknown, ConfigError> =>
  Effect.suspend(() => {
    let plain: unknown
    try {
      plain = parseYamlSubset(text)
    } catch (e) {
      if (isTooDeep(e)) return fail("bad_yaml", path, [{ path: "", message: TOO_DEEP }])
      throw e
    }
    if (plain !== undefined) return Effect.succeed(plain)
    return Effect.flatMap(
      Effect.promise(() => import("yaml")),
      (yaml) => {
        try {
          return Effect.succeed(yaml.parse(text) as unknown)
        } catch (e) {
          if (isTooDeep(e)) return fail("bad_yaml", path, [{ path: "", message: TOO_DEEP }])
          const at = e instanceof yaml.YAMLParseError ? e.linePos?.[0] : undefined
          const message =
            e instanceof yaml.YAMLParseError
              ? `invalid YAML at line ${at?.line ?? "?"}${at?.col !== undefined ? `, column ${at.col}` : ""}: ${yamlReason(e)}`
              : `invalid YAML: ${String(e)}`
          return fail("bad_yaml", path, [{ path: "", message }])
        }
      },
    )
  })

/**
 * Parses YAML text into a document, naming the line and column of a syntax
 * error. The plain configs most are read without the `yaml` package, to the
 * same value (`yaml-subset.ts`); the package is loaded for the rest. A
 * document nested deeper than `MAX_CONFIG_DEPTH` is refused, as is one
 * nested so deep that a parser runs out of stack.
 */
export const parseConfigText = (text: string, path: string): Effect.Effect<unknown, ConfigError> =>
  Effect.flatMap(parseText(text, path), (doc) =>
    exceedsDepth(doc, MAX_CONFIG_DEPTH) ? fail("bad_yaml", path, [{ path: "", message: TOO_DEEP }]) : Effect.succeed(doc),
  )

export const decodeDocument = (
  raw: unknown,
  path: string,
  env: Readonly<Record<string, string | undefined>>,
): Effect.Effect<Config, ConfigError> => {
  const decoded = decodeConfig(raw, env)
  return Either.isRight(decoded) ? Effect.succeed(decoded.right) : fail("invalid", path, decoded.left)
}

/** The text of a config file, or why it is not read: missing, not a regular file, over `INPUT_LIMITS.config`, unreadable. */
export const readConfigText = (path: string): Effect.Effect<string, ConfigError> =>
  Effect.suspend(() => {
    const read = readInputFile(path, INPUT_LIMITS.config, "config file", "for a config file")
    if (read._tag === "read") return Effect.succeed(read.text)
    return fail(read.reason === "missing" ? "missing_file" : "unreadable", path, [{ path: "", message: read.problem }])
  })

export const loadConfigFile = (path: string, env: Readonly<Record<string, string | undefined>>): Effect.Effect<LoadedConfig, ConfigError> =>
  Effect.gen(function* () {
    const text = yield* readConfigText(path)
    const raw = yield* parseConfigText(text, path)
    const config = yield* decodeDocument(raw, path, env)
    return { config, raw, path }
  })
