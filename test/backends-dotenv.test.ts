import { afterAll, describe, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit } from "effect"
import { loadDotEnv, mergeDotEnv, parseDotEnv } from "../src/services/backends/keys.ts"

describe(".env parsing", () => {
  test("KEY=VALUE, export prefix, comments, blank and invalid lines", () => {
    const text = [
      "# a comment",
      "",
      "OPENAI_API_KEY=sk-123",
      "export GROQ_API_KEY = gsk_456  ",
      "PLAIN=value # trailing comment",
      "HASH=a#b",
      "EMPTY=",
      "not an assignment",
      "1BAD=x",
    ].join("\n")
    expect(parseDotEnv(text)).toEqual({ OPENAI_API_KEY: "sk-123", GROQ_API_KEY: "gsk_456", PLAIN: "value", HASH: "a#b", EMPTY: "" })
  })

  test("quotes: single is literal, double has escapes, both may span lines; CRLF is fine", () => {
    const text = 'A=\'single # not a comment\'\r\nB="line1\\nline2 \\"q\\"" # c\r\nC="multi\nline"\nD=\'raw \\n\'\nE="unterminated\nF=after'
    expect(parseDotEnv(text)).toEqual({ A: "single # not a comment", B: 'line1\nline2 "q"', C: "multi\nline", D: "raw \\n", F: "after" })
  })

  test("later lines win", () => {
    expect(parseDotEnv("X=1\nX=2")).toEqual({ X: "2" })
  })

  test("the environment wins over the file", () => {
    expect(mergeDotEnv({ A: "file", B: "file" }, { A: "env" })).toEqual({ A: "env", B: "file" })
  })
})

describe("loadDotEnv", () => {
  const dir = mkdtempSync(join(tmpdir(), "massgen-dotenv-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test("reads .env in the directory and adds only unset variables", async () => {
    writeFileSync(join(dir, ".env"), "XAI_API_KEY=from-file\nHOME=/nope\n")
    const env = await Effect.runPromise(loadDotEnv(dir, { HOME: "/home/me" }))
    expect(env).toEqual({ HOME: "/home/me", XAI_API_KEY: "from-file" })
  })

  test("no .env changes nothing; an unreadable one is a DotEnvError", async () => {
    const empty = join(dir, "empty")
    mkdirSync(empty)
    expect(await Effect.runPromise(loadDotEnv(empty, { A: "1" }))).toEqual({ A: "1" })
    const weird = join(dir, "weird")
    mkdirSync(join(weird, ".env"), { recursive: true })
    const exit = await Effect.runPromiseExit(loadDotEnv(weird, {}))
    expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("DotEnvError")
  })
})
