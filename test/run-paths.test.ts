/**
 * Agent ids are safe names, and an agent's files stay inside the log directory:
 * the config refuses an id that breaks a rule, naming the id and the rule, and
 * `agentFile` gives a path under the log directory for every id it accepts.
 */
import { describe, expect, test } from "bun:test"
import * as nodePath from "node:path"
import { Either } from "effect"
import fc from "fast-check"
import { decodeConfig } from "../src/domain/config/index.ts"
import { type AgentFileKind, agentFile, MAX_NAME_LENGTH, nameProblem, type SnapshotKind } from "../src/domain/run-paths.ts"

const problemsOf = (id: unknown) => {
  const decoded = decodeConfig({ agents: [{ id, backend: { type: "scripted" } }] }, {})
  return Either.isLeft(decoded) ? decoded.left : []
}

describe("agent ids in the config", () => {
  test.each([
    ["", "non-empty"],
    [".hidden", "does not start with '.'"],
    ["..", "does not start with '.'"],
    ["../escape", "does not start with '.'"],
    ["a/b", "without '/' or '\\'"],
    ["a\\b", "without '/' or '\\'"],
    ["a\u0000b", "without control characters"],
    ["a\nb", "without control characters"],
    ["a b", "letters, digits"],
    ["agent✓", "letters, digits"],
    ["x".repeat(MAX_NAME_LENGTH + 1), `at most ${MAX_NAME_LENGTH} characters`],
    ["a.reasoning", "does not end in '.reasoning'"],
  ])("%j is refused, with the rule and the id named on one line", (id, rule) => {
    const problems = problemsOf(id)
    expect(problems).toHaveLength(1)
    expect(problems[0]!.path).toBe("agents[0].id")
    expect(problems[0]!.message).toContain(rule)
    expect(problems[0]!.message).toContain(JSON.stringify(id.slice(0, MAX_NAME_LENGTH)))
    expect(problems[0]!.message).not.toContain("\n")
  })

  test(`${MAX_NAME_LENGTH} characters are allowed, ${MAX_NAME_LENGTH + 1} are not`, () => {
    expect(problemsOf("a".repeat(MAX_NAME_LENGTH))).toEqual([])
    expect(problemsOf("a".repeat(MAX_NAME_LENGTH + 1))).toHaveLength(1)
  })

  test("the usual ids are safe names", () => {
    for (const id of ["agent_a", "gpt-4o", "claude.3", "a", "A-1_b.c", "agent1"]) expect(nameProblem(id)).toBeNull()
  })
})

const KINDS: ReadonlyArray<AgentFileKind> = ["output", "reasoning", "final_answer", "final_context"]
const SNAPSHOTS: ReadonlyArray<SnapshotKind> = ["answer_snapshot", "vote_snapshot"]
const LOG_DIR = nodePath.resolve("/tmp/massgen_logs/log_20260101_000000_000000")

/** The path of `relative` under the log directory, or null when it would land elsewhere or climb out and back. */
const inside = (relative: string): string | null => {
  const full = nodePath.resolve(LOG_DIR, relative)
  const clean = nodePath.relative(LOG_DIR, full) === relative.split("/").join(nodePath.sep)
  return clean && full.startsWith(LOG_DIR + nodePath.sep) ? full : null
}

const pathsOf = (agent: string): ReadonlyArray<string> => [
  ...KINDS.map((kind) => agentFile(agent, kind)),
  ...SNAPSHOTS.map((kind) => agentFile(agent, kind, "agent1.1")),
]

const anyString = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: "binary", maxLength: 80 }),
  fc.constantFrom(".", "..", "../x", "a/../../b", "/etc/passwd", "C:\\x", "a\u0000", "x".repeat(65), ".git"),
)

describe("agentFile", () => {
  test("the documented layout", () => {
    expect(pathsOf("agent_a")).toEqual([
      "agent_outputs/agent_a.txt",
      "agent_outputs/agent_a.reasoning.txt",
      "final/agent_a/answer.txt",
      "final/agent_a/context.txt",
      "snapshots/agent_a/agent1.1/answer.txt",
      "snapshots/agent_a/agent1.1/vote.json",
    ])
  })

  test("for any string it refuses the id, or every path stays inside the log directory", () => {
    fc.assert(
      fc.property(anyString, anyString, (agent, label) => {
        const safe = nameProblem(agent) === null && nameProblem(label) === null
        if (!safe) {
          expect(() => [...KINDS.map((kind) => agentFile(agent, kind)), ...SNAPSHOTS.map((kind) => agentFile(agent, kind, label))]).toThrow(
            "not a safe name",
          )
          return
        }
        for (const path of [...KINDS.map((kind) => agentFile(agent, kind)), ...SNAPSHOTS.map((kind) => agentFile(agent, kind, label))]) {
          expect({ path, inside: inside(path) !== null }).toEqual({ path, inside: true })
        }
      }),
      { numRuns: 2000 },
    )
  })

  test("every id the config accepts gives paths inside the log directory, one set per id", () => {
    const safeId = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}$/),
      fc.constantFrom("a", "a.txt", "a.reasoning", "a.reasoning.x", "reasoning", "a_reasoning"),
    )
    fc.assert(
      fc.property(safeId, safeId, (a, b) => {
        fc.pre(problemsOf(a).length === 0 && problemsOf(b).length === 0)
        for (const path of pathsOf(a)) expect(inside(path)).not.toBeNull()
        if (a !== b) expect(pathsOf(a).filter((p) => pathsOf(b).includes(p))).toEqual([])
      }),
      { numRuns: 1000 },
    )
  })
})
