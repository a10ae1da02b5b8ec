/**
 * What a Postgres server's failures are called, for the commands that use
 * one (`--engine`): `DatabaseError`, with the host and port and the cause,
 * never the URL's credentials (the URL is masked as a `base_url` is:
 * `lib/safe-url.ts`).
 *
 * `connectionError(url, e)` names why the first word with a server failed:
 * the server's own message (a password refused, no such database), or the
 * network's. The driver says only "Failed to connect" for a refused
 * connection and an unknown host alike, so the network's cause is found by a
 * TCP connection of its own (`connection refused`, `host not found`, ...).
 * `setupError(url, e)`: what failed while the tables were made.
 */
import * as net from "node:net"
import { Schema } from "effect"
import { maskUrlCredentials, urlSecrets } from "../../lib/safe-url.ts"

export class DatabaseError extends Schema.TaggedError<DatabaseError>()("DatabaseError", {
  reason: Schema.Literal("unreachable", "refused", "setup_failed"),
  /** `host:port`. */
  server: Schema.String,
  /** The `--engine` URL, masked. */
  url: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    const what = {
      unreachable: `cannot reach the database at ${this.server}`,
      refused: `the database at ${this.server} refused massgen`,
      setup_failed: `cannot set up massgen's tables in the database at ${this.server}`,
    }
    return `${what[this.reason]}: ${this.detail} (--engine ${this.url})`
  }
}

const endpoint = (url: string): { readonly host: string; readonly port: number } | null => {
  const u = URL.parse(url)
  const host = u?.hostname.replace(/^\[(.*)\]$/, "$1") ?? ""
  return u === null || host === "" ? null : { host, port: u.port === "" ? 5432 : Number(u.port) }
}

const serverOf = (url: string): string => {
  const at = endpoint(url)
  return at === null ? "its default server" : `${at.host.includes(":") ? `[${at.host}]` : at.host}:${at.port}`
}

const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** `text` without any credential of `url` (its password, credential parameters); the role it names stays (`role "x" does not exist`). */
const scrubbed = (url: string, text: string): string => {
  const u = URL.parse(url)
  const role = u === null ? [] : [u.username, decoded(u.username)]
  const password = u === null ? [] : [u.password, decoded(u.password)]
  const secrets = urlSecrets(url).filter((secret) => !role.includes(secret) || password.includes(secret))
  return maskUrlCredentials(secrets.reduce((out, secret) => out.split(secret).join("***"), text))
}

const PROBE_MS = 10_000
const CAUSES: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found (the name lookup failed)",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "no answer (timed out)",
  ECONNRESET: "the connection was reset",
}

/** Why a TCP connection to `host:port` fails; null when it does not. */
const probe = (host: string, port: number): Promise<string | null> =>
  new Promise((resolve) => {
    const socket = net.connect({ host, port })
    const done = (cause: string | null) => {
      socket.destroy()
      resolve(cause)
    }
    socket.setTimeout(PROBE_MS, () => done(`no answer within ${PROBE_MS / 1000} s`))
    socket.once("connect", () => done(null))
    socket.once("error", (e: NodeJS.ErrnoException) => done(CAUSES[e.code ?? ""] ?? e.code ?? e.message))
  })

/** A driver's error's code: the server's SQLSTATE (`errno`), else the driver's own (`ERR_POSTGRES_...`). */
export const codeOf = (e: unknown): string | undefined => {
  const o = e as { errno?: unknown; code?: unknown } | null
  return typeof o?.errno === "string" ? o.errno : typeof o?.code === "string" ? o.code : undefined
}

/** A driver's error as one line: its message's first. */
export const messageOf = (e: unknown): string => (e instanceof Error ? e.message.split("\n")[0]! : String(e))

/** What failed when `url`'s server was first asked, as a `DatabaseError`: the server's own word, or the network's. */
export const connectionError = async (url: string, e: unknown): Promise<DatabaseError> => {
  const fields = { server: serverOf(url), url: maskUrlCredentials(url) }
  const code = codeOf(e) ?? ""
  const at = endpoint(url)
  if (code.startsWith("ERR_POSTGRES_CONNECTION") && at !== null) {
    const cause = await probe(at.host, at.port)
    if (cause !== null) return new DatabaseError({ ...fields, reason: "unreachable", detail: cause })
  }
  return new DatabaseError({
    ...fields,
    reason: code.startsWith("ERR_POSTGRES_CONNECTION") ? "unreachable" : "refused",
    detail: scrubbed(url, messageOf(e)),
  })
}

/** What failed while massgen set up its tables (or pg-boss its schema) in `url`'s database. */
export const setupError = (url: string, e: unknown): DatabaseError =>
  e instanceof DatabaseError
    ? e
    : new DatabaseError({
        server: serverOf(url),
        url: maskUrlCredentials(url),
        reason: "setup_failed",
        detail: scrubbed(url, messageOf(e)),
      })
