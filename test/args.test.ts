/** The command line: what parses, and the one-line message for what does not. */
import { describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { parseInvocation } from "../src/cli/args/index.ts"
import { COMMAND_TYPO_RULE, HELP } from "../src/cli/help.ts"
import { readQuestion } from "../src/cli/run/question.ts"
import { closest } from "../src/lib/did-you-mean.ts"

const message = (argv: ReadonlyArray<string>): string => {
  const parsed = parseInvocation(argv)
  return Either.isLeft(parsed) ? parsed.left.message : "parsed"
}

describe("parseInvocation", () => {
  test("a negative number after a flag is that flag's bad value, not an unknown option", () => {
    expect(message(["--orchestrator-timeout", "-1", "--config", "c.yaml", "q"])).toBe(
      '--orchestrator-timeout: expected a number of seconds above 0, found "-1"',
    )
    expect(message(["viewer", "--replay-speed", "-1"])).toBe('--replay-speed: expected a number of 0 or more, found "-1"')
  })

  test("serve: one of --config and --config-dir; loopback, port 4000, 4 runs and 64 waiting unless told otherwise", () => {
    expect(parseInvocation(["serve", "--config", "t.yaml"])).toEqual(
      Either.right({
        _tag: "serve",
        configPath: "t.yaml",
        configDir: null,
        host: "127.0.0.1",
        port: 4000,
        maxConcurrentRuns: 4,
        maxQueued: 64,
        apiKeyEnv: null,
        drainSeconds: 30,
        idleTimeoutSeconds: 30,
        maxBodyBytes: 8388608,
        maxQuestionBytes: 1048576,
        retryWindowSeconds: 600,
        cancelOnDisconnect: false,
      }),
    )
    expect(
      parseInvocation([
        "serve",
        "--config-dir",
        "d",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--max-concurrent-runs",
        "8",
        "--max-queued",
        "0",
        "--api-key-env",
        "K",
        "--drain-seconds",
        "5",
        "--idle-timeout-seconds",
        "1",
        "--max-body-bytes",
        "100",
        "--max-question-bytes",
        "10",
        "--retry-window-seconds",
        "0",
        "--cancel-on-disconnect",
      ]),
    ).toEqual(
      Either.right({
        _tag: "serve",
        configPath: null,
        configDir: "d",
        host: "0.0.0.0",
        port: 0,
        maxConcurrentRuns: 8,
        maxQueued: 0,
        apiKeyEnv: "K",
        drainSeconds: 5,
        idleTimeoutSeconds: 1,
        maxBodyBytes: 100,
        maxQuestionBytes: 10,
        retryWindowSeconds: 0,
        cancelOnDisconnect: true,
      }),
    )
    expect(message(["serve"])).toBe("serve needs one of --config FILE or --config-dir DIR")
    expect(message(["serve", "--config", "a.yaml", "--config-dir", "d"])).toBe("serve needs one of --config FILE or --config-dir DIR")
    expect(message(["serve", "--config", "a.yaml", "--max-concurrent-runs", "0"])).toBe(
      '--max-concurrent-runs: expected a whole number from 1, found "0"',
    )
    expect(message(["serve", "--config", "a.yaml", "--idle-timeout-seconds", "0"])).toBe(
      '--idle-timeout-seconds: expected a whole number from 1 to 255, found "0"',
    )
    expect(message(["serve", "--config", "a.yaml", "--port", "70000"])).toBe(
      '--port: expected a whole number from 0 to 65535, found "70000"',
    )
    expect(message(["serve", "--config", "a.yaml", "question?"])).toBe(
      'serve takes no question or path, found "question?" (the config goes with --config)',
    )
    expect(message(["serve", "--config", "a.yaml", "--prot", "1"])).toBe(
      "unknown option --prot for massgen serve; did you mean --port? (see massgen --help)",
    )
  })

  test("--session-id ID or --continue make the run a turn of a session; sessions takes only --json", () => {
    const sessionOf = (argv: ReadonlyArray<string>) => {
      const parsed = parseInvocation(argv)
      return Either.isRight(parsed) && parsed.right._tag === "run" ? parsed.right.session : "not a run"
    }
    expect(sessionOf(["--config", "c.yaml", "--session-id", "ci-1", "q"])).toEqual({ _tag: "id", id: "ci-1" })
    expect(sessionOf(["--config", "c.yaml", "--continue", "q"])).toEqual({ _tag: "continue" })
    expect(sessionOf(["--config", "c.yaml", "q"])).toBeNull()
    expect(message(["--config", "c.yaml", "--session-id", "a", "--continue", "q"])).toBe("use either --session-id ID or --continue")
    expect(message(["--config", "c.yaml", "--session-id", "../x", "q"])).toStartWith("--session-id: Expected an id")
    expect(parseInvocation(["sessions", "--json"])).toEqual(Either.right({ _tag: "sessions", json: true }))
    expect(message(["sessions", "x"])).toBe('sessions takes no argument, found "x"')
  })

  test("a question that starts with a dash goes after --", () => {
    const parsed = parseInvocation(["--config", "c.yaml", "--", "-1 is a number"])
    expect(Either.isRight(parsed) && parsed.right._tag === "run" && parsed.right.question).toEqual({
      _tag: "words",
      text: "-1 is a number",
    })
  })

  test("--validate FILE and the automation guide's --validate --config FILE", () => {
    for (const argv of [
      ["--validate", "c.yaml"],
      ["--validate", "--config", "c.yaml"],
    ]) {
      expect(parseInvocation(argv)).toEqual(
        Either.right({ _tag: "validate", path: "c.yaml", json: false, strict: false, checkKeys: false }),
      )
    }
    expect(message(["--validate"])).toBe("--validate needs a config file: --validate FILE or --validate --config FILE")
  })

  test("resume, replay and status take one LOG_DIR and only their own flags", () => {
    expect(parseInvocation(["replay", "d", "--check"])).toEqual(Either.right({ _tag: "replay", logDir: "d", check: true, outDir: null }))
    expect(parseInvocation(["status", "--json", "d"])).toEqual(Either.right({ _tag: "status", logDir: "d", json: true }))
    expect(message(["resume"])).toBe("resume takes one LOG_DIR, found 0")
    expect(message(["status", "d", "--check"])).toBe("status does not take --check")
  })

  test("batch takes one ITEMS.jsonl, a --config, and a whole --concurrency of 1 or more", () => {
    expect(parseInvocation(["batch", "items.jsonl", "-c", "t.yaml", "--concurrency", "8", "--out", "o", "--automation"])).toEqual(
      Either.right({
        _tag: "batch",
        itemsPath: "items.jsonl",
        configPath: "t.yaml",
        concurrency: 8,
        outDir: "o",
        automation: true,
        engine: null,
      }),
    )
    expect(parseInvocation(["batch", "items.jsonl", "--config", "t.yaml"])).toEqual(
      Either.right({
        _tag: "batch",
        itemsPath: "items.jsonl",
        configPath: "t.yaml",
        concurrency: 4,
        outDir: null,
        automation: false,
        engine: null,
      }),
    )
    expect(parseInvocation(["batch", "status", "--engine", "postgres://h/db", "b1"])).toEqual(
      Either.right({ _tag: "batch_status", engine: "postgres://h/db", batch: "b1", outDir: null }),
    )
    expect(parseInvocation(["worker", "--engine", "postgres://h/db"])).toEqual(
      Either.right({ _tag: "worker", engine: "postgres://h/db", concurrency: 4, takeoverSeconds: 3 }),
    )
    expect(parseInvocation(["worker", "--engine", "postgres://h/db", "--takeover-seconds", "1.5"])).toEqual(
      Either.right({ _tag: "worker", engine: "postgres://h/db", concurrency: 4, takeoverSeconds: 1.5 }),
    )
    expect(message(["worker", "--engine", "postgres://h/db", "--takeover-seconds", "0"])).toBe(
      '--takeover-seconds: expected a number of seconds from 0.5 to 3600, found "0"',
    )
    expect(message(["worker"])).toBe("worker needs --engine postgres://...")
    expect(message(["batch", "i.jsonl", "-c", "t.yaml", "--engine", "mysql://x"])).toBe("--engine: expected a postgres://... URL")
    expect(message(["batch", "--config", "t.yaml"])).toBe("batch takes one ITEMS.jsonl file, found 0")
    expect(message(["batch", "items.jsonl"])).toBe("batch needs a config: --config FILE")
    expect(message(["batch", "items.jsonl", "-c", "t.yaml", "--concurrency", "-2"])).toBe(
      '--concurrency: expected a whole number of 1 or more, found "-2"',
    )
    expect(message(["batch", "items.jsonl", "-c", "t.yaml", "--concurency", "2"])).toBe(
      "unknown option --concurency for massgen batch; did you mean --concurrency? (see massgen --help)",
    )
  })

  test("a run needs a config source; its question is the words, `-` or nothing (standard input), or --question-file", () => {
    expect(message(["q"])).toBe("a config is required: --config FILE, --model MODEL or --models M1,M2")
    expect(message(["--config", "c.yaml", "--model", "m", "q"])).toBe("use only one of --config, --model and --models")
    const question = (argv: ReadonlyArray<string>) => {
      const parsed = parseInvocation(["--config", "c.yaml", ...argv])
      return Either.isRight(parsed) && parsed.right._tag === "run" ? parsed.right.question : message(argv)
    }
    expect(question(["What", "is 2+2?"])).toEqual({ _tag: "words", text: "What is 2+2?" })
    expect(question(["-"])).toEqual({ _tag: "stdin", explicit: true })
    expect(question([])).toEqual({ _tag: "stdin", explicit: false })
    expect(question(["--question-file", "q.txt"])).toEqual({ _tag: "file", path: "q.txt" })
    expect(message(["--config", "c.yaml", "--question-file", "q.txt", "words"])).toBe(
      "give the question either as words or with --question-file, not both",
    )
  })

  test("with no question and a terminal on standard input: the usage error, and nothing is read", async () => {
    let reads = 0
    const terminal = { isTTY: true, isPiped: false, read: async () => (reads++, "never") }
    const result = await Effect.runPromise(Effect.either(readQuestion({ _tag: "stdin", explicit: false }, terminal, 1024)))
    expect(Either.isLeft(result) && result.left.message).toStartWith(
      'a question is required, e.g. massgen --config team.yaml "What is 2+2?"',
    )
    expect(reads).toBe(0)
    // `-` reads even a terminal, to its end (Ctrl+D).
    expect(await Effect.runPromise(readQuestion({ _tag: "stdin", explicit: true }, terminal, 1024))).toBe("never")
  })

  test("an unknown flag names the closest known one, if one is close; a flag's missing value is named", () => {
    expect(message(["--modle", "m", "q"])).toBe("unknown option --modle; did you mean --model? (see massgen --help)")
    expect(message(["--question_file", "q.txt", "--model", "m"])).toBe(
      "unknown option --question_file; did you mean --question-file? (see massgen --help)",
    )
    expect(message(["--xyz", "--model", "m", "q"])).toBe("unknown option --xyz (see massgen --help)")
    // MassGen's plan mode flags are not unknown: they are MassGen's, and massgen says it does not have them.
    for (const flag of ["--plan", "--plan-depth=deep", "--plan-and-execute", "--execute-plan=latest"])
      expect(message([flag, "--model", "m", "q"])).toStartWith(`${flag.split("=")[0]} is MassGen's plan mode`)
    expect(message(["replay", "d", "--chek"])).toBe("unknown option --chek for massgen replay; did you mean --check? (see massgen --help)")
    expect(message(["--model"])).toBe("--model needs a value")
    expect(message(["--config", "--automation", "q"])).toBe(
      '--config needs a value, found --automation after it (a value that starts with "-" goes as --config=VALUE)',
    )
    expect(message(["--automation=yes", "--model", "m", "q"])).toBe('--automation takes no value, found "yes"')
  })

  test("a first word a typo away from a command is caught when nothing, a flag or a path follows it", () => {
    for (const [argv, meant] of [
      [["stauts", "runs/log_1"], "status"],
      [["stats", "--json"], "status"],
      [["resme", "log_20261201_000000_000000"], "resume"],
      [["replya", "./d", "--check"], "replay"],
      [["veiwer"], "viewer"],
      [["view", "--pick"], "viewer"],
      [["Status", "d/"], "status"],
    ] as const) {
      expect(message(argv)).toStartWith(`unknown command ${argv[0]}; did you mean massgen ${meant}?`)
    }
    // Questions: a word far from every command, or one followed by more words.
    expect(message(["statue", "of", "liberty", "--model", "m"])).toBe("parsed")
    expect(message(["resumes", "matter", "--model", "m"])).toBe("parsed")
    expect(message(["summary", "--model", "m"])).toBe("parsed")
    expect(message(["--model", "m", "stats"])).toBe("parsed")
    expect(HELP).toContain(COMMAND_TYPO_RULE)
  })

  test("did you mean: within two edits, swaps of neighbours count one, case is ignored, short words need a closer match", () => {
    expect(closest("stauts", ["resume", "status"])).toBe("status")
    expect(closest("AUTOMATON", ["automation"])).toBe("automation")
    expect(closest("xyz", ["json", "pick"])).toBe(null)
    expect(closest("js", ["json"])).toBe(null)
    expect(closest("jsn", ["json"])).toBe("json")
  })

  test("--backend, --base-url and --system-message with --config are refused, not ignored", () => {
    expect(message(["--config", "c.yaml", "--base-url", "http://127.0.0.1:9/v1", "q"])).toBe(
      "--base-url only applies to --model/--models; with --config, set backend.base_url in the config",
    )
    expect(message(["--config", "c.yaml", "--backend", "claude", "--system-message", "Be brief.", "q"])).toBe(
      "--backend, --system-message only apply to --model/--models; with --config, set backend.type, system_message in the config",
    )
    expect(message(["--model", "m", "--backend", "claude", "--base-url", "http://127.0.0.1:9", "--system-message", "s", "q"])).toBe(
      "parsed",
    )
  })

  test("the web view's port is 8000 unless --port says otherwise, as the help says", () => {
    expect(parseInvocation(["viewer", "--web"])).toMatchObject({ right: { _tag: "viewer", web: true, port: 8000 } })
    expect(parseInvocation(["viewer", "--web", "--port", "9001"])).toMatchObject({ right: { port: 9001 } })
    expect(HELP).toContain("--web serves the view on http://127.0.0.1:8000")
  })
})
