/**
 * `massgen --validate FILE [--json]`: check a config without running it.
 *
 * Prints `valid` (exit 0) or one line per problem, each naming the key's path,
 * what was expected and what was found (exit 1). With `--json` it prints one
 * object: `{"valid": bool, "path": FILE, "problems": [{"path", "message"}],
 * "warnings": [...]}`. Unknown keys (a run ignores them) are warnings, printed
 * first as `warning: ...` lines; they do not make a config invalid.
 * `${VAR}` references and every backend's API key are checked against the
 * environment and `.env`, as a run would.
 */
import { Effect } from "effect"
import type { Env } from "../services/backends/keys.ts"
import { loadDotEnv } from "../services/backends/keys.ts"
import { formatProblem, unknownKeys } from "../domain/config.ts"
import { loadConfigFile } from "./load-config.ts"
import { missingKeys } from "./run-setup.ts"

export const validateCommand = (path: string, json: boolean, baseEnv: Env, cwd: string, print: (line: string) => void) =>
  Effect.gen(function* () {
    const env = yield* loadDotEnv(cwd, baseEnv).pipe(Effect.orElseSucceed(() => baseEnv))
    const result = yield* Effect.either(loadConfigFile(path, env))
    const problems =
      result._tag === "Right"
        ? missingKeys(result.right.config, env)
        : result.left.problems.map((p) => ({ path: p.path, message: p.message }))
    const warnings = result._tag === "Right" ? unknownKeys(result.right.raw) : []
    if (json) print(JSON.stringify({ valid: problems.length === 0, path, problems, warnings }))
    else {
      for (const w of warnings) print(`warning: config ${path}: ${formatProblem(w)}`)
      if (problems.length === 0) print("valid")
      else for (const p of problems) print(`config ${path}: ${formatProblem(p)}`)
    }
    return problems.length === 0 ? 0 : 1
  })
