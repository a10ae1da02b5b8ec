/**
 * The flag parsing every command shares, each failure a one-line `UsageError`.
 *
 * `parseStrict(argv, options, command)` is node's `parseArgs` that refuses an
 * unknown flag (naming the closest known one and `--help`; one of MassGen's
 * that massgen does not have, saying so), a flag without its
 * value and a value for a flag that takes none. `joinNegativeValues` lets a
 * negative number follow its flag; `wholeNumber` reads a whole-number flag
 * within a range. `usage(reason, detail)` is the `Either` of a usage error.
 */
import { type ParseArgsOptionsConfig, parseArgs } from "node:util"
import { Either } from "effect"
import { closest } from "../../lib/did-you-mean.ts"
import { UsageError } from "./invocation.ts"

export const usage = (reason: UsageError["reason"], detail: string) => Either.left(new UsageError({ reason, detail }))

export const SEE_HELP = "see massgen --help"

const PLAN_MODE =
  "is MassGen's plan mode (the agents write a plan document, then may execute it in chunks), which massgen does not have yet (issue 27); ask for a plan in the question, or give agents the planning tools with orchestrator.coordination.enable_agent_task_planning (docs/coordination.md)"

/** MassGen's flags massgen does not have, and why: a refusal clearer than an unknown option. */
const MASSGEN_ONLY: Readonly<Record<string, string>> = Object.fromEntries(
  ["plan", "plan-depth", "plan-thoroughness", "plan-steps", "plan-chunks", "plan-and-execute", "execute-plan"].map((flag) => [
    flag,
    PLAN_MODE,
  ]),
)

/**
 * `argv` parsed against `options` (`command` names the subcommand in messages),
 * or a one-line usage error: an unknown flag (with the closest of `known`,
 * which defaults to every option), a flag without its value, or a value for
 * a flag that takes none.
 */
export const parseStrict = <const O extends ParseArgsOptionsConfig>(
  argv: ReadonlyArray<string>,
  options: O,
  command: string | null,
  known: ReadonlyArray<string> = Object.keys(options),
): Either.Either<ReturnType<typeof parseArgs<{ args: Array<string>; options: O; allowPositionals: true; strict: true }>>, UsageError> => {
  const args = [...argv]
  const where = command === null ? "" : ` for massgen ${command}`
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true })
  for (const token of tokens) {
    if (token.kind !== "option") continue
    const option = options[token.name]
    if (option === undefined) {
      if (token.rawName.startsWith("--") && Object.hasOwn(MASSGEN_ONLY, token.name))
        return usage("unknown_option", `${token.rawName} ${MASSGEN_ONLY[token.name]}`)
      const meant = token.rawName.startsWith("--") ? closest(token.name, known) : null
      return usage(
        "unknown_option",
        `unknown option ${token.rawName}${where}${meant === null ? "" : `; did you mean --${meant}?`} (${SEE_HELP})`,
      )
    }
    const flag = `--${token.name}`
    if (option.type === "boolean" && token.value !== undefined)
      return usage("bad_value", `${flag} takes no value, found ${JSON.stringify(token.value)}`)
    if (option.type === "string" && (token.value === undefined || (!token.inlineValue && token.value.startsWith("-")))) {
      const after = token.value === undefined ? "" : `, found ${token.value} after it (a value that starts with "-" goes as ${flag}=VALUE)`
      return usage("missing_value", `${flag} needs a value${after}`)
    }
  }
  try {
    return Either.right(parseArgs({ args, options, allowPositionals: true, strict: true }))
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e)
    return usage("bad_value", `${text.split("\n")[0] ?? text} (${SEE_HELP})`)
  }
}

/** `--flag -1` as `--flag=-1`: parseArgs would take a negative number for an option and refuse it. */
export const joinNegativeValues = (argv: ReadonlyArray<string>): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const next = argv[i + 1]
    if (a.startsWith("--") && a !== "--" && !a.includes("=") && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`)
      i += 1
    } else out.push(a)
  }
  return out
}

/**
 * A whole number flag value from `min` to `max` (absent: `fallback`), or the
 * usage error naming the flag and the range, as `range` words it.
 */
export const wholeNumber = (
  flag: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
  range = `from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ""}`,
): Either.Either<number, UsageError> => {
  if (value === undefined) return Either.right(fallback)
  const n = Number(value)
  return Number.isInteger(n) && n >= min && n <= max
    ? Either.right(n)
    : usage("bad_value", `--${flag}: expected a whole number ${range}, found ${JSON.stringify(value)}`)
}
