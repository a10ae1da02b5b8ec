/**
 * Where an agent's files go in a log directory, and the rule that keeps agent ids safe to put there.
 *
 * An agent id is a *safe name*: 1 to `MAX_NAME_LENGTH` characters, each a
 * letter, digit, `_`, `.` or `-`, the first not a `.`, the end not
 * `.reasoning`. So it is one path segment, never `.` or `..`, never hidden,
 * short enough for any file system, and no two agents share a file. `nameProblem` says which rule a name breaks; the config decodes ids
 * with `SafeName`, so an id that breaks one is a config error.
 *
 * `agentFile(agent, kind)` is the one place an agent's relative path is made:
 * - `output`: `agent_outputs/<id>.txt`, what it streamed, call by call;
 * - `reasoning`: `agent_outputs/<id>.reasoning.txt`, its streamed reasoning;
 * - `final_answer`, `final_context`: `final/<id>/answer.txt` and `context.txt`;
 * - `answer_snapshot`, `vote_snapshot`: `snapshots/<id>/<label>/answer.txt`
 *   and `vote.json`, for an answer label or a vote label (`agent1.vote1`).
 * It throws on a name that is not safe: ids are checked when the config is
 * read, so that is a bug, never a path outside the log directory.
 * `blobPath(hash)` is where the blob store keeps a text (`blobs/<sha256>.txt`).
 * `resumeHint(logDir)` is the command that takes a run up again, as every
 * message that offers it words it.
 */
import { Schema } from "effect"

export const MAX_NAME_LENGTH = 64
export const AGENT_OUTPUTS_DIR = "agent_outputs"
/** The file of a run's log directory that `resume` and `replay` read its config from (`writeRunMetadata` writes it). */
export const METADATA_FILE = "execution_metadata.yaml"
/** A log directory is private: its folders `0700`, its files `0600`. */
export const PRIVATE_DIR_MODE = 0o700
export const PRIVATE_FILE_MODE = 0o600
/** The run's blob store: each long text once, as `blobs/<sha256>.txt` (`services/run-files/blobs.ts`, `domain/log/long-texts.ts`). */
export const BLOBS_DIR = "blobs"
export const blobPath = (hash: string): string => `${BLOBS_DIR}/${hash}.txt`
const REASONING_SUFFIX = ".reasoning"

const shown = (name: string): string =>
  name.length > MAX_NAME_LENGTH ? `${JSON.stringify(name.slice(0, MAX_NAME_LENGTH))}... (${name.length} characters)` : JSON.stringify(name)

/** Which rule `name` breaks, as a config problem's message; null for a safe name. */
export const nameProblem = (name: string): string | null => {
  if (name.length === 0) return 'Expected a non-empty id, found ""'
  if (name.length > MAX_NAME_LENGTH) return `Expected an id of at most ${MAX_NAME_LENGTH} characters, found ${shown(name)}`
  if (name.startsWith(".")) return `Expected an id that does not start with '.', found ${shown(name)}`
  if (/[/\\]/.test(name)) return `Expected an id without '/' or '\\', found ${shown(name)}`
  if (/[\u0000-\u001f\u007f]/.test(name)) return `Expected an id without control characters, found ${shown(name)}`
  if (/[^A-Za-z0-9_.-]/.test(name)) return `Expected an id of letters, digits, '_', '.' or '-', found ${shown(name)}`
  // Agent `x`'s reasoning file is agent `x.reasoning`'s output file.
  if (name.endsWith(REASONING_SUFFIX)) return `Expected an id that does not end in '${REASONING_SUFFIX}', found ${shown(name)}`
  return null
}

/** A string that is a safe name; its failure message names the rule and the value. */
export const SafeName = Schema.String.pipe(Schema.filter((name) => nameProblem(name) ?? true))

export type AgentFileKind = "output" | "reasoning" | "final_answer" | "final_context"
export type SnapshotKind = "answer_snapshot" | "vote_snapshot"

/** Names found safe: a run names its agents' files call after call. */
const safeNames = new Set<string>()

const safe = (name: string): string => {
  if (safeNames.has(name)) return name
  const problem = nameProblem(name)
  if (problem !== null) throw new Error(`not a safe name for a file: ${problem}`)
  safeNames.add(name)
  return name
}

/** The path of one of `agent`'s files, relative to the log directory. */
export function agentFile(agent: string, kind: AgentFileKind): string
export function agentFile(agent: string, kind: SnapshotKind, label: string): string
export function agentFile(agent: string, kind: AgentFileKind | SnapshotKind, label = ""): string {
  const id = safe(agent)
  switch (kind) {
    case "output":
      return `${AGENT_OUTPUTS_DIR}/${id}.txt`
    case "reasoning":
      return `${AGENT_OUTPUTS_DIR}/${id}${REASONING_SUFFIX}.txt`
    case "final_answer":
      return `final/${id}/answer.txt`
    case "final_context":
      return `final/${id}/context.txt`
    case "answer_snapshot":
      return `snapshots/${id}/${safe(label)}/answer.txt`
    case "vote_snapshot":
      return `snapshots/${id}/${safe(label)}/vote.json`
  }
}

const shellQuoted = (path: string): string => (/^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`)

/** The command that takes the run in `logDir` up again, the path quoted for a shell when it needs it. */
export const resumeHint = (logDir: string): string => `massgen resume ${shellQuoted(logDir)}`
