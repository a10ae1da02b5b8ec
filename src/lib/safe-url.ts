/**
 * URLs as they may be shown: never with the credentials they carry.
 *
 * A `base_url` may hold a credential: userinfo (`https://user:pass@host/v1`)
 * or a query parameter whose name says it is one (`?key=...`, `api_key=`,
 * `token=`, `secret=`, `password=`, `sig=`, `auth=`...). The request goes to the
 * URL as written; everything written or printed shows it masked.
 *
 * - `maskUrlCredentials(text)` masks, in any text, the userinfo of every URL
 *   (`https://***@host/v1`) and the value of every credential parameter
 *   (`?key=***`); the rest of the text is unchanged.
 * - `urlSecrets(url)` lists the credential texts of one URL (as written and
 *   decoded), so that they can be scrubbed where they appear on their own.
 * - `endpointOf(url)` is how a message names the server: `scheme://host:port`,
 *   the scheme's default port written out, and nothing more.
 * - `hasMaskedCredential(url)`: the URL holds `***` where a credential was
 *   (a masked copy, as `execution_metadata.yaml` records it, not a real URL).
 */

const CREDENTIAL_NAME = /key|token|secret|passw|pwd|sig|auth|cred/i
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi
const CREDENTIAL_PARAM = /([?&][\w.~%-]*(?:key|token|secret|passw|pwd|sig|auth|cred)[\w.~%-]*=)[^&#\s"'<>]+/gi

/** `text` with every URL's userinfo and credential parameters replaced by `***`. */
export const maskUrlCredentials = (text: string): string => text.replace(USERINFO, "$1***@").replace(CREDENTIAL_PARAM, "$1***")

const parse = (url: string): URL | null => {
  try {
    return new URL(url)
  } catch {
    return null
  }
}

const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** The credentials a URL carries: its userinfo and the values of its credential parameters. */
export const urlSecrets = (url: string): ReadonlyArray<string> => {
  const u = parse(url)
  if (u === null) return []
  const raw = [u.username, u.password]
  for (const [name, value] of u.searchParams) if (CREDENTIAL_NAME.test(name)) raw.push(value)
  // The query as written, too (its encoded form is what a reflected URL shows).
  for (const m of u.search.matchAll(/[?&]([^=&]*)=([^&]*)/g)) if (CREDENTIAL_NAME.test(decoded(m[1]!))) raw.push(m[2]!)
  const all = raw.flatMap((s) => [s, decoded(s)]).filter((s) => s !== "" && s !== "***")
  return [...new Set(all)]
}

const DEFAULT_PORTS: Readonly<Record<string, string>> = { "http:": "80", "https:": "443" }

/** `scheme://host:port` of a URL, nothing else; an unreadable URL is shown masked. */
export const endpointOf = (url: string): string => {
  const u = parse(url)
  if (u === null) return maskUrlCredentials(url)
  const port = u.port !== "" ? u.port : (DEFAULT_PORTS[u.protocol] ?? "")
  return `${u.protocol}//${u.hostname}${port === "" ? "" : `:${port}`}`
}

/** Whether the URL holds `***` in place of a credential. */
export const hasMaskedCredential = (url: string): boolean => {
  const u = parse(url)
  if (u === null) return false
  if (u.username === "***" || u.username === "%2A%2A%2A" || u.password === "***" || u.password === "%2A%2A%2A") return true
  return [...u.searchParams].some(([name, value]) => CREDENTIAL_NAME.test(name) && value === "***")
}
