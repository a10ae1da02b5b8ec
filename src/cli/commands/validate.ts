/**
 * `massgen --validate FILE [--json] [--strict] [--check-keys]`: check a config without running it, fit for CI.
 *
 * Every problem is found in one pass (`analyzeConfig`), errors and warnings
 * together. It needs no secrets: an unset `${VAR}` or a missing API key, which
 * stop a run, are warnings here unless `--check-keys` makes them errors
 * (the environment and `.env` are read as a run reads them); so is a Python
 * tool's file that is not there (from `cwd`, as a run reads it). Keys a run
 * ignores (a typo, with the key it may stand for; a MassGen feature massgen
 * ignores) are warnings; MassGen features massgen refuses are errors, one per
 * feature. `--strict` makes every warning an error, as in MassGen.
 *
 * Text: one `warning: config FILE: PATH: MESSAGE[; SUGGESTION]` line per
 * warning, then `valid` or one `config FILE: ...` line per error. Exit 0 when
 * valid, 1 otherwise. `--json` prints MassGen's shape:
 * `{valid, error_count, warning_count, errors, warnings}`, each entry
 * `{location, message, suggestion}` (`location` is the key path, `suggestion`
 * null when there is none).
 */
import { Effect } from "effect"
import { absolutePythonTools, analyzeConfig, type ConfigProblem, formatProblem } from "../../domain/config/index.ts"
import type { Env } from "../../services/backends/index.ts"
import { loadDotEnv } from "../../services/backends/index.ts"
import { pythonToolStartProblems } from "../../services/tools/python-tools.ts"
import type { ValidateArgs } from "../args/index.ts"
import { parseConfigText, readConfigText } from "../run/load-config.ts"
import { uploadProblems } from "../run/question-media.ts"
import { missingKeys } from "../run/setup.ts"

/** The errors and warnings of a config file; nothing is run or written. */
export const validateConfig = (options: Omit<ValidateArgs, "_tag" | "json">, env: Env, cwd: string = process.cwd()) =>
  Effect.gen(function* () {
    const text = yield* Effect.either(readConfigText(options.path))
    const raw = text._tag === "Right" ? yield* Effect.either(parseConfigText(text.right, options.path)) : text
    if (raw._tag === "Left")
      return { errors: raw.left.problems as ReadonlyArray<ConfigProblem>, warnings: [] as ReadonlyArray<ConfigProblem> }
    const { config, problems } = analyzeConfig(raw.right, env)
    const said = new Set(problems.map((p) => p.path))
    // A key the config gives as an unset `${VAR}` is said once, as that variable.
    const keys =
      config === null
        ? []
        : missingKeys(config, env)
            .filter((p) => !said.has(p.path))
            .map((p) => ({ ...p, kind: "key" as const }))
    // The machine is not checked, only the shape: a Python tool's file that is not there (a run stops on it) is a warning.
    const files =
      config === null
        ? []
        : pythonToolStartProblems(absolutePythonTools(config, cwd), env)
            .filter((p) => p.message.includes("Python file not found"))
            .map((p) => ({ ...p, message: `${p.message} (a run stops here)`, kind: "warning" as const }))
    const uploads = config === null ? [] : uploadProblems(config, cwd)
    const all = [...problems, ...keys, ...files, ...uploads]
    const isError = (p: ConfigProblem) =>
      p.kind === undefined || options.strict || ((p.kind === "env" || p.kind === "key") && options.checkKeys)
    return { errors: all.filter(isError), warnings: all.filter((p) => !isError(p)) }
  })

const entry = (p: ConfigProblem) => ({ location: p.path, message: p.message, suggestion: p.suggestion ?? null })

export const validateCommand = (args: Omit<ValidateArgs, "_tag">, baseEnv: Env, cwd: string, print: (line: string) => void) =>
  Effect.gen(function* () {
    const env = yield* loadDotEnv(cwd, baseEnv).pipe(Effect.orElseSucceed(() => baseEnv))
    const { errors, warnings } = yield* validateConfig(args, env, cwd)
    const valid = errors.length === 0
    if (args.json) {
      print(
        JSON.stringify({
          valid,
          error_count: errors.length,
          warning_count: warnings.length,
          errors: errors.map(entry),
          warnings: warnings.map(entry),
        }),
      )
    } else {
      for (const w of warnings) print(`warning: config ${args.path}: ${formatProblem(w)}`)
      if (valid) print("valid")
      else for (const p of errors) print(`config ${args.path}: ${formatProblem(p)}`)
    }
    return valid ? 0 : 1
  })
