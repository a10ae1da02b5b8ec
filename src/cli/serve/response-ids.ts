/**
 * `previous_response_id`: the conversation a Responses request continues, read from the earlier response's run.
 *
 * Contract: `continuedConversation(id, env, cwd)` finds the run a response id
 * names (`resp_` + its log directory's name, under this server's log root) and
 * gives what a next turn of it continues, as a session's next turn does
 * (`conversationOf` in `sessions/session-store.ts`): that run's conversation,
 * its question and its final answer. An id that names no run here is a 404
 * (`code: "previous_response_not_found"`, as OpenAI says it); a run with no final
 * answer yet (still running, failed, or stopped and not resumed) is a 400.
 * `continuedRequest(request, id, env, cwd, maxTextBytes)` is the request with
 * that conversation before its own, or a 413 (`question_too_large`) when their
 * text together passes `maxTextBytes`, as one request's messages would.
 */
import * as fs from "node:fs"
import { join } from "node:path"
import type { ConversationMessage } from "../../domain/events/index.ts"
import { readEventsText } from "../../domain/log/index.ts"
import { foldEvents } from "../../domain/state/index.ts"
import { utf8Bytes } from "../../lib/utf8-bytes.ts"
import { logBaseDir } from "../../services/log-dir/create.ts"
import { answerOf } from "../sessions/session-store.ts"
import { badRequest, type ChatRequest, type WireError } from "./openai-wire.ts"
import { runIdOf } from "./responses-wire.ts"

const FIELD = "previous_response_id"

export const continuedConversation = (
  id: string,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): ReadonlyArray<ConversationMessage> | WireError => {
  const runId = runIdOf(id)
  const logDir = runId === null ? null : join(logBaseDir(env, cwd), runId)
  let text: string | null = null
  try {
    if (logDir !== null) text = fs.readFileSync(join(logDir, "events.jsonl"), "utf8")
  } catch {}
  if (logDir === null || text === null)
    return {
      status: 404,
      message: `Previous response with id ${JSON.stringify(id)} not found.`,
      type: "invalid_request_error",
      code: "previous_response_not_found",
      param: FIELD,
    }
  const state = foldEvents(readEventsText(text).events)
  const answer = answerOf({ turn: 0, log_dir: logDir, started: "", state })
  if (state.run === null || answer === null)
    return badRequest(`${FIELD}: the response ${id} has no final answer to continue (its run is going on, failed or was stopped)`, FIELD)
  return [...(state.run.conversation ?? []), { role: "user", content: state.run.question }, { role: "assistant", content: answer }]
}

export const continuedRequest = <R extends ChatRequest>(
  request: R,
  id: string,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
  maxTextBytes: number,
): R | WireError => {
  const continued = continuedConversation(id, env, cwd)
  if ("status" in continued) return continued
  const conversation = [...continued, ...request.conversation]
  const bytes = [...conversation, { content: request.question }].reduce((n, m) => n + utf8Bytes(m.content), 0)
  if (bytes > maxTextBytes)
    return {
      status: 413,
      message: `the conversation with ${FIELD}'s is ${bytes} bytes of text, over this server's limit of ${maxTextBytes} (--max-question-bytes)`,
      type: "invalid_request_error",
      code: "question_too_large",
      param: FIELD,
    }
  return { ...request, conversation }
}
