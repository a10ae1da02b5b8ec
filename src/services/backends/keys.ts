/**
 * API keys: which one an agent's backend uses, and `.env` files as a source of them.
 *
 * `resolveApiKey(agent, env)` gives the key (config `api_key` first, then the
 * preset's variables in order), null when the backend needs none (scripted, local
 * servers, a `chatcompletion` host we know no key for, or any base_url override
 * on a loopback host), or a `MissingKeyError` naming the variable to set.
 * `parseDotEnv(text)` is the pure parser (KEY=VALUE, `export ` prefix, comments,
 * single/double quotes with multi-line values); `loadDotEnv(cwd, env)` reads
 * `cwd/.env` and returns `env` plus the variables it does not already hold.
 */

import { join } from "node:path"
import { Effect, Either, Schema } from "effect"
import type { BackendConfig } from "../../domain/config/index.ts"
import { keyEnvForBaseUrl, presetFor } from "../../domain/config/index.ts"
import { INPUT_LIMITS, readInputFile } from "../input-file.ts"

export type Env = Readonly<Record<string, string | undefined>>

export class MissingKeyError extends Schema.TaggedError<MissingKeyError>()("MissingKeyError", {
  agentId: Schema.String,
  backendType: Schema.String,
  /** Variables that would do, in the order they are tried. */
  envVars: Schema.Array(Schema.String),
}) {
  override get message(): string {
    return `missing API key: set ${this.envVars.join(" or ")} (agent ${this.agentId}, backend ${this.backendType})`
  }
}

export class DotEnvError extends Schema.TaggedError<DotEnvError>()("DotEnvError", {
  reason: Schema.Literal("unreadable"),
  path: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `cannot read ${this.path}: ${this.detail}`
  }
}

const isLoopback = (url: string): boolean => {
  try {
    const host = new URL(url).hostname
    return host === "localhost" || host === "[::1]" || host.startsWith("127.")
  } catch {
    return false
  }
}

export const resolveApiKey = (
  agent: { readonly id: string; readonly backend: BackendConfig },
  env: Env,
): Either.Either<string | null, MissingKeyError> => {
  const b = agent.backend
  if (b.api_key !== undefined && b.api_key !== "") return Either.right(b.api_key)
  if (b.type === "scripted") return Either.right(null)
  const preset = presetFor(b.type)
  if (preset.keyless) return Either.right(null)
  const vars = b.type === "chatcompletion" ? keyEnvForBaseUrl(b.base_url ?? "") : preset.keyEnv
  const found = vars.map((name) => env[name]).find((v) => v !== undefined && v !== "")
  if (found !== undefined) return Either.right(found)
  if (vars.length === 0 || (b.base_url !== undefined && isLoopback(b.base_url))) return Either.right(null)
  return Either.left(new MissingKeyError({ agentId: agent.id, backendType: b.type, envVars: [...vars] }))
}

const ESCAPES: Readonly<Record<string, string>> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\" }
const ASSIGNMENT = /^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*/

/** The variables a `.env` text sets, later lines winning; lines that are not assignments are skipped. */
export const parseDotEnv = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const src = text.replace(/\r\n?/g, "\n")
  let pos = 0
  while (pos < src.length) {
    const lineEnd = src.indexOf("\n", pos) === -1 ? src.length : src.indexOf("\n", pos)
    const match = ASSIGNMENT.exec(src.slice(pos, lineEnd))
    if (match === null || match[1] === undefined) {
      pos = lineEnd + 1
      continue
    }
    const key = match[1]
    let i = pos + match[0].length
    const quote = src[i]
    if (quote === '"' || quote === "'") {
      let value = ""
      i += 1
      while (i < src.length && src[i] !== quote) {
        const ch = src[i] as string
        const next = src[i + 1]
        if (quote === '"' && ch === "\\" && next !== undefined) {
          value += ESCAPES[next] ?? `\\${next}`
          i += 2
        } else {
          value += ch
          i += 1
        }
      }
      if (i >= src.length) {
        pos = lineEnd + 1
        continue
      }
      out[key] = value
      const rest = src.indexOf("\n", i)
      pos = rest === -1 ? src.length : rest + 1
    } else {
      out[key] = src
        .slice(i, lineEnd)
        .replace(/(^|[ \t])#.*$/, "")
        .trim()
      pos = lineEnd + 1
    }
  }
  return out
}

/** `env` plus the parsed variables it does not already hold (the environment wins). */
export const mergeDotEnv = (parsed: Readonly<Record<string, string>>, env: Env): Record<string, string | undefined> => {
  const merged: Record<string, string | undefined> = { ...env }
  for (const [k, v] of Object.entries(parsed)) if (merged[k] === undefined) merged[k] = v
  return merged
}

/** Reads `cwd/.env` (a missing file changes nothing) and merges it under `env`. */
export const loadDotEnv = (cwd: string, env: Env): Effect.Effect<Record<string, string | undefined>, DotEnvError> => {
  const path = join(cwd, ".env")
  return Effect.suspend(() => {
    // A named pipe or a device in its place is refused, never waited on (`input-file.ts`).
    const read = readInputFile(path, INPUT_LIMITS.dotEnv, "file", "for a .env file")
    if (read._tag === "read") return Effect.succeed(mergeDotEnv(parseDotEnv(read.text), env))
    return read.reason === "missing"
      ? Effect.succeed({ ...env })
      : Effect.fail(new DotEnvError({ reason: "unreadable", path, detail: read.problem }))
  })
}
