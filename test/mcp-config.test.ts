/** MCP server entries as written: both shapes, what --validate finds without the environment, and what a start resolves. */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { decodeConfig, maskSecrets } from "../src/domain/config/index.ts"
import { entryKey, mcpEntries, mcpToolName, resolveEntry, splitCommand } from "../src/domain/config/mcp.ts"

const withServers = (mcp_servers: unknown) => ({ agents: [{ id: "a", backend: { type: "scripted", mcp_servers } }] })
const problemsOf = (mcp_servers: unknown) => {
  const decoded = decodeConfig(withServers(mcp_servers), {})
  return Either.isLeft(decoded) ? decoded.left.map((p) => `${p.path}: ${p.message}`) : []
}
const entriesOf = (mcp_servers: unknown) =>
  mcpEntries(Either.getOrThrow(decodeConfig(withServers(mcp_servers), {})).agents[0]!.backend.mcp_servers)

describe("mcp_servers as written", () => {
  test("a list of named entries and a mapping of names give the same entries; type defaults to stdio; ${VAR} stays unexpanded", () => {
    const list = entriesOf([{ name: "gh", command: "npx", args: ["-y", "gh"], env: { TOKEN: "${UNSET_TOKEN}" } }])
    const mapping = entriesOf({ gh: { command: "npx", args: ["-y", "gh"], env: { TOKEN: "${UNSET_TOKEN}" } } })
    expect(list).toEqual(mapping)
    expect(list).toEqual([{ name: "gh", type: "stdio", fields: { command: "npx", args: ["-y", "gh"], env: { TOKEN: "${UNSET_TOKEN}" } } }])
  })

  test("problems found without starting anything name the key, what was expected and what was found", () => {
    expect(problemsOf([{ command: "x" }])).toEqual(["agents[0].backend.mcp_servers[0].name: Expected a server name, found none"])
    expect(problemsOf([{ name: "a b", command: "x" }])).toEqual([
      'agents[0].backend.mcp_servers[0].name: Expected a server name of 1 to 64 letters, digits, _ or -, found "a b"',
    ])
    expect(problemsOf([{ name: "w", type: "websocket", url: "ws://x" }])).toEqual([
      'agents[0].backend.mcp_servers[0].type: Expected one of stdio, streamable-http, sse, found "websocket"',
    ])
    expect(problemsOf("npx")).toEqual([
      'agents[0].backend.mcp_servers: Expected a list of MCP server entries (or a mapping of names to entries), found "npx"',
    ])
    expect(
      problemsOf([
        { name: "a" },
        { name: "a", type: "streamable-http" },
        { name: "b", type: "sse", url: "ftp://x" },
        { name: "c", type: "sse", url: "${URL}" },
      ]),
    ).toEqual([
      "agents[0].backend.mcp_servers[0].command: Expected a command for a stdio server, found none",
      'agents[0].backend.mcp_servers[1].name: Expected a unique server name, found "a" again',
      "agents[0].backend.mcp_servers[1].url: Expected a url for a streamable-http server, found none",
      'agents[0].backend.mcp_servers[2].url: Expected an http or https URL, found "ftp://x"',
    ])
  })

  test("a literal header or env secret is masked in the logged config; references stay", () => {
    expect(
      maskSecrets(
        withServers([
          {
            name: "d",
            type: "sse",
            url: "http://h/sse",
            headers: { Authorization: "Bearer abc", "X-Ref": "${T}" },
            env: { GH_TOKEN: "ghp_x" },
          },
        ]),
      ),
    ).toEqual(
      withServers([
        { name: "d", type: "sse", url: "http://h/sse", headers: { Authorization: "***", "X-Ref": "${T}" }, env: { GH_TOKEN: "***" } },
      ]),
    )
  })
})

describe("resolving an entry when its server starts", () => {
  test("a command string is split as a shell splits words; args follow; ${VAR} and ${cwd} are expanded; a relative cwd is under the agent's", () => {
    expect(splitCommand(`npx -y "@scope/pkg name" 'a b' c\\ d`)).toEqual(["npx", "-y", "@scope/pkg name", "a b", "c d"])
    const [entry] = entriesOf({
      s: { command: "run --dir=${cwd}", args: ["${TOKEN}", 8080], env: { PORT: 8080, K: "${TOKEN}" }, cwd: "sub" },
    })
    expect(resolveEntry(entry!, { TOKEN: "t0k" }, "/logs/run")).toEqual({
      type: "stdio",
      command: "run",
      args: ["--dir=/logs/run", "t0k", "8080"],
      env: { PORT: "8080", K: "t0k" },
      cwd: "/logs/run/sub",
    })
    expect(resolveEntry(entry!, {}, "/logs/run")).toEqual({ _tag: "UnsetVariable", variable: "TOKEN" })
  })

  test("the same server whatever the entry's name or filters; another when a header differs", () => {
    const [a, b, c] = entriesOf([
      { name: "a", type: "streamable-http", url: "http://h/mcp", headers: { X: "1" } },
      { name: "b", type: "streamable-http", url: "http://h/mcp", headers: { X: "1" }, allowed_tools: ["echo"] },
      { name: "c", type: "streamable-http", url: "http://h/mcp", headers: { X: "2" } },
    ])
    const key = (e: typeof a) => entryKey(resolveEntry(e!, {}, "/") as never)
    expect(key(a)).toBe(key(b))
    expect(key(a)).not.toBe(key(c))
  })

  test("tool names: mcp__<server>__<tool>, with what model APIs refuse as _", () => {
    expect(mcpToolName("everything", "get-sum")).toBe("mcp__everything__get-sum")
    expect(mcpToolName("fs", "read.file v2")).toBe("mcp__fs__read_file_v2")
  })
})
