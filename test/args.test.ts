/** The command line: what parses, and the one-line message for what does not. */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { HELP, parseInvocation } from "../src/cli/args.ts"

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

  test("a question that starts with a dash goes after --", () => {
    const parsed = parseInvocation(["--config", "c.yaml", "--", "-1 is a number"])
    expect(Either.isRight(parsed) && parsed.right._tag === "run" && parsed.right.question).toBe("-1 is a number")
  })

  test("--validate FILE and the automation guide's --validate --config FILE", () => {
    for (const argv of [["--validate", "c.yaml"], ["--validate", "--config", "c.yaml"]]) {
      expect(parseInvocation(argv)).toEqual(Either.right({ _tag: "validate", path: "c.yaml", json: false }))
    }
    expect(message(["--validate"])).toBe("--validate needs a config file: --validate FILE or --validate --config FILE")
  })

  test("resume, replay and status take one LOG_DIR and only their own flags", () => {
    expect(parseInvocation(["replay", "d", "--check"])).toEqual(Either.right({ _tag: "replay", logDir: "d", check: true, outDir: null }))
    expect(parseInvocation(["status", "--json", "d"])).toEqual(Either.right({ _tag: "status", logDir: "d", json: true }))
    expect(message(["resume"])).toBe("resume takes one LOG_DIR, found 0")
    expect(message(["status", "d", "--check"])).toBe("status does not take --check")
  })

  test("a run needs a config source and a question", () => {
    expect(message(["q"])).toBe("a config is required: --config FILE, --model MODEL or --models M1,M2")
    expect(message(["--config", "c.yaml"])).toStartWith("a question is required")
    expect(message(["--config", "c.yaml", "--model", "m", "q"])).toBe("use only one of --config, --model and --models")
  })

  test("--backend, --base-url and --system-message with --config are refused, not ignored", () => {
    expect(message(["--config", "c.yaml", "--base-url", "http://127.0.0.1:9/v1", "q"])).toBe(
      "--base-url only applies to --model/--models; with --config, set backend.base_url in the config",
    )
    expect(message(["--config", "c.yaml", "--backend", "claude", "--system-message", "Be brief.", "q"])).toBe(
      "--backend, --system-message only apply to --model/--models; with --config, set backend.type, system_message in the config",
    )
    expect(message(["--model", "m", "--backend", "claude", "--base-url", "http://127.0.0.1:9", "--system-message", "s", "q"])).toBe("parsed")
  })

  test("the web view's port is 8000 unless --port says otherwise, as the help says", () => {
    expect(parseInvocation(["viewer", "--web"])).toMatchObject({ right: { _tag: "viewer", web: true, port: 8000 } })
    expect(parseInvocation(["viewer", "--web", "--port", "9001"])).toMatchObject({ right: { port: 9001 } })
    expect(HELP).toContain("--web serves the view on http://127.0.0.1:8000")
  })
})
