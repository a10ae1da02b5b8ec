/**
 * A long question (issue 25): a one-agent scripted run of a 20 MB question
 * (`--max-question-bytes` raised), each a cold process of the compiled binary
 * (or from source when it is missing), spawn to exit. Prints its peak RSS
 * (`/usr/bin/time`) over the question's size, and its log directory over the
 * question's size (goal: at most 1.5: the question is in the blob store once;
 * before the blob store kept long texts it was some 9).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BINARY as BUILT, SOURCE_MAIN } from "../test/support/cli.ts"
import { fmt, line, median, peakRssProcess, targetLine } from "./support.ts"

const QUESTION_BYTES = 20_000_000
const RUNS = 2
const MB = 1024 * 1024

const command = (): ReadonlyArray<string> => {
  const binary = process.env.MASSGEN_BENCH_BINARY ?? BUILT
  return existsSync(binary) ? [binary] : [process.execPath, SOURCE_MAIN]
}

const sizeUnder = (dir: string): number =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .reduce((n, d) => n + statSync(join(d.parentPath, d.name)).size, 0)

export const longQuestionBench = async (): Promise<void> => {
  console.log(`# 13. A 20 MB question: one scripted agent, one cold process per run (${RUNS} runs, median / max)`)
  const dir = mkdtempSync(join(tmpdir(), "massgen-bench-long-"))
  try {
    const line80 = `${"a long question, words and more words ".repeat(2)}\n`
    writeFileSync(
      join(dir, "question.txt"),
      line80
        .repeat(Math.ceil(QUESTION_BYTES / line80.length))
        .slice(0, QUESTION_BYTES)
        .trim(),
    )
    writeFileSync(
      join(dir, "config.yaml"),
      'agents:\n  - id: a\n    backend: {type: scripted, answer: "Four.", vote: agent1, final: "Four."}\n',
    )
    const rss: Array<number> = []
    const sizes: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      const cwd = join(dir, `run${i}`)
      const args = [
        "--automation",
        "--config",
        join(dir, "config.yaml"),
        "--max-question-bytes",
        "25000000",
        "--question-file",
        join(dir, "question.txt"),
      ]
      const run = peakRssProcess([...command(), ...args], dir, { env: { MASSGEN_LOG_BASE_DIR: join(cwd, "logs") } })
      if (run.rssBytes !== null) rss.push(run.rssBytes)
      const logDir = run.stdout
        .split("\n")
        .find((l) => l.startsWith("LOG_DIR: "))!
        .slice("LOG_DIR: ".length)
      sizes.push(sizeUnder(logDir))
    }
    if (rss.length > 0) line("20 MB question: peak RSS median / max", `${fmt(median(rss) / MB)} / ${fmt(Math.max(...rss) / MB)} MB`)
    else line("20 MB question: peak RSS", "skipped: /usr/bin/time is missing")
    targetLine("20 MB question: log directory / question", sizes, "bytes", {
      ratio: (size) => size / QUESTION_BYTES,
      op: "<=",
      limit: 1.5,
      text: "<= 1.5",
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
