/**
 * Asking an outside process through files in the log directory: the `approval_mode: file` transport of the permission engine.
 *
 * Contract: `askByFile(logDir, request, timeoutSeconds)` writes the request
 * whole, as `permissions/requests/<id>.json` (written beside, then renamed:
 * never seen half-written), and waits for `permissions/responses/<id>.json`,
 * written by another process, reading it each time the folder changes (a
 * watch) and every `POLL_MS` besides (a watch may miss a change on some file
 * systems). A response is `{"approved": true|false, "feedback": "..."}`
 * (MassGen's file answer) or `{"decision": "allow"|"deny", "reason": "..."}`;
 * a file that is not one of these yet is read again at the next change.
 * No answer within `timeoutSeconds` is a denial (`timeout`): the engine
 * fails closed. Both files stay in the log directory. The id is the same for
 * the same call (`requestId`: agent, round, call id), so a resumed run that
 * asks again finds an answer written meanwhile. docs/permissions.md gives the
 * format to the people who write the answering side.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect } from "effect"
import type { CallRole } from "../../domain/events/index.ts"
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../domain/run-paths.ts"

export const REQUESTS_DIR = "permissions/requests"
export const RESPONSES_DIR = "permissions/responses"
/** How often the responses folder is read besides its watch. */
export const POLL_MS = 250

export interface ApprovalRequest {
  readonly id: string
  readonly agent: string
  readonly round: number
  readonly role: CallRole
  readonly tool_call: number
  readonly call_id: string
  readonly tool: string
  readonly action: string
  readonly target: string
  readonly risk: string
  readonly rule: string | null
  readonly reason: string
  readonly asked_at: string
  readonly timeout_seconds: number
}

export interface FileAnswer {
  readonly allowed: boolean
  readonly by: "response_file" | "timeout"
  readonly reason: string
}

/** The id of the request of one call: the agent, the round and the model's call id, hashed (a call id is the model's text). */
export const requestId = (agent: string, role: CallRole, round: number, callId: string): string =>
  `${agent}-${role === "presentation" ? "p" : "r"}${round}-${createHash("sha256").update(`${agent}\u0000${role}\u0000${round}\u0000${callId}`).digest("hex").slice(0, 16)}`

/** A response's answer, or null when the text is not one (yet). */
export const answerOf = (text: string): { readonly allowed: boolean; readonly feedback: string | null } | null => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return null
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null
  const v = value as Record<string, unknown>
  const note = typeof v.feedback === "string" ? v.feedback : typeof v.reason === "string" ? v.reason : null
  if (typeof v.approved === "boolean") return { allowed: v.approved, feedback: note }
  if (v.decision === "allow" || v.decision === "deny") return { allowed: v.decision === "allow", feedback: note }
  return null
}

const writeWhole = (path: string, text: string) => {
  const temporary = `${path}.${process.pid}.tmp`
  fs.writeFileSync(temporary, text, { mode: PRIVATE_FILE_MODE })
  fs.renameSync(temporary, path)
}

/** Waits for the response to `id` under `dir`, or null at the end of `timeoutMs`. */
const awaitResponse = (dir: string, id: string, timeoutMs: number) =>
  Effect.async<{ readonly allowed: boolean; readonly feedback: string | null } | null>((resume) => {
    const file = nodePath.join(dir, `${id}.json`)
    let done = false
    const stop = () => {
      done = true
      watcher?.close()
      clearInterval(poll)
      clearTimeout(timer)
    }
    const finish = (answer: { readonly allowed: boolean; readonly feedback: string | null } | null) => {
      if (done) return
      stop()
      resume(Effect.succeed(answer))
    }
    const look = () => {
      let text: string
      try {
        text = fs.readFileSync(file, "utf8")
      } catch {
        return
      }
      const answer = answerOf(text)
      if (answer !== null) finish(answer)
    }
    let watcher: fs.FSWatcher | undefined
    try {
      watcher = fs.watch(dir, () => look())
      watcher.on("error", () => undefined)
    } catch {
      watcher = undefined
    }
    const poll = setInterval(look, POLL_MS)
    // A timer's longest wait (about 24 days): a longer one would fire at once.
    const timer = setTimeout(() => finish(null), Math.min(timeoutMs, 2 ** 31 - 1))
    look()
    // Interrupted (the round cancelled, the run stopping): the watch ends, and the ask stays open for a resume.
    return Effect.sync(stop)
  })

/** Asks through files: writes the request, waits for its response; no answer in time is a denial. */
export const askByFile = (logDir: string, request: ApprovalRequest, timeoutSeconds: number): Effect.Effect<FileAnswer> =>
  Effect.gen(function* () {
    const requests = nodePath.join(logDir, REQUESTS_DIR)
    const responses = nodePath.join(logDir, RESPONSES_DIR)
    const written = yield* Effect.try(() => {
      for (const dir of [nodePath.join(logDir, "permissions"), requests, responses])
        fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
      writeWhole(
        nodePath.join(requests, `${request.id}.json`),
        `${JSON.stringify({ ...request, respond_to: `${RESPONSES_DIR}/${request.id}.json` }, null, 2)}\n`,
      )
    }).pipe(Effect.either)
    if (written._tag === "Left") {
      const detail = written.left.error instanceof Error ? written.left.error.message : String(written.left.error)
      return {
        allowed: false,
        by: "timeout",
        reason: `the request ${REQUESTS_DIR}/${request.id}.json could not be written (${detail}): denied`,
      }
    }
    const answer = yield* awaitResponse(responses, request.id, timeoutSeconds * 1000)
    if (answer === null)
      return {
        allowed: false,
        by: "timeout",
        reason: `no answer to ${REQUESTS_DIR}/${request.id}.json within ${timeoutSeconds}s (approval_timeout_seconds): denied`,
      }
    const note = answer.feedback === null ? "" : `: ${answer.feedback}`
    return {
      allowed: answer.allowed,
      by: "response_file",
      reason: `${RESPONSES_DIR}/${request.id}.json ${answer.allowed ? "allows" : "denies"} it${note}`,
    }
  })
