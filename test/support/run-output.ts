/**
 * Reading what a `massgen` run left behind: its log directory (from the
 * automation `LOG_DIR:` line), its events and status, and every file under a
 * directory, for tests that check what was written and how.
 *
 * - `logDirOf(result)`: the run's log directory; throws, showing the output, when there is none.
 * - `eventsOf(dir)`, `statusOf(dir)`: `events.jsonl` parsed line by line, `status.json` parsed.
 * - `filesUnder(dir)`: every file below `dir` (relative paths, sorted).
 * - `textsHolding(dir, text)`: the files below `dir` whose content holds `text`.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type { CliResult } from "./cli.ts"

export const shown = (result: CliResult): string => `exit ${result.exitCode}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`

export const logDirOf = (result: CliResult): string => {
  const line = result.lines.find((l) => l.startsWith("LOG_DIR: "))
  if (line === undefined) throw new Error(`no LOG_DIR line\n${shown(result)}`)
  return line.slice("LOG_DIR: ".length)
}

export const eventsOf = (logDir: string): Array<any> =>
  fs
    .readFileSync(nodePath.join(logDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l))

export const statusOf = (logDir: string): any => JSON.parse(fs.readFileSync(nodePath.join(logDir, "status.json"), "utf8"))

export const filesUnder = (dir: string): Array<string> =>
  fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => nodePath.relative(dir, nodePath.join(d.parentPath, d.name)))
    .sort()

export const textsHolding = (dir: string, text: string): Array<string> =>
  filesUnder(dir).filter((f) => fs.readFileSync(nodePath.join(dir, f), "utf8").includes(text))
