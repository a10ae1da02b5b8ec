/**
 * Tool calls as facts: the limits a round's tool calls run under, and how a person is shown one.
 *
 * The limits are the documented defaults of the tool runner
 * (`services/tools/tool-runner.ts`): how many calls of one reply run at once,
 * how long one may take (`timeout_settings.tool_timeout_seconds`), how long a
 * result the model is given may be, and how much of a result
 * `tool_call_finished` carries itself (the rest is in `tool_log/<n>.json`).
 * `toolCallLine` is the short line the views show: name, short arguments,
 * ok or error, duration. Pure.
 *
 * Words: a *tool call* is one call of an agent's own tool (a command tool, an
 * MCP tool) from a model reply; its *result* is the text the model is given.
 */

import { oneLine, truncate } from "../../lib/text.ts"
import { type ArgumentsText, argumentsBlob, type Event } from "../events/index.ts"

/** Calls of one reply that run at the same time; the others wait for a free slot. */
export const TOOL_CONCURRENCY = 8
/** Seconds a tool call may run before it is stopped and the model told it timed out. */
export const DEFAULT_TOOL_TIMEOUT_SECONDS = 60
/** Characters of a result the model is given; a longer one is cut here, with a note, and is an error result. */
export const MAX_TOOL_RESULT_CHARS = 50_000
/** A result up to this long is held by its `tool_call_finished` event; a longer one only by `tool_log/<n>.json`. */
export const INLINE_RESULT_CHARS = 2_000

/** A result over the cap: its first `MAX_TOOL_RESULT_CHARS` characters and a note saying so. */
export const cutResult = (text: string, max = MAX_TOOL_RESULT_CHARS): string =>
  `${truncate(text, max)}\n[massgen: the result was ${text.length} characters, cut to the first ${max}]`

/** A tool call's arguments on one short line: `{"path":"a.txt"}` as `path="a.txt"`; long ones, in the blob store, as where they are. */
export const shortArguments = (args: ArgumentsText, max = 60): string => {
  if (typeof args !== "string") return `long, blobs/${(argumentsBlob(args) ?? "").slice(0, 12)}…`
  try {
    const value: unknown = JSON.parse(args === "" ? "{}" : args)
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      return oneLine(
        Object.entries(value)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(" "),
        max,
      )
    }
  } catch {
    // shown as written
  }
  return oneLine(args, max)
}

/** The line a view shows for a tool call's start or end; null for any other event. */
export const toolCallLine = (event: Event): string | null => {
  switch (event._tag) {
    case "tool_call_started":
      return `tool ${event.tool}(${shortArguments(event.arguments)}) running`
    case "tool_call_finished":
      return `tool ${event.tool}(${shortArguments(event.arguments)}) ${event.ok ? "ok" : `error: ${oneLine(event.error ?? "", 60)}`} in ${event.seconds.toFixed(2)}s`
    case "hosted_tool_used":
      return `${event.tool} (provider): ${oneLine(event.detail, 60)}`
    default:
      return null
  }
}

/** The line a view shows for a permission the engine asked or decided (`domain/events/permissions.ts`); null for any other event. */
export const permissionLine = (event: Event): string | null => {
  switch (event._tag) {
    case "permission_asked":
      return `permission asked (${event.via.replace("_", " ")}): ${event.action}(${oneLine(event.target, 60)})${event.via === "human" ? ": allow? press y or n" : ""}`
    case "permission_decided":
      return `permission ${event.decision === "allow" ? "allowed" : "denied"} by ${event.by.replace("_", " ")}: ${event.action}(${oneLine(event.target, 60)})${event.rule === null ? "" : ` (${oneLine(event.rule, 60)})`}`
    default:
      return null
  }
}
