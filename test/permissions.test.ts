/**
 * The permission engine's pure parts, as given(policy) → when(tool call) → then(decision). No I/O.
 *
 * The rules as MassGen writes them (`action(pattern)`), the order (the hardline, then deny, allow,
 * ask, then the risk tier), the automation policy, the roles, the scopes merged; the matcher and
 * the command reader never throw; and the evasions: commands written to slip past a deny rule on
 * their text, with what text can catch and, for what it cannot, the honest outcome.
 */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import {
  agentPolicy,
  decidePermission,
  globMatcher,
  type PermissionsBlock,
  parseRule,
  policyAnswer,
  readCommand,
} from "../src/domain/permissions/index.ts"

/** given a permissions block → when a tool call → then its decision. */
const given = (block: PermissionsBlock) => {
  const policy = agentPolicy(block, undefined)
  if (policy === null) throw new Error("the block is off")
  const when = (tool: string, args: Record<string, unknown>, server: string | null = null) =>
    decidePermission(policy.rules, { tool, server, args })
  return { policy, when, command: (command: string) => when("execute_command", { command }) }
}

describe("rules: action(pattern), deny over allow over ask, then the risk tier", () => {
  test("a deny rule denies the commands it matches, by rule, naming it", () => {
    const d = given({ rules: { deny: ["command(rm *)"] } }).command("rm -rf build")
    expect(d).toMatchObject({ verdict: "deny", by: "rule", rule: "deny: command(rm *)", action: "command", target: "rm -rf build" })
  })

  test("deny wins over an allow that matches too, whatever the order written; allow wins over ask (MassGen's order)", () => {
    const g = given({ rules: { allow: ["command(*)"], ask: ["command(git *)"], deny: ["command(git push --force*)"] } })
    expect(g.command("git push --force origin")).toMatchObject({ verdict: "deny", rule: "deny: command(git push --force*)" })
    expect(g.command("git status")).toMatchObject({ verdict: "allow", rule: "allow: command(*)" })
    const asks = given({ rules: { ask: ["command(npm publish*)"] } })
    expect(asks.command("npm publish")).toMatchObject({ verdict: "ask", by: "rule", rule: "ask: command(npm publish*)" })
  })

  test("when no rule matches: low risk is allowed, medium and high are asked, by risk", () => {
    const g = given({ rules: { deny: ["command(rm *)"] } })
    expect(g.command("ls -la")).toMatchObject({ verdict: "allow", by: "risk", risk: "low", rule: null })
    expect(g.command("make build")).toMatchObject({ verdict: "ask", by: "risk", risk: "medium" })
    expect(g.command("curl https://example.com")).toMatchObject({ verdict: "ask", by: "risk", risk: "high" })
    expect(g.when("read_file", { path: "notes.txt" })).toMatchObject({ verdict: "allow", action: "read_file", risk: "low" })
  })

  test("file tools are read_file/write_file of their paths; a move is denied when either path is", () => {
    const g = given({ rules: { deny: ["write_file(/etc/*)"], allow: ["write_file(out/*)"] } })
    expect(g.when("write_file", { path: "/etc/passwd", content: "x" })).toMatchObject({ verdict: "deny", action: "write_file" })
    expect(g.when("write_file", { path: "out/a.txt", content: "x" })).toMatchObject({ verdict: "allow", rule: "allow: write_file(out/*)" })
    expect(g.when("move_file", { source: "/etc/hosts", destination: "out/h" })).toMatchObject({ verdict: "deny" })
    // An allow covers a move only when it covers both of its paths.
    expect(g.when("move_file", { source: "in/a", destination: "out/a" })).toMatchObject({ verdict: "allow", by: "risk" })
  })

  test("an MCP tool is mcp(server/tool); one that fetches is read_url of its url; a command tool by its name", () => {
    const g = given({ rules: { deny: ["mcp(linear/*)", "read_url(*evil*)"], allow: ["mcp(weather)"] } })
    expect(g.when("mcp__linear__create_issue", {}, "linear")).toMatchObject({
      verdict: "deny",
      action: "mcp",
      target: "linear/create_issue",
    })
    expect(g.when("mcp__web__fetch", { url: "https://evil.example" }, "web")).toMatchObject({ verdict: "deny", action: "read_url" })
    expect(g.when("weather", { city: "Paris" })).toMatchObject({ verdict: "allow", action: "mcp", target: "weather" })
  })

  test("a bare action is any target, * is any action", () => {
    const g = given({ rules: { deny: ["read_url", "*(*secret*)"] } })
    expect(g.when("web_fetch", { url: "https://a.example" })).toMatchObject({ verdict: "deny", rule: "deny: read_url" })
    expect(g.when("read_file", { path: "/x/secret.txt" })).toMatchObject({ verdict: "deny", rule: "deny: *(*secret*)" })
    expect(g.command("cat secret")).toMatchObject({ verdict: "deny", rule: "deny: *(*secret*)" })
  })

  test("a rule that does not read is refused with its reason, an unknown action too (MassGen would keep it, matching nothing)", () => {
    expect(parseRule("command(rm *)", "deny")).toMatchObject({ action: "command", pattern: "rm *" })
    expect(parseRule("Bash(rm:*)", "deny")).toBe(
      '"Bash(rm:*)": unknown action Bash (known: command, read_file, write_file, read_url, mcp, *)',
    )
    expect(parseRule("command(rm", "deny")).toContain("is not a rule: write action(pattern)")
  })
})

describe("the hardline: what no rule, policy or answer can allow", () => {
  test("rm -rf /, a fork bomb, mkfs are denied by the hardline under allow command(*) and allow-all", () => {
    const g = given({ rules: { allow: ["command(*)"] }, automation_default: "allow-all" })
    for (const c of ["rm -rf /", ":(){ :|:& };:", "mkfs.ext4 /dev/sda1", 'sh -c "rm -rf /"', "echo ok; dd if=/dev/zero of=/dev/sda"]) {
      expect({ c, d: g.command(c) }).toEqual({ c, d: expect.objectContaining({ verdict: "deny", by: "hardline", rule: null }) })
    }
  })

  test("any tool's shell command argument is held to it; a program's code is not read as a shell command", () => {
    const g = given({ rules: { allow: ["*"] } })
    expect(g.when("run_job", { script: "rm -rf /" })).toMatchObject({ verdict: "deny", by: "hardline" })
    expect(g.when("mcp__py__run", { code: "dd = 1\nprint(dd)" }, "py")).toMatchObject({ verdict: "allow", by: "rule" })
  })
})

describe("the automation policy answers an ask (MassGen's AutomationDefault)", () => {
  test("risk-based (the default) denies high and allows the rest; allow-all and deny-all do as they say", () => {
    expect(given({}).policy.automationDefault).toBe("risk-based")
    expect(policyAnswer("risk-based", "high").allowed).toBe(false)
    expect(policyAnswer("risk-based", "medium").allowed).toBe(true)
    expect(policyAnswer("allow-all", "high").allowed).toBe(true)
    expect(policyAnswer("deny-all", "low").allowed).toBe(false)
  })
})

describe("scopes: roles, the run's block and the agent's own", () => {
  test("read-only (and researcher) denies writes and commands, asks for fetches, allows reads; an allow of another scope cannot loosen it", () => {
    const policy = agentPolicy({ rules: { allow: ["write_file(out.txt)", "command(*)"] } }, { role: "researcher" })!
    const d = (tool: string, args: Record<string, unknown>) => decidePermission(policy.rules, { tool, server: null, args })
    expect(d("write_file", { path: "out.txt" })).toMatchObject({ verdict: "deny", rule: "deny: write_file(*)" })
    expect(d("execute_command", { command: "ls" })).toMatchObject({ verdict: "deny", rule: "deny: command(*)" })
    expect(d("web_fetch", { url: "https://x" })).toMatchObject({ verdict: "ask", rule: "ask: read_url(*)" })
    expect(d("read_file", { path: "a" })).toMatchObject({ verdict: "allow", rule: "allow: read_file(*)" })
  })

  test("the engine is off with no block or enabled: false; the agent's own settings win over the run's", () => {
    expect(agentPolicy(undefined, undefined)).toBeNull()
    expect(agentPolicy({ enabled: false }, undefined)).toBeNull()
    expect(agentPolicy({ rules: { deny: ["command(*)"] } }, { enabled: false })).toBeNull()
    expect(agentPolicy({ approval_mode: "file", automation_default: "deny-all" }, { automation_default: "allow-all" })).toMatchObject({
      approvalMode: "file",
      automationDefault: "allow-all",
      timeoutSeconds: 300,
    })
  })
})

describe("evasions: commands written to slip past deny command(rm *) on their text", () => {
  const g = given({ rules: { deny: ["command(rm *)"], allow: ["command(*)"] } })
  const caught: ReadonlyArray<readonly [string, string]> = [
    ["quoting", "r''m -rf build"],
    ["double quotes", '"rm" -rf build'],
    ["a backslash", "\\rm -rf build"],
    ["an absolute path", "/bin/rm -rf build"],
    ["extra spaces and tabs", "  rm \t\t -rf   build"],
    ["a ; chain", "ls; rm -rf build"],
    ["an && chain", "ls && rm -rf build"],
    ["a || chain and a pipe", "false || echo y | rm -rf build"],
    ["sh -c", 'sh -c "rm -rf build"'],
    ["bash -lc in a chain", "cd /tmp && bash -lc 'echo; rm -rf build'"],
    ["a wrapper", "env FOO=1 nohup rm -rf build"],
    ["an assignment before it", "LANG=C rm -rf build"],
    ["eval", "eval 'rm -rf build'"],
    ["a substitution that runs it", "echo $(rm -rf build)"],
    ["a backquoted substitution", "echo `rm -rf build`"],
    ["a line break", "echo hi\nrm -rf build"],
  ]
  for (const [how, command] of caught) {
    test(`${how}: ${JSON.stringify(command)} is denied by the rule`, () => {
      expect(g.command(command)).toMatchObject({ verdict: "deny", by: "rule", rule: "deny: command(rm *)" })
    })
  }

  test("a program computed when it runs ($(echo rm), $X) cannot be read: the deny holds, and says why", () => {
    for (const command of ["$(echo rm) -rf build", "X=rm; $X -rf build", "`echo rm` -rf build", '"$CMD" build']) {
      const d = g.command(command)
      expect({ command, d }).toEqual({ command, d: expect.objectContaining({ verdict: "deny", rule: "deny: command(rm *)" }) })
      expect(d.reason).toContain("computed when it runs")
    }
  })

  test("the honest truth: python3 -c doing what rm does is not caught by a rule on rm (the sandbox confines it; deny command(python*) names it)", () => {
    const python = `python3 -c "import shutil; shutil.rmtree('build')"`
    expect(g.command(python)).toMatchObject({ verdict: "allow", rule: "allow: command(*)" })
    expect(given({ rules: { deny: ["command(rm *)", "command(python*)"] } }).command(python)).toMatchObject({ verdict: "deny" })
    // Nor a script file, nor find's own deletion: text shows only the program's name.
    expect(g.command("find build -delete")).toMatchObject({ verdict: "allow" })
  })

  test("an allow covers a chain only when it covers each of its commands", () => {
    const only = given({ rules: { allow: ["command(git status)", "command(ls *)"] } })
    expect(only.command("git status")).toMatchObject({ verdict: "allow", by: "rule" })
    expect(only.command("ls -la && git status")).toMatchObject({ verdict: "allow", by: "rule" })
    expect(only.command("git status; curl https://x")).toMatchObject({ verdict: "ask", by: "risk", risk: "high" })
    expect(only.command("$(echo git) status")).toMatchObject({ verdict: "ask", by: "risk" })
  })
})

describe("properties: the matcher and the reader never throw", () => {
  test("any pattern against any text, any rule text, any command text", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (pattern, text) => {
        expect(typeof globMatcher(pattern)(text)).toBe("boolean")
        const rule = parseRule(pattern, "deny")
        expect(typeof rule === "string" || typeof rule.matches(text) === "boolean").toBe(true)
      }),
      { numRuns: 2000 },
    )
    const shellish = fc.string({
      unit: fc.constantFrom(
        "r",
        "m",
        " ",
        "\t",
        "'",
        '"',
        "\\",
        "$",
        "(",
        ")",
        "`",
        ";",
        "&",
        "|",
        "-",
        "c",
        "s",
        "h",
        "\n",
        "{",
        "}",
        "#",
        "<",
        ">",
      ),
      maxLength: 60,
    })
    fc.assert(
      fc.property(fc.oneof(fc.string(), shellish), (command) => {
        const reading = readCommand(command)
        expect(Array.isArray(reading.commands)).toBe(true)
        const d = given({ rules: { deny: ["command(rm *)"], allow: ["command(*)"] } }).command(command)
        expect(["allow", "deny", "ask"]).toContain(d.verdict)
      }),
      { numRuns: 3000 },
    )
  })

  test("a pattern matches its own text when it has no wildcard, and * matches everything", () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !/[*?[]/.test(s)),
        fc.string(),
        (literal, other) => {
          expect(globMatcher(literal)(literal)).toBe(true)
          expect(globMatcher("*")(other)).toBe(true)
          expect(globMatcher(`${literal}*`)(literal + other)).toBe(true)
        },
      ),
    )
  })

  test("nesting too deep is read as partial, and a deny on commands holds for it", () => {
    let command = "rm -rf build"
    for (let i = 0; i < 12; i++) command = `sh -c ${JSON.stringify(command)}`
    expect(readCommand(command).partial).toBe(true)
    expect(given({ rules: { deny: ["command(curl *)"], allow: ["command(*)"] } }).command(command)).toMatchObject({ verdict: "deny" })
  })
})
