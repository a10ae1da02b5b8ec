/**
 * The permission gate in the tool runner (`services/tools/permission-gate.ts`): every tool call of an
 * agent with a policy passes it, whatever the tool (a command tool, an MCP tool, a file tool); a denied
 * call never reaches its provider, its decision is appended between its `tool_call_started` and its
 * `tool_call_finished`, and its error result says by what; an agent without a policy passes with no
 * ledger event; a decision recorded for a call (a resume) is kept, and nobody is asked again.
 */
import { describe, expect } from "bun:test"
import { Effect } from "effect"
import type { Event } from "../src/domain/events/index.ts"
import { agentPolicy, type PermissionsBlock } from "../src/domain/permissions/index.ts"
import { hashText } from "../src/lib/sha256.ts"
import { makePermissionGate, recordedDecisions } from "../src/services/tools/permission-gate.ts"
import type { ToolProvider } from "../src/services/tools/tool-provider.ts"
import { makeToolRunner } from "../src/services/tools/tool-runner.ts"
import { effect } from "./support/effect-test.ts"

const T = "2026-01-01T00:00:00.000Z"

/** A provider whose tools record that they ran; `server` names the MCP server of the `mcp__` ones. */
const provider = (ran: Array<string>): ToolProvider => ({
  tools: ["deploy", "mcp__linear__create_issue", "write_file"].map((name) => ({
    spec: { name, description: name, parameters: { type: "object", properties: {}, required: [] } },
    server: name.startsWith("mcp__") ? "linear" : null,
  })),
  run: (name) => Effect.sync(() => (ran.push(name), `${name} done`)),
})

const harness = (block: PermissionsBlock | undefined, recorded: ReadonlyArray<Event> = []) => {
  const events: Array<Event> = []
  const ran: Array<string> = []
  const emit = (event: Event) => Effect.sync(() => void events.push(event))
  const policy = agentPolicy(block, undefined)
  let n = 0
  const run = makeToolRunner({
    providerOf: () => provider(ran),
    emit,
    now: Effect.succeed(T),
    nextToolCall: Effect.sync(() => ++n),
    writeLog: () => Effect.void,
    digest: hashText,
    gate: makePermissionGate({
      policyOf: () => policy,
      recorded: recordedDecisions(recorded),
      logDir: "/nonexistent",
      emit,
      now: Effect.succeed(T),
    }),
  })
  return { run, events, ran }
}

const calls = [
  { id: "c1", name: "deploy", arguments: "{}" },
  { id: "c2", name: "mcp__linear__create_issue", arguments: '{"title":"x"}' },
  { id: "c3", name: "write_file", arguments: '{"path":"notes.md","content":"x"}' },
]

describe("the permission gate", () => {
  effect("denied calls of any kind of tool never reach it; each decision sits between the call's start and end", () =>
    Effect.gen(function* () {
      const h = harness({ rules: { deny: ["mcp(deploy)", "mcp(linear/*)"], allow: ["write_file(*.md)"] } })
      const results = yield* h.run("a", 1, "round", calls)
      expect(h.ran).toEqual(["write_file"])
      expect(results.map((r) => [r.name, r.isError ?? false, r.content])).toEqual([
        ["deploy", true, "error: refused: permission denied: the rule deny: mcp(deploy) matches"],
        ["mcp__linear__create_issue", true, "error: refused: permission denied: the rule deny: mcp(linear/*) matches"],
        ["write_file", false, "write_file done"],
      ])
      const trail = (id: string) => h.events.filter((e) => "call_id" in e && e.call_id === id).map((e) => e._tag)
      for (const id of ["c1", "c2", "c3"]) expect(trail(id)).toEqual(["tool_call_started", "permission_decided", "tool_call_finished"])
      expect(h.events.filter((e) => e._tag === "permission_decided").map((e) => [e.action, e.target, e.decision, e.by])).toEqual([
        ["mcp", "deploy", "deny", "rule"],
        ["mcp", "linear/create_issue", "deny", "rule"],
        ["write_file", "notes.md", "allow", "rule"],
      ])
    }),
  )

  effect("an ask answered by the policy is asked, then decided, before the call runs", () =>
    Effect.gen(function* () {
      const h = harness({ rules: { ask: ["mcp(deploy)"] }, automation_default: "deny-all" })
      yield* h.run("a", 1, "round", [calls[0]!])
      expect(h.ran).toEqual([])
      expect(h.events.map((e) => e._tag)).toEqual(["tool_call_started", "permission_asked", "permission_decided", "tool_call_finished"])
      expect(h.events[1]).toMatchObject({ via: "policy", request: null, rule: "ask: mcp(deploy)" })
      expect(h.events[2]).toMatchObject({ decision: "deny", by: "policy" })
    }),
  )

  effect("an agent without a policy passes, with no ledger event", () =>
    Effect.gen(function* () {
      const h = harness(undefined)
      yield* h.run("a", 1, "round", calls)
      expect(h.ran).toEqual(["deploy", "mcp__linear__create_issue", "write_file"])
      expect(h.events.some((e) => e._tag.startsWith("permission_"))).toBe(false)
    }),
  )

  effect("a decision recorded for the call (a resume) is kept: no new event, nobody asked", () =>
    Effect.gen(function* () {
      const first = harness({ rules: { ask: ["mcp(deploy)"] }, automation_default: "allow-all" })
      yield* first.run("a", 1, "round", [calls[0]!])
      const decided = first.events.filter((e) => e._tag === "permission_decided")
      // The same call again, now under a policy that would deny it: the recorded allow holds.
      const again = harness({ rules: { ask: ["mcp(deploy)"] }, automation_default: "deny-all" }, decided)
      const results = yield* again.run("a", 1, "round", [calls[0]!])
      expect(again.ran).toEqual(["deploy"])
      expect(results[0]!.isError).toBeUndefined()
      expect(again.events.map((e) => e._tag)).toEqual(["tool_call_started", "tool_call_finished"])
    }),
  )
})
