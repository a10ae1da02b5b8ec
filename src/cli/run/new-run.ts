/**
 * A new run's log directory and its `execution_metadata.yaml`: for a run from the command line, a session's turn, a `serve` request or a batch item.
 *
 * `newRunDir` makes the directory under the log root and writes the metadata
 * (secrets masked; the config's absolute path, which `resume` reloads);
 * `writeRunMetadata` writes the metadata of a directory made elsewhere.
 */
import { resolve } from "node:path"
import { Effect } from "effect"
import { maskSecrets } from "../../domain/config/index.ts"
import { shownLongText } from "../../domain/log/index.ts"
import { METADATA_FILE } from "../../domain/run-paths.ts"
import { stringifyYamlSubset } from "../../lib/yaml-emit.ts"
import { createLogDir, logBaseDir } from "../../services/log-dir/create.ts"
import { liveRunFiles, RunFiles } from "../../services/run-files/index.ts"
import type { CliContext } from "../context.ts"
import { buildIdentity } from "../process/identity.ts"
import type { RunConfig } from "./setup.ts"

/** YAML of `metadata`: the plain subset's writer when it can (`yaml-emit.ts`, the same text), else `yaml`'s, loaded then. */
const metadataText = (metadata: Record<string, unknown>): Effect.Effect<string> => {
  const plain = stringifyYamlSubset(metadata)
  return plain !== undefined
    ? Effect.succeed(plain)
    : Effect.map(
        Effect.promise(() => import("yaml")),
        (yaml) => yaml.stringify(metadata),
      )
}

/** `execution_metadata.yaml` of a new run in `logDir` (secrets masked): what `resume` reads the config from. */
export const writeRunMetadata = (
  logDir: string,
  question: string,
  loaded: Pick<RunConfig, "path" | "raw">,
  ctx: Pick<CliContext, "cwd" | "argv" | "version">,
) =>
  Effect.flatMap(
    metadataText({
      // A long question is in the blob store once (`domain/log/long-texts.ts`).
      question: shownLongText(question),
      timestamp: new Date().toISOString(),
      // Absolute, so a resume from another directory finds it.
      config_path: loaded.path === null ? null : resolve(ctx.cwd, loaded.path),
      config: maskSecrets(loaded.raw),
      cli_args: maskSecrets({ argv: ctx.argv }),
      massgen_version: buildIdentity().version,
      runtime: `bun ${Bun.version}`,
      build: buildIdentity(),
      working_directory: ctx.cwd,
      log_dir: logDir,
    }),
    (text) => Effect.flatMap(RunFiles, (f) => f.write(METADATA_FILE, text)).pipe(Effect.provide(liveRunFiles(logDir))),
  )

/**
 * A new run's log directory, with its `execution_metadata.yaml` (secrets masked;
 * the config's absolute path, which `resume` reloads): for a run from the
 * command line, a session's turn, or a `serve` request.
 */
export const newRunDir = (loaded: RunConfig, question: string, ctx: Pick<CliContext, "env" | "cwd" | "argv" | "version">) =>
  Effect.gen(function* () {
    const logDir = yield* createLogDir(logBaseDir(ctx.env, ctx.cwd))
    yield* writeRunMetadata(logDir, question, loaded, ctx)
    return logDir
  })
