/**
 * Reading a config file: path -> YAML -> `Config`, or a `ConfigError` listing every problem.
 *
 * The raw document (before `${VAR}` expansion) is kept next to the decoded
 * config, so `execution_metadata.yaml` can record it with secrets masked.
 * `ConfigError.message` is one line per problem, each naming the key's path,
 * what was expected and what was found (for a config built from `--model`,
 * the flag and the model instead); it maps to exit code 1. A file that cannot
 * be read is said in plain words (`readProblem`), not as an errno.
 */
import { readFileSync } from "node:fs"
import { Effect, Either, Schema } from "effect"
import type { YAMLParseError } from "yaml"
import { type Config, type ConfigProblem, decodeConfig, formatProblem } from "../../domain/config/index.ts"
import { parseYamlSubset } from "../../lib/yaml-subset.ts"

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

/** Why a file could not be read, in plain words rather than an errno. */
export const readProblem = (e: unknown): string => {
  switch ((e as { code?: string }).code) {
    case "ENOENT":
      return "no such file"
    case "EISDIR":
      return "is a directory, not a file"
    case "EACCES":
    case "EPERM":
      return "cannot be read: permission denied"
    default:
      return `cannot be read: ${e instanceof Error ? e.message : String(e)}`
  }
}

/** The first line of a YAML parser's message, without the position it repeats and the colon that led to its code excerpt. */
const yamlReason = (e: YAMLParseError): string =>
  (e.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?\s*$/, "").replace(/:\s*$/, "")

/**
 * Parses YAML text into a document, naming the line and column of a syntax
 * error. The plain configs most are read without the `yaml` package, to the
 * same value (`yaml-subset.ts`); the package is loaded for the rest.
 */
export const parseConfigText = (text: string, path: string): Effect.Effect<unknown, ConfigError> =>
  Effect.suspend(() => {
    const plain = parseYamlSubset(text)
    if (plain !== undefined) return Effect.succeed(plain)
    return Effect.flatMap(
      Effect.promise(() => import("yaml")),
      (yaml) => {
        try {
          return Effect.succeed(yaml.parse(text) as unknown)
        } catch (e) {
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

export const decodeDocument = (
  raw: unknown,
  path: string,
  env: Readonly<Record<string, string | undefined>>,
): Effect.Effect<Config, ConfigError> => {
  const decoded = decodeConfig(raw, env)
  return Either.isRight(decoded) ? Effect.succeed(decoded.right) : fail("invalid", path, decoded.left)
}

/** The text of a config file, or why it cannot be read. */
export const readConfigText = (path: string): Effect.Effect<string, ConfigError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(readFileSync(path, "utf8"))
    } catch (e) {
      const code = (e as { code?: string }).code
      return code === "ENOENT"
        ? fail("missing_file", path, [{ path: "", message: readProblem(e) }])
        : fail("unreadable", path, [{ path: "", message: code === "EISDIR" ? "is a directory, not a config file" : readProblem(e) }])
    }
  })

export const loadConfigFile = (path: string, env: Readonly<Record<string, string | undefined>>): Effect.Effect<LoadedConfig, ConfigError> =>
  Effect.gen(function* () {
    const text = yield* readConfigText(path)
    const raw = yield* parseConfigText(text, path)
    const config = yield* decodeDocument(raw, path, env)
    return { config, raw, path }
  })
