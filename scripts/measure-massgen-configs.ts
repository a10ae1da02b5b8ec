/**
 * Measures how MassGen's example configs fare under `massgen --validate` with no keys set.
 *
 * `bun scripts/measure-massgen-configs.ts DIR` validates every YAML config under
 * DIR (MassGen's `massgen/configs/`; `rate_limits/` holds no run config and is
 * left out) as `--validate --json` would, with an empty environment, and prints
 * how many are valid and, for the others, how many configs each reason refuses
 * (agent ids and indexes folded out of the messages).
 *
 * `--keys` prints instead, as Markdown table rows for `docs/coordination.md`, every
 * `orchestrator.coordination` sub-key and voting key massgen reads
 * (`domain/config/coordination.ts`): its verdict, the configs that set it and the
 * configs whose value of it is refused; then any sub-key it does not know.
 */

import { readFileSync } from "node:fs"
import { relative } from "node:path"
import { Effect } from "effect"
import { parse as parseYaml } from "yaml"
import { validateConfig } from "../src/cli/commands/validate.ts"
import { COORDINATION_KEYS, type KeySpec, VOTING_KEYS, verdictOf } from "../src/domain/config/index.ts"
import { massgenConfigFiles } from "./massgen-config-files.ts"

const args = process.argv.slice(2)
const keysOnly = args.includes("--keys")
const root = args.find((a) => a !== "--keys")
if (root === undefined) throw new Error("usage: bun scripts/measure-massgen-configs.ts [--keys] MASSGEN_CONFIGS_DIR")
const files = massgenConfigFiles(root)

/** One table row per key: `| key | verdict | set in | refused in |`, most used first. */
const keyRows = (keys: Readonly<Record<string, KeySpec>>, sectionOf: (doc: unknown) => unknown): ReadonlyArray<string> => {
  const set = new Map<string, number>()
  const refused = new Map<string, number>()
  const unknown = new Map<string, number>()
  for (const file of files) {
    let doc: unknown
    try {
      doc = parseYaml(readFileSync(file, "utf8"))
    } catch {
      continue
    }
    const section = sectionOf(doc)
    if (section === null || typeof section !== "object") continue
    for (const [key, value] of Object.entries(section as Record<string, unknown>)) {
      const spec = keys[key]
      if (spec === undefined) {
        if (keys === COORDINATION_KEYS) unknown.set(key, (unknown.get(key) ?? 0) + 1)
        continue
      }
      set.set(key, (set.get(key) ?? 0) + 1)
      if (spec.rule.kind === "switch" && !spec.rule.off(value)) refused.set(key, (refused.get(key) ?? 0) + 1)
    }
  }
  const rows = Object.entries(keys)
    .sort(([a], [b]) => (set.get(b) ?? 0) - (set.get(a) ?? 0) || a.localeCompare(b))
    .map(([key, spec]) => `| \`${key}\` | ${verdictOf(spec)} | ${set.get(key) ?? 0} | ${refused.get(key) ?? 0} |`)
  return [...rows, ...[...unknown].map(([key, n]) => `| \`${key}\` | unknown to massgen (a warning) | ${n} | 0 |`)]
}

if (keysOnly) {
  const field = (value: unknown, key: string): unknown =>
    value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined
  const header = ["| key | verdict | configs that set it | configs it refuses |", "| --- | --- | --- | --- |"]
  console.log(`${files.length} configs\n\norchestrator.coordination:\n`)
  console.log([...header, ...keyRows(COORDINATION_KEYS, (doc) => field(field(doc, "orchestrator"), "coordination"))].join("\n"))
  console.log("\norchestrator (voting keys):\n")
  console.log([...header, ...keyRows(VOTING_KEYS, (doc) => field(doc, "orchestrator"))].join("\n"))
  process.exit(0)
}

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
