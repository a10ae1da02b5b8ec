/**
 * Reading a config file: path -> YAML -> `Config`, or a `ConfigError` listing every problem.
 *
 * The raw document (before `${VAR}` expansion) is kept next to the decoded
 * config, so `execution_metadata.yaml` can record it with secrets masked.
 * `ConfigError.message` is one line per problem, each naming the key's path,
 * what was expected and what was found; it maps to exit code 1.
 */
import { readFileSync } from "node:fs"
import { Effect, Either, Schema } from "effect"
import { parse as parseYaml, YAMLParseError } from "yaml"
import { type Config, type ConfigProblem, decodeConfig, formatProblem } from "../domain/config.ts"

export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  reason: Schema.Literal("missing_file", "unreadable", "bad_yaml", "invalid"),
  path: Schema.String,
  problems: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })),
}) {
  override get message(): string {
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

/** Parses YAML text into a document, naming the line of a syntax error. */
export const parseConfigText = (text: string, path: string): Effect.Effect<unknown, ConfigError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(parseYaml(text) as unknown)
    } catch (e) {
      const message =
        e instanceof YAMLParseError
          ? `invalid YAML at line ${e.linePos?.[0]?.line ?? "?"}: ${e.message.split("\n")[0]}`
          : `invalid YAML: ${String(e)}`
      return fail("bad_yaml", path, [{ path: "", message }])
    }
  })

export const decodeDocument = (
  raw: unknown,
  path: string,
  env: Readonly<Record<string, string | undefined>>,
): Effect.Effect<Config, ConfigError> => {
  const decoded = decodeConfig(raw, env)
  return Either.isRight(decoded) ? Effect.succeed(decoded.right) : fail("invalid", path, decoded.left)
}

export const loadConfigFile = (
  path: string,
  env: Readonly<Record<string, string | undefined>>,
): Effect.Effect<LoadedConfig, ConfigError> =>
  Effect.gen(function* () {
    let text: string
    try {
      text = readFileSync(path, "utf8")
    } catch (e) {
      const code = (e as { code?: string }).code
      return yield* code === "ENOENT"
        ? fail("missing_file", path, [{ path: "", message: "no such file" }])
        : fail("unreadable", path, [{ path: "", message: e instanceof Error ? e.message : String(e) }])
    }
    const raw = yield* parseConfigText(text, path)
    const config = yield* decodeDocument(raw, path, env)
    return { config, raw, path }
  })
