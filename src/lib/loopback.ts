/**
 * Whether an HTTP request names a local server as itself: the `Host` and
 * `Origin` judgement of the servers that listen on loopback (`massgen serve`
 * without a key, the web view), which keeps pages of other sites (DNS
 * rebinding) and of other local origins (a cross-origin "simple" POST) out.
 *
 * Contract: `ownHosts(port, names)` is every `Host` header value that names
 * the server: each name with `:PORT`, and the bare name when the port is 80
 * (a browser leaves out the default port). `hostJudgement(host, origin,
 * hosts)` is null when `host` (lower-cased) is one of `hosts` and `origin` is
 * absent (curl, the SDKs) or is exactly `http://` + that host (same scheme,
 * host and port: a page of the server's own origin); otherwise it is the
 * one-line reason for refusing. `isLoopbackName` says whether a `--host`
 * value is a loopback address. Pure.
 *
 * Words: a *loopback name* is `127.0.0.1`, `localhost` or `[::1]`.
 */

export const LOOPBACK_NAMES: ReadonlyArray<string> = ["127.0.0.1", "localhost", "[::1]"]

/** `127.0.0.1`, `localhost`, `::1` or `[::1]`, in any case. */
export const isLoopbackName = (host: string): boolean => ["127.0.0.1", "localhost", "::1", "[::1]"].includes(host.toLowerCase())

/** A bare IPv6 address as a `Host` header writes it: in brackets. */
const bracketed = (name: string): string => (name.includes(":") && !name.startsWith("[") ? `[${name}]` : name)

export const ownHosts = (port: number, names: ReadonlyArray<string> = LOOPBACK_NAMES): ReadonlySet<string> => {
  const hosts = new Set<string>()
  for (const name of names.map((n) => bracketed(n.toLowerCase()))) {
    hosts.add(`${name}:${port}`)
    if (port === 80) hosts.add(name)
  }
  return hosts
}

export const hostJudgement = (host: string | null, origin: string | null, hosts: ReadonlySet<string>): string | null => {
  const named = (host ?? "").toLowerCase()
  if (!hosts.has(named)) return `the Host header ${JSON.stringify(host ?? "")} is not this server's (${[...hosts].join(", ")})`
  if (origin !== null && origin.toLowerCase() !== `http://${named}`)
    return `the Origin ${JSON.stringify(origin)} is not this server's own (http://${named})`
  return null
}
