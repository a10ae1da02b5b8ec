/**
 * Measures how MassGen's example configs fare under `massgen --validate` with no keys set.
 *
 * `bun scripts/measure-massgen-configs.ts DIR` validates every YAML config under
 * DIR (MassGen's `massgen/configs/`; `rate_limits/` holds no run config and is
 * left out) as `--validate --json` would, with an empty environment, and prints
 * how many are valid and, for the others, how many configs each reason refuses
 * (agent ids and indexes folded out of the messages).
 */

import { readdirSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { Effect } from "effect"
import { validateConfig } from "../src/cli/commands/validate.ts"

const root = process.argv[2]
if (root === undefined) throw new Error("usage: bun scripts/measure-massgen-configs.ts MASSGEN_CONFIGS_DIR")
const files: Array<string> = []
const walk = (dir: string): void => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) {
      if (name !== "rate_limits") walk(path)
    } else if (/\.ya?ml$/.test(name)) files.push(path)
  }
}
walk(root)
files.sort()
let valid = 0
let warned = 0
const reasons = new Map<string, Set<string>>()
for (const file of files) {
  const { errors, warnings } = await Effect.runPromise(validateConfig({ path: file, strict: false, checkKeys: false }, {}))
  if (errors.length === 0) valid++
  if (warnings.length > 0) warned++
  if (process.env.SHOW !== undefined)
    console.log(errors.length === 0 ? "valid  " : "invalid", relative(root, file), errors.map((e) => e.message.slice(0, 80)).join(" | "))
  for (const e of errors) {
    const reason = e.message
      .replace(/agent [^:]+: /, "")
      .replace(/\(.*\)/, "(...)")
      .slice(0, 110)
    reasons.set(reason, (reasons.get(reason) ?? new Set()).add(file))
  }
}
console.log(
  `${files.length} configs: ${valid} valid keyless (${((100 * valid) / files.length).toFixed(1)} %), ${files.length - valid} refused; ${warned} with warnings`,
)
console.log("configs refused, by reason (a config may have several):")
for (const [reason, set] of [...reasons].sort((a, b) => b[1].size - a[1].size)) console.log(String(set.size).padStart(5), reason)
